//! Wire types: game state and events to `chess.common.v1`, players from it,
//! and each failure's gRPC status.

use chess_domain::{GameStatus, Timestamp, color_to_pb};
use chess_proto::common::v1 as pb;
use chess_runtime::Reason;
use chess_shards::routing;
use shakmaty::Color;
use tonic::{Code, Status};

use crate::{
    clients::EngineError,
    error::Error,
    model::{ClockReading, Event, Game, GameError, GameResult, PlayedMove},
    shards::NotServed,
    store::{self, games},
};

/// Both clocks as sent.
pub fn clock(reading: &ClockReading, timed: bool) -> pb::ClockState {
    if !timed {
        return pb::ClockState {
            as_of: Some(reading.as_of.to_proto()),
            ..Default::default()
        };
    }
    pb::ClockState {
        timed: true,
        white: Some(pb::SideClock {
            remaining_ms: reading.remaining.white,
            moves_to_control: reading.moves_to_control.white,
        }),
        black: Some(pb::SideClock {
            remaining_ms: reading.remaining.black,
            moves_to_control: reading.moves_to_control.black,
        }),
        running: reading.running.map_or(pb::Color::Unspecified, color_to_pb) as i32,
        flag_at: reading.flag_at.map(Timestamp::to_proto),
        as_of: Some(reading.as_of.to_proto()),
    }
}

/// A game's status: finished once it has an ending.
fn status(ended: bool) -> GameStatus {
    if ended {
        GameStatus::Finished
    } else {
        GameStatus::Active
    }
}

fn played(ply: u32, m: &PlayedMove) -> pb::PlayedMove {
    pb::PlayedMove {
        ply,
        uci: m.uci.clone(),
        san: m.san.clone(),
        clock_after_ms: m.clock_after.unwrap_or(0),
        played_at: Some(m.at.to_proto()),
    }
}

/// A move event as sent.
fn move_made(ply: u32, color: Color, m: &PlayedMove, fen: &str, check: bool) -> pb::MoveMade {
    pb::MoveMade {
        r#move: Some(played(ply, m)),
        color: color_to_pb(color) as i32,
        submitted: m.submitted.clone(),
        fen: fen.to_owned(),
        check,
    }
}

/// The full state of `game` at `now`, with or without its move list.
pub fn game_state(game: &Game, now: Timestamp, with_moves: bool) -> pb::GameState {
    let ending = game.ending();
    let moves = if with_moves {
        game.moves()
            .iter()
            .enumerate()
            .map(|(i, m)| played(i as u32 + 1, m))
            .collect()
    } else {
        Vec::new()
    };
    pb::GameState {
        game_id: game.id().to_string(),
        white: Some(game.white().to_pb()),
        black: Some(game.black().to_pb()),
        time_control: Some(game.time_control().into()),
        speed: pb::SpeedCategory::from(game.time_control().speed()) as i32,
        rules: pb::RuleSet::from(game.rules()) as i32,
        rated: game.rated(),
        initial_fen: game.initial_fen().to_owned(),
        fen: game.fen(),
        moves,
        turn: color_to_pb(game.turn()) as i32,
        ply: game.ply(),
        check: game.in_check(),
        clock: Some(clock(&game.clock(now), game.time_control().is_timed())),
        status: pb::GameStatus::from(status(ending.is_some())) as i32,
        result: GameResult::to_pb(ending.and_then(|e| e.result)) as i32,
        termination: ending.map_or(pb::Termination::Unspecified, |e| e.termination.into()) as i32,
        draw_offer: game
            .draw_offer()
            .map_or(pb::Color::Unspecified, color_to_pb) as i32,
        halfmove_clock: shakmaty::Position::halfmoves(game.position()),
        engine_failed: false,
        created_at: Some(game.created_at().to_proto()),
        finished_at: ending.map(|e| e.at.to_proto()),
        hints_allowed: game.hints_allowed(),
        // Known to the game's actor only: a watch's snapshot sets it.
        spectators: 0,
        takeback_offer: game
            .takeback_offer()
            .map_or(pb::Color::Unspecified, color_to_pb) as i32,
    }
}

