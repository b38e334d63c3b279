//! What every chess service binary shares.
//!
//! - [`addr`]: the default address of every service; [`exit`]: the exit
//!   statuses services and their launchers share.
//! - [`service`]: the flags every service shares, the start-up failures
//!   they share, and its `main`.
//! - [`cli`]: flag parsing where every flag has an environment twin
//!   (`CHESS_<SERVICE>_<FLAG>`), with bad flags reported on one line.
//! - [`server`]: binding the listen address, the gRPC server with the standard
//!   health service, reflection (v1 and v1alpha), trace propagation and
//!   graceful shutdown on SIGTERM, SIGINT or end of standard input; a front
//!   layer may answer plain HTTP on the same port.
//! - [`lock`]: exclusive locks on database files and data directories.
//! - [`client`]: lazily connected, traced channels to other services.
//! - [`reason`]: machine-readable reasons attached to gRPC errors;
//!   [`status_cap`]: every server's error statuses kept small.
//! - [`throttle`]: exponential back-off after repeated failures (logins,
//!   registrations), per key, in bounded memory.
//! - [`identity`]: the signed caller assertions every call between the
//!   services carries, minted by callers and checked by the servers.
//! - [`secret`]: key files and the HMAC-SHA256 they key, for the internal
//!   key and the gateway's token key alike.

pub mod addr;
mod authority;
pub mod cli;
pub mod client;
pub mod identity;
pub mod lock;
pub mod reason;
pub mod secret;
pub mod server;
pub mod service;
pub mod status_cap;
pub mod throttle;

pub use client::{Channel, channel};
pub use identity::{Claims, InternalKey, Signer};
pub use reason::Reason;
pub use server::{Health, Server, ServerArgs, Shutdown};
pub use service::{ServiceArgs, StartError};

use std::process::ExitCode;

/// Starts telemetry for `service`, or reports why it cannot and exits.
pub fn init_telemetry(
    service: &str,
    args: &chess_telemetry::TelemetryArgs,
) -> chess_telemetry::TelemetryGuard {
    match chess_telemetry::init(service, args) {
        Ok(guard) => guard,
        Err(e) => fail(service, e),
    }
}

/// Prints `chess-<service>: <error>` on one line and exits with status 1.
pub fn fail(service: &str, error: impl std::fmt::Display) -> ! {
    eprintln!("chess-{service}: {error}");
    std::process::exit(1)
}

/// Exit statuses a service and its launchers agree on.
pub mod exit {
    /// `chess-engine` could not start any Stockfish process (or none
    /// completed its handshake); the launchers (`chess-stack`,
    /// `uqchessserver`) turn it into their own message.
    pub const ENGINE_UNAVAILABLE: u8 = 3;
}

/// The Tokio runtime a binary of the workspace runs on: a worker per core
/// (or `TOKIO_WORKER_THREADS`), as `#[tokio::main]` would. A failure to
/// build it is reported on one line and ends the process.
pub fn runtime(service: &str) -> tokio::runtime::Runtime {
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => fail(service, format_args!("cannot start its runtime: {e}")),
    }
}

/// The exit status for a service's `run` result: errors are printed on one line.
pub fn exit_code<E: std::fmt::Display>(service: &str, result: Result<(), E>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("chess-{service}: {e}");
            ExitCode::FAILURE
        }
    }
}
