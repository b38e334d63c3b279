//! Calls to other services: who matchmaking calls, and for what.
//!
//! - [`GameClient`]: the game service, to create the games of plans and of
//!   pairs, and to resign for a paired player who left.
//! - [`RatingClient`]: the rating service, to read ratings and find players
//!   by name.

use std::{collections::HashMap, time::Duration};

use chess_domain::{SpeedCategory, TimeControl};
use chess_proto::{
    common::v1 as common,
    game::v1::{CreateGameRequest, ResignRequest, game_service_client::GameServiceClient},
    rating::v1::{
        GetPlayerRequest, GetRatingsRequest, get_player_request::Key,
        rating_service_client::RatingServiceClient,
    },
};
use chess_runtime::Channel;
use tonic::{Code, Status};

use crate::lobby::{
    error::LobbyError,
    model::{GamePlan, Member, Shown},
};

/// How long a call to another service may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// A guest of the uqchess pairing queue, as a player of a game.
#[derive(Clone, Copy, Debug)]
pub struct Guest<'a> {
    pub guest_id: &'a str,
    pub display_name: &'a str,
}

/// The game service. Cloning is cheap.
#[derive(Clone, Debug)]
pub struct GameClient {
    inner: GameServiceClient<Channel>,
}

impl GameClient {
    pub fn new(channel: Channel) -> Self {
        Self {
            inner: GameServiceClient::new(channel),
        }
    }

    /// Creates the game of `plan` (idempotent: the plan's key names it) and
    /// returns its id.
    pub async fn create_game(&self, plan: &GamePlan) -> Result<String, LobbyError> {
        let player = |m: &Member| chess_domain::registered_player(&m.id, &m.username);
        let request = CreateGameRequest {
            white: Some(player(&plan.white)),
            black: Some(player(&plan.black)),
            time_control: Some(plan.time_control.into()),
            rules: common::RuleSet::Standard as i32,
            rated: plan.rated,
            allow_hints: plan.allow_hints,
            initial_fen: String::new(),
            idempotency_key: plan.idempotency_key(),
        };
        let response = tokio::time::timeout(CALL_TIMEOUT, self.inner.clone().create_game(request))
            .await
            .map_err(|_| LobbyError::Game(Status::unavailable("the game service did not answer")))?
            .map_err(LobbyError::Game)?;
        response
            .into_inner()
            .game
            .map(|g| g.game_id)
            .ok_or_else(|| LobbyError::Game(Status::internal("the game service sent no game")))
    }

    /// Creates an untimed, unrated uqchess game of two guests (hints
    /// allowed, as the protocol has them) and returns its id.
    pub async fn create_uqchess_game(
        &self,
        white: Guest<'_>,
        black: Guest<'_>,
    ) -> Result<String, Status> {
        let guest = |g: Guest<'_>| chess_domain::guest_player(g.guest_id, g.display_name);
        let mut request = tonic::Request::new(CreateGameRequest {
            white: Some(guest(white)),
            black: Some(guest(black)),
            time_control: Some(TimeControl::Untimed.into()),
            rules: common::RuleSet::Uqchess as i32,
            rated: false,
            // Hints are part of the uqchess protocol.
            allow_hints: true,
            initial_fen: String::new(),
            idempotency_key: String::new(),
        });
        request.set_timeout(CALL_TIMEOUT);
        let response = self.inner.clone().create_game(request).await?;
        Ok(response.into_inner().game.unwrap_or_default().game_id)
    }

    /// Resigns `player_id`'s side of `game_id`.
    pub async fn resign(&self, game_id: &str, player_id: &str) -> Result<(), Status> {
        let resign = ResignRequest {
            game_id: game_id.to_owned(),
            player_id: player_id.to_owned(),
        };
        self.inner.clone().resign(resign).await?;
        Ok(())
    }
}

/// The rating service. Cloning is cheap.
#[derive(Clone, Debug)]
pub struct RatingClient {
    inner: RatingServiceClient<Channel>,
}

impl RatingClient {
    pub fn new(channel: Channel) -> Self {
        Self {
            inner: RatingServiceClient::new(channel),
        }
    }

    /// Ratings of `ids` in `category`, by player id. Players the rating
    /// service does not know are missing.
    pub async fn ratings(
        &self,
        ids: Vec<String>,
        category: SpeedCategory,
    ) -> Result<HashMap<String, Shown>, LobbyError> {
        let request = GetRatingsRequest {
            player_ids: ids,
            category: common::SpeedCategory::from(category) as i32,
        };
        let response = tokio::time::timeout(CALL_TIMEOUT, self.inner.clone().get_ratings(request))
            .await
            .map_err(|_| LobbyError::Unavailable("the rating service did not answer".into()))?
            .map_err(|s| {
                LobbyError::Unavailable(format!("cannot read ratings: {}", s.message()))
            })?;
        Ok(response
            .into_inner()
            .ratings
            .into_iter()
            .filter_map(|r| {
                let rating = r.rating?;
                // Elo ratings are whole numbers; Glicko-2 ones are shown
                // rounded.
                Some((
                    r.player_id,
                    Shown {
                        rating: rating.rating.round() as i32,
                        provisional: rating.provisional,
                    },
                ))
            })
            .collect())
    }

    /// The registered player called `username` (any case).
    pub async fn player_named(&self, username: &str) -> Result<Member, LobbyError> {
        let request = GetPlayerRequest {
            key: Some(Key::Username(username.to_owned())),
        };
        let response = tokio::time::timeout(CALL_TIMEOUT, self.inner.clone().get_player(request))
            .await
            .map_err(|_| LobbyError::Unavailable("the rating service did not answer".into()))?;
        match response {
            Ok(response) => {
                let profile = response.into_inner().profile.ok_or_else(|| {
                    LobbyError::Unavailable("the rating service sent no profile".into())
                })?;
                Ok(Member {
                    id: profile.player_id,
                    username: profile.username,
                })
            }
            Err(s) if s.code() == Code::NotFound => {
                Err(LobbyError::NotFound(format!("no player named {username}")))
            }
            Err(s) if s.code() == Code::InvalidArgument => {
                Err(LobbyError::Invalid(s.message().to_owned()))
            }
            Err(s) => Err(LobbyError::Unavailable(format!(
                "cannot look up {username}: {}",
                s.message()
            ))),
        }
    }
}
