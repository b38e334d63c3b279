//! Test support: the real `uqchessclient` binary with piped standard streams,
//! and a scripted server on a real TCP socket that checks every line the
//! client sends, byte for byte.
//!
//! Every wait is bounded by [`PATIENCE`], so a client that stays silent fails
//! its test instead of hanging it; the bound is generous and no test
//! measures time.

#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

pub const WELCOME: &str = "Welcome to UQChessClient - written by the Rookery developers";
pub const USAGE: &str =
    "Usage: uqchessclient portnum [--versus computer|human] [--colour black|white]";
pub const GONE: &str = "uqchessclient: server has gone away";
pub const INVALID: &str = "Try again - command is not valid";
pub const NO_GAME: &str = "Invalid command - game not in progress";
pub const NOT_YOUR_TURN: &str = "Invalid command - not your turn";

/// How long any single expected thing may take before the test fails.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// Shows bytes readably in assertion messages.
fn show(bytes: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(bytes))
}

/// A port on 127.0.0.1 that nothing listens on (it was free a moment ago).
pub fn unused_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    listener.local_addr().expect("bound address").port()
}

/// A listening socket playing the server.
pub struct Server {
    listener: TcpListener,
    pub port: u16,
}

impl Server {
    pub fn new() -> Self {
        Self::on(TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port"))
    }

    /// The server behind an already bound `listener`.
    pub fn on(listener: TcpListener) -> Self {
        let port = listener.local_addr().expect("bound address").port();
        Self { listener, port }
    }

    /// Waits for the client's connection.
    pub fn accept(&self) -> Peer {
        self.listener
            .set_nonblocking(true)
            .expect("non-blocking listener");
        let deadline = Instant::now() + PATIENCE;
        loop {
            match self.listener.accept() {
                Ok((stream, _)) => return Peer::new(stream),
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    assert!(Instant::now() < deadline, "the client never connected");
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => panic!("accept failed: {e}"),
            }
        }
    }

    /// Asserts that nobody has connected.
    pub fn assert_no_connection(&self) {
        self.listener
            .set_nonblocking(true)
            .expect("non-blocking listener");
        match self.listener.accept() {
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Ok(_) => panic!("the client connected"),
            Err(e) => panic!("accept failed: {e}"),
        }
    }
}

/// The server's end of one client connection.
pub struct Peer {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    /// The start of a line that [`Peer::poll_line`] gave up waiting for.
    partial: Vec<u8>,
}

impl Peer {
    fn new(stream: TcpStream) -> Self {
        stream.set_nonblocking(false).expect("blocking stream");
        stream
            .set_read_timeout(Some(PATIENCE))
            .expect("read timeout");
        let writer = stream.try_clone().expect("clone the stream");
        Self {
            reader: BufReader::new(stream),
            writer,
            partial: Vec::new(),
        }
    }

    /// Asserts that the next line the client sent is exactly `line` + `\n`.
    pub fn expect(&mut self, line: &str) {
        let mut got = std::mem::take(&mut self.partial);
        if let Err(e) = self.reader.read_until(b'\n', &mut got) {
            panic!(
                "waiting for {line:?} from the client: {e}; got {}",
                show(&got)
            );
        }
        let want = format!("{line}\n");
        assert_eq!(
            got,
            want.as_bytes(),
            "the client sent {} instead of {}",
            show(&got),
            show(want.as_bytes())
        );
    }

    /// The next line the client sent, if it arrives within `wait`.
    pub fn poll_line(&mut self, wait: Duration) -> Option<Vec<u8>> {
        let stream = self.reader.get_ref();
        stream.set_read_timeout(Some(wait)).expect("read timeout");
        let result = self.reader.read_until(b'\n', &mut self.partial);
        self.reader
            .get_ref()
            .set_read_timeout(Some(PATIENCE))
            .expect("read timeout");
        match result {
            Ok(_) if self.partial.ends_with(b"\n") => Some(std::mem::take(&mut self.partial)),
            Ok(_) => panic!(
                "the client closed the connection after {}",
                show(&self.partial)
            ),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => None,
            Err(e) => panic!("reading from the client: {e}"),
        }
    }

