//! What the tests of every crate share, so that each crate's own test
//! helpers only hold what is particular to it. Tests keep starting the real
//! binaries: nothing here stands in for a service.
//!
//! - [`free_port`], [`free_addr`]: a loopback port nobody listens on.
//! - [`workspace_binary`], [`repo_root`]: the programs `cargo build
//!   --workspace --bins` put beside the test executables, and the checkout.
//! - [`Service`]: a service binary started on a free port with the flags
//!   every service takes, waited for until its health says SERVING, stopped
//!   the way a supervisor stops it or killed the way a crash would.
//! - [`connect`], [`wait_serving`]: the same for any address.
//! - [`process`]: processes seen through `/proc` (children, liveness, names,
//!   CPU time) and signals.

pub mod process;

use std::{
    net::TcpListener,
    path::{Path, PathBuf},
    process::{ExitStatus, Stdio},
    time::{Duration, Instant},
};

use tokio::process::{Child, Command};
use tonic::transport::Channel;
use tonic_health::pb::{
    HealthCheckRequest, health_check_response::ServingStatus, health_client::HealthClient,
};

/// How long a service may take to become SERVING (Stockfish's start-up and
/// a database migration on a loaded machine included).
pub const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A port on 127.0.0.1 nobody listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

/// `127.0.0.1:<a free port>`.
pub fn free_addr() -> String {
    format!("127.0.0.1:{}", free_port())
}

/// The path of workspace binary `name` (e.g. `chess-game`): tests run from
/// `target/<profile>/deps/`, programs live in `target/<profile>/`.
///
/// # Panics
/// If it has not been built: `cargo build --workspace --bins` first (the
/// test command does).
pub fn workspace_binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    let mut dir = exe.parent().expect("the target directory");
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir = dir.parent().expect("the target directory");
    }
    let path = dir.join(name);
    assert!(
        path.is_file(),
        "{} is missing: build the binaries first with `cargo build --workspace --bins`",
        path.display()
    );
    path
}

/// The repository's root, from a crate's `CARGO_MANIFEST_DIR`.
pub fn repo_root(manifest_dir: &str) -> PathBuf {
    let mut dir = Path::new(manifest_dir);
    while !dir.join("Cargo.lock").is_file() {
        dir = dir
            .parent()
            .expect("a directory with Cargo.lock above the crate");
    }
    dir.canonicalize().expect("the repository's root")
}

/// A channel to `addr` (host:port), connected.
pub async fn connect(addr: &str) -> Channel {
    Channel::from_shared(format!("http://{addr}"))
        .expect("a valid address")
        .connect()
        .await
        .unwrap_or_else(|e| panic!("connect to {addr}: {e}"))
}

/// Waits until the overall health of the server at `addr` is SERVING,
/// failing the test after [`START_TIMEOUT`] or as soon as `child` (the
/// server's process, if given) exits. `what` names it in the failure.
pub async fn wait_serving(addr: &str, mut child: Option<&mut Child>, what: &str) {
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if let Some(child) = child.as_deref_mut()
            && let Some(status) = child.try_wait().expect("poll the child")
        {
            panic!("{what} exited before serving: {status}");
        }
        if let Ok(channel) = Channel::from_shared(format!("http://{addr}"))
            .expect("a valid address")
            .connect()
            .await
        {
            let status = HealthClient::new(channel)
                .check(HealthCheckRequest {
                    service: String::new(),
                })
                .await
                .map(|r| r.into_inner().status);
            if status.ok() == Some(ServingStatus::Serving as i32) {
                return;
            }
        }
        assert!(
            Instant::now() < deadline,
            "{what} did not become SERVING within {START_TIMEOUT:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A running service binary.
#[derive(Debug)]
pub struct Service {
    pub child: Child,
    /// Where it listens (`127.0.0.1:<port>`).
    pub addr: String,
}

impl Service {
    /// Starts `program` on a free port with `args` after the flags every
    /// service takes (`--listen`, a quiet log, stop at the end of standard
    /// input, which stays open), and waits until it is SERVING.
    pub async fn start(program: impl AsRef<Path>, args: &[&str]) -> Self {
        let Self { mut child, addr } = Self::spawn(program, args);
        let what = child
            .id()
            .and_then(process::process_name)
            .unwrap_or_else(|| "the service".to_owned());
        wait_serving(&addr, Some(&mut child), &what).await;
        Self { child, addr }
    }

    /// Starts `program` as [`start`](Self::start) does, without waiting.
    pub fn spawn(program: impl AsRef<Path>, args: &[&str]) -> Self {
        let program = program.as_ref();
        let addr = free_addr();
        let child = Command::new(program)
            .args(["--listen", &addr])
            .args(["--log-filter", "warn", "--stop-on-stdin-eof"])
            .args(args)
            .stdin(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", program.display()));
        Self { child, addr }
    }

    /// A channel to it, connected.
    pub async fn channel(&self) -> Channel {
        connect(&self.addr).await
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id().expect("still running")
    }

    /// Stops it the way a supervisor does (the end of its standard input)
    /// and returns how it exited.
    pub async fn stop(mut self) -> ExitStatus {
        drop(self.child.stdin.take());
        tokio::time::timeout(Duration::from_secs(30), self.child.wait())
            .await
            .expect("the service stops within 30 s")
            .expect("reap the service")
    }

    /// Kills it with SIGKILL, as a crash would, and reaps it.
    pub async fn crash(mut self) {
        self.child.start_kill().expect("kill");
        self.child.wait().await.expect("reap");
    }
}
