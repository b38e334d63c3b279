//! One engine process and the conversation with it: starting it, options,
//! positions, perft, and the bookkeeping of the output it still owes;
//! [`search`] holds the running search, [`crate::error`] what can fail.

mod search;

use std::{fmt, path::Path, process::Stdio, time::Duration};

use shakmaty::{fen::Fen, uci::UciMove};
use tokio::{
    io::AsyncWriteExt as _,
    process::{Child, ChildStdin, ChildStdout, Command},
    time::{Instant, timeout, timeout_at},
};

pub use self::search::{Go, Search, SearchEvent};
use crate::{
    error::Error,
    lines::{LineError, LineReader},
    parse::{Line, OptionInfo, ParseError},
};

/// The longest output line accepted, in bytes. A principal variation of a
/// hundred moves is about 600 bytes; anything near this bound is garbage.
pub const MAX_LINE_BYTES: usize = 16 * 1024;

/// How long the engine may take to answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// From starting the process to `uciok`.
    pub handshake: Duration,
    /// For `readyok` after `isready`, `bestmove` after `stop`, the end of a
    /// perft listing, and room in the engine's input.
    pub answer: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            handshake: Duration::from_secs(10),
            answer: Duration::from_secs(10),
        }
    }
}

/// The result of `go perft`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Perft {
    /// Each legal move with its leaf count, in the engine's order.
    pub moves: Vec<(UciMove, u64)>,
    /// The total the engine reported.
    pub nodes: u64,
}

/// A deadline and the timeout it came from (for the error message).
#[derive(Clone, Copy, Debug)]
struct Deadline {
    at: Instant,
    after: Duration,
}

impl Deadline {
    fn after(after: Duration) -> Self {
        Self {
            at: Instant::now() + after,
            after,
        }
    }
}

/// Output the engine still owes for a command already sent. Whatever the
/// caller does (finish, abandon, or drop a future half-way), the next command
/// first reads this to its end marker, so no command ever reads output that
/// belongs to an earlier one.
#[derive(Clone, Copy, Debug)]
enum Owed {
    Nothing,
    ReadyOk(Deadline),
    BestMove {
        /// When to send `stop` unasked (a search that overruns its time).
        stop_at: Option<Deadline>,
        /// Set once `stop` was sent: when to give up on `bestmove`.
        give_up: Option<Deadline>,
    },
    Perft {
        past_total: bool,
        give_up: Deadline,
    },
}

/// A running UCI engine process, spoken to over its standard input and
/// output (its standard error is inherited). The process is killed when this
/// is dropped.
#[derive(Debug)]
pub struct Engine {
    child: Child,
    pid: Option<u32>,
    stdin: ChildStdin,
    unsent: Vec<u8>,
    output: LineReader<ChildStdout>,
    owed: Owed,
    poisoned: bool,
    lines_read: u64,
    timeouts: Timeouts,
    name: Option<String>,
    options: Vec<OptionInfo>,
}

