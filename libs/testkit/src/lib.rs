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
//! - [`settled`]: a value fetched again until it is as expected, for what
//!   happens on a timer whose lateness depends on the machine.
//! - [`process`]: processes seen through `/proc` (children, liveness, names,
//!   CPU time) and signals.
//! - [`internal_key_file`], [`signed`], [`acting`]: the fixed internal key
//!   every service a test starts is given, and raw clients whose calls carry
//!   caller assertions signed with it, as the services' own calls do.
//! - [`SmtpSink`]: a real SMTP server keeping the mail it is sent.
//! - [`clocks`]: time controls as requests carry them.
//! - [`Answer`], [`next_message`]: a call that must succeed and the next
//!   message of a stream, for the steps of a test that are not under test;
//!   [`refused`], a call that must fail.
//! - [`gateway`]: the gateway's public API, as players use it.

pub mod clocks;
pub mod gateway;
pub mod process;
mod smtp;

pub use smtp::SmtpSink;

use std::{
    net::TcpListener,
    path::{Path, PathBuf},
    process::{ExitStatus, Stdio},
    time::{Duration, Instant},
};

use chess_runtime::{InternalKey, Signer, identity::HEADER};
use tokio::process::{Child, Command};
use tonic::{
    metadata::MetadataValue, service::interceptor::InterceptedService, transport::Channel,
};
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

/// The internal key of every service a test starts (no secret: tests only).
pub const INTERNAL_KEY: &str = "rookery-tests-internal-key-0123456789abcdef";

/// The services whose binaries take `--internal-key-file`.
const KEYED_SERVICES: [&str; 5] = ["engine", "rating", "game", "matchmaking", "gateway"];

/// A file holding [`INTERNAL_KEY`], written once per machine.
pub fn internal_key_file() -> PathBuf {
    static FILE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    FILE.get_or_init(|| {
        let path = std::env::temp_dir().join("rookery-tests-internal.key");
        if std::fs::read(&path).ok().as_deref() != Some(INTERNAL_KEY.as_bytes()) {
            // Written aside and renamed, so a concurrent test never reads
            // half of it.
            let aside = path.with_extension(format!("{}.tmp", std::process::id()));
            std::fs::write(&aside, INTERNAL_KEY).expect("write the test key");
            std::fs::rename(&aside, &path).expect("install the test key");
        }
        path
    })
    .clone()
}

/// The environment that gives every service binary the test key
/// (`CHESS_<SERVICE>_INTERNAL_KEY_FILE`).
pub fn internal_key_env() -> Vec<(String, PathBuf)> {
    let file = internal_key_file();
    KEYED_SERVICES
        .iter()
        .map(|service| {
            (
                chess_runtime::cli::env_name(service, "internal-key-file"),
                file.clone(),
            )
        })
        .collect()
}

/// Signs as `caller` with the test key.
pub fn signer(caller: &str) -> Signer {
    Signer::new(
        InternalKey::from_bytes(INTERNAL_KEY.as_bytes()).expect("the test key is long enough"),
        caller,
    )
}

/// Puts an assertion acting for nobody on each call that carries none yet
/// (one made with [`acting`] keeps its own).
#[derive(Clone, Debug)]
pub struct Caller(Signer);

impl tonic::service::Interceptor for Caller {
    fn call(
        &mut self,
        mut request: tonic::Request<()>,
    ) -> Result<tonic::Request<()>, tonic::Status> {
        if !request.metadata().contains_key(HEADER) {
            let assertion = self.0.mint(None, None)?;
            request.metadata_mut().insert(
                HEADER,
                MetadataValue::try_from(assertion).expect("assertions are ASCII"),
            );
        }
        Ok(request)
    }
}

/// A channel whose calls carry assertions signed with the test key.
pub type Signed = InterceptedService<Channel, Caller>;

/// `channel` with every call signed as the gateway (the caller every
/// internal service takes).
pub fn signed(channel: Channel) -> Signed {
    signed_as(channel, "gateway")
}

/// `channel` with every call signed as `caller`.
pub fn signed_as(channel: Channel, caller: &str) -> Signed {
    InterceptedService::new(channel, Caller(signer(caller)))
}

