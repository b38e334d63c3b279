//! What the fronts ask of the internal services, in the gateway's own terms:
//! [`Games`] joins the pairing queue, creates, follows and reads games ([`Game`]), and
//! moves, hints and resigns for a player; [`PlayError`] says why a call
//! failed. The internal services' messages and `tonic::Status` are turned
//! into these here, once, so no front sees them: the record of a game in
//! `game`, the error in `error`, the calls and their streams here.

use chess_domain::{
    Color, ColorChoice, GameId, Participant, PlayerId, SpeedCategory, Timestamp, Username,
    color_from_pb,
};
use chess_internal_clients::{EventStream, NewGame};
use chess_proto::{
    common::v1 as common,
    game::v1 as game_pb,
    matchmaking::v1::{self as mm_pb, join_pairing_queue_response::Update},
    rating::v1 as rating_pb,
};
use tokio_stream::StreamExt as _;
use tonic::Streaming;

use crate::core::clients::Backends;

mod error;
mod game;

pub use error::{FailureKind, PlayError};
pub use game::{Ended, Game, PlayedMove, Rating};

/// What happened in a followed game.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GameEvent {
    /// A move, played as the game's `ply`-th.
    Moved {
        ply: u32,
        /// The side that moved.
        color: Option<Color>,
        /// The move as its player wrote it.
        submitted: String,
        /// The position after it.
        fen: String,
        check: bool,
    },
    /// The game is over.
    Ended(Ended),
    /// The game was taken back to `ply` plies, at `fen`.
    TakenBack { ply: u32, fen: String },
    /// The engine could not find its move.
    EngineFailed,
    /// Anything else (draw offers, clocks, ...): no front here tells it.
    Other,
}

impl GameEvent {
    fn of(event: common::GameEvent) -> Self {
        match event.kind {
            Some(common::game_event::Kind::MoveMade(made)) => Self::Moved {
                ply: event.ply,
                color: color_from_pb(made.color),
                submitted: made.submitted,
                fen: made.fen,
                check: made.check,
            },
            Some(common::game_event::Kind::GameEnded(ended)) => Self::Ended(Ended::of(&ended)),
            Some(common::game_event::Kind::EngineFailed(_)) => Self::EngineFailed,
            Some(common::game_event::Kind::TakenBack(back)) => Self::TakenBack {
                ply: back.ply,
                fen: back.fen,
            },
            _ => Self::Other,
        }
    }
}

/// A followed game's events.
pub struct GameEvents(EventStream<game_pb::WatchGameResponse>);

impl std::fmt::Debug for GameEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GameEvents").finish_non_exhaustive()
    }
}

impl GameEvents {
    /// The next event; `None` once the stream has ended or broken (follow
    /// the game again to go on).
    pub async fn next(&mut self) -> Option<GameEvent> {
        match self.0.next().await? {
            Ok(response) => Some(response.event.map_or(GameEvent::Other, GameEvent::of)),
            Err(_) => None,
        }
    }
}

/// A move of a daily game, as its notice tells it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DailyMove {
    pub game_id: GameId,
    pub ply: u32,
    pub san: String,
    /// The side that moved.
    pub color: Option<Color>,
}

/// The moves of every daily game, as they are made.
pub struct DailyMoves(EventStream<game_pb::WatchDailyGamesResponse>);

impl std::fmt::Debug for DailyMoves {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DailyMoves").finish_non_exhaustive()
    }
}

impl DailyMoves {
    /// The next move (the games' other events are passed over); `None`
    /// once the stream has ended, an error once it broke.
    pub async fn next(&mut self) -> Option<Result<DailyMove, PlayError>> {
        loop {
            let event = match self.0.next().await? {
                Ok(response) => response.event,
                Err(status) => return Some(Err(status.into())),
            };
            let Some(event) = event else { continue };
            if let Some(common::game_event::Kind::MoveMade(made)) = event.kind {
                let (ply, san) = made.r#move.map_or((0, String::new()), |m| (m.ply, m.san));
                return Some(Ok(DailyMove {
                    game_id: GameId::trusted(event.game_id),
                    ply,
                    san,
                    color: color_from_pb(made.color),
                }));
            }
        }
    }
}

/// A pairing made by the matchmaking service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pairing {
    pub game_id: GameId,
    /// The waiter's side (white when the service does not say).
    pub color: Color,
    /// The opponent's player or guest id.
    pub opponent_id: PlayerId,
}

/// What the pairing queue says to a waiter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QueueUpdate {
    /// In the queue, waiting.
    Queued,
    Paired(Pairing),
    /// Anything else, for no front here to tell.
    Other,
}

/// A place in the pairing queue, kept while this is held.
#[derive(Debug)]
pub struct Queue(Streaming<mm_pb::JoinPairingQueueResponse>);

