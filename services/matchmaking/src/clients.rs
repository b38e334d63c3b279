//! Calls to other services: who matchmaking calls, and for what.
//!
//! - [`GameClient`]: the game service, to create the games of plans and of
//!   pairs, and to resign for a paired player who left.
//! - [`RatingClient`]: the rating service, to read ratings and find players
//!   by name.
//!
//! What those services answer comes back as domain values; a call the game
//! service refused comes back as a [`GameError`], which the gRPC edge passes
//! on as the game service gave it.

use std::collections::HashMap;

use chess_domain::{GameId, Participant, PlayerId, SpeedCategory, TimeControl, Username};
use chess_internal_clients::{self as internal, NewGame};
use chess_runtime::{Signer, client};
use tonic::{Code, Status};

use crate::lobby::{
    error::LobbyError,
    model::{GamePlan, Member, Shown},
};

/// The pairing queues: players are only paired within one, and each has
/// its own kind of game.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pool {
    Uqchess,
    Nostr,
}

/// The clock of games paired over Nostr: moves travel through relays, so a
/// rapid control with a generous increment.
pub const NOSTR_TIME_CONTROL: TimeControl = TimeControl::Incremental {
    initial_secs: 15 * 60,
    increment_secs: 10,
};

/// A call the game service did not serve, kept whole: the gRPC edge passes
/// it on as the game service gave it.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{0}")]
pub struct GameError(pub(crate) Status);

impl GameError {
    /// What the game service said.
    pub fn message(&self) -> &str {
        self.0.message()
    }

    /// The game service's code.
    pub(crate) fn code(&self) -> Code {
        self.0.code()
    }

    /// The game service's status, for the gRPC edge.
    pub(crate) fn into_status(self) -> Status {
        self.0
    }
}

/// A client of another service, whose answers it turns into the lobby's
/// values and errors. Cloning is cheap.
#[derive(Clone, Debug)]
pub struct Client<C> {
    inner: C,
}

/// The game service.
pub type GameClient = Client<internal::GameClient>;

/// The rating service.
pub type RatingClient = Client<internal::RatingClient>;

impl GameClient {
    pub fn connect(addr: &str, signer: Signer) -> Result<Self, client::Error> {
        internal::GameClient::connect(addr, signer).map(|inner| Self { inner })
    }

    /// Creates the game of `plan` (idempotent: the plan's key names it) and
    /// returns its id.
    pub async fn create_game(&self, plan: &GamePlan) -> Result<GameId, LobbyError> {
        let player = |m: &Member| m.participant().to_pb();
        let game = NewGame {
            rated: plan.rated,
            allow_hints: plan.allow_hints,
            idempotency_key: Some(plan.idempotency_key()),
            ..NewGame::casual(player(&plan.white), player(&plan.black), plan.time_control)
        };
        let game = self.inner.create_game(game).await.map_err(|status| {
            if status.code() == Code::DeadlineExceeded {
                LobbyError::Game(GameError(Status::unavailable(
                    "the game service did not answer",
                )))
            } else {
                LobbyError::Game(GameError(status))
            }
        })?;
        Ok(GameId::trusted(game.game_id))
    }

    /// Creates the game of a pairing in `pool` and returns its id: for
    /// uqchess an untimed, unrated game with the protocol's rules (and
    /// hints, as it has them); for Nostr a casual standard game of 15
    /// minutes + 10 s a move.
    pub async fn create_paired_game(
        &self,
        pool: Pool,
        white: &Participant,
        black: &Participant,
    ) -> Result<GameId, GameError> {
        let (white, black) = (white.to_pb(), black.to_pb());
        let game = match pool {
            Pool::Uqchess => NewGame::uqchess(white, black),
            Pool::Nostr => NewGame::casual(white, black, NOSTR_TIME_CONTROL),
        };
        let game = self.inner.create_game(game).await.map_err(GameError)?;
        Ok(GameId::trusted(game.game_id))
    }

    /// Resigns `player_id`'s side of `game_id`.
    pub async fn resign(&self, game_id: &GameId, player_id: &PlayerId) -> Result<(), GameError> {
        self.inner
            .resign(game_id, player_id)
            .await
            .map_err(GameError)
    }
}

impl RatingClient {
    pub fn connect(addr: &str, signer: Signer) -> Result<Self, client::Error> {
        internal::RatingClient::connect(addr, signer).map(|inner| Self { inner })
    }

    /// Ratings of `ids` in `category`, by player id. Players the rating
    /// service does not know are missing.
    pub async fn ratings(
        &self,
        ids: Vec<PlayerId>,
        category: SpeedCategory,
    ) -> Result<HashMap<PlayerId, Shown>, LobbyError> {
        let ratings = self
            .inner
            .ratings(ids, category)
            .await
            .map_err(|s| match s.code() {
                Code::DeadlineExceeded => {
                    LobbyError::Unavailable("the rating service did not answer".into())
                }
                _ => LobbyError::Unavailable(format!("cannot read ratings: {}", s.message())),
            })?;
        Ok(ratings
            .into_iter()
            .map(|(id, rating)| {
                // Elo ratings are whole numbers; Glicko-2 ones are shown
                // rounded.
                let shown = Shown {
                    rating: rating.rating.round() as i32,
                    provisional: rating.provisional,
                };
                (id, shown)
            })
            .collect())
    }

    /// The registered player called `username` (any case).
    pub async fn player_named(&self, username: &str) -> Result<Member, LobbyError> {
        match self.inner.player_named(username).await {
            Ok(response) => {
                let profile = response.profile.ok_or_else(|| {
                    LobbyError::Unavailable("the rating service sent no profile".into())
                })?;
                Ok(Member {
                    id: PlayerId::trusted(profile.player_id),
                    username: Username::trusted(profile.username),
                })
            }
            Err(s) if s.code() == Code::NotFound => {
                Err(LobbyError::NotFound(format!("no player named {username}")))
            }
            Err(s) if s.code() == Code::InvalidArgument => {
                Err(LobbyError::Invalid(s.message().to_owned()))
            }
            Err(s) if s.code() == Code::DeadlineExceeded => Err(LobbyError::Unavailable(
                "the rating service did not answer".into(),
            )),
            Err(s) => Err(LobbyError::Unavailable(format!(
                "cannot look up {username}: {}",
                s.message()
            ))),
        }
    }
}
