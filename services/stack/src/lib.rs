//! The whole system on one machine.
//!
//! [`Stack`] starts the five service binaries (`chess-engine`, `chess-rating`,
//! `chess-game`, `chess-matchmaking`, `chess-gateway`) as supervised child
//! processes on the services' own loopback ports (or ports chosen free), with
//! embedded defaults (SQLite files in a data directory, Stockfish from the
//! system, mail written to a folder), waits until every one reports SERVING
//! on the gRPC health service, restarts any that dies, and stops them all on
//! request. Two programs use it: `chess-stack` (the developer's one command,
//! [`run`]) and `uqchessserver` (the uqchess protocol's server, byte for byte
//! as its contract says).
//!
//! The services call each other over Unix-domain sockets in the data
//! directory (`engine.sock`, `game.sock`, …), which spare both sides of
//! every call the TCP stack's work; their TCP ports stay for everyone else.
//! A data directory whose path is too long for a socket address (about 100
//! bytes) keeps those calls on TCP.
//!
//! With `game_replicas` above one, the game service runs as that many
//! replicas (`game-0`, `game-1`, …) on consecutive ports, sharing the games
//! by shard through one PostgreSQL database; the other services are given
//! every replica's address.
//!
//! - [`config`]: `chess-stack`'s flags and the [`StackOptions`] they give.
//! - [`data_dir`]: the data directory's lock, secrets and SQLite files.
//! - `mint` and `moderator`: the operator's subcommands (a caller
//!   assertion; granting and revoking the moderator role).
//! - `listeners`: every socket, bound before any service starts.
//! - `children`: each service's binary and command line.
//! - [`health`]: waiting until every service is SERVING.
//! - [`stack`]: the running system; [`supervisor`]: child processes and
//!   their restarts.

mod children;
pub mod config;
pub mod data_dir;
pub mod health;
mod listeners;
mod mint;
mod moderator;
pub mod stack;
pub mod supervisor;

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
};

use tokio::signal::unix::{SignalKind, signal};

pub use config::{
    Command, Config, InternalListen, MintArgs, ModeratorAction, ModeratorArgs, StackOptions,
};
pub use data_dir::{INTERNAL_KEY_FILE, LOCK_FILE};
pub use health::wait_serving;
pub use stack::{Addresses, Stack};
pub use supervisor::{ChildSpec, Exit, Listener, Output, Supervisor};

/// The exit status with which `chess-engine` says Stockfish could not be
/// started (as a process's exit code).
pub const ENGINE_UNAVAILABLE: i32 = chess_runtime::exit::ENGINE_UNAVAILABLE as i32;