impl Engine {
    /// Starts `program` and completes the handshake: `isready` → `readyok`,
    /// then `uci` → `uciok` (collecting its name and options).
    pub async fn start(program: &Path, timeouts: Timeouts) -> Result<Self, Error> {
        let mut child = Command::new(program)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(Error::Spawn)?;
        let pid = child.id();
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(Error::Io(std::io::Error::other(
                "the pipes were not set up",
            )));
        };
        let mut engine = Self {
            child,
            pid,
            stdin,
            unsent: Vec::new(),
            output: LineReader::new(stdout, MAX_LINE_BYTES),
            owed: Owed::Nothing,
            poisoned: false,
            lines_read: 0,
            timeouts,
            name: None,
            options: Vec::new(),
        };
        match engine.handshake().await {
            Ok(()) => Ok(engine),
            Err(e) => {
                engine.kill().await;
                Err(e)
            }
        }
    }

    async fn handshake(&mut self) -> Result<(), Error> {
        let deadline = Deadline::after(self.timeouts.handshake);
        self.send("isready").await?;
        self.owed = Owed::ReadyOk(deadline);
        self.settle().await?;
        self.send("uci").await?;
        loop {
            let line = self.read_line_by(deadline, "uciok").await?;
            match Line::parse(&line) {
                Ok(Line::UciOk) => return Ok(()),
                Ok(Line::Id { key, value }) if key == "name" => self.name = Some(value),
                Ok(Line::Option(option)) => self.options.push(option),
                // Banners and anything else a handshake may print.
                Ok(_) | Err(_) => {}
            }
        }
    }

    /// The process id, if the process was started.
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// The name the engine gave (`id name …`).
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The options the engine declared.
    pub fn options(&self) -> &[OptionInfo] {
        &self.options
    }

    /// Whether an earlier error left the engine unusable.
    pub fn is_poisoned(&self) -> bool {
        self.poisoned
    }

    /// How many lines the engine has written so far: unchanged across an
    /// operation that failed, it shows the engine never answered it.
    pub fn lines_read(&self) -> u64 {
        self.lines_read
    }

    /// Whether the engine is known to be unusable: an earlier error, or its
    /// process has exited.
    pub fn is_dead(&mut self) -> bool {
        self.poisoned || !matches!(self.child.try_wait(), Ok(None))
    }

    /// Sends `setoption name <name> value <value>`.
    pub async fn set_option(&mut self, name: &str, value: impl fmt::Display) -> Result<(), Error> {
        let value = value.to_string();
        if name.is_empty() || name.split_ascii_whitespace().any(|w| w == "value") {
            return Err(Error::BadCommand(name.to_owned()));
        }
        let result = self
            .command(&format!("setoption name {name} value {value}"))
            .await;
        self.note(result)
    }

    /// Waits until the engine has processed everything sent (`isready` →
    /// `readyok`).
    pub async fn is_ready(&mut self) -> Result<(), Error> {
        let result = self.is_ready_inner().await;
        self.note(result)
    }

    async fn is_ready_inner(&mut self) -> Result<(), Error> {
        self.settle().await?;
        self.send("isready").await?;
        self.owed = Owed::ReadyOk(Deadline::after(self.timeouts.answer));
        self.settle().await
    }

    /// Tells the engine the next search belongs to another game
    /// (`ucinewgame`, then `isready`: clearing the hash may take a while).
    pub async fn new_game(&mut self) -> Result<(), Error> {
        let result = async {
            self.command("ucinewgame").await?;
            self.is_ready_inner().await
        }
        .await;
        self.note(result)
    }

    /// Sets the position: `position startpos` (when `fen` is `None`) or
    /// `position fen …`, then `moves …`. The caller must have checked that
    /// the position and every move are legal: engines may crash otherwise.
    pub async fn position(&mut self, fen: Option<&Fen>, moves: &[UciMove]) -> Result<(), Error> {
        let mut command = match fen {
            Some(fen) => format!("position fen {fen}"),
            None => "position startpos".to_owned(),
        };
        if !moves.is_empty() {
            command.push_str(" moves");
            for m in moves {
                // shakmaty writes promotions in lower case, as engines expect.
                command.push(' ');
                m.append_to_string(&mut command);
            }
        }
        let result = self.command(&command).await;
        self.note(result)
    }

    /// Starts a search. Read its progress and result from the returned
    /// [`Search`]; if the search is abandoned before its `bestmove`, the next
    /// command stops it and reads its output to the end first.
    ///
    /// With a `movetime`, the search is stopped unasked if it overruns it by
    /// the answer timeout, and abandoned with [`Error::Timeout`] if `bestmove`
    /// still does not come within another answer timeout.
    pub async fn go(&mut self, go: &Go) -> Result<Search<'_>, Error> {
        let result = self.command(&go.to_string()).await;
        self.note(result)?;
        self.owed = Owed::BestMove {
            stop_at: go
                .movetime
                .map(|movetime| Deadline::after(movetime + self.timeouts.answer)),
            give_up: None,
        };
        Ok(Search { engine: self })
    }

    /// Lists the legal moves with their leaf counts at `depth`
    /// (`go perft <depth>`), in the engine's order, reading up to the blank
    /// line after `Nodes searched:`.
    pub async fn perft(&mut self, depth: u32) -> Result<Perft, Error> {
        let result = self.perft_inner(depth).await;
        self.note(result)
    }

    async fn perft_inner(&mut self, depth: u32) -> Result<Perft, Error> {
        self.command(&format!("go perft {depth}")).await?;
        let give_up = Deadline::after(self.timeouts.answer);
        self.owed = Owed::Perft {
            past_total: false,
            give_up,
        };
        let mut perft = Perft::default();
        loop {
            let past_total = matches!(
                self.owed,
                Owed::Perft {
                    past_total: true,
                    ..
                }
            );
            let line = self
                .read_line_by(give_up, "end of the perft listing")
                .await?;
            match Line::parse(&line)? {
                Line::Empty if past_total => {
                    self.owed = Owed::Nothing;
                    return Ok(perft);
                }
                Line::Empty => {}
                Line::PerftMove(m, count) if !past_total => perft.moves.push((m, count)),
                Line::NodesSearched(nodes) if !past_total => {
                    perft.nodes = nodes;
                    self.owed = Owed::Perft {
                        past_total: true,
                        give_up,
                    };
                }
                Line::Info(info) if info.string.is_some() => {}
                _ => {
                    return Err(Error::Protocol(ParseError {
                        line,
                        why: "unexpected line in a perft listing",
                    }));
                }
            }
        }
    }

    /// Stops whatever is still running (a search is sent `stop`) and reads
    /// its output to the end, leaving the engine idle.
    pub async fn stop(&mut self) -> Result<(), Error> {
        let result = self.settle().await;
        self.note(result)
    }

    /// Watches an idle engine: returns only when it fails — its process
    /// exits or closes a pipe, or it does not answer an `isready` sent every
    /// `ping_every` within the answer timeout. Cancel-safe: drop the future to
    /// use the engine.
    pub async fn watch(&mut self, ping_every: Duration) -> Error {
        let result: Result<(), Error> = async {
            loop {
                self.settle().await?;
                match timeout(ping_every, self.read_line()).await {
                    Ok(line) => {
                        // Nothing is owed, so this is unasked-for output.
                        let line = line?;
                        tracing::debug!(line, "idle engine wrote a line");
                    }
                    Err(_) => self.is_ready_inner().await?,
                }
            }
        }
        .await;
        match result {
            Ok(()) => Error::Poisoned,
            Err(e) => {
                self.poisoned = true;
                e
            }
        }
    }

    /// Asks the engine to quit, and kills it if it has not exited within a
    /// second.
    pub async fn quit(mut self) {
        // A failed write means it is already gone.
        let _already_gone = self.send("quit").await;
        if timeout(Duration::from_secs(1), self.child.wait())
            .await
            .is_err()
        {
            self.kill().await;
        }
    }

    /// Kills the process and reaps it.
    pub async fn kill(&mut self) {
        self.poisoned = true;
        // It may have exited already; either way `wait` below reaps it.
        let _exited_already = self.child.start_kill();
        // Bounded in case the process is stuck in the kernel (e.g. in D
        // state); kill_on_drop and tokio's orphan reaping finish the job.
        let _still_running = timeout(Duration::from_secs(2), self.child.wait()).await;
    }

    /// Poisons the engine on any error but a refused command.
    fn note<T>(&mut self, result: Result<T, Error>) -> Result<T, Error> {
        if let Err(e) = &result
            && !matches!(e, Error::BadCommand(_))
        {
            self.poisoned = true;
        }
        result
    }

    /// Settles, then sends `command`.
    async fn command(&mut self, command: &str) -> Result<(), Error> {
        self.settle().await?;
        self.send(command).await
    }

    /// Reads whatever output is still owed, so the engine is idle.
    async fn settle(&mut self) -> Result<(), Error> {
        if self.poisoned {
            return Err(Error::Poisoned);
        }
        self.flush().await?;
        loop {
            match self.owed {
                Owed::Nothing => return Ok(()),
                Owed::ReadyOk(deadline) => {
                    if self.read_line_by(deadline, "readyok").await?.trim() == "readyok" {
                        self.owed = Owed::Nothing;
                    }
                }
                Owed::BestMove { give_up: None, .. } => self.send_stop().await?,
                Owed::BestMove {
                    give_up: Some(deadline),
                    ..
                } => {
                    let line = self.read_line_by(deadline, "bestmove").await?;
                    if line.starts_with("bestmove") {
                        self.owed = Owed::Nothing;
                    }
                }
                Owed::Perft {
                    past_total,
                    give_up,
                } => {
                    let line = self
                        .read_line_by(give_up, "end of the perft listing")
                        .await?;
                    if line.trim().is_empty() {
                        if past_total {
                            self.owed = Owed::Nothing;
                        }
                    } else if line.starts_with("Nodes searched:") {
                        self.owed = Owed::Perft {
                            past_total: true,
                            give_up,
                        };
                    }
                }
            }
        }
    }

    /// Sends `stop` to the running search (once).
    async fn send_stop(&mut self) -> Result<(), Error> {
        if let Owed::BestMove {
            stop_at,
            give_up: None,
        } = self.owed
        {
            self.owed = Owed::BestMove {
                stop_at,
                give_up: Some(Deadline::after(self.timeouts.answer)),
            };
            self.send("stop").await?;
        }
        Ok(())
    }

    /// Queues `line` and writes everything queued.
    async fn send(&mut self, line: &str) -> Result<(), Error> {
        if line.contains(['\n', '\r']) {
            return Err(Error::BadCommand(line.to_owned()));
        }
        tracing::trace!(pid = self.pid, line, "to engine");
        self.unsent.extend_from_slice(line.as_bytes());
        self.unsent.push(b'\n');
        self.flush().await
    }

    /// Writes what is queued. Cancel-safe: a partial write is remembered and
    /// completed by the next call, so commands never interleave.
    async fn flush(&mut self) -> Result<(), Error> {
        let deadline = Deadline::after(self.timeouts.answer);
        while !self.unsent.is_empty() {
            let written = match timeout_at(deadline.at, self.stdin.write(&self.unsent)).await {
                Err(_) => {
                    return Err(Error::Timeout {
                        expected: "room in the engine's input",
                        after: deadline.after,
                    });
                }
                Ok(Ok(0)) => {
                    self.poisoned = true;
                    return Err(self.closed().await);
                }
                Ok(Ok(n)) => n,
                Ok(Err(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                    self.poisoned = true;
                    return Err(self.closed().await);
                }
                Ok(Err(e)) => return Err(Error::Io(e)),
            };
            self.unsent.drain(..written);
        }
        Ok(())
    }

    /// The next output line. Cancel-safe.
    async fn read_line(&mut self) -> Result<String, Error> {
        match self.output.next_line().await {
            Ok(Some(line)) => {
                tracing::trace!(pid = self.pid, line, "from engine");
                self.lines_read += 1;
                Ok(line)
            }
            Ok(None) => {
                // Known dead from here on, even if this future is dropped
                // while the exit status is collected.
                self.poisoned = true;
                Err(self.closed().await)
            }
            Err(LineError::TooLong(max)) => Err(Error::LineTooLong { max }),
            Err(LineError::Io(e)) => Err(Error::Io(e)),
        }
    }

    async fn read_line_by(
        &mut self,
        deadline: Deadline,
        expected: &'static str,
    ) -> Result<String, Error> {
        match timeout_at(deadline.at, self.read_line()).await {
            Ok(line) => line,
            Err(_) => Err(Error::Timeout {
                expected,
                after: deadline.after,
            }),
        }
    }

    /// The error for a process that closed its pipes, with its exit status if
    /// it has exited (it usually has by the time its output ends).
    async fn closed(&mut self) -> Error {
        let status = timeout(Duration::from_millis(200), self.child.wait())
            .await
            .ok()
            .and_then(Result::ok);
        Error::Closed { status }
    }
}