/// The listing entry of a stored game (no moves, clocks as stored).
pub fn row_state(row: &games::Model) -> Result<pb::GameState, store::StoreError> {
    let (setup, ending) = store::row_setup(row)?;
    let turn = chess_domain::side_to_move(&row.fen).unwrap_or(Color::White);
    Ok(pb::GameState {
        game_id: row.id.clone(),
        white: Some(setup.white.to_pb()),
        black: Some(setup.black.to_pb()),
        time_control: Some(setup.time_control.into()),
        speed: pb::SpeedCategory::from(setup.time_control.speed()) as i32,
        rules: pb::RuleSet::from(setup.rules) as i32,
        rated: row.rated,
        initial_fen: row.initial_fen.clone(),
        fen: row.fen.clone(),
        moves: Vec::new(),
        turn: color_to_pb(turn) as i32,
        ply: row.ply as u32,
        check: false,
        clock: None,
        status: pb::GameStatus::from(status(ending.is_some())) as i32,
        result: GameResult::to_pb(ending.and_then(|e| e.result)) as i32,
        termination: ending.map_or(pb::Termination::Unspecified, |e| e.termination.into()) as i32,
        draw_offer: pb::Color::Unspecified as i32,
        halfmove_clock: 0,
        engine_failed: false,
        created_at: Some(Timestamp::from_millis(row.created_at).to_proto()),
        finished_at: ending.map(|e| e.at.to_proto()),
        hints_allowed: row.hints_allowed,
        spectators: 0,
        takeback_offer: pb::Color::Unspecified as i32,
    })
}

/// An event of `game` (already applied) as sent.
pub fn event(game: &Game, event: &Event, now: Timestamp) -> pb::GameEvent {
    let (ply, kind) = match event {
        Event::TakenBack { by, ply, fen } => (
            Some(*ply),
            pb::game_event::Kind::TakenBack(taken_back(game, *by, *ply, fen, now)),
        ),
        _ => kind(event),
    };
    pb::GameEvent {
        game_id: game.id().to_string(),
        ply: ply.unwrap_or_else(|| game.ply()),
        clock: Some(clock(&game.clock(now), game.time_control().is_timed())),
        kind: Some(kind),
    }
}

/// What `event` says, as sent, and the ply it brought its game to (none
/// for the events that change no ply: the game's ply is theirs).
fn kind(event: &Event) -> (Option<u32>, pb::game_event::Kind) {
    use pb::game_event::Kind;
    match event {
        Event::MoveMade {
            ply,
            color,
            mv,
            fen,
            check,
        } => (
            Some(*ply),
            Kind::MoveMade(move_made(*ply, *color, mv, fen, *check)),
        ),
        Event::DrawOffered { by } => (
            None,
            Kind::DrawOffered(pb::DrawOffered {
                by: color_to_pb(*by) as i32,
            }),
        ),
        Event::DrawDeclined { by } => (
            None,
            Kind::DrawDeclined(pb::DrawDeclined {
                by: color_to_pb(*by) as i32,
            }),
        ),
        Event::FiftyMoveWarning { moves_remaining } => (
            None,
            Kind::FiftyMoveWarning(pb::FiftyMoveWarning {
                moves_remaining: *moves_remaining,
            }),
        ),
        Event::GameEnded(ending) => (None, Kind::GameEnded(ending.to_pb())),
        Event::TakebackOffered { by, to_ply } => (
            None,
            Kind::TakebackOffered(pb::TakebackOffered {
                by: color_to_pb(*by) as i32,
                to_ply: *to_ply,
            }),
        ),
        Event::TakebackDeclined { by } => (
            None,
            Kind::TakebackDeclined(pb::TakebackDeclined {
                by: color_to_pb(*by) as i32,
            }),
        ),
        Event::TakebackCancelled { by } => (
            None,
            Kind::TakebackCancelled(pb::TakebackCancelled {
                by: color_to_pb(*by) as i32,
            }),
        ),
        Event::TakenBack { by, ply, fen } => (
            Some(*ply),
            Kind::TakenBack(pb::TakenBack {
                by: color_to_pb(*by) as i32,
                ply: *ply,
                fen: fen.clone(),
                game: None,
            }),
        ),
    }
}

/// A takeback as sent, with the whole game it left (`game`, already taken
/// back).
pub fn taken_back(game: &Game, by: Color, ply: u32, fen: &str, now: Timestamp) -> pb::TakenBack {
    pb::TakenBack {
        by: color_to_pb(by) as i32,
        ply,
        fen: fen.to_owned(),
        game: Some(game_state(game, now, true)),
    }
}

/// The takeback request among `events`, as sent.
pub fn takeback_offered_among(events: &[Event]) -> Option<pb::TakebackOffered> {
    events.iter().find_map(|e| match kind(e).1 {
        pb::game_event::Kind::TakebackOffered(offered) => Some(offered),
        _ => None,
    })
}

/// The takeback among `events`, as sent, `game` being the game after it.
pub fn taken_back_among(game: &Game, events: &[Event], now: Timestamp) -> Option<pb::TakenBack> {
    events.iter().find_map(|e| match e {
        Event::TakenBack { by, ply, fen } => Some(taken_back(game, *by, *ply, fen, now)),
        _ => None,
    })
}

