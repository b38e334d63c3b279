//! Benchmark: BestMove at `movetime 500 depth 15` (what the uqchess server
//! asks for) from a fixed set of positions, with 8 concurrent callers, on a
//! pool of 1 and a pool of 2 processes measured in the same run (alternating
//! rounds), then one caller at a time to measure the dispatch overhead.
//!
//! ```text
//! cargo build --release -p chess-engine --examples
//! target/release/examples/throughput [--rounds 5] [--requests 48] [--callers 8] [--sequential 24]
//!     [--movetime 500] [--depth 15] [--raw-depth 18]
//! ```
//!
//! In the concurrent rounds every request is its own game, so each search
//! starts from a cleared hash and costs the same on either pool. The dispatch
//! overhead is the wall time of a request minus the search time Stockfish
//! itself reported: gRPC, validation, queue hand-off and UCI. With the pool
//! saturated it is computed per process as
//! `(elapsed × processes − Σ engine time) / requests` (and then includes the
//! `ucinewgame` hash clearing); the sequential phase (one caller, no game
//! switches) measures it per request.
//!
//! The machine may be shared, so the pools alternate round by round and the
//! median of the per-round ratios is reported next to the overall ratio; the
//! run ends by measuring how two Stockfish processes scale on the machine
//! without the service (`--raw-depth 0` skips it).

#[path = "support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use chess_proto::engine::v1::{self as pb, best_move_request::Strength};
use support::{Engine, flag, load_average};

/// Positions from Stockfish's own `bench` set: varied middlegames and endgames.
const POSITIONS: [&str; 12] = [
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 10",
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 11",
    "4rrk1/pp1n3p/3q2pQ/2p1pb2/2PP4/2P3N1/P2B2PP/4RRK1 b - - 7 19",
    "rq3rk1/ppp2ppp/1bnpb3/3N2B1/3NP3/7P/PPPQ1PP1/2KR3R w - - 7 14",
    "r1bq1r1k/1pp1n1pp/1p1p4/4p2Q/4Pp2/1BNP4/PPP2PPP/3R1RK1 w - - 2 14",
    "r3r1k1/2p2ppp/p1p1bn2/8/1q2P3/2NPQN2/PPP3PP/R4RK1 b - - 2 15",
    "r1bbk1nr/pp3p1p/2n5/1N4p1/2Np1B2/8/PPP2PPP/2KR1B1R w kq - 0 13",
    "r1bq1rk1/ppp1nppp/4n3/3p3Q/3P4/1BP1B3/PP1N2PP/R4RK1 w - - 1 16",
    "4r1k1/r1q2ppp/ppp2n2/4P3/5Rb1/1N1BQ3/PPP3PP/R5K1 w - - 1 17",
    "2rqkb1r/ppp2p2/2npb1p1/1N1Nn2p/2P1PP2/8/PP2B1PP/R1BQK2R b KQ - 0 11",
    "r1bq1r1k/b1p1npp1/p2p3p/1p6/3PP3/1B2NN2/PP3PPP/R2Q1RK1 w - - 1 16",
    "3r1rk1/p5pp/bpp1pp2/8/q1PP1P2/b3P3/P2NQRPP/1R2B1K1 b - - 6 22",
];

/// Request `i`. With `fresh`, each request is its own game, so the process
/// clears its hash first (`ucinewgame`) and every request costs the same
/// whichever process serves it; without, the hash carries over.
fn request(i: usize, fresh: bool, limits: pb::SearchLimits) -> pb::BestMoveRequest {
    pb::BestMoveRequest {
        position: Some(pb::Position {
            fen: POSITIONS[i % POSITIONS.len()].to_owned(),
            moves: Vec::new(),
        }),
        strength: Some(Strength::Limits(limits)),
        game_id: if fresh {
            format!("bench-{i}")
        } else {
            String::new()
        },
    }
}

/// One request's wall time and Stockfish's own search time.
#[derive(Clone, Copy, Debug)]
struct Timing {
    wall: Duration,
    engine: Duration,
}

type Client =
    chess_proto::engine::v1::engine_service_client::EngineServiceClient<tonic::transport::Channel>;

async fn timed(
    client: &Client,
    i: usize,
    fresh: bool,
    limits: pb::SearchLimits,
) -> anyhow::Result<Timing> {
    let mut client = client.clone();
    let started = Instant::now();
    let result = client
        .best_move(request(i, fresh, limits))
        .await?
        .into_inner()
        .result
        .ok_or_else(|| anyhow::anyhow!("no result"))?;
    Ok(Timing {
        wall: started.elapsed(),
        engine: Duration::from_millis(u64::from(result.engine_time_ms)),
    })
}

struct Round {
    elapsed: Duration,
    timings: Vec<Timing>,
}

