//! `chess-load`: drives the whole system on this machine and reports how it
//! holds up, beside baselines measured in the same run.
//!
//! Every scenario starts its own `chess-stack` from the binaries next to this
//! program (build with `cargo build --release --workspace --bins`), so the
//! service processes' CPU time and memory can be read from `/proc`.
//!
//! ```text
//! chess-load baseline
//! chess-load startup [--runs 5]
//! chess-load moves [--games 1000] [--duration 60] [--warmup 5] [--hint-clients 0]
//! chess-load grpc [--games 100] [--duration 30] [--warmup 5] [--connection-per-player]
//! chess-load latency [--moves 2000]
//! chess-load hints [--games 50] [--duration 20] [--hint-clients 8] [--think-ms 0] [--rounds 3]
//! chess-load idle [--connections 10000]
//! chess-load open [--front uqchess|grpc] [--games N] [--loads 10,50,80] [--duration 20]
//! chess-load resume [--games 10000] [--plies 40] [--runs 3]
//! ```
//!
//! `--game-replicas N --database-url postgres://…` runs any scenario
//! against N replicas of the game service sharing one PostgreSQL database.

use std::{
    collections::BTreeMap,
    process::ExitCode,
    sync::Arc,
    time::{Duration, Instant},
};

use chess_e2e::{
    StackProcess,
    load::{
        baseline, engine,
        procs::{self, Usage},
        stats::{Samples, ms},
        uqchess::{self, GameFigures, Pace, Window},
    },
};

/// jemalloc, as the services use: the load generator shares the machine's
/// two cores with the services it measures, and its many short-lived
/// requests and events cost less with it than with glibc's allocator.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Load scenarios.
#[derive(Debug, clap::Parser)]
#[command(
    name = "chess-load",
    about = "Load generator and benchmarks for the chess system"
)]
struct Cli {
    #[command(subcommand)]
    scenario: Scenario,
    /// Extra flags for chess-stack (repeat for several), e.g.
    /// `--stack-arg=--engine-pool-size=1`.
    #[arg(long, global = true, allow_hyphen_values = true)]
    stack_arg: Vec<String>,
    /// Replicas of the game service (`chess-stack --game-replicas`); more
    /// than one needs --database-url.
    #[arg(long, global = true, default_value_t = 1)]
    game_replicas: u16,
    /// The game service's database (`chess-stack --database-url`), e.g.
    /// `postgres://postgres:postgres@127.0.0.1:5432/load` (default: SQLite
    /// in the stack's data directory).
    #[arg(long, global = true)]
    database_url: Option<String>,
    /// Worker threads of chess-load's own runtime (default: one per core).
    /// Its CPU shares the cores with the services it measures.
    #[arg(long, global = true, value_parser = clap::value_parser!(u16).range(1..))]
    load_workers: Option<u16>,
}

