//! Tools for end-to-end tests: finding the built binaries, starting the whole
//! system (`chess-stack` or `uqchessserver`) as a user would, and talking the
//! uqchess protocol over real sockets.
//!
//! The binaries are the ones `cargo build --workspace --bins` put next to the
//! test executables (`target/<profile>/`); the test command builds them
//! first.
//!
//! [`load`] holds the load generator's parts; its program is `chess-load`
//! (`src/bin/chess-load.rs`).

pub mod load;

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::{
    io::{AsyncBufReadExt as _, AsyncRead, AsyncWriteExt as _, BufReader, Lines},
    net::{
        TcpStream,
        tcp::{OwnedReadHalf, OwnedWriteHalf},
    },
    process::{Child, Command},
    time::timeout,
};

/// How long a test waits for an expected line.
pub const LINE_TIMEOUT: Duration = Duration::from_secs(20);

pub use chess_testkit::process::{children_of, cpu_ticks, is_alive, process_name, signal};

/// A new temporary directory whose path leaves no room for a Unix socket
/// in it: a socket's path holds at most 107 bytes.
pub fn too_long_for_sockets() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&"d".repeat(110))
        .tempdir()
        .expect("temp dir")
}

/// The path of binary `name` built in this workspace.
///
/// # Panics
/// If it has not been built: run `cargo build --workspace --bins` first (the
/// test command does).
pub fn binary(name: &str) -> PathBuf {
    chess_testkit::workspace_binary(name)
}

/// `chess-stack` on the data directory `data`, every address of it a free
/// port, so that stacks under test never meet.
pub fn stack_command(data: &Path) -> Command {
    let mut command = Command::new(binary("chess-stack"));
    command
        .arg("--data-dir")
        .arg(data)
        .args([
            "--grpc-listen",
            "127.0.0.1:0",
            "--uqchess-listen",
            "127.0.0.1:0",
        ])
        .args(INTERNAL_ON_FREE_PORTS);
    command
}

/// Starts `command` (the program `what`) with `env`, its output piped to
/// the test, killed when dropped.
fn spawn_piped(mut command: Command, env: &[(&str, &str)], what: &str) -> Child {
    command
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("start {what}: {e}"))
}

/// Fails the test with the fix if `python3` lacks a module of `modules`
/// (those of `tests/python/requirements.txt`), which `what` needs.
pub async fn require_python_modules(modules: &[&str], what: &str) {
    let probe = Command::new("python3")
        .args(["-c", &format!("import {}", modules.join(", "))])
        .output()
        .await
        .expect("python3 is installed");
    assert!(
        probe.status.success(),
        "{what} needs the packages of tests/python/requirements.txt: run it through \
         scripts/test (or put .venv/bin, from scripts/setup test, first on PATH)\n{}",
        String::from_utf8_lossy(&probe.stderr)
    );
}

/// Reads one line, failing the test if none comes in time.
pub async fn read_line<R: AsyncRead + Unpin>(
    lines: &mut Lines<BufReader<R>>,
    what: &str,
) -> Option<String> {
    match timeout(LINE_TIMEOUT, lines.next_line()).await {
        Ok(line) => line.expect("read"),
        Err(_) => panic!("no line from {what} within {LINE_TIMEOUT:?}"),
    }
}

/// A running `uqchessserver`.
#[derive(Debug)]
pub struct UqServer {
    pub child: Child,
    pub port: u16,
    extra: Arc<Mutex<Vec<String>>>,
}

impl UqServer {
    /// Starts `uqchessserver --listenOn 0` and waits for its port.
    pub async fn start() -> Self {
        Self::start_with_env(&[]).await
    }

