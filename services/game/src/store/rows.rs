//! Domain values to rows and back: the stored spellings of colours, results,
//! time controls, players and rule sets; a new game's row; the writes that
//! make a game's events durable; a game rebuilt from its rows.

use chess_domain::{GameStatus, RuleSet, TimeControl, Timestamp};
use sea_orm::Set;
use shakmaty::Color;

use super::{StoreError, WriteOp, clock_credits, games, moves, results_outbox, takebacks};
use crate::model::{
    Credit, Ending, Event, Game, GameResult, GameSetup, Participant, PlayedMove, Rewind,
    Termination,
};

fn encode_rules(rules: RuleSet) -> &'static str {
    match rules {
        RuleSet::Standard => "standard",
        RuleSet::Uqchess => "uqchess",
    }
}

/// The row of a new game.
pub fn new_game_row(game: &Game, idempotency_key: Option<String>) -> games::ActiveModel {
    let (white_kind, white_id, white_name, white_level) = game.white().to_stored();
    let (black_kind, black_id, black_name, black_level) = game.black().to_stored();
    games::ActiveModel {
        id: Set(game.id().to_string()),
        white_kind: Set(white_kind.to_owned()),
        white_id: Set(white_id),
        white_name: Set(white_name),
        white_level: Set(white_level),
        black_kind: Set(black_kind.to_owned()),
        black_id: Set(black_id),
        black_name: Set(black_name),
        black_level: Set(black_level),
        time_control: Set(game.time_control().storage_name()),
        speed: Set(game.time_control().speed().as_str().to_owned()),
        rules: Set(encode_rules(game.rules()).to_owned()),
        rated: Set(game.rated()),
        hints_allowed: Set(game.hints_allowed()),
        initial_fen: Set(game.initial_fen().to_owned()),
        fen: Set(game.fen()),
        ply: Set(game.ply() as i32),
        status: Set(GameStatus::Active.as_str().to_owned()),
        result: Set(None),
        termination: Set(None),
        draw_offer: Set(None),
        created_at: Set(game.created_at().millis()),
        updated_at: Set(game.created_at().millis()),
        finished_at: Set(None),
        idempotency_key: Set(idempotency_key),
        shard: Set(i32::from(chess_shards::shard_of(game.id()))),
    }
}

/// The write that stores time given back to a game's side to move.
pub fn credit_op(game: &Game, credit: &Credit) -> WriteOp {
    WriteOp::InsertCredit(clock_credits::Model {
        game_id: game.id().to_string(),
        granted_at: credit.granted_at.millis(),
        ply: credit.ply as i32,
        credit_ms: credit.ms,
    })
}

/// The writes that make `events` (already applied to `game`) durable.
pub fn ops_for(game: &Game, events: &[Event], now: Timestamp) -> Vec<WriteOp> {
    let mut ops = Vec::with_capacity(events.len() + 2);
    let mut changed = false;
    for event in events {
        match event {
            Event::MoveMade { ply, mv, .. } => {
                // The moves table is the record of play; the game's row is
                // only rewritten when its status or draw offer changes.
                ops.push(WriteOp::InsertMove(moves::Model {
                    game_id: game.id().to_string(),
                    ply: *ply as i32,
                    uci: mv.uci.clone(),
                    san: mv.san.clone(),
                    submitted: mv.submitted.clone(),
                    played_at: mv.at.millis(),
                    clock_after_ms: mv.clock_after,
                }));
            }
            Event::DrawOffered { .. } | Event::DrawDeclined { .. } => changed = true,
            // Takeback requests, as rematch offers, live in memory only.
            Event::FiftyMoveWarning { .. }
            | Event::TakebackOffered { .. }
            | Event::TakebackDeclined { .. }
            | Event::TakebackCancelled { .. } => {}
            Event::TakenBack { ply, .. } => {
                changed = true;
                if let Some(rewind) = game.rewinds().iter().find(|r| r.ply == *ply) {
                    ops.push(WriteOp::TakeBack(takebacks::Model {
                        game_id: game.id().to_string(),
                        ply: rewind.ply as i32,
                        taken_at: rewind.at.millis(),
                        white_ms: rewind.remaining.white,
                        black_ms: rewind.remaining.black,
                    }));
                }
            }
            Event::GameEnded(ending) => {
                changed = true;
                if let (
                    Some(result),
                    Participant::Registered { id: white_id, .. },
                    Participant::Registered { id: black_id, .. },
                ) = (ending.result, game.white(), game.black())
                {
                    ops.push(WriteOp::InsertResult(results_outbox::ActiveModel {
                        game_id: Set(game.id().to_string()),
                        white_id: Set(white_id.to_string()),
                        black_id: Set(black_id.to_string()),
                        result: Set(result.as_str().to_owned()),
                        speed: Set(game.time_control().speed().as_str().to_owned()),
                        // An untimed game stored as rated before untimed
                        // games had their category is reported unrated.
                        rated: Set(game.rated() && game.time_control().speed().is_rated()),
                        finished_at: Set(ending.at.millis()),
                    }));
                }
            }
        }
    }
    if changed {
        let ending = game.ending();
        ops.push(WriteOp::UpdateGame(Box::new(games::ActiveModel {
            id: Set(game.id().to_string()),
            fen: Set(game.fen()),
            ply: Set(game.ply() as i32),
            status: Set(if ending.is_some() {
                GameStatus::Finished
            } else {
                GameStatus::Active
            }
            .as_str()
            .to_owned()),
            result: Set(ending.and_then(|e| e.result).map(|r| r.as_str().to_owned())),
            termination: Set(ending.map(|e| e.termination.as_str().to_owned())),
            draw_offer: Set(game
                .draw_offer()
                .map(|c| chess_domain::color_name(c).to_owned())),
            finished_at: Set(ending.map(|e| e.at.millis())),
            updated_at: Set(now.millis()),
            ..Default::default()
        })));
    }
    ops
}

