//! Child processes: started, watched, restarted when they die, stopped on
//! request.
//!
//! Every child gets a pipe as standard input and is started with
//! `--stop-on-stdin-eof`: closing the pipe asks it to shut down gracefully,
//! and if the launcher dies, however abruptly, the pipe closes and the
//! children follow. Children run in their own process group, so a Ctrl-C at
//! the terminal reaches only the launcher, which then stops them in order.

use std::{
    ffi::OsString,
    net::TcpListener,
    os::{fd::OwnedFd, unix::net::UnixListener},
    path::PathBuf,
    process::{ExitStatus, Stdio},
    sync::Arc,
    time::Duration,
};

use command_fds::{CommandFdExt as _, FdMapping};

use tokio::{
    io::{AsyncBufReadExt as _, AsyncRead, BufReader},
    process::{Child, ChildStdin, Command},
    sync::mpsc,
    task::JoinHandle,
    time::Instant,
};
use tokio_util::sync::CancellationToken;

/// Where children's output goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// Each line to our standard error, prefixed with the child's name.
    Prefixed,
    /// Straight through, unchanged (for JSON logs).
    Inherit,
    /// Nowhere.
    Silent,
}

/// One child to run.
#[derive(Clone, Debug)]
pub struct ChildSpec {
    /// Short name: `engine`, `game`, …
    pub name: &'static str,
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// Listening sockets handed to the child (and to every restart of it)
    /// as descriptors 3, 4, … with `LISTEN_FDS` set.
    pub listeners: Vec<Listener>,
}

/// A listening socket a child is handed.
#[derive(Clone, Debug)]
pub enum Listener {
    Tcp(Arc<TcpListener>),
    Unix(Arc<UnixListener>),
}

impl Listener {
    /// A descriptor of the same socket, for a child.
    fn duplicate(&self) -> std::io::Result<OwnedFd> {
        match self {
            Self::Tcp(listener) => listener.try_clone().map(OwnedFd::from),
            Self::Unix(listener) => listener.try_clone().map(OwnedFd::from),
        }
    }
}

/// A child's exit, as reported to whoever watches.
#[derive(Clone, Debug)]
pub struct Exit {
    pub name: &'static str,
    /// None if the child could not be started at all.
    pub status: Option<ExitStatus>,
    pub error: Option<String>,
}

/// How long children have to stop after being asked.
const STOP_GRACE: Duration = Duration::from_secs(15);
/// A child that ran this long before dying is restarted without delay.
const HEALTHY_RUN: Duration = Duration::from_secs(30);

/// Supervises a set of children.
#[derive(Debug)]
pub struct Supervisor {
    /// In the order given: each child's stop signal and supervising task.
    children: Vec<(CancellationToken, JoinHandle<()>)>,
}

impl Supervisor {
    /// Starts every child, each after those it depends on come first in
    /// `children`; their exits are reported on the returned channel.
    /// `announce_restarts` prints a line to standard error when a child dies.
    pub fn start(
        children: Vec<ChildSpec>,
        output: Output,
        announce_restarts: bool,
    ) -> (Self, mpsc::UnboundedReceiver<Exit>) {
        let (exits, exits_rx) = mpsc::unbounded_channel();
        let children = children
            .into_iter()
            .map(|spec| {
                let stop = CancellationToken::new();
                let task = tokio::spawn(supervise(
                    spec,
                    output,
                    announce_restarts,
                    stop.clone(),
                    exits.clone(),
                ));
                (stop, task)
            })
            .collect();
        (Self { children }, exits_rx)
    }

    /// Stops the children one at a time, last started first, each given the
    /// grace period before it is killed: a service finishing its in-flight
    /// calls still has the services it calls.
    pub async fn stop(mut self) {
        for (stop, task) in std::mem::take(&mut self.children).into_iter().rev() {
            stop.cancel();
            // A supervising task that panicked has nothing left to stop.
            let _ = task.await;
        }
    }
}

impl Drop for Supervisor {
    /// Without [`Supervisor::stop`], the children are killed (their
    /// supervising tasks end, and every child is killed on drop).
    fn drop(&mut self) {
        for (_, task) in &self.children {
            task.abort();
        }
    }
}