    /// As [`start`](Self::start), with extra environment variables for the
    /// server and the services it starts.
    pub async fn start_with_env(env: &[(&str, &str)]) -> Self {
        let mut command = Command::new(binary("uqchessserver"));
        command.args(["--listenOn", "0"]);
        let mut child = spawn_piped(command, env, "uqchessserver");
        let mut stderr = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let first = read_line(&mut stderr, "uqchessserver")
            .await
            .expect("uqchessserver printed its port");
        let port = first
            .parse()
            .unwrap_or_else(|_| panic!("uqchessserver printed {first:?}, not a port"));
        // Keep draining so the server never blocks on a full pipe; anything
        // it prints later is a contract violation the tests look for.
        let extra = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&extra);
        tokio::spawn(async move {
            while let Ok(Some(line)) = stderr.next_line().await {
                sink.lock().expect("not poisoned").push(line);
            }
        });
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let sink = Arc::clone(&extra);
        tokio::spawn(async move {
            while let Ok(Some(line)) = stdout.next_line().await {
                sink.lock()
                    .expect("not poisoned")
                    .push(format!("stdout: {line}"));
            }
        });
        Self { child, port, extra }
    }

    /// Asserts the server printed nothing after its port.
    pub fn assert_quiet(&self) {
        let extra = self.extra.lock().expect("not poisoned");
        assert!(
            extra.is_empty(),
            "uqchessserver printed more than its port: {extra:?}"
        );
    }

    /// A new client connection.
    pub async fn connect(&self) -> UqClient {
        UqClient::connect(self.port).await
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id().expect("running")
    }
}

/// One uqchess connection.
#[derive(Debug)]
pub struct UqClient {
    pub lines: Lines<BufReader<OwnedReadHalf>>,
    pub writer: OwnedWriteHalf,
}

impl UqClient {
    pub async fn connect(port: u16) -> Self {
        let stream = TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        let (read, writer) = stream.into_split();
        Self {
            lines: BufReader::new(read).lines(),
            writer,
        }
    }

    /// Sends `text` as is (include the newlines).
    pub async fn send(&mut self, text: &str) {
        self.writer.write_all(text.as_bytes()).await.expect("send");
    }

    /// The next line from the server.
    pub async fn line(&mut self) -> String {
        read_line(&mut self.lines, "the server")
            .await
            .expect("the server closed the connection")
    }

    /// Asserts the next lines are exactly `expected`.
    pub async fn expect(&mut self, expected: &[&str]) {
        for want in expected {
            let got = self.line().await;
            assert_eq!(&got, want, "expected {want:?}");
        }
    }

    /// Sends `request` (a newline is added) and asserts the reply lines.
    pub async fn ask(&mut self, request: &str, expected: &[&str]) {
        self.send(&format!("{request}\n")).await;
        self.expect(expected).await;
    }

    /// Asserts nothing arrives for `wait`.
    pub async fn expect_silence(&mut self, wait: Duration) {
        if let Ok(line) = timeout(wait, self.lines.next_line()).await {
            panic!("expected silence, got {line:?}");
        }
    }

    /// Reads a `startboard` … `endboard` block and returns what is between.
    pub async fn board(&mut self) -> String {
        assert_eq!(self.line().await, "startboard");
        let mut board = String::new();
        loop {
            let line = self.line().await;
            if line == "endboard" {
                return board;
            }
            board.push_str(&line);
            board.push('\n');
        }
    }
}

/// `chess-stack` flags that put the internal services on free ports rather
/// than their fixed defaults, so that stacks of parallel tests never meet.
pub const INTERNAL_ON_FREE_PORTS: [&str; 8] = [
    "--matchmaking-listen",
    "127.0.0.1:0",
    "--game-listen",
    "127.0.0.1:0",
    "--rating-listen",
    "127.0.0.1:0",
    "--engine-listen",
    "127.0.0.1:0",
];

/// A running `chess-stack`.
#[derive(Debug)]
pub struct StackProcess {
    pub child: Child,
    /// Public gRPC API.
    pub gateway: String,
    pub uqchess: String,
    /// `name → address` of the internal services.
    pub internal: Vec<(String, String)>,
    /// `replica id → address` of the game replicas, when there are several.
    pub game_replicas: Vec<(String, String)>,
    /// Every line the stack and its services wrote to standard error so far
    /// (each also passed on to the test's own).
    pub log: Arc<Mutex<Vec<String>>>,
    pub data: tempfile::TempDir,
}

