//! Benchmark: a short match between each pair of adjacent levels (1 v 2, …,
//! 7 v 8) through the real service, to show each level scoring more than the
//! one below it.
//!
//! ```text
//! cargo build --release -p chess-engine --examples
//! target/release/examples/level_match [--games 16] [--from 1] [--to 8] [--concurrency 2] [--max-plies 300]
//! ```
//!
//! Each pair plays `--games` games: openings from a fixed list, each played
//! twice with colours swapped. Games end by checkmate, stalemate,
//! insufficient material, threefold repetition or the fifty-move rule, and
//! are adjudicated drawn after `--max-plies` plies. A win counts 1, a draw ½.

#[path = "support/mod.rs"]
mod support;

use std::{collections::HashMap, sync::Arc, time::Instant};

use anyhow::Context as _;
use chess_proto::engine::v1::{self as pb, best_move_request::Strength};
use shakmaty::{Chess, Color, EnPassantMode, Position as _, fen::Epd, uci::UciMove};
use support::{Engine, flag, load_average};

/// Short, varied openings (UCI moves from the start).
const OPENINGS: [&[&str]; 8] = [
    &["e2e4", "e7e5"],
    &["d2d4", "d7d5"],
    &["e2e4", "c7c5"],
    &["c2c4", "e7e5"],
    &["g1f3", "d7d5"],
    &["e2e4", "e7e6"],
    &["d2d4", "g8f6"],
    &["e2e4", "c7c6"],
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Won(Color),
    Drawn,
}

/// Plays one game; `white` and `black` are levels.
async fn play(
    mut client: pb::engine_service_client::EngineServiceClient<tonic::transport::Channel>,
    game_id: String,
    opening: &[&str],
    white: u32,
    black: u32,
    max_plies: usize,
) -> anyhow::Result<(Outcome, usize)> {
    let mut position = Chess::default();
    let mut moves: Vec<String> = Vec::new();
    let mut seen: HashMap<String, u32> = HashMap::new();
    for m in opening {
        let m = m.parse::<UciMove>()?.to_move(&position)?;
        position.play_unchecked(m);
        moves.push(opening[moves.len()].to_owned());
    }
    loop {
        if position.is_checkmate() {
            return Ok((Outcome::Won(!position.turn()), moves.len()));
        }
        if position.is_stalemate()
            || position.is_insufficient_material()
            || position.halfmoves() >= 100
            || moves.len() >= max_plies
        {
            return Ok((Outcome::Drawn, moves.len()));
        }
        let key = Epd::from_position(&position, EnPassantMode::Legal).to_string();
        let count = seen.entry(key).or_insert(0);
        *count += 1;
        if *count >= 3 {
            return Ok((Outcome::Drawn, moves.len()));
        }
        let level = match position.turn() {
            Color::White => white,
            Color::Black => black,
        };
        let found = client
            .best_move(pb::BestMoveRequest {
                position: Some(pb::Position {
                    fen: String::new(),
                    moves: moves.clone(),
                }),
                strength: Some(Strength::Level(level)),
                game_id: game_id.clone(),
            })
            .await?
            .into_inner()
            .result
            .context("no result")?;
        let m = found
            .best_move
            .parse::<UciMove>()?
            .to_move(&position)
            .with_context(|| format!("illegal move {}", found.best_move))?;
        position.play_unchecked(m);
        moves.push(found.best_move);
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let games: usize = flag("--games", 16)?;
    let from: u32 = flag("--from", 1)?;
    let to: u32 = flag("--to", 8)?;
    let concurrency: usize = flag("--concurrency", 2)?;
    let max_plies: usize = flag("--max-plies", 300)?;
    println!("load average before: {}", load_average());
    let engine = Engine::start(&["--pool-size".into(), concurrency.to_string()]).await?;
    let slots = Arc::new(tokio::sync::Semaphore::new(concurrency));
    let started = Instant::now();
    let mut all_ok = true;
    for lower in from..to {
        let upper = lower + 1;
        let pair_started = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for game in 0..games {
            let opening = OPENINGS[(game / 2) % OPENINGS.len()];
            // Even games: the higher level has white.
            let (white, black) = if game % 2 == 0 {
                (upper, lower)
            } else {
                (lower, upper)
            };
            let client = engine.client.clone();
            let slots = slots.clone();
            tasks.spawn(async move {
                let _slot = slots.acquire_owned().await?;
                let id = format!("match-{lower}-{upper}-{game}");
                let (outcome, plies) = play(client, id, opening, white, black, max_plies).await?;
                anyhow::Ok((white, outcome, plies))
            });
        }
        let (mut wins, mut draws, mut losses, mut plies_total) = (0u32, 0u32, 0u32, 0usize);
        while let Some(done) = tasks.join_next().await {
            let (white, outcome, plies) = done??;
            plies_total += plies;
            let upper_colour = if white == upper {
                Color::White
            } else {
                Color::Black
            };
            match outcome {
                Outcome::Drawn => draws += 1,
                Outcome::Won(colour) if colour == upper_colour => wins += 1,
                Outcome::Won(_) => losses += 1,
            }
        }
        let score = f64::from(wins) + f64::from(draws) / 2.0;
        let played = wins + draws + losses;
        all_ok &= score > f64::from(played) / 2.0;
        println!(
            "level {upper} v level {lower}: {upper} scores {score}/{played} \
             (+{wins} ={draws} -{losses}), {:.0}%; mean {:.0} plies; {:.0} s",
            100.0 * score / f64::from(played.max(1)),
            plies_total as f64 / f64::from(played.max(1)),
            pair_started.elapsed().as_secs_f64()
        );
    }
    println!(
        "every higher level scored more: {all_ok}; total {:.0} s",
        started.elapsed().as_secs_f64()
    );
    println!("load average after: {}", load_average());
    Ok(())
}