impl Queue {
    /// The next update; `None` once the queue has gone away (matchmaking
    /// restarted: join again).
    pub async fn next(&mut self) -> Option<QueueUpdate> {
        let update = self.0.message().await.ok()??;
        Some(match update.update {
            Some(Update::Queued(_)) => QueueUpdate::Queued,
            Some(Update::Paired(paired)) => QueueUpdate::Paired(Pairing {
                game_id: GameId::trusted(paired.game_id),
                color: color_from_pb(paired.color).unwrap_or(Color::White),
                opponent_id: PlayerId::trusted(paired.opponent_id),
            }),
            _ => QueueUpdate::Other,
        })
    }
}

/// The queues a front's guests wait in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pool {
    /// uqchess: untimed, unrated, the uqchess rules.
    Uqchess,
    /// Nostr: standard rules, casual, 15 minutes and 10 s a move.
    Nostr,
}

/// A guest asking for an opponent.
#[derive(Clone, Debug)]
pub struct Seek {
    pub guest_id: PlayerId,
    pub display_name: String,
    pub color: ColorChoice,
    /// When the guest asked: earlier askers are paired first.
    pub since: Timestamp,
    pub pool: Pool,
    /// The account the guest's key is linked to, if any.
    pub account: Option<Account>,
}

/// A registered player, as a front links one to its own users.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Account {
    pub player_id: PlayerId,
    pub username: Username,
}

/// The answer to a move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MoveAnswer {
    /// The ply the move was played as.
    pub ply: u32,
    pub check: bool,
    /// Set when the move ended the game.
    pub ended: Option<Ended>,
}

/// The requests that name nothing but a game.
trait FromId {
    fn from_id(game_id: &GameId) -> Self;
}

macro_rules! from_id {
    ($($request:ty),*) => {$(
        impl FromId for $request {
            fn from_id(game_id: &GameId) -> Self {
                Self { game_id: game_id.to_string() }
            }
        }
    )*};
}

from_id!(
    game_pb::GetGameRequest,
    game_pb::ExportPgnRequest,
    game_pb::BoardRequest
);

/// What the fronts do with games, over the internal services. Cloning is
/// cheap.
#[derive(Clone, Debug)]
pub struct Games {
    backends: Backends,
}

impl Games {
    pub fn new(backends: Backends) -> Self {
        Self { backends }
    }

    /// Creates a game of the uqchess rules between `white` and `black`: its id.
    pub async fn create_uqchess(
        &self,
        white: &Participant,
        black: &Participant,
    ) -> Result<GameId, PlayError> {
        let game = NewGame::uqchess(white.to_pb(), black.to_pb());
        let created = self.backends.game.create_game(game).await?;
        Ok(GameId::trusted(created.game_id))
    }

    /// Follows game `game_id` from `from_ply`; as the player of side `me`,
    /// the player's own moves come only in the catch-up.
    pub async fn watch(
        &self,
        game_id: &GameId,
        from_ply: u32,
        me: Option<Color>,
    ) -> Result<GameEvents, PlayError> {
        let game = &self.backends.game;
        let events = match me {
            Some(me) => game.watch_game_as(game_id, Some(from_ply), me).await?,
            None => game.watch_game(game_id, Some(from_ply)).await?,
        };
        Ok(GameEvents(events))
    }

    /// Follows the moves of every daily game.
    pub async fn daily_moves(&self) -> Result<DailyMoves, PlayError> {
        Ok(DailyMoves(self.backends.game.watch_daily_games().await?))
    }

    /// Joins the pairing queue for `seek`.
    pub async fn join_queue(&self, seek: Seek) -> Result<Queue, PlayError> {
        let request = mm_pb::JoinPairingQueueRequest {
            guest_id: seek.guest_id.into_string(),
            display_name: seek.display_name,
            color: common::ColorChoice::from(seek.color) as i32,
            connected_at: Some(seek.since.to_proto()),
            pool: match seek.pool {
                Pool::Uqchess => mm_pb::PairingPool::Unspecified,
                Pool::Nostr => mm_pb::PairingPool::Nostr,
            } as i32,
            account: seek.account.map(|a| common::RegisteredPlayer {
                player_id: a.player_id.into_string(),
                username: a.username.into(),
            }),
        };
        let queue = self
            .backends
            .matchmaking
            .acting(&chess_domain::PlayerId::trusted(request.guest_id.as_str()))
            .join_pairing_queue(request)
            .await?;
        Ok(Queue(queue.into_inner()))
    }

    /// The game as the service keeps it; `None` if it sent none.
    pub async fn game(&self, game_id: &GameId) -> Result<Option<Game>, PlayError> {
        let mut game = self.backends.game.for_game(game_id);
        let request = game_pb::GetGameRequest::from_id(game_id);
        Ok(game
            .get_game(request)
            .await?
            .into_inner()
            .game
            .map(Game::of))
    }