fn spawn(spec: &ChildSpec, output: Output) -> std::io::Result<Child> {
    let (out, err) = match output {
        Output::Prefixed => (Stdio::piped(), Stdio::piped()),
        Output::Inherit => (Stdio::inherit(), Stdio::inherit()),
        Output::Silent => (Stdio::null(), Stdio::null()),
    };
    let mut command = Command::new(&spec.program);
    let mut mappings = Vec::with_capacity(spec.listeners.len());
    for (index, listener) in spec.listeners.iter().enumerate() {
        mappings.push(FdMapping {
            parent_fd: listener.duplicate()?,
            child_fd: 3 + index as i32,
        });
    }
    command
        .fd_mappings(mappings)
        .map_err(|e| std::io::Error::other(e.to_string()))?
        .env("LISTEN_FDS", spec.listeners.len().to_string())
        .env_remove("LISTEN_PID");
    let mut child = command
        .args(&spec.args)
        .arg("--stop-on-stdin-eof")
        .stdin(Stdio::piped())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .kill_on_drop(true)
        .spawn()?;
    if output == Output::Prefixed {
        if let Some(stdout) = child.stdout.take() {
            tokio::spawn(prefix_lines(spec.name, stdout));
        }
        if let Some(stderr) = child.stderr.take() {
            tokio::spawn(prefix_lines(spec.name, stderr));
        }
    }
    Ok(child)
}

async fn prefix_lines(name: &'static str, from: impl AsyncRead + Unpin) {
    let mut lines = BufReader::new(from).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        eprintln!("[{name}] {line}");
    }
}

/// Closes the child's standard input (asking it to stop) and waits, killing
/// it after the grace period.
async fn stop_child(mut child: Child, stdin: Option<ChildStdin>) {
    drop(stdin);
    if tokio::time::timeout(STOP_GRACE, child.wait())
        .await
        .is_err()
    {
        // It did not stop in time; a reaped kill is all that is left.
        let _ = child.kill().await;
    }
}

async fn supervise(
    spec: ChildSpec,
    output: Output,
    announce: bool,
    stop: CancellationToken,
    exits: mpsc::UnboundedSender<Exit>,
) {
    let mut backoff = Duration::from_millis(500);
    loop {
        let mut child = match spawn(&spec, output) {
            Ok(child) => child,
            Err(e) => {
                let error = format!("cannot start {}: {e}", spec.program.display());
                if announce {
                    eprintln!("chess-stack: {error}");
                }
                // Nobody listening any more is fine.
                let _ = exits.send(Exit {
                    name: spec.name,
                    status: None,
                    error: Some(error),
                });
                tokio::select! {
                    () = tokio::time::sleep(backoff) => {}
                    () = stop.cancelled() => return,
                }
                backoff = (backoff * 2).min(Duration::from_secs(30));
                continue;
            }
        };
        let stdin = child.stdin.take();
        let started = Instant::now();
        let status = tokio::select! {
            status = child.wait() => status,
            () = stop.cancelled() => {
                stop_child(child, stdin).await;
                return;
            }
        };
        drop(stdin);
        let status = status.ok();
        let _ = exits.send(Exit {
            name: spec.name,
            status,
            error: None,
        });
        if stop.is_cancelled() {
            return;
        }
        if started.elapsed() >= HEALTHY_RUN {
            backoff = Duration::from_millis(500);
        }
        if announce {
            let how = status.map_or_else(|| "ended".to_owned(), |s| s.to_string());
            eprintln!(
                "chess-stack: chess-{} exited ({how}); restarting in {:.1} s",
                spec.name,
                backoff.as_secs_f64()
            );
        }
        tokio::select! {
            () = tokio::time::sleep(backoff) => {}
            () = stop.cancelled() => return,
        }
        backoff = (backoff * 2).min(Duration::from_secs(30));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child that, once asked to stop, waits `delay_ms` and then appends
    /// `name` to `log`.
    fn recorder(name: &'static str, delay_ms: u64, log: &std::path::Path) -> ChildSpec {
        let script = format!(
            "cat >/dev/null; sleep {}; echo {name} >> '{}'",
            delay_ms as f64 / 1000.0,
            log.display()
        );
        ChildSpec {
            name,
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into(), "sh".into()],
            listeners: Vec::new(),
        }
    }

    #[tokio::test]
    async fn children_stop_last_started_first() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("stopped");
        // Stopped all at once, the quickest would finish first: the reverse
        // of the order wanted.
        let children = vec![
            recorder("first", 0, &log),
            recorder("second", 150, &log),
            recorder("third", 300, &log),
        ];
        let (supervisor, _exits) = Supervisor::start(children, Output::Silent, false);
        tokio::time::sleep(Duration::from_millis(200)).await;
        supervisor.stop().await;
        let stopped = std::fs::read_to_string(&log).unwrap();
        assert_eq!(stopped, "third\nsecond\nfirst\n");
    }
}