/// The move made among `events`, as sent.
pub fn move_made_among(events: &[Event]) -> Option<pb::MoveMade> {
    events
        .iter()
        .filter(|e| matches!(e, Event::MoveMade { .. }))
        .find_map(|e| match kind(e).1 {
            pb::game_event::Kind::MoveMade(made) => Some(made),
            _ => None,
        })
}

/// The ending among `events`, as sent.
pub fn ended_among(events: &[Event]) -> Option<pb::GameEnded> {
    events.iter().find_map(|e| match e {
        Event::GameEnded(ending) => Some(ending.to_pb()),
        _ => None,
    })
}

/// The announcement of a game that has just been created.
pub fn game_started(game: &Game) -> pb::GameEvent {
    notice(
        game,
        game.created_at(),
        pb::game_event::Kind::GameStarted(pb::GameStarted {
            game: Some(game_state(game, game.created_at(), true)),
        }),
    )
}

/// The engine failed to move for the computer in `game`; it is retried.
pub fn engine_failed(game: &Game, now: Timestamp, message: String) -> pb::GameEvent {
    notice(
        game,
        now,
        pb::game_event::Kind::EngineFailed(pb::EngineFailed { message }),
    )
}

/// An event that carries no game change.
pub fn notice(game: &Game, now: Timestamp, kind: pb::game_event::Kind) -> pb::GameEvent {
    pb::GameEvent {
        game_id: game.id().to_string(),
        ply: game.ply(),
        clock: Some(clock(&game.clock(now), game.time_control().is_timed())),
        kind: Some(kind),
    }
}

impl From<Error> for Status {
    fn from(error: Error) -> Self {
        let message = error.to_string();
        match error {
            Error::NotFound(_) => Reason::NotFound.status(Code::NotFound, message),
            Error::Game(e) => {
                let (code, reason) = match e {
                    GameError::NotAPlayer => (Code::PermissionDenied, Reason::NotAPlayer),
                    GameError::NotYourTurn => (Code::FailedPrecondition, Reason::NotYourTurn),
                    GameError::GameOver => (Code::FailedPrecondition, Reason::GameOver),
                    GameError::Malformed(_) | GameError::UciOnly(_) => {
                        (Code::InvalidArgument, Reason::MalformedMove)
                    }
                    GameError::Illegal { .. } => (Code::FailedPrecondition, Reason::IllegalMove),
                    GameError::HintsNotAllowed => {
                        (Code::FailedPrecondition, Reason::HintsNotAllowed)
                    }
                    GameError::NoDrawsInRuleSet
                    | GameError::NoAbortInRuleSet
                    | GameError::NoDrawOffer
                    | GameError::NoRepetition
                    | GameError::TooLateToAbort
                    | GameError::NoTakebacksInRuleSet
                    | GameError::TakebacksNotAllowed
                    | GameError::NothingToTakeBack
                    | GameError::TakebackBeforeClocks
                    | GameError::TakebackPending
                    | GameError::NoTakebackRequest
                    | GameError::NoOwnTakebackRequest => {
                        (Code::FailedPrecondition, Reason::NotAllowed)
                    }
                    GameError::Unreplayable(_) => (Code::Internal, Reason::NotAllowed),
                    GameError::StalePly { .. } => (Code::FailedPrecondition, Reason::StalePosition),
                };
                reason.status(code, message)
            }
            Error::Setup(_) | Error::Invalid(_) => {
                Reason::InvalidRequest.status(Code::InvalidArgument, message)
            }
            Error::Engine(EngineError::Unavailable(_)) => {
                Reason::EngineUnavailable.status(Code::Unavailable, message)
            }
            Error::Engine(EngineError::Refused(_)) => {
                Reason::EngineUnavailable.status(Code::Internal, message)
            }
            Error::Store(store::StoreError::Corrupt { .. }) => Status::internal(message),
            // The shard passed to another replica while the call was made
            // here: nothing was stored, and the caller finds the new owner.
            Error::Store(store::StoreError::Fenced { shard, .. }) => routing::shard_moving(shard),
            Error::Store(_) | Error::Busy => Status::unavailable(message),
            Error::NotServed {
                game,
                shard,
                elsewhere: NotServed::Elsewhere(owner),
            } => routing::not_owner(game.as_str(), shard, owner.as_deref()),
            Error::NotServed {
                elsewhere: NotServed::Moving,
                shard,
                ..
            } => routing::shard_moving(shard),
            Error::NoShards => routing::no_shards(),
        }
    }
}