    /// The game's PGN.
    pub async fn pgn(&self, game_id: &GameId) -> Result<String, PlayError> {
        let mut game = self.backends.game.for_game(game_id);
        let request = game_pb::ExportPgnRequest::from_id(game_id);
        Ok(game.export_pgn(request).await?.into_inner().pgn)
    }

    /// The board as text, as uqchess draws it.
    pub async fn board(&self, game_id: &GameId) -> Result<String, PlayError> {
        let mut game = self.backends.game.for_game(game_id);
        let request = game_pb::BoardRequest::from_id(game_id);
        Ok(game.board(request).await?.into_inner().board)
    }

    /// The engine's best move for `player_id`, or all the legal moves
    /// (`all`), in UCI. Dropping the call cancels the search.
    pub async fn hint(
        &self,
        game_id: &GameId,
        player_id: &PlayerId,
        all: bool,
    ) -> Result<Vec<String>, PlayError> {
        let kind = if all {
            game_pb::HintKind::All
        } else {
            game_pb::HintKind::Best
        };
        let request = game_pb::HintRequest {
            game_id: game_id.to_string(),
            player_id: player_id.to_string(),
            kind: kind as i32,
        };
        let mut game = self.backends.game.acting(player_id, game_id);
        Ok(game.hint(request).await?.into_inner().moves)
    }

    /// Plays `uci` for `player_id`; as the game's `ply`-th when given, so a
    /// repeated call cannot play it twice.
    pub async fn make_move(
        &self,
        game_id: &GameId,
        player_id: &PlayerId,
        uci: String,
        ply: Option<u32>,
    ) -> Result<MoveAnswer, PlayError> {
        let request = game_pb::MakeMoveRequest {
            game_id: game_id.to_string(),
            player_id: player_id.to_string(),
            r#move: uci,
            ply,
        };
        let response = self.backends.game.make_move(request).await?;
        Ok(MoveAnswer {
            ply: response.ply,
            check: response.move_made.as_ref().is_some_and(|m| m.check),
            ended: response.game_ended.as_ref().map(Ended::of),
        })
    }

    /// Resigns `player_id`'s side: how the game ended, if the service says.
    pub async fn resign(
        &self,
        game_id: &GameId,
        player_id: &PlayerId,
    ) -> Result<Option<Ended>, PlayError> {
        let request = game_pb::ResignRequest {
            game_id: game_id.to_string(),
            player_id: player_id.to_string(),
        };
        let mut game = self.backends.game.acting(player_id, game_id);
        let response = game.resign(request).await?;
        Ok(response.into_inner().game_ended.as_ref().map(Ended::of))
    }

    /// The ratings in `category` of those of `player_ids` the rating
    /// service knows.
    pub async fn ratings(
        &self,
        player_ids: Vec<PlayerId>,
        category: SpeedCategory,
    ) -> Result<Vec<Rating>, PlayError> {
        let ratings = self.backends.rating.ratings(player_ids, category).await?;
        Ok(ratings
            .into_iter()
            .map(|(player_id, rating)| Rating {
                player_id,
                rating: rating.rating,
                provisional: rating.provisional,
            })
            .collect())
    }

    /// The account the Nostr key `key` is linked to, if any.
    pub async fn account_of_nostr_key(&self, key: &str) -> Result<Option<Account>, PlayError> {
        let player = self.backends.rating.player_by_nostr_key(key).await?;
        Ok(player.and_then(|r| r.profile).map(|p| Account {
            player_id: PlayerId::trusted(p.player_id),
            username: Username::trusted(p.username),
        }))
    }

    /// The Nostr key linked to the account `player_id`, if any.
    pub async fn nostr_key_of(&self, player_id: &PlayerId) -> Result<Option<String>, PlayError> {
        let profile = self.player(player_id).await?.profile;
        Ok(profile
            .map(|p| p.nostr_public_key)
            .filter(|k| !k.is_empty()))
    }

    /// The email address of the account `player_id`, empty if it gave none.
    pub async fn email_of(&self, player_id: &PlayerId) -> Result<String, PlayError> {
        Ok(self.player(player_id).await?.email)
    }

    async fn player(
        &self,
        player_id: &PlayerId,
    ) -> Result<rating_pb::GetPlayerResponse, PlayError> {
        let request = rating_pb::GetPlayerRequest {
            key: Some(rating_pb::get_player_request::Key::PlayerId(
                player_id.to_string(),
            )),
        };
        Ok(self
            .backends
            .rating
            .rpc()
            .get_player(request)
            .await?
            .into_inner())
    }
}