/// The participant stored in `row` for `side`.
fn stored_player(row: &games::Model, side: Color) -> Option<Participant> {
    let (kind, id, name, level) = match side {
        Color::White => (
            &row.white_kind,
            &row.white_id,
            &row.white_name,
            row.white_level,
        ),
        Color::Black => (
            &row.black_kind,
            &row.black_id,
            &row.black_name,
            row.black_level,
        ),
    };
    Participant::from_stored(kind, id.clone(), name.clone(), level)
}

/// The setup and ending stored in `row`.
pub fn row_setup(row: &games::Model) -> Result<(GameSetup, Option<Ending>), StoreError> {
    let corrupt = |what: &str| StoreError::Corrupt {
        id: row.id.clone(),
        reason: format!("bad {what}"),
    };
    let white = stored_player(row, Color::White).ok_or_else(|| corrupt("white player"))?;
    let black = stored_player(row, Color::Black).ok_or_else(|| corrupt("black player"))?;
    let time_control =
        TimeControl::from_storage(&row.time_control).ok_or_else(|| corrupt("time control"))?;
    let rules = match row.rules.as_str() {
        "standard" => RuleSet::Standard,
        "uqchess" => RuleSet::Uqchess,
        _ => return Err(corrupt("rule set")),
    };
    let ending = match (&row.termination, row.finished_at) {
        (Some(termination), Some(at)) => Some(Ending {
            result: row.result.as_deref().and_then(GameResult::from_name),
            termination: Termination::from_name(termination)
                .ok_or_else(|| corrupt("termination"))?,
            at: Timestamp::from_millis(at),
        }),
        _ => None,
    };
    let setup = GameSetup {
        white,
        black,
        time_control,
        rules,
        rated: row.rated,
        allow_hints: row.hints_allowed,
        initial_fen: Some(row.initial_fen.clone()),
    };
    Ok((setup, ending))
}

pub(super) fn restore(
    row: games::Model,
    moves: Vec<moves::Model>,
    credits: Vec<clock_credits::Model>,
    rewinds: Vec<takebacks::Model>,
) -> Result<Game, StoreError> {
    let (setup, ending) = row_setup(&row)?;
    let played = moves
        .into_iter()
        .map(|m| PlayedMove {
            uci: m.uci,
            san: m.san,
            submitted: m.submitted,
            at: Timestamp::from_millis(m.played_at),
            clock_after: m.clock_after_ms,
        })
        .collect();
    let credits = credits
        .into_iter()
        .map(|c| Credit {
            ply: c.ply.max(0) as u32,
            ms: c.credit_ms,
            granted_at: Timestamp::from_millis(c.granted_at),
        })
        .collect();
    let rewinds = rewinds
        .into_iter()
        .map(|r| Rewind {
            ply: r.ply.max(0) as u32,
            at: Timestamp::from_millis(r.taken_at),
            remaining: shakmaty::ByColor {
                white: r.white_ms,
                black: r.black_ms,
            },
        })
        .collect();
    let draw_offer = row
        .draw_offer
        .as_deref()
        .and_then(chess_domain::color_from_name);
    Game::restore_with(
        chess_domain::GameId::trusted(row.id.clone()),
        setup,
        Timestamp::from_millis(row.created_at),
        played,
        credits,
        rewinds,
        draw_offer,
        ending,
    )
    .map_err(|e| StoreError::Corrupt {
        id: row.id,
        reason: e.to_string(),
    })
}