#[derive(Debug, clap::Subcommand)]
enum Scenario {
    /// The loopback TCP echo and tonic unary round trips alone.
    Baseline {
        /// Round trips of each kind.
        #[arg(long, default_value_t = 20_000)]
        rounds: usize,
    },
    /// Time from starting chess-stack to every service SERVING.
    Startup {
        /// Stacks started one after the other.
        #[arg(long, default_value_t = 5)]
        runs: usize,
    },
    /// Concurrent human games through the uqchess front: moves/s and
    /// latencies.
    Moves {
        /// Games played at once.
        #[arg(long, default_value_t = 1000)]
        games: usize,
        /// Seconds measured.
        #[arg(long, default_value_t = 60)]
        duration: u64,
        /// Seconds played before measuring.
        #[arg(long, default_value_t = 5)]
        warmup: u64,
        /// Clients asking for engine hints meanwhile.
        #[arg(long, default_value_t = 0)]
        hint_clients: usize,
        /// Plies after which a game is resigned and replaced (games are
        /// otherwise kept going: random moves avoid ending them).
        #[arg(long, default_value_t = 100_000)]
        max_plies: u32,
    },
    /// Concurrent games between registered players through the public gRPC
    /// API (challenge, accept, MakeMove, StreamEvents).
    Grpc {
        /// Games played at once.
        #[arg(long, default_value_t = 100)]
        games: usize,
        /// Seconds measured.
        #[arg(long, default_value_t = 30)]
        duration: u64,
        /// Seconds of play before measuring (the players register and sign
        /// in before that).
        #[arg(long, default_value_t = 5)]
        warmup: u64,
        /// Each player on an HTTP/2 connection of its own, as clients
        /// reaching the gateway directly; by default every player's calls
        /// share one, as behind a proxy that multiplexes them.
        #[arg(long)]
        connection_per_player: bool,
    },
    /// One game at a time: the uncontended move latency.
    Latency {
        /// Moves timed.
        #[arg(long, default_value_t = 2000)]
        moves: usize,
    },
    /// The engine pool's rate of hints against bare Stockfish, then human
    /// moves with and without the pool saturated by hints, in phases
    /// alternated against the same system.
    Hints {
        /// Games played at once.
        #[arg(long, default_value_t = 50)]
        games: usize,
        /// Seconds measured in each round and each phase.
        #[arg(long, default_value_t = 20)]
        duration: u64,
        /// Clients asking for engine hints in the saturated phase.
        #[arg(long, default_value_t = 8)]
        hint_clients: usize,
        /// Each player's thinking time before a move, in milliseconds (0:
        /// the games play as fast as the system answers, using every core).
        #[arg(long, default_value_t = 0)]
        think_ms: u64,
        /// Rounds of the pool with hint clients alone, each `duration` long
        /// and each compared with one bare Stockfish measured just before
        /// and just after it (the machine's speed drifts).
        #[arg(long, default_value_t = 3, value_parser = at_least_one)]
        rounds: usize,
        /// Pairs of human phases, one without hint clients and one with,
        /// alternated; each side's moves are pooled, so its p99 rests on
        /// this many times more of them than one phase has.
        #[arg(long, default_value_t = 3, value_parser = at_least_one)]
        pairs: usize,
    },
    /// Open loop: moves arriving at random (a Poisson process per game) at
    /// fractions of the front's maximum, itself measured first in the same
    /// run by a closed loop of the same games; latency from each move's due
    /// time.
    Open {
        /// The front the games are played through.
        #[arg(long, value_enum, default_value_t = Front::Uqchess)]
        front: Front,
        /// Games played at once (default: 1000 through uqchess, 200 through
        /// gRPC).
        #[arg(long)]
        games: Option<usize>,
        /// Loads, in percent of the measured maximum.
        #[arg(long, value_delimiter = ',', default_values_t = [10, 50, 80])]
        loads: Vec<u32>,
        /// Seconds measured at each load.
        #[arg(long, default_value_t = 20)]
        duration: u64,
        /// Seconds of the closed loop that measures the maximum.
        #[arg(long, default_value_t = 10)]
        probe: u64,
        /// The maximum in moves/s, instead of measuring it.
        #[arg(long)]
        max: Option<f64>,
        /// Writes each load's moves to `<TIMELINE>-<load>.csv`: when each
        /// fell due (µs since the first) and its latency (µs), for
        /// `scripts/timeline-stalls`; prints when the first fell due, to
        /// line it up with logs and profiles.
        #[arg(long)]
        timeline: Option<std::path::PathBuf>,
        /// Through gRPC, each player on an HTTP/2 connection of its own, as
        /// clients reaching the gateway directly; by default every player's
        /// calls share one, as behind a proxy that multiplexes them.
        #[arg(long)]
        connection_per_player: bool,
    },
    /// Time for the game service to resume stored active games when it
    /// starts, and its memory per active game: stacks started on a data
    /// directory holding that many games, beside stacks started empty.
    Resume {
        /// Active games stored.
        #[arg(long, default_value_t = 10_000)]
        games: usize,
        /// Moves played in each.
        #[arg(long, default_value_t = 40)]
        plies: u32,
        /// Starts of each kind.
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Leaves the database as a crash would: the second half of each
        /// game's moves written as moves are while played, and the file
        /// copied with them still in the game service's log of moves.
        #[arg(long)]
        after_crash: bool,
    },
    /// Gateway memory per idle connection, and after they leave.
    Idle {
        /// Idle uqchess connections opened.
        #[arg(long, default_value_t = 10_000)]
        connections: usize,
    },
}

type Error = Box<dyn std::error::Error + Send + Sync>;