    /// Sends raw bytes to the client.
    pub fn send(&mut self, text: &str) {
        self.writer
            .write_all(text.as_bytes())
            .expect("write to the client");
    }

    /// Asserts that the client closes the connection without sending
    /// anything more.
    pub fn expect_end(mut self) {
        let mut rest = std::mem::take(&mut self.partial);
        match self.reader.read_to_end(&mut rest) {
            Ok(_) => assert!(rest.is_empty(), "the client also sent {}", show(&rest)),
            Err(e) => panic!("waiting for the client to close: {e}; got {}", show(&rest)),
        }
    }

    /// Closes the connection from the server's side.
    pub fn close(self) {}
}

/// One running `uqchessclient`.
pub struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Option<Receiver<Vec<u8>>>,
    stderr: Option<Receiver<Vec<u8>>>,
}

/// Forwards what `stream` yields, line by line (a last partial line as is).
fn lines_of(stream: impl Read + Send + 'static) -> Receiver<Vec<u8>> {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let mut stream = BufReader::new(stream);
        loop {
            let mut line = Vec::new();
            match stream.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {
                    if sender.send(line).is_err() {
                        return;
                    }
                }
            }
        }
    });
    receiver
}

impl Client {
    /// Starts the client with `args` (after the program name).
    pub fn start(args: &[&str]) -> Self {
        Self::start_with(args, true, true)
    }

    /// Starts the client with its stdout (and stderr) piped; a stream that
    /// is not `read` has its pipe closed at once, so that every write the
    /// client makes to it fails with EPIPE.
    pub fn start_with(args: &[&str], read_stdout: bool, read_stderr: bool) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_uqchessclient"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start uqchessclient");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().filter(|_| read_stdout).map(lines_of);
        let stderr = child.stderr.take().filter(|_| read_stderr).map(lines_of);
        Self {
            child,
            stdin,
            stdout,
            stderr,
        }
    }

    /// Types `text` (raw: include the newline).
    pub fn type_raw(&mut self, text: &str) {
        self.write_stdin(text).expect("write to the client's stdin");
    }

    /// Types `text` unless the client has already exited (its standard
    /// input is closed): for typing that races the client's own ending.
    pub fn type_raw_unless_exited(&mut self, text: &str) {
        match self.write_stdin(text) {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                panic!("write to the client's stdin: {e}")
            }
            _ => {}
        }
    }

    fn write_stdin(&mut self, text: &str) -> std::io::Result<()> {
        self.stdin
            .as_mut()
            .expect("standard input is open")
            .write_all(text.as_bytes())
    }

    /// Types one line.
    pub fn type_line(&mut self, line: &str) {
        self.type_raw(&format!("{line}\n"));
    }

    /// Ends the client's standard input.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    fn next_line(receiver: &Option<Receiver<Vec<u8>>>, name: &str, want: &str) -> Vec<u8> {
        let receiver = receiver.as_ref().expect("the stream is read");
        match receiver.recv_timeout(PATIENCE) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => panic!("no {name} line; wanted {want:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("{name} ended; wanted {want:?}"),
        }
    }

    /// Asserts that the next line `receiver` (the stream `name`) gives is
    /// exactly `line` + `\n`.
    fn expect_line(receiver: &Option<Receiver<Vec<u8>>>, name: &str, line: &str) {
        let got = Self::next_line(receiver, name, line);
        assert_bytes(name, &got, format!("{line}\n").as_bytes());
    }

    /// Asserts that the next stdout line is exactly `line` + `\n`.
    pub fn expect_stdout(&mut self, line: &str) {
        Self::expect_line(&self.stdout, "stdout", line);
    }

    /// Asserts that the next stdout bytes are exactly `text`, which may hold
    /// several lines or end without a newline.
    pub fn expect_stdout_raw(&mut self, text: &str) {
        let mut got = Vec::new();
        while got.len() < text.len() {
            got.extend(Self::next_line(&self.stdout, "stdout", text));
        }
        assert_bytes("stdout", &got, text.as_bytes());
    }

    /// Asserts that the next stderr line is exactly `line` + `\n`.
    pub fn expect_stderr(&mut self, line: &str) {
        Self::expect_line(&self.stderr, "stderr", line);
    }

    /// The next stderr line, if one has been written already.
    pub fn poll_stderr(&self) -> Option<Vec<u8>> {
        self.stderr
            .as_ref()
            .expect("stderr is read")
            .try_recv()
            .ok()
    }

    /// Waits for the client to exit and asserts that it wrote nothing more
    /// on stdout or stderr.
    pub fn finish(mut self) -> ExitStatus {
        let deadline = Instant::now() + PATIENCE;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("poll the client") {
                break status;
            }
            if Instant::now() >= deadline {
                // Killing a hung client lets the test report it.
                let _already_gone = self.child.kill();
                panic!("the client did not exit");
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        for (name, receiver) in [("stdout", &self.stdout), ("stderr", &self.stderr)] {
            if let Some(receiver) = receiver {
                // The pipes reach end of file once the client has exited.
                let rest: Vec<u8> = receiver.iter().flatten().collect();
                assert!(
                    rest.is_empty(),
                    "the client also wrote {} on {name}",
                    show(&rest)
                );
            }
        }
        status
    }

    /// Waits for the client to exit with `code`, having written nothing more.
    pub fn expect_exit(self, code: i32) {
        let status = self.finish();
        assert_eq!(status.code(), Some(code), "exit status {status:?}");
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // A test that failed half-way must not leave its client running.
        let _already_exited = self.child.kill();
        let _reaped = self.child.wait();
    }
}