/// `message` as a request whose assertion (the gateway's) acts for
/// `player` in `game`, as the gateway's calls for a player do.
pub fn acting<T>(message: T, player: &str, game: Option<&str>) -> tonic::Request<T> {
    acting_as("gateway", message, player, game)
}

/// `message` as a request whose assertion, signed as `caller`, acts for
/// `player` (empty: nobody) in `game`.
pub fn acting_as<T>(
    caller: &str,
    message: T,
    player: &str,
    game: Option<&str>,
) -> tonic::Request<T> {
    let assertion = signer(caller)
        .mint(Some(player), game)
        .expect("test ids are short");
    let mut request = tonic::Request::new(message);
    request.metadata_mut().insert(
        HEADER,
        MetadataValue::try_from(assertion).expect("assertions are ASCII"),
    );
    request
}

/// A call that must succeed, for a test's every step that is not the one
/// under test.
pub trait Answer<T>: Future<Output = Result<tonic::Response<T>, tonic::Status>> + Sized {
    /// The call's answer; a refusal fails the test.
    fn answer(self) -> impl Future<Output = T> + Send
    where
        Self: Send,
        T: Send,
    {
        async move { self.await.expect("the call succeeds").into_inner() }
    }
}

impl<T, F: Future<Output = Result<tonic::Response<T>, tonic::Status>>> Answer<T> for F {}

/// Asserts that `result` is a refusal with `code` whose message says
/// `says`, and returns it.
pub fn refused<T: std::fmt::Debug>(
    result: Result<T, tonic::Status>,
    code: tonic::Code,
    says: &str,
) -> tonic::Status {
    let status = result.expect_err("a refusal");
    assert_eq!(status.code(), code, "{status:?}");
    assert!(
        status.message().contains(says),
        "{:?} does not say {says:?}",
        status.message()
    );
    status
}

/// The next message of `stream`, waiting at most `within`; an error, the
/// stream's end or the wait running out fails the test.
pub async fn next_message<T>(stream: &mut tonic::Streaming<T>, within: Duration) -> T {
    tokio::time::timeout(within, stream.message())
        .await
        .unwrap_or_else(|_| panic!("a message within {within:?}"))
        .expect("the stream is healthy")
        .expect("the stream is open")
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

/// Fetches a value with `fetch` every 100 ms until `done` holds of it or
/// `within` has passed, and returns the last value fetched: for what a
/// service does on a timer (a flag falling, a seek lapsing), which comes
/// later on a loaded machine. The caller asserts on the value returned, so
/// a failure shows what was seen last.
pub async fn settled<T, Fut>(
    within: Duration,
    mut fetch: impl FnMut() -> Fut,
    done: impl Fn(&T) -> bool,
) -> T
where
    Fut: std::future::Future<Output = T>,
{
    let deadline = Instant::now() + within;
    loop {
        let value = fetch().await;
        if done(&value) || Instant::now() >= deadline {
            return value;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
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
        Self::start_at(program, &free_addr(), args).await
    }

    /// Starts `program` as [`start`](Self::start) does, listening at
    /// `addr` (where another run of it listened before).
    pub async fn start_at(program: impl AsRef<Path>, addr: &str, args: &[&str]) -> Self {
        let Self { mut child, addr } = Self::spawn_at(program, addr, args);
        let what = child
            .id()
            .and_then(process::process_name)
            .unwrap_or_else(|| "the service".to_owned());
        wait_serving(&addr, Some(&mut child), &what).await;
        Self { child, addr }
    }

    /// Starts `program` as [`start`](Self::start) does, without waiting.
    pub fn spawn(program: impl AsRef<Path>, args: &[&str]) -> Self {
        Self::spawn_at(program, &free_addr(), args)
    }

    fn spawn_at(program: impl AsRef<Path>, addr: &str, args: &[&str]) -> Self {
        let program = program.as_ref();
        let addr = addr.to_owned();
        let child = Command::new(program)
            .envs(internal_key_env())
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

    /// A channel to it whose calls are signed as the gateway's.
    pub async fn signed(&self) -> Signed {
        signed(self.channel().await)
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