/// A count that must be one or more.
fn at_least_one(arg: &str) -> Result<usize, String> {
    match arg.parse::<usize>() {
        Ok(0) => Err("must be 1 or more".to_owned()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// Plies after which a game through the public API is resigned and
/// replaced, so games keep going on the move path instead of drifting into
/// long endgames.
const GRPC_MAX_PLIES: u32 = 200;

/// The players of an open loop, by the front they play through: uqchess
/// players connect for each phase, the public API's are signed up once.
enum Players {
    Uqchess,
    Grpc(chess_e2e::load::grpc::Pairs),
}

/// A front of the server the load goes through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Front {
    /// The uqchess line protocol.
    Uqchess,
    /// The public gRPC API.
    Grpc,
}

fn stack_args(cli: &Cli) -> Vec<String> {
    let mut args = cli.stack_arg.clone();
    if cli.game_replicas > 1 {
        args.extend(["--game-replicas".to_owned(), cli.game_replicas.to_string()]);
    }
    if let Some(url) = &cli.database_url {
        args.extend(["--database-url".to_owned(), url.clone()]);
    }
    args
}

async fn start_stack(cli: &Cli) -> (StackProcess, Duration) {
    let started = Instant::now();
    // Every load client registers and signs in from 127.0.0.1: the gateway's
    // per-address limits are for the open internet, not for this.
    let unlimited = [
        ("CHESS_GATEWAY_REGISTRATIONS_PER_ADDRESS", "0"),
        ("CHESS_GATEWAY_LOGIN_FAILURES_PER_ADDRESS", "0"),
    ];
    let args = stack_args(cli);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let stack = StackProcess::start(&args, &unlimited).await;
    (stack, started.elapsed())
}

fn print_usage(
    title: &str,
    usage: &BTreeMap<String, (usize, Usage)>,
    cpu: &BTreeMap<String, f64>,
    seconds: f64,
) {
    println!("{title}");
    for (name, (count, u)) in usage {
        let used = cpu.get(name).copied().unwrap_or(0.0);
        let label = if *count > 1 {
            format!("{name} x{count}")
        } else {
            name.clone()
        };
        println!(
            "  {label:<22} cpu {used:7.2} s ({:5.1}% of one core)  rss {:>8} KiB  peak {:>8} KiB",
            100.0 * used / seconds,
            u.rss_kib,
            u.peak_rss_kib
        );
    }
}

async fn baselines() -> Result<(Duration, Duration), Error> {
    let (tcp, grpc) = baseline::medians(20_000).await.map_err(|e| e.to_string())?;
    println!(
        "baseline: loopback TCP echo p50 {}   tonic unary p50 {}",
        ms(tcp),
        ms(grpc)
    );
    Ok((tcp, grpc))
}

fn report_games(figures: &GameFigures, seconds: f64, tcp: Duration, grpc: Duration) {
    println!(
        "moves: {} in {seconds:.0} s = {:.0} moves/s; games finished {}",
        figures.moves,
        figures.moves as f64 / seconds,
        figures.games
    );
    if let Some(s) = figures.move_latency.summary() {
        println!(
            "  move (send -> ok)          {}",
            s.line(Some(("tonic unary", grpc)))
        );
        println!(
            "  {:27}(p50 = {:.1}x TCP echo)",
            "",
            s.p50.as_secs_f64() / tcp.as_secs_f64().max(1e-9)
        );
    }
    if let Some(s) = figures.notify_latency.summary() {
        println!(
            "  opponent notified          {}",
            s.line(Some(("tonic unary", grpc)))
        );
    }
    for e in figures.errors.iter().take(5) {
        println!("  error: {e}");
    }
    if figures.errors.len() > 5 {
        println!("  … {} errors in all", figures.errors.len());
    }
}

async fn moves(
    cli: &Cli,
    games: usize,
    duration: u64,
    warmup: u64,
    hint_clients: usize,
    max_plies: u32,
) -> Result<(), Error> {
    let (tcp, grpc) = baselines().await?;
    let (stack, startup) = start_stack(cli).await;
    println!("chess-stack ready in {}", ms(startup));
    let port = stack.uqchess_port();
    let window = Window::new(Duration::from_secs(warmup), Duration::from_secs(duration));
    let before_start = window.start;
    let hints = (hint_clients > 0)
        .then(|| tokio::spawn(uqchess::hints(port, hint_clients, window.clone())));
    // Resource use is counted from the start of the window.
    let stack_pid = stack.pid();
    let sampler = tokio::spawn(async move {
        tokio::time::sleep_until(before_start.into()).await;
        procs::tree_and_own_usage(stack_pid)
    });
    let figures = uqchess::games(
        port,
        games,
        window.clone(),
        Pace::closed(max_plies, Duration::ZERO),
    )
    .await;
    let end = Instant::now().min(window.end);
    let after = procs::tree_and_own_usage(stack_pid);
    let before = sampler.await?;
    let seconds = (end - window.start).as_secs_f64();
    println!(
        "scenario: {games} games through uqchess, {hint_clients} hint clients, {duration} s measured after {warmup} s"
    );
    report_games(&figures, seconds, tcp, grpc);
    if let Some(hints) = hints {
        let samples: Samples = hints.await??;
        if let Some(s) = samples.summary() {
            println!(
                "  engine hint (send -> moves) {}",
                s.line(Some(("tonic unary", grpc)))
            );
        }
    }
    print_usage(
        "processes (during the measured window):",
        &after,
        &procs::cpu_between(&before, &after),
        seconds,
    );
    let status = stack.stop().await;
    println!("chess-stack stopped: {status}");
    Ok(())
}

async fn grpc(
    cli: &Cli,
    games: usize,
    duration: u64,
    warmup: u64,
    connection_per_player: bool,
) -> Result<(), Error> {
    let (tcp, grpc) = baselines().await?;
    let (stack, _) = start_stack(cli).await;
    let pairs =
        chess_e2e::load::grpc::Pairs::sign_up(&stack.gateway, games, connection_per_player).await?;
    let window = Window::new(Duration::from_secs(warmup), Duration::from_secs(duration));
    let start = window.start;
    let stack_pid = stack.pid();
    let sampler = tokio::spawn(async move {
        tokio::time::sleep_until(start.into()).await;
        procs::tree_and_own_usage(stack_pid)
    });
    let figures = pairs
        .play(window.clone(), Pace::closed(GRPC_MAX_PLIES, Duration::ZERO))
        .await;
    let after = procs::tree_and_own_usage(stack_pid);
    let before = sampler.await?;
    let seconds = (Instant::now().min(window.end) - window.start).as_secs_f64();
    let connections = if connection_per_player {
        "a connection per player"
    } else {
        "one connection"
    };
    println!(
        "scenario: {games} games through the public gRPC API ({connections}), {duration} s measured after {warmup} s"
    );
    report_games(&figures, seconds, tcp, grpc);
    print_usage(
        "processes (during the measured window):",
        &after,
        &procs::cpu_between(&before, &after),
        seconds,
    );
    stack.stop().await;
    Ok(())
}

async fn latency(cli: &Cli, moves: usize) -> Result<(), Error> {
    let (tcp, grpc) = baselines().await?;
    let (stack, _) = start_stack(cli).await;
    // One game at a time; a long window, stopped once enough moves are in.
    let window = Window::new(Duration::from_secs(1), Duration::from_secs(3600));
    let port = stack.uqchess_port();
    let game = tokio::spawn(uqchess::games(
        port,
        1,
        window.clone(),
        Pace::closed(200, Duration::ZERO),
    ));
    let started = Instant::now();
    let expected = Duration::from_secs(1) + Duration::from_millis(5 * moves as u64);
    tokio::time::sleep(expected).await;
    window.stop();
    let figures = game.await?;
    println!("scenario: one game at a time, uncontended");
    report_games(
        &figures,
        (started.elapsed() - Duration::from_secs(1)).as_secs_f64(),
        tcp,
        grpc,
    );
    stack.stop().await;
    Ok(())
}

/// The settings of the `hints` scenario.
struct HintsRun {
    games: usize,
    duration: u64,
    hint_clients: usize,
    think: Duration,
    rounds: usize,
    pairs: usize,
}

async fn hints_impact(cli: &Cli, run: HintsRun) -> Result<(), Error> {
    let HintsRun {
        games,
        duration,
        hint_clients,
        think,
        rounds,
        pairs,
    } = run;
    let (_, grpc) = baselines().await?;
    let pool = engine::service_defaults();
    let processes = cli
        .stack_arg
        .iter()
        .find_map(|a| a.strip_prefix("--engine-pool-size="))
        .map_or(Ok(pool.size), str::parse)?;
    let seconds = Duration::from_secs(duration);
    println!(
        "the search of a hint: {}; Stockfish with {} thread, {} MiB hash; pool of {processes}",
        engine::hint_search().go,
        pool.threads,
        pool.hash_mb
    );
    let bare = engine::bare_stockfish(1, seconds).await?;
    let together = engine::bare_stockfish(processes, seconds).await?;
    println!(
        "bare Stockfish: one alone {bare:.2} searches/s (x {processes} = {:.2}); \
         {processes} at once {together:.2}/s = {:.1} % of that",
        bare * processes as f64,
        100.0 * together / (bare * processes as f64)
    );
    let (stack, _) = start_stack(cli).await;
    let port = stack.uqchess_port();
    // The pool at its limit with nothing else to do, each time against one
    // bare process measured just before and just after (the machine's speed
    // drifts by tens of per cent within minutes).
    let mut ratios = Vec::with_capacity(rounds);
    let mut before = bare;
    for round in 0..rounds {
        let window = Window::new(Duration::from_secs(3), seconds);
        let alone = uqchess::hints(port, hint_clients, window).await?;
        let Some(s) = alone.summary() else {
            return Err("no hint was answered".into());
        };
        let after = engine::bare_stockfish(1, seconds).await?;
        let rate = s.count as f64 / duration as f64;
        let ratio = rate / (processes as f64 * (before + after) / 2.0);
        println!(
            "round {}: bare {before:.2} then {after:.2} searches/s; {hint_clients} hint clients alone {rate:.2} hints/s \
             = {:.1} % of {processes} x bare; hint {}",
            round + 1,
            100.0 * ratio,
            s.line(None)
        );
        ratios.push(ratio);
        before = after;
    }
    let bare = before;
    ratios.sort_by(f64::total_cmp);
    println!(
        "hints/s with {hint_clients} clients / ({processes} x one bare Stockfish): median {:.1} % over {rounds} rounds (lowest {:.1} %)",
        100.0 * ratios[ratios.len() / 2],
        100.0 * ratios[0]
    );
    // Human moves without hint clients and with them, a pair of phases at
    // a time (the machine drifts between pairs), each side's moves pooled:
    // one phase's p99 is its few dozen slowest moves and swings from phase
    // to phase.
    let mut pooled = [Samples::default(), Samples::default()];
    let mut pair_ratios = Vec::with_capacity(pairs);
    for pair in 1..=pairs {
        let mut p99 = [None; 2];
        for (side, clients) in [0, hint_clients].into_iter().enumerate() {
            let window = Window::new(Duration::from_secs(3), Duration::from_secs(duration));
            let hints =
                (clients > 0).then(|| tokio::spawn(uqchess::hints(port, clients, window.clone())));
            let figures =
                uqchess::games(port, games, window.clone(), Pace::closed(200, think)).await;
            println!(
                "pair {pair}: {games} games ({} ms thinking a move), {clients} hint clients: {:.0} moves/s",
                think.as_millis(),
                figures.moves as f64 / duration as f64
            );
            if let Some(s) = figures.move_latency.summary() {
                println!(
                    "  move (send -> ok)          {}",
                    s.line(Some(("tonic unary", grpc)))
                );
                p99[side] = Some(s.p99);
            }
            pooled[side].merge(figures.move_latency);
            if let Some(hints) = hints
                && let Some(s) = hints.await??.summary()
            {
                let rate = s.count as f64 / duration as f64;
                println!(
                    "  engine hint (send -> moves) {}; {rate:.2} hints/s = {:.1} % of {processes} x bare",
                    s.line(None),
                    100.0 * rate / (bare * processes as f64)
                );
            }
        }
        if let [Some(without), Some(with)] = p99 {
            let ratio = with.as_secs_f64() / without.as_secs_f64();
            println!("pair {pair}: human-move p99 with / without = {ratio:.2}");
            pair_ratios.push(ratio);
        }
    }
    let [without, with] = pooled.map(|side| side.summary());
    if let (Some(without), Some(with)) = (without, with) {
        println!("human moves, the {pairs} phases of each side pooled:");
        println!(
            "  without hint clients       {}",
            without.line(Some(("tonic unary", grpc)))
        );
        println!(
            "  with {hint_clients} hint clients        {}",
            with.line(Some(("tonic unary", grpc)))
        );
        pair_ratios.sort_by(f64::total_cmp);
        let pairs_range = match (pair_ratios.first(), pair_ratios.last()) {
            (Some(low), Some(high)) => format!("; pair by pair {low:.2} to {high:.2}"),
            _ => String::new(),
        };
        println!(
            "human-move p99 with the engine saturated / without = {:.2} (pooled{pairs_range})",
            with.p99.as_secs_f64() / without.p99.as_secs_f64()
        );
    }
    stack.stop().await;
    Ok(())
}

/// Plays `games` games through `front` in `window`, paced by `pace`; the
/// usage of the stack's processes over the window comes back beside the
/// figures.
async fn phase(
    stack: &StackProcess,
    front: &Players,
    games: usize,
    window: Arc<Window>,
    pace: Pace,
) -> Result<(GameFigures, BTreeMap<String, f64>, f64), Error> {
    let stack_pid = stack.pid();
    let start = window.start;
    let sampler = tokio::spawn(async move {
        tokio::time::sleep_until(start.into()).await;
        procs::tree_and_own_usage(stack_pid)
    });
    let figures = match front {
        Players::Uqchess => uqchess::games(stack.uqchess_port(), games, window.clone(), pace).await,
        Players::Grpc(pairs) => pairs.play(window.clone(), pace).await,
    };
    let after = procs::tree_and_own_usage(stack_pid);
    let before = sampler.await?;
    let seconds = (Instant::now().min(window.end) - window.start).as_secs_f64();
    Ok((figures, procs::cpu_between(&before, &after), seconds))
}

/// Each busy process's CPU time per move, in microseconds.
fn cpu_per_move(cpu: &BTreeMap<String, f64>, moves: u64) -> String {
    let mut parts: Vec<String> = cpu
        .iter()
        .filter(|(_, used)| **used > 0.005)
        .map(|(name, used)| {
            let name = name.strip_prefix("chess-").unwrap_or(name);
            format!("{name} {:.0}", used * 1e6 / moves.max(1) as f64)
        })
        .collect();
    let server: f64 = ["chess-gateway", "chess-game"]
        .iter()
        .filter_map(|name| cpu.get(*name))
        .sum();
    parts.push(format!(
        "gateway+game {:.0}",
        server * 1e6 / moves.max(1) as f64
    ));
    format!("cpu per move (us): {}", parts.join(", "))
}

/// The settings of the open loop's phases.
struct Paced<'a> {
    loads: &'a [u32],
    duration: u64,
    probe: u64,
    max: Option<f64>,
    timeline: Option<&'a std::path::Path>,
    connection_per_player: bool,
}

async fn open_loop(cli: &Cli, front: Front, games: usize, paced: Paced<'_>) -> Result<(), Error> {
    let Paced {
        loads,
        duration,
        probe,
        max,
        timeline,
        connection_per_player,
    } = paced;
    let (_, grpc) = baselines().await?;
    let (stack, _) = start_stack(cli).await;
    let warmup = Duration::from_secs(3);
    // The public API's players sign up once, before any phase.
    let players = match front {
        Front::Uqchess => Players::Uqchess,
        Front::Grpc => Players::Grpc(
            chess_e2e::load::grpc::Pairs::sign_up(&stack.gateway, games, connection_per_player)
                .await?,
        ),
    };
    let max_plies = match front {
        Front::Uqchess => 100_000,
        Front::Grpc => GRPC_MAX_PLIES,
    };
    let connections = match front {
        Front::Grpc if connection_per_player => " (a connection per player)",
        Front::Grpc => " (one connection)",
        Front::Uqchess => "",
    };
    println!(
        "scenario: open loop, {games} games through {front:?}{connections}, {duration} s at each load"
    );
    let max = match max {
        Some(max) => max,
        None => {
            let window = Window::new(warmup, Duration::from_secs(probe));
            let (figures, cpu, seconds) = phase(
                &stack,
                &players,
                games,
                window,
                Pace::closed(max_plies, Duration::ZERO),
            )
            .await?;
            let max = figures.moves as f64 / seconds;
            println!("maximum (closed loop, {probe} s): {max:.0} moves/s");
            report_open(&figures, &cpu, grpc);
            max
        }
    };
    for &load in loads {
        let rate = max * f64::from(load) / 100.0;
        let window = Window::new(warmup, Duration::from_secs(duration));
        let pace = Pace {
            max_plies,
            think: Duration::ZERO,
            rate: Some(rate / games as f64),
        };
        let (figures, cpu, seconds) = phase(&stack, &players, games, window, pace).await?;
        println!(
            "load {load}% = {rate:.0} moves/s offered: {:.0} moves/s answered",
            figures.moves as f64 / seconds
        );
        report_open(&figures, &cpu, grpc);
        if let Some(prefix) = timeline {
            let path = format!("{}-{load}.csv", prefix.display());
            std::fs::write(&path, figures.timeline.csv())?;
            match figures.timeline.origin() {
                Some(origin) => println!("  timeline: {path} (0 = {origin:.6} s since the epoch)"),
                None => println!("  timeline: {path}"),
            }
        }
    }
    stack.stop().await;
    Ok(())
}

fn report_open(figures: &GameFigures, cpu: &BTreeMap<String, f64>, grpc: Duration) {
    if let Some(s) = figures.move_latency.summary() {
        println!(
            "  move (due -> ok)     {}",
            s.line(Some(("tonic unary", grpc)))
        );
    }
    if let Some(s) = figures.notify_latency.summary() {
        println!(
            "  opponent notified    {}",
            s.line(Some(("tonic unary", grpc)))
        );
    }
    println!("  {}", cpu_per_move(cpu, figures.moves));
    for e in figures.errors.iter().take(3) {
        println!("  error: {e}");
    }
}

/// The usage of the stack's child process named `name`.
fn service_usage(stack: &StackProcess, name: &str) -> Option<Usage> {
    chess_e2e::children_of(stack.pid())
        .into_iter()
        .find(|&pid| chess_e2e::process_name(pid).as_deref() == Some(name))
        .and_then(procs::usage)
}

async fn idle(cli: &Cli, connections: usize) -> Result<(), Error> {
    // The gateway's allocator hands freed memory back within about ten
    // seconds.
    const SETTLE: Duration = Duration::from_secs(15);
    let (stack, _) = start_stack(cli).await;
    let port = stack.uqchess_port();
    let gateway = || service_usage(&stack, "chess-gateway").ok_or("no gateway process");
    // Warm the gateway up so one-off allocations are not charged to the
    // connections.
    drop(uqchess::idle_connections(port, 100).await?);
    tokio::time::sleep(SETTLE).await;
    let before = gateway()?;
    let open = uqchess::idle_connections(port, connections).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let during = gateway()?;
    let cpu = during.cpu_secs;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let held = gateway()?;
    drop(open);
    tokio::time::sleep(SETTLE).await;
    let after = gateway()?;
    // A second crowd: nothing the first one left behind adds up.
    drop(uqchess::idle_connections(port, connections).await?);
    tokio::time::sleep(SETTLE).await;
    let again = gateway()?;
    let per = (during.rss_kib as f64 - before.rss_kib as f64) / connections as f64;
    println!("gateway RSS before: {} KiB", before.rss_kib);
    println!(
        "gateway RSS with {connections} idle connections: {} KiB = {per:.2} KiB per connection",
        during.rss_kib
    );
    println!(
        "gateway CPU over 5 s holding them idle: {:.3} s",
        held.cpu_secs - cpu
    );
    println!(
        "gateway RSS {} s after they left: {} KiB; after a second crowd came and went: {} KiB",
        SETTLE.as_secs(),
        after.rss_kib,
        again.rss_kib
    );
    let idle_usage = procs::tree_usage(stack.pid());
    print_usage("processes:", &idle_usage, &BTreeMap::new(), 1.0);
    stack.stop().await;
    Ok(())
}

async fn resume(
    cli: &Cli,
    games: usize,
    plies: u32,
    runs: usize,
    after_crash: bool,
) -> Result<(), Error> {
    const SETTLE: Duration = Duration::from_secs(15);
    if cli.game_replicas > 1 || cli.database_url.is_some() {
        return Err("resume measures the lone game service on its SQLite file".into());
    }
    let mut empty = Vec::new();
    let mut full = Vec::new();
    let mut rss = (Vec::new(), Vec::new());
    for run in 0..runs {
        let data = tempfile::tempdir()?;
        let seeding = Instant::now();
        chess_e2e::load::resume::seed(&data.path().join("game.sqlite"), games, plies, after_crash)
            .await?;
        if run == 0 {
            println!(
                "stored {games} active games of {plies} plies in {}",
                ms(seeding.elapsed())
            );
        }
        let args = stack_args(cli);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        for (dir, stored) in [(data, true), (tempfile::tempdir()?, false)] {
            let started = Instant::now();
            let stack = StackProcess::start_in(dir, &args, &[]).await;
            let took = started.elapsed();
            // Memory the start-up used for a moment goes back to the system
            // within seconds (jemalloc's background thread).
            tokio::time::sleep(SETTLE).await;
            let game_rss = service_usage(&stack, "chess-game").map_or(0, |u| u.rss_kib);
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
    evicted(cli, games, plies, mean(&rss.1)).await
}

/// The same games once they have left memory (evicted after `EVICT` idle),
/// and read back: each game asked for again must come back with every
/// stored move. `empty_rss` is the service's RSS with no games, in KiB.
async fn evicted(cli: &Cli, games: usize, plies: u32, empty_rss: f64) -> Result<(), Error> {
    const EVICT: &str = "5";
    const SETTLE: Duration = Duration::from_secs(20);
    const READ_BACK: usize = 1000;
    let data = tempfile::tempdir()?;
    let seeded =
        chess_e2e::load::resume::seed(&data.path().join("game.sqlite"), games, plies, false)
            .await?;
    let args = stack_args(cli);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let stack =
        StackProcess::start_in(data, &args, &[("CHESS_GAME_EVICT_AFTER_SECS", EVICT)]).await;
    // Evicted after 5 s; what they used goes back to the system within
    // seconds more.
    tokio::time::sleep(SETTLE).await;
    let rss = service_usage(&stack, "chess-game").map_or(0, |u| u.rss_kib);
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

async fn startup(cli: &Cli, runs: usize) -> Result<(), Error> {
    let mut times = Vec::new();
    for _ in 0..runs {
        let (stack, took) = start_stack(cli).await;
        println!("chess-stack start to every service SERVING: {}", ms(took));
        times.push(took);
        stack.stop().await;
    }
    times.sort_unstable();
    if let Some(median) = times.get(times.len() / 2) {
        println!("median over {runs} runs: {}", ms(*median));
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli: Cli = clap::Parser::parse();
    // Built as the services build theirs, without the LIFO slot: an answer
    // is timed when its game's task next runs.
    let mut runtime = chess_runtime::runtime_builder();
    if let Some(workers) = cli.load_workers {
        runtime.worker_threads(usize::from(workers));
    }
    let runtime = match runtime.build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("chess-load: cannot start its runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(run(cli))
}

async fn run(cli: Cli) -> ExitCode {
    let result = match &cli.scenario {
        Scenario::Baseline { rounds } => {
            async {
                let tcp = baseline::tcp_echo(*rounds).await?;
                let grpc = baseline::tonic_unary(*rounds)
                    .await
                    .map_err(|e| e.to_string())?;
                if let (Some(t), Some(g)) = (tcp.summary(), grpc.summary()) {
                    println!("loopback TCP echo  {}", t.line(None));
                    println!("tonic unary        {}", g.line(None));
                }
                Ok::<_, Error>(())
            }
            .await
        }
        Scenario::Startup { runs } => startup(&cli, *runs).await,
        Scenario::Moves {
            games,
            duration,
            warmup,
            hint_clients,
            max_plies,
        } => moves(&cli, *games, *duration, *warmup, *hint_clients, *max_plies).await,
        Scenario::Grpc {
            games,
            duration,
            warmup,
            connection_per_player,
        } => grpc(&cli, *games, *duration, *warmup, *connection_per_player).await,
        Scenario::Latency { moves } => latency(&cli, *moves).await,
        Scenario::Hints {
            games,
            duration,
            hint_clients,
            think_ms,
            rounds,
            pairs,
        } => {
            hints_impact(
                &cli,
                HintsRun {
                    games: *games,
                    duration: *duration,
                    hint_clients: *hint_clients,
                    think: Duration::from_millis(*think_ms),
                    rounds: *rounds,
                    pairs: *pairs,
                },
            )
            .await
        }
        Scenario::Idle { connections } => idle(&cli, *connections).await,
        Scenario::Resume {
            games,
            plies,
            runs,
            after_crash,
        } => resume(&cli, *games, *plies, *runs, *after_crash).await,
        Scenario::Open {
            front,
            games,
            loads,
            duration,
            probe,
            max,
            timeline,
            connection_per_player,
        } => {
            if *connection_per_player && *front != Front::Grpc {
                eprintln!("chess-load: --connection-per-player is for --front grpc");
                return ExitCode::from(2);
            }
            let games = games.unwrap_or(match front {
                Front::Uqchess => 1000,
                Front::Grpc => 200,
            });
            let paced = Paced {
                loads,
                duration: *duration,
                probe: *probe,
                max: *max,
                timeline: timeline.as_deref(),
                connection_per_player: *connection_per_player,
            };
            open_loop(&cli, *front, games, paced).await
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("chess-load: {e}");
            ExitCode::FAILURE
        }
    }
}
