//! What the scenarios of `chess-load` share: the stack they measure
//! ([`Setup`], from the program's global flags), the baselines measured in
//! the same run, a measured phase of play through one front ([`phase`]),
//! and the lines that report them.

use std::{
    collections::BTreeMap,
    sync::Arc,
    time::{Duration, Instant},
};

use crate::StackProcess;

use super::{
    baseline,
    grpc::Pairs,
    procs::{self, Usage},
    stats::ms,
    uqchess::{self, GameFigures, Pace, Window},
};

/// Why a scenario stopped.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// Plies after which a game through the public API is resigned and
/// replaced, so games keep going on the move path instead of drifting into
/// long endgames.
pub const GRPC_MAX_PLIES: u32 = 200;

/// How every scenario starts its `chess-stack`.
#[derive(Clone, Debug, clap::Args)]
pub struct Setup {
    /// Extra flags for chess-stack (repeat for several), e.g.
    /// `--stack-arg=--engine-pool-size=1`.
    #[arg(long, global = true, allow_hyphen_values = true)]
    pub stack_arg: Vec<String>,
    /// Replicas of the game service (`chess-stack --game-replicas`); more
    /// than one needs --database-url.
    #[arg(long, global = true, default_value_t = 1)]
    pub game_replicas: u16,
    /// The game service's database (`chess-stack --database-url`), e.g.
    /// `postgres://postgres:postgres@127.0.0.1:5432/load` (default: SQLite
    /// in the stack's data directory).
    #[arg(long, global = true)]
    pub database_url: Option<String>,
}

impl Setup {
    /// The flags `chess-stack` is given.
    fn stack_args(&self) -> Vec<String> {
        let mut args = self.stack_arg.clone();
        if self.game_replicas > 1 {
            args.extend(["--game-replicas".to_owned(), self.game_replicas.to_string()]);
        }
        if let Some(url) = &self.database_url {
            args.extend(["--database-url".to_owned(), url.clone()]);
        }
        args
    }

    /// A stack on a fresh data directory, and how long it took to be
    /// SERVING.
    pub async fn start_stack(&self) -> (StackProcess, Duration) {
        let started = Instant::now();
        // Every load client registers and signs in from 127.0.0.1: the
        // gateway's per-address limits are for the open internet, not for
        // this.
        let unlimited = [
            ("CHESS_GATEWAY_REGISTRATIONS_PER_ADDRESS", "0"),
            ("CHESS_GATEWAY_LOGIN_FAILURES_PER_ADDRESS", "0"),
        ];
        let args = self.stack_args();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let stack = StackProcess::start(&args, &unlimited).await;
        (stack, started.elapsed())
    }

    /// A stack on the data directory `data`, its services given `env`.
    pub async fn start_in(&self, data: tempfile::TempDir, env: &[(&str, &str)]) -> StackProcess {
        let args = self.stack_args();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        StackProcess::start_in(data, &args, env).await
    }
}

/// A count that must be one or more.
pub fn at_least_one(arg: &str) -> Result<usize, String> {
    match arg.parse::<usize>() {
        Ok(0) => Err("must be 1 or more".to_owned()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// A front of the server the load goes through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Front {
    /// The uqchess line protocol.
    Uqchess,
    /// The public gRPC API.
    Grpc,
}

/// The players of a phase, by the front they play through: uqchess players
/// connect for each phase, the public API's are signed up once.
#[derive(Debug)]
pub enum Players {
    Uqchess,
    Grpc(Pairs),
}

/// What a phase of play measured.
#[derive(Debug)]
pub struct Phase {
    pub figures: GameFigures,
    /// The stack's processes at the end.
    pub usage: BTreeMap<String, (usize, Usage)>,
    /// Their CPU time over the window, in seconds.
    pub cpu: BTreeMap<String, f64>,
    /// The window's length, in seconds.
    pub seconds: f64,
}

/// Plays `games` games through `players` in `window`, paced by `pace`,
/// with the stack's resource use counted from the start of the window.
pub async fn phase(
    stack: &StackProcess,
    players: &Players,
    games: usize,
    window: Arc<Window>,
    pace: Pace,
) -> Result<Phase, Error> {
    let stack_pid = stack.pid();
    let start = window.start;
    let sampler = tokio::spawn(async move {
        tokio::time::sleep_until(start.into()).await;
        procs::tree_and_own_usage(stack_pid)
    });
    let figures = match players {
        Players::Uqchess => uqchess::games(stack.uqchess_port(), games, window.clone(), pace).await,
        Players::Grpc(pairs) => pairs.play(window.clone(), pace).await,
    };
    let seconds = (Instant::now().min(window.end) - window.start).as_secs_f64();
    let usage = procs::tree_and_own_usage(stack_pid);
    let before = sampler.await?;
    Ok(Phase {
        figures,
        cpu: procs::cpu_between(&before, &usage),
        usage,
        seconds,
    })
}

/// The medians of the loopback TCP echo and of a tonic unary call, printed.
pub async fn baselines() -> Result<(Duration, Duration), Error> {
    let (tcp, grpc) = baseline::medians(20_000).await.map_err(|e| e.to_string())?;
    println!(
        "baseline: loopback TCP echo p50 {}   tonic unary p50 {}",
        ms(tcp),
        ms(grpc)
    );
    Ok((tcp, grpc))
}

/// Each process's CPU (over `seconds`) and memory.
pub fn print_usage(
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

/// The latency lines of `figures`, each `label` padded to `width`.
fn print_latencies(figures: &GameFigures, labels: [&str; 2], width: usize, grpc: Duration) {
    let [moved, notified] = labels;
    if let Some(s) = figures.move_latency.summary() {
        let line = s.line(Some(("tonic unary", grpc)));
        println!("  {moved:width$}{line}");
    }
    if let Some(s) = figures.notify_latency.summary() {
        let line = s.line(Some(("tonic unary", grpc)));
        println!("  {notified:width$}{line}");
    }
}

/// The errors of `figures`, the first `shown` of them.
fn print_errors(figures: &GameFigures, shown: usize) {
    for e in figures.errors.iter().take(shown) {
        println!("  error: {e}");
    }
}

/// A closed loop's figures over `seconds`, beside the baselines.
pub fn report_games(figures: &GameFigures, seconds: f64, tcp: Duration, grpc: Duration) {
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
    print_errors(figures, 5);
    if figures.errors.len() > 5 {
        println!("  … {} errors in all", figures.errors.len());
    }
}

/// A paced phase's figures and CPU per move.
pub fn report_paced(figures: &GameFigures, cpu: &BTreeMap<String, f64>, grpc: Duration) {
    print_latencies(figures, ["move (due -> ok)", "opponent notified"], 21, grpc);
    println!("  {}", cpu_per_move(cpu, figures.moves));
    print_errors(figures, 3);
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

/// The usage of the stack's child process named `name`.
pub fn service_usage(stack: &StackProcess, name: &str) -> Option<Usage> {
    crate::children_of(stack.pid())
        .into_iter()
        .find(|&pid| crate::process_name(pid).as_deref() == Some(name))
        .and_then(procs::usage)
}