/// Asserts that the stream `name` gave `want`, showing both if not.
fn assert_bytes(name: &str, got: &[u8], want: &[u8]) {
    assert_eq!(got, want, "{name}: {} instead of {}", show(got), show(want));
}

/// A started client and the server's end of its connection, past the
/// welcome line and the first `start` message.
pub fn connected(args: &[&str], start: &str) -> (Client, Peer) {
    let server = Server::new();
    let port = server.port.to_string();
    let mut all_args = vec![port.as_str()];
    all_args.extend_from_slice(args);
    let mut client = Client::start(&all_args);
    let mut peer = server.accept();
    client.expect_stdout(WELCOME);
    peer.expect(start);
    (client, peer)
}

/// A client started on a new server with its stdout and stderr read or
/// closed as [`Client::start_with`] has them, and the server's end of its
/// connection, nothing read from either yet.
pub fn accepted_with(read_stdout: bool, read_stderr: bool) -> (Client, Peer) {
    let server = Server::new();
    let client = Client::start_with(&[&server.port.to_string()], read_stdout, read_stderr);
    (client, server.accept())
}

/// Types `command` until the server receives it as `sent`, for as long as
/// the client refuses it with `refusal` on stderr: for when the client has
/// no stdout to show that a server line has been handled.
pub fn type_until_sent(
    client: &mut Client,
    peer: &mut Peer,
    command: &str,
    sent: &str,
    refusal: &str,
) {
    let deadline = Instant::now() + PATIENCE;
    'attempts: while Instant::now() < deadline {
        client.type_line(command);
        while Instant::now() < deadline {
            if let Some(line) = peer.poll_line(Duration::from_millis(10)) {
                let want = format!("{sent}\n");
                assert_eq!(line, want.as_bytes(), "the client sent {}", show(&line));
                return;
            }
            if let Some(line) = client.poll_stderr() {
                let want = format!("{refusal}\n");
                assert_eq!(line, want.as_bytes(), "stderr: {}", show(&line));
                continue 'attempts;
            }
        }
    }
    panic!("{command:?} never reached the server");
}