impl StackProcess {
    /// Starts `chess-stack` with a fresh data directory, on free ports, with
    /// `extra` flags and `env`, and waits until it reports every service
    /// SERVING.
    pub async fn start(extra: &[&str], env: &[(&str, &str)]) -> Self {
        Self::start_in(tempfile::tempdir().expect("temp dir"), extra, env).await
    }

    /// As [`start`](Self::start), on the data directory `data`. Only
    /// warnings are logged unless `extra` has a `--log-filter` of its own.
    pub async fn start_in(data: tempfile::TempDir, extra: &[&str], env: &[(&str, &str)]) -> Self {
        let filtered = extra
            .iter()
            .any(|a| *a == "--log-filter" || a.starts_with("--log-filter="));
        let mut command = stack_command(data.path());
        if !filtered {
            command.args(["--log-filter", "warn"]);
        }
        command.args(extra);
        let mut child = spawn_piped(command, env, "chess-stack");
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut stderr = BufReader::new(child.stderr.take().expect("stderr")).lines();
        tokio::spawn({
            let log = Arc::clone(&log);
            async move {
                while let Ok(Some(line)) = stderr.next_line().await {
                    eprintln!("{line}");
                    log.lock().expect("not poisoned").push(line);
                }
            }
        });
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut gateway = String::new();
        let mut uqchess = String::new();
        let mut internal = Vec::new();
        let mut game_replicas = Vec::new();
        loop {
            let line = read_line(&mut stdout, "chess-stack")
                .await
                .expect("chess-stack exited before it was ready");
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                ["public", "gRPC", "API", addr, ..] => gateway = (*addr).to_owned(),
                ["uqchess", "protocol", addr] => uqchess = (*addr).to_owned(),
                ["internal", rest @ ..] => {
                    for pair in rest.join(" ").split(", ") {
                        if let Some((name, addr)) = pair.split_once(' ') {
                            internal.push((name.to_owned(), addr.to_owned()));
                        }
                    }
                }
                ["game", "replicas", rest @ ..] => {
                    for pair in rest.join(" ").split(", ") {
                        if let Some((id, addr)) = pair.split_once(' ') {
                            game_replicas.push((id.to_owned(), addr.to_owned()));
                        }
                    }
                }
                ["Ctrl-C", ..] => break,
                _ => {}
            }
        }
        tokio::spawn(async move { while let Ok(Some(_)) = stdout.next_line().await {} });
        Self {
            child,
            gateway,
            uqchess,
            internal,
            game_replicas,
            log,
            data,
        }
    }

    /// The lines of the log so far that contain `text`.
    pub fn log_lines(&self, text: &str) -> Vec<String> {
        self.log
            .lock()
            .expect("not poisoned")
            .iter()
            .filter(|line| line.contains(text))
            .cloned()
            .collect()
    }

    /// The address of internal service `name`.
    pub fn internal(&self, name: &str) -> &str {
        self.internal
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, a)| a.as_str())
            .expect("known service")
    }

    /// A gRPC channel to `addr`.
    pub async fn channel(addr: &str) -> tonic::transport::Channel {
        tonic::transport::Channel::from_shared(format!("http://{addr}"))
            .expect("uri")
            .connect()
            .await
            .expect("connect")
    }

    /// The uqchess port.
    pub fn uqchess_port(&self) -> u16 {
        self.uqchess
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("uqchess port")
    }

    pub fn pid(&self) -> u32 {
        self.child.id().expect("running")
    }

    /// Stops it with SIGTERM and returns its exit status.
    pub async fn stop(self) -> std::process::ExitStatus {
        self.stop_keeping_data().await.0
    }

    /// [`stop`](Self::stop), handing back the data directory (removed when
    /// dropped) to look at what the stack left there.
    pub async fn stop_keeping_data(mut self) -> (std::process::ExitStatus, tempfile::TempDir) {
        signal(self.pid(), nix::sys::signal::Signal::SIGTERM);
        let status = timeout(Duration::from_secs(30), self.child.wait())
            .await
            .expect("chess-stack stopped")
            .expect("wait");
        (status, self.data)
    }
}
