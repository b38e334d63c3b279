//! The engine's own limit: one bare Stockfish process running, back to back,
//! the search a best-move hint asks the engine service for, with the options
//! the service's processes get — the rate the pool's hints are measured
//! against.

use std::time::{Duration, Instant};

use chess_engine::limits::{Limits, SearchPlan};
use chess_internal_clients::FULL_STRENGTH_SEARCH;
use chess_uci::Engine;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// How the engine service runs its processes with its default flags.
pub fn service_defaults() -> chess_engine::PoolConfig {
    <chess_engine::Config as clap::Parser>::parse_from(["chess-engine"]).pool()
}

/// The search a best-move hint asks for, as the service runs it.
pub fn hint_search() -> SearchPlan {
    let search = FULL_STRENGTH_SEARCH;
    SearchPlan::full_strength(
        Limits::new(search.movetime_ms, search.depth).expect("the hint's limits are valid"),
        1,
    )
}

/// Searches per second of `processes` Stockfish processes searching at
/// once, each started as the engine service starts its own and searching
/// the starting position as a hint does (a new game each time, as the
/// pool's processes see hints for one game after another's) for `duration`.
pub async fn bare_stockfish(processes: usize, duration: Duration) -> Result<f64, Error> {
    let mut each = Vec::with_capacity(processes);
    for _ in 0..processes {
        each.push(tokio::spawn(one_bare(duration)));
    }
    let mut total = 0.0;
    for process in each {
        total += process.await??;
    }
    Ok(total)
}

async fn one_bare(duration: Duration) -> Result<f64, Error> {
    let pool = service_defaults();
    let plan = hint_search();
    let mut engine = Engine::start(&pool.stockfish, pool.timeouts).await?;
    chess_engine::configure(&mut engine, pool.threads, pool.hash_mb).await?;
    let started = Instant::now();
    let mut searches = 0u32;
    while started.elapsed() < duration {
        engine.new_game().await?;
        engine.position(None, &[]).await?;
        engine.go(&plan.go).await?.finish().await?;
        searches += 1;
    }
    let rate = f64::from(searches) / started.elapsed().as_secs_f64();
    engine.quit().await;
    Ok(rate)
}
