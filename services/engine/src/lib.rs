//! The engine service: the only part of the system that talks to Stockfish.
//!
//! A pool of Stockfish processes answers stateless requests (a position in,
//! an answer out): the best move within limits or at a strength level, a
//! streamed analysis, and the legal moves in Stockfish's own `go perft 1`
//! order.
//!
//! What lives where:
//! - [`position`]: turning a FEN and a move list into a position checked by
//!   shakmaty. Nothing reaches Stockfish before it passes (an illegal
//!   position can crash it).
//! - [`limits`]: search limits, the strength levels 1–8, and the plan (limits
//!   plus engine options) a search runs with.
//! - [`pool`]: the supervised pool: a bounded FIFO queue, one worker per
//!   process taking one request at a time, cancellation that stops a search
//!   and frees its process, and restarts with backoff.
//! - `process`: one Stockfish process with the options and game it was last
//!   set to, running one search or move listing.
//! - `api`: the `chess.engine.v1.EngineService` implementation and the
//!   conversions between wire and domain types (`TryFrom` at the edge).
//! - `metrics`: the OpenTelemetry instruments.
//! - [`Error`]: every way a request can fail, and the gRPC status each maps
//!   to; [`StartError`]: every way the service can fail to start.

mod api;
mod error;
mod metrics;
mod process;

pub mod limits;
pub mod pool;
pub mod position;

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

pub use api::EngineApi;
pub use error::{Error, StartError};
pub use pool::{Pool, PoolConfig};
pub use process::configure;

use chess_proto::engine::v1::engine_service_server::{EngineServiceServer, SERVICE_NAME};

/// Default gRPC address.
pub const DEFAULT_LISTEN: &str = chess_runtime::addr::ENGINE;

/// Exit status when no Stockfish process can be started or complete its
/// handshake at start-up.
pub const EXIT_ENGINE_UNAVAILABLE: u8 = chess_runtime::exit::ENGINE_UNAVAILABLE;

/// Where Stockfish is looked for when `--stockfish-path` is not given and
/// `stockfish` is not on `PATH` (Debian installs it here).
pub const FALLBACK_STOCKFISH: &str = "/usr/games/stockfish";

/// The engine service: a supervised pool of Stockfish processes
///
/// The flags of `chess-engine`, under the summary above that `--help` prints;
/// each has an environment twin `CHESS_ENGINE_<FLAG>`.
#[derive(Debug, clap::Parser)]
#[command(version, long_about = None)]
pub struct Config {
    #[command(flatten)]
    pub service: chess_runtime::ServiceArgs,
    /// The Stockfish program. Default: `stockfish` found on `PATH`, else
    /// `/usr/games/stockfish`.
    #[arg(long)]
    pub stockfish_path: Option<PathBuf>,
    /// How many Stockfish processes to run. Default: one per CPU core.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub pool_size: Option<u32>,
    /// Search threads per process (Stockfish's `Threads` option).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: u32,
    /// Hash table size per process in MiB (Stockfish's `Hash` option).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=1_048_576))]
    pub hash_mb: u32,
    /// Niceness of the Stockfish processes, 0 (the service's own priority)
    /// to 19 (lowest). Where Stockfish shares cores with latency-sensitive
    /// services (the whole system on one machine), a positive value keeps
    /// searches from delaying their moves.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(i32).range(0..=19))]
    pub stockfish_nice: i32,
    /// Run the Stockfish processes under Linux's `SCHED_IDLE` policy: they
    /// search only on CPU time nothing else wants. Stronger than any
    /// niceness; for machines where searches share cores with the other
    /// services. A search's time limit still holds; its depth is what gives
    /// way when the cores are busy.
    #[arg(long)]
    pub stockfish_idle: bool,
    /// How many requests may wait for a free process; beyond that requests
    /// are refused with RESOURCE_EXHAUSTED.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub queue_capacity: u32,
    /// Milliseconds a process may take to complete its handshake, to answer
    /// `isready`, or to end a search after `stop`, before it is killed and
    /// restarted.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(10..=600_000))]
    pub answer_timeout_ms: u64,
}

impl Config {
    /// The pool configuration these flags describe.
    pub fn pool(&self) -> PoolConfig {
        let answer = Duration::from_millis(self.answer_timeout_ms);
        PoolConfig {
            stockfish: self
                .stockfish_path
                .clone()
                .unwrap_or_else(default_stockfish_path),
            size: self
                .pool_size
                .map_or_else(default_pool_size, |n| n as usize),
            threads: self.threads,
            hash_mb: self.hash_mb,
            nice: self.stockfish_nice,
            idle: self.stockfish_idle,
            queue_capacity: self.queue_capacity as usize,
            timeouts: chess_uci::Timeouts {
                handshake: answer,
                answer,
            },
        }
    }
}

/// What to do when Stockfish cannot be started, for a program whose
/// `--stockfish-path` flag has the environment twin `env`: one clause, to
/// follow the error on the same line.
pub fn stockfish_hint(env: &str) -> String {
    format!(
        "install it (`apt-get install stockfish`, which puts it at {FALLBACK_STOCKFISH}) \
         or point --stockfish-path ({env}) at it"
    )
}

/// `stockfish` on `PATH` if there is one, else [`FALLBACK_STOCKFISH`].
pub fn default_stockfish_path() -> PathBuf {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("stockfish"))
        .find(|candidate| is_executable(candidate))
        .unwrap_or_else(|| PathBuf::from(FALLBACK_STOCKFISH))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// One process per CPU core.
pub fn default_pool_size() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
}

/// Runs the service until shutdown: starts the pool (failing with
/// [`StartError::CannotStart`] if no process completes its handshake), reports
/// SERVING while at least one process is alive, and serves gRPC.
pub async fn run(config: Config) -> Result<(), StartError> {
    let (server, _) = config
        .service
        .bind_verified("engine", DEFAULT_LISTEN, &[SERVICE_NAME])
        .await?;
    let pool = Pool::start(config.pool(), server.shutdown()).await?;
    tracing::info!(
        processes = pool.alive_count(),
        stockfish = %pool.stockfish().display(),
        "Stockfish pool started"
    );
    tokio::spawn(follow_health(
        pool.clone(),
        server.health(),
        server.shutdown(),
    ));
    let routes =
        tonic::service::Routes::new(EngineServiceServer::new(EngineApi::new(pool.clone())));
    let served = server.serve(routes).await;
    pool.stop().await;
    served?;
    Ok(())
}

/// Keeps health in step with the pool: SERVING while at least one process
/// is alive, NOT_SERVING while none is, until shutdown begins (the server
/// then reports NOT_SERVING itself).
async fn follow_health(
    pool: Pool,
    health: chess_runtime::Health,
    shutdown: chess_runtime::Shutdown,
) {
    let mut alive = pool.alive();
    loop {
        let serving = *alive.borrow_and_update() > 0;
        if shutdown.is_cancelled() {
            return;
        }
        health.set_ready(serving).await;
        tokio::select! {
            changed = alive.changed() => if changed.is_err() { return },
            () = shutdown.cancelled() => return,
        }
    }
}
