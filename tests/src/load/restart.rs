//! `chess-load resume`: how long the game service takes to resume stored
//! active games when it starts, and its memory per active game, from
//! stacks started on a data directory holding that many games (seeded by
//! [`super::resume::seed`]) beside stacks started empty; then the same
//! games once evicted from memory, read back.

use std::time::{Duration, Instant};

use crate::StackProcess;

use super::{
    resume::seed,
    scenario::{Error, Setup, service_usage},
    stats::{Samples, ms},
};

/// Flags of `chess-load resume`.
#[derive(Clone, Copy, Debug, clap::Args)]
pub struct ResumeArgs {
    /// Active games stored.
    #[arg(long, default_value_t = 10_000)]
    pub games: usize,
    /// Moves played in each.
    #[arg(long, default_value_t = 40)]
    pub plies: u32,
    /// Starts of each kind.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Leaves the database as a crash would: the second half of each
    /// game's moves written as moves are while played, and the file
    /// copied with them still in the game service's log of moves.
    #[arg(long)]
    pub after_crash: bool,
}

/// The game service's RSS in KiB, 0 if it cannot be read.
fn game_rss(stack: &StackProcess) -> u64 {
    service_usage(stack, "chess-game").map_or(0, |u| u.rss_kib)
}

/// Runs the scenario.
pub async fn run(setup: &Setup, args: &ResumeArgs) -> Result<(), Error> {
    // Memory the start-up used for a moment goes back to the system within
    // seconds (jemalloc's background thread).
    const SETTLE: Duration = Duration::from_secs(15);
    let ResumeArgs {
        games,
        plies,
        runs,
        after_crash,
    } = *args;
    if setup.game_replicas > 1 || setup.database_url.is_some() {
        return Err("resume measures the lone game service on its SQLite file".into());
    }
    let mut empty = Vec::new();
    let mut full = Vec::new();
    let mut rss = (Vec::new(), Vec::new());
    for run in 0..runs {
        let data = tempfile::tempdir()?;
        let seeding = Instant::now();
        seed(&data.path().join("game.sqlite"), games, plies, after_crash).await?;
        if run == 0 {
            println!(
                "stored {games} active games of {plies} plies in {}",
                ms(seeding.elapsed())
            );
        }
        for (dir, stored) in [(data, true), (tempfile::tempdir()?, false)] {
            let started = Instant::now();
            let stack = setup.start_in(dir, &[]).await;
            let took = started.elapsed();
            tokio::time::sleep(SETTLE).await;
            let game_rss = game_rss(&stack);
            let (times, sizes) = if stored {
                (&mut full, &mut rss.0)
            } else {
                (&mut empty, &mut rss.1)
            };
            times.push(took);
            sizes.push(game_rss);
            println!(
                "  start to SERVING, {}: {}   game service RSS {game_rss} KiB {} s later",
                if stored { "with the games" } else { "empty" },
                ms(took),
                SETTLE.as_secs()
            );
            stack.stop().await;
        }
    }
    let median = |v: &mut Vec<Duration>| {
        v.sort_unstable();
        v[v.len() / 2]
    };
    let (full, empty) = (median(&mut full), median(&mut empty));
    println!(
        "median: {} with {games} games, {} empty: resuming them took {}",
        ms(full),
        ms(empty),
        ms(full.saturating_sub(empty))
    );
    let mean = |v: &[u64]| v.iter().sum::<u64>() as f64 / v.len().max(1) as f64;
    println!(
        "game service RSS: {:.0} KiB with the games, {:.0} KiB empty: {:.1} KiB per active game",
        mean(&rss.0),
        mean(&rss.1),
        (mean(&rss.0) - mean(&rss.1)) / games.max(1) as f64
    );
    evicted(setup, games, plies, mean(&rss.1)).await
}

/// The same games once they have left memory (evicted after `EVICT` idle),
/// and read back: each game asked for again must come back with every
/// stored move. `empty_rss` is the service's RSS with no games, in KiB.
async fn evicted(setup: &Setup, games: usize, plies: u32, empty_rss: f64) -> Result<(), Error> {
    const EVICT: &str = "5";
    // Evicted after 5 s; what they used goes back to the system within
    // seconds more.
    const SETTLE: Duration = Duration::from_secs(20);
    const READ_BACK: usize = 1000;
    let data = tempfile::tempdir()?;
    let seeded = seed(&data.path().join("game.sqlite"), games, plies, false).await?;
    let stack = setup
        .start_in(data, &[("CHESS_GAME_EVICT_AFTER_SECS", EVICT)])
        .await;
    tokio::time::sleep(SETTLE).await;
    let rss = game_rss(&stack);
    println!(
        "evicted after {EVICT} s idle: game service RSS {rss} KiB {} s after start, {:.2} KiB per active game",
        SETTLE.as_secs(),
        (rss as f64 - empty_rss) / games.max(1) as f64
    );
    let key = chess_runtime::InternalKey::read(&stack.data.path().join("internal.key"))?;
    let signer = chess_runtime::Signer::new(key, "gateway");
    let channel = StackProcess::channel(stack.internal("game")).await;
    let mut client =
        chess_proto::game::v1::game_service_client::GameServiceClient::with_interceptor(
            channel,
            signer.bound(None, None),
        );
    let mut latency = Samples::default();
    let step = (seeded.len() / READ_BACK).max(1);
    let mut lost = 0;
    for (id, ply) in seeded.iter().step_by(step) {
        let sent = Instant::now();
        let game = client
            .get_game(chess_proto::game::v1::GetGameRequest {
                game_id: id.clone(),
            })
            .await?
            .into_inner()
            .game
            .ok_or("GetGame answered no game")?;
        latency.record(sent.elapsed());
        if game.moves.len() != *ply as usize {
            lost += 1;
        }
    }
    if let Some(s) = latency.summary() {
        println!(
            "read back {} evicted games one at a time: {}; {lost} came back with moves missing",
            s.count,
            s.line(None)
        );
    }
    stack.stop().await;
    if lost > 0 {
        return Err(format!("{lost} evicted games came back with moves missing").into());
    }
    Ok(())
}
