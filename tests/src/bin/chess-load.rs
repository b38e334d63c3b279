//! `chess-load`: drives the whole system on this machine and reports how it
//! holds up, beside baselines measured in the same run. The scenarios live
//! in [`chess_e2e::load`]; this program parses the command line and runs
//! the one asked for.
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

use std::process::ExitCode;

use chess_e2e::load::{
    baseline,
    closed::{self, GrpcArgs, MovesArgs},
    hints::{self, HintsArgs},
    idle,
    open::{self, OpenArgs},
    restart::{self, ResumeArgs},
    scenario::Setup,
    startup,
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
    #[command(flatten)]
    setup: Setup,
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
    Moves(MovesArgs),
    /// Concurrent games between registered players through the public gRPC
    /// API (challenge, accept, MakeMove, StreamEvents).
    Grpc(GrpcArgs),
    /// One game at a time: the uncontended move latency.
    Latency {
        /// Moves timed.
        #[arg(long, default_value_t = 2000)]
        moves: usize,
    },
    /// The engine pool's rate of hints against bare Stockfish, then human
    /// moves with and without the pool saturated by hints, in phases
    /// alternated against the same system.
    Hints(HintsArgs),
    /// Open loop: moves arriving at random (a Poisson process per game) at
    /// fractions of the front's maximum, itself measured first in the same
    /// run by a closed loop of the same games; latency from each move's due
    /// time.
    Open(OpenArgs),
    /// Time for the game service to resume stored active games when it
    /// starts, and its memory per active game: stacks started on a data
    /// directory holding that many games, beside stacks started empty.
    Resume(ResumeArgs),
    /// Gateway memory per idle connection, and after they leave.
    Idle {
        /// Idle uqchess connections opened.
        #[arg(long, default_value_t = 10_000)]
        connections: usize,
    },
}

fn main() -> ExitCode {
    let Cli { scenario, setup } = clap::Parser::parse();
    if let Scenario::Open(args) = &scenario
        && let Some(error) = args.usage_error()
    {
        eprintln!("chess-load: {error}");
        return ExitCode::from(2);
    }
    let result = chess_runtime::runtime("load").block_on(async {
        match &scenario {
            Scenario::Baseline { rounds } => baseline::report(*rounds).await,
            Scenario::Startup { runs } => startup::run(&setup, *runs).await,
            Scenario::Moves(args) => closed::moves(&setup, args).await,
            Scenario::Grpc(args) => closed::grpc(&setup, args).await,
            Scenario::Latency { moves } => closed::latency(&setup, *moves).await,
            Scenario::Hints(args) => hints::run(&setup, args).await,
            Scenario::Open(args) => open::run(&setup, args).await,
            Scenario::Resume(args) => restart::run(&setup, args).await,
            Scenario::Idle { connections } => idle::run(&setup, *connections).await,
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("chess-load: {e}");
            ExitCode::FAILURE
        }
    }
}