/// Why the system did not come up.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot prepare the data directory {path}: {source}")]
    DataDir {
        path: String,
        source: std::io::Error,
    },
    #[error("data directory {} is in use by another {}", path.display(), owner_text(.owner))]
    DataDirInUse {
        path: PathBuf,
        owner: Option<chess_runtime::lock::Owner>,
    },
    #[error("cannot lock the data directory: {0}")]
    Lock(chess_runtime::lock::Error),
    #[error("cannot listen on {addr} ({what}): {}", listen_reason(source, flag))]
    Listen {
        addr: String,
        /// Which address, e.g. `game`.
        what: &'static str,
        /// The flag that sets it, for the hint.
        flag: &'static str,
        source: std::io::Error,
    },
    #[error(
        "{binary} not found in {dir}: build the workspace first (cargo build --workspace --bins)"
    )]
    MissingBinary { binary: String, dir: String },
    #[error("chess-{name} exited while starting ({status})")]
    ChildExited {
        name: &'static str,
        status: String,
        code: Option<i32>,
    },
    #[error("chess-{name} could not be started: {error}")]
    ChildNotStarted { name: &'static str, error: String },
    #[error("chess-{0} did not become ready within {secs} s", secs = health::STARTUP_TIMEOUT.as_secs())]
    Timeout(&'static str),
    #[error("{0}")]
    Options(String),
}

fn owner_text(owner: &Option<chess_runtime::lock::Owner>) -> String {
    match owner {
        Some(owner) => format!("{} (pid {})", owner.program, owner.pid),
        None => "chess-stack".to_owned(),
    }
}

fn listen_reason(source: &std::io::Error, flag: &str) -> String {
    if source.kind() == std::io::ErrorKind::AddrInUse {
        format!(
            "address in use — is another chess-stack running? pass {flag} 127.0.0.1:0 for a free port"
        )
    } else {
        source.to_string()
    }
}

/// The directory of the running executable, where the service binaries are
/// built next to it.
pub fn own_dir() -> Option<PathBuf> {
    std::env::current_exe()
        .ok()?
        .parent()
        .map(Path::to_path_buf)
}

/// `chess-stack` with `config`: a subcommand, or the system run until
/// SIGTERM or SIGINT. Every failure is one line on standard error.
pub async fn run(config: Config) -> ExitCode {
    if let Some(Command::MintAssertion(args)) = &config.command {
        return match mint::mint_assertion(args) {
            Ok(assertion) => {
                println!("{assertion}");
                ExitCode::SUCCESS
            }
            Err(e) => fail(e),
        };
    }
    if let Some(Command::Moderator(args)) = &config.command {
        return match moderator::moderator(args).await {
            Ok(done) => {
                println!("{done}");
                ExitCode::SUCCESS
            }
            Err(e) => fail(e),
        };
    }
    let Some(bin_dir) = config.bin_dir.clone().or_else(own_dir) else {
        return fail("cannot tell where the service binaries are; pass --bin-dir");
    };
    let options = config.options(bin_dir);
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return fail("cannot install signal handlers");
    };
    let started = tokio::select! {
        started = Stack::start(options) => started,
        _ = term.recv() => return ExitCode::SUCCESS,
        _ = int.recv() => return ExitCode::SUCCESS,
    };
    let stack = match started {
        Ok(stack) => stack,
        Err(
            e @ StartError::ChildExited {
                name: "engine",
                code: Some(ENGINE_UNAVAILABLE),
                ..
            },
        ) => {
            return fail(format_args!(
                "{e}: Stockfish cannot be started; install it (`apt-get install \
                 stockfish`, which puts it at /usr/games/stockfish) or point --stockfish-path \
                 (CHESS_STACK_STOCKFISH_PATH) at it"
            ));
        }
        Err(e) => return fail(e),
    };
    announce(&stack.addresses, &config).await;
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    eprintln!("chess-stack: stopping");
    stack.stop().await;
    ExitCode::SUCCESS
}

/// Prints `chess-stack: <error>` and gives the failure status.
fn fail(error: impl std::fmt::Display) -> ExitCode {
    eprintln!("chess-stack: {error}");
    ExitCode::FAILURE
}

/// Tells the user where the running system `a` is reached.
async fn announce(a: &Addresses, config: &Config) {
    let data = config
        .data_dir
        .canonicalize()
        .unwrap_or_else(|_| config.data_dir.clone());
    println!("chess-stack: all five services are SERVING");
    println!(
        "  play in a browser {}/",
        a.public_url.trim_end_matches('/')
    );
    println!("  public gRPC API   {}  (gRPC and gRPC-Web)", a.gateway);
    if !a.uqchess.is_empty() {
        println!("  uqchess protocol  {}", a.uqchess);
    }
    println!(
        "  internal          matchmaking {}, game {}, rating {}, engine {}",
        a.matchmaking, a.game, a.rating, a.engine
    );
    if a.game_replicas.len() > 1 {
        let replicas: Vec<String> = a
            .game_replicas
            .iter()
            .enumerate()
            .map(|(i, addr)| format!("game-{i} {addr}"))
            .collect();
        println!("  game replicas     {}", replicas.join(", "));
    }
    if !config.nostr_relay.is_empty() {
        match nostr_key(&a.gateway).await {
            Ok(key) => println!(
                "  Nostr bridge      key {key} on {}",
                config.nostr_relay.join(", ")
            ),
            Err(e) => eprintln!("chess-stack: cannot read the Nostr bridge's key: {e}"),
        }
    }
    println!("  data              {}", data.display());
    println!("Ctrl-C stops everything.");
}

/// The Nostr bridge's public key, as the gateway at `addr` reports it.
async fn nostr_key(addr: &str) -> Result<String, Box<dyn std::error::Error>> {
    use chess_proto::gateway::v1::{GetNostrInfoRequest, nostr_service_client::NostrServiceClient};
    let mut client = NostrServiceClient::connect(format!("http://{addr}")).await?;
    let info = client
        .get_nostr_info(GetNostrInfoRequest {})
        .await?
        .into_inner();
    Ok(format!("{} ({})", info.public_key, info.npub))
}