/// `requests` requests from `callers` concurrent callers.
async fn saturate(
    engine: &Engine,
    requests: usize,
    callers: usize,
    limits: pb::SearchLimits,
) -> anyhow::Result<Round> {
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..callers {
        let next = next.clone();
        let client = engine.client.clone();
        tasks.spawn(async move {
            let mut timings = Vec::new();
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= requests {
                    return anyhow::Ok(timings);
                }
                timings.push(timed(&client, i, true, limits).await?);
            }
        });
    }
    let mut timings = Vec::new();
    while let Some(done) = tasks.join_next().await {
        timings.extend(done??);
    }
    Ok(Round {
        elapsed: started.elapsed(),
        timings,
    })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let rounds: usize = flag("--rounds", 5)?.max(1);
    let requests: usize = flag("--requests", 48)?;
    let callers: usize = flag("--callers", 8)?;
    let sequential: usize = flag("--sequential", 24)?;
    let limits = pb::SearchLimits {
        movetime_ms: flag("--movetime", 500)?,
        depth: flag("--depth", 15)?,
    };
    let raw_depth: u32 = flag("--raw-depth", 18)?;
    println!(
        "limits: movetime {} ms, depth {} (0: unset)",
        limits.movetime_ms, limits.depth
    );
    println!("load average before: {}", load_average());

    let pools = [1usize, 2];
    let mut engines = Vec::new();
    for size in pools {
        let engine = Engine::start(&["--pool-size".into(), size.to_string()]).await?;
        // Warm each process (NNUE, hash) before measuring.
        for i in 0..size * 2 {
            timed(&engine.client, i, true, limits).await?;
        }
        engines.push(engine);
    }

    let mut totals = [(Duration::ZERO, Duration::ZERO, 0usize); 2];
    let mut ratios = Vec::new();
    for round in 1..=rounds {
        let mut rates = [0.0; 2];
        for (index, size) in pools.iter().enumerate() {
            let result = saturate(&engines[index], requests, callers, limits).await?;
            let engine_total: Duration = result.timings.iter().map(|t| t.engine).sum();
            let overhead = (result.elapsed.as_secs_f64() * *size as f64
                - engine_total.as_secs_f64())
                / result.timings.len() as f64;
            println!(
                "round {round} pool {size}: {} requests in {:.2} s = {:.2} req/s; \
                 mean engine time {:.1} ms; overhead per request {:.2} ms",
                result.timings.len(),
                result.elapsed.as_secs_f64(),
                result.timings.len() as f64 / result.elapsed.as_secs_f64(),
                ms(engine_total) / result.timings.len() as f64,
                overhead * 1000.0
            );
            rates[index] = result.timings.len() as f64 / result.elapsed.as_secs_f64();
            totals[index].0 += result.elapsed;
            totals[index].1 += engine_total;
            totals[index].2 += result.timings.len();
        }
        ratios.push(rates[1] / rates[0]);
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "per-round ratios (pool 2 / pool 1): {}; median {:.2}x",
        ratios
            .iter()
            .map(|r| format!("{r:.2}"))
            .collect::<Vec<_>>()
            .join(" "),
        ratios[ratios.len() / 2]
    );
    let throughput =
        |(elapsed, _, n): (Duration, Duration, usize)| n as f64 / elapsed.as_secs_f64();
    let (one, two) = (throughput(totals[0]), throughput(totals[1]));
    println!(
        "throughput: pool 1 {one:.2} req/s, pool 2 {two:.2} req/s, ratio {:.2}x",
        two / one
    );
    for (index, size) in pools.iter().enumerate() {
        let (elapsed, engine_total, n) = totals[index];
        println!(
            "saturated overhead, pool {size}: {:.2} ms per request",
            (ms(elapsed) * *size as f64 - ms(engine_total)) / n as f64
        );
    }

    // One caller at a time on the pool of 1: wall minus Stockfish's time.
    let mut overheads = Vec::new();
    for i in 0..sequential {
        let t = timed(&engines[0].client, i, false, limits).await?;
        overheads.push(ms(t.wall) - ms(t.engine));
    }
    overheads.sort_by(f64::total_cmp);
    if !overheads.is_empty() {
        let mean = overheads.iter().sum::<f64>() / overheads.len() as f64;
        println!(
            "sequential overhead (wall - engine time) over {} requests: mean {mean:.2} ms, \
             median {:.2} ms, max {:.2} ms",
            overheads.len(),
            overheads[overheads.len() / 2],
            overheads[overheads.len() - 1]
        );
    }
    if raw_depth > 0 {
        raw_scaling(raw_depth).await?;
    }
    println!("load average after: {}", load_average());
    Ok(())
}

/// What the machine itself allows: nodes per second of one Stockfish
/// searching alone, and of two searching at once, without the service.
async fn raw_scaling(depth: u32) -> anyhow::Result<()> {
    let stockfish = chess_engine::default_stockfish_path();
    let search = |stockfish: std::path::PathBuf| async move {
        let mut engine =
            chess_uci::Engine::start(&stockfish, chess_uci::Timeouts::default()).await?;
        engine.new_game().await?;
        engine.position(None, &[]).await?;
        let mut search = engine
            .go(&chess_uci::Go {
                depth: Some(depth),
                ..chess_uci::Go::default()
            })
            .await?;
        let mut nps = 0;
        while let Some(event) = search.next().await? {
            if let chess_uci::SearchEvent::Info(info) = event {
                nps = info.nps.unwrap_or(nps);
            }
        }
        anyhow::Ok(nps)
    };
    let alone = search(stockfish.clone()).await?;
    let (a, b) = tokio::try_join!(search(stockfish.clone()), search(stockfish))?;
    println!(
        "raw Stockfish (depth {depth} from the start, no service): one alone {alone} nps; \
         two at once {a} + {b} nps = {:.2}x one alone",
        (a + b) as f64 / alone as f64
    );
    Ok(())
}
