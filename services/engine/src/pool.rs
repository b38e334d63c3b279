//! The supervised pool of Stockfish processes.
//!
//! Requests wait in one bounded FIFO queue; each process has a worker task
//! that takes the oldest request only when its process is idle, so a process
//! serves one request at a time and requests are served in arrival order. A
//! full queue refuses new requests at once (RESOURCE_EXHAUSTED).
//!
//! A caller that goes away (deadline, cancellation, dropped stream) is
//! noticed by the worker through its closed reply channel: a waiting request
//! is skipped; a running search is sent `stop` and drained to its `bestmove`,
//! and the process takes the next request.
//!
//! Supervision: a process that exits, closes a pipe, writes garbage or fails
//! to answer within the answer timeout (an idle process is pinged with
//! `isready`) is killed and reaped, its request fails with UNAVAILABLE, and
//! it is restarted with exponential backoff. A request whose process turns
//! out to be gone before it answered anything for it (it died while idle)
//! goes back in the queue once instead. While no process is alive the pool
//! reports so (health NOT_SERVING) and refuses requests with UNAVAILABLE,
//! including those already queued.

use std::{path::Path, sync::Arc, time::Duration};

use chess_uci::Info;
use shakmaty::uci::UciMove;
use tokio::{
    sync::{mpsc, oneshot, watch},
    time::Instant,
};
use tokio_util::{sync::CancellationToken, task::TaskTracker};

use crate::{
    Error, StartError,
    metrics::Metrics,
    position::GamePosition,
    process::{Fault, Process, ProcessConfig},
};

pub use crate::process::{SearchOutcome, SearchRequest};

/// How often an idle process is asked `isready`.
const IDLE_PING: Duration = Duration::from_secs(5);
/// The first restart delay; it doubles with each failure in a row.
const BACKOFF_BASE: Duration = Duration::from_millis(100);
/// The longest restart delay.
const BACKOFF_MAX: Duration = Duration::from_secs(10);
/// How long [`Pool::stop`] waits for processes to quit.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// How the pool runs.
#[derive(Clone, Debug)]
pub struct PoolConfig {
    pub stockfish: std::path::PathBuf,
    /// The number of processes.
    pub size: usize,
    /// `Threads` per process.
    pub threads: u32,
    /// `Hash` per process, in MiB.
    pub hash_mb: u32,
    /// The processes' niceness (0 = the service's own priority).
    pub nice: i32,
    /// Whether the processes run under `SCHED_IDLE`.
    pub idle: bool,
    /// How many requests may wait.
    pub queue_capacity: usize,
    pub timeouts: chess_uci::Timeouts,
}

/// What an analysis streams: progress reports, then the outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AnalyseEvent {
    Info(Box<Info>),
    Done(SearchOutcome),
}

/// A handle on the pool; clones share it.
#[derive(Clone, Debug)]
pub struct Pool {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    queue: async_channel::Sender<Job>,
    /// Kept to empty the queue when no process is alive.
    waiting: async_channel::Receiver<Job>,
    alive: watch::Sender<usize>,
    metrics: Metrics,
    stockfish: std::path::PathBuf,
    tasks: TaskTracker,
    stop: CancellationToken,
}

#[derive(Debug)]
struct Job {
    work: Work,
    queued: Instant,
    /// Whether the job was put back in the queue once already.
    retried: bool,
}

#[derive(Debug)]
enum Work {
    BestMove {
        request: SearchRequest,
        reply: oneshot::Sender<Result<SearchOutcome, Error>>,
    },
    Analyse {
        request: SearchRequest,
        updates: mpsc::UnboundedSender<Result<AnalyseEvent, Error>>,
    },
    ListMoves {
        position: GamePosition,
        reply: oneshot::Sender<Result<Vec<UciMove>, Error>>,
    },
}

impl Job {
    /// Whether the caller has gone away.
    fn abandoned(&self) -> bool {
        match &self.work {
            Work::BestMove { reply, .. } => reply.is_closed(),
            Work::Analyse { updates, .. } => updates.is_closed(),
            Work::ListMoves { reply, .. } => reply.is_closed(),
        }
    }

    fn fail(self, error: Error) {
        // A caller that has gone away needs no answer.
        match self.work {
            Work::BestMove { reply, .. } => {
                let _caller_gone = reply.send(Err(error));
            }
            Work::Analyse { updates, .. } => {
                let _caller_gone = updates.send(Err(error));
            }
            Work::ListMoves { reply, .. } => {
                let _caller_gone = reply.send(Err(error));
            }
        }
    }
}

impl Pool {
    /// Starts `config.size` processes at once. Fails with
    /// [`StartError::CannotStart`] (giving the first failure's reason) if none
    /// completes its handshake; processes that fail while others succeed are
    /// restarted in the background. The pool stops when `shutdown` is
    /// cancelled or [`Pool::stop`] is called, after serving what is queued.
    pub async fn start(
        config: PoolConfig,
        shutdown: CancellationToken,
    ) -> Result<Self, StartError> {
        let process_config = Arc::new(ProcessConfig {
            stockfish: config.stockfish.clone(),
            threads: config.threads,
            hash_mb: config.hash_mb,
            nice: config.nice,
            idle: config.idle,
            timeouts: config.timeouts,
        });
        let size = config.size.max(1);
        let started =
            futures::future::join_all((0..size).map(|_| Process::start(&process_config))).await;
        let mut processes = Vec::with_capacity(size);
        let mut first_error = None;
        for result in started {
            match result {
                Ok(process) => processes.push(Some(process)),
                Err(e) => {
                    processes.push(None);
                    first_error.get_or_insert(e);
                }
            }
        }
        let alive = processes.iter().flatten().count();
        if alive == 0 {
            return Err(StartError::CannotStart {
                path: config.stockfish,
                reason: first_error.unwrap_or(chess_uci::Error::Poisoned),
            });
        }
        if let Some(e) = first_error {
            tracing::warn!(
                error = %e,
                started = alive,
                wanted = size,
                "some Stockfish processes could not start; retrying them"
            );
        }

        let (queue, waiting) = async_channel::bounded(config.queue_capacity.max(1));
        let (alive_tx, _) = watch::channel(alive);
        let stop = shutdown.child_token();
        let shared = Arc::new(Shared {
            metrics: {
                let queue = waiting.clone();
                let alive = alive_tx.subscribe();
                Metrics::new(move || queue.len() as u64, move || *alive.borrow() as u64)
            },
            queue,
            waiting,
            alive: alive_tx,
            stockfish: config.stockfish,
            tasks: TaskTracker::new(),
            stop,
        });
        for (index, process) in processes.into_iter().enumerate() {
            shared.tasks.spawn(worker(
                index,
                Arc::clone(&shared),
                Arc::clone(&process_config),
                process,
            ));
        }
        shared.tasks.close();
        Ok(Self { shared })
    }

    /// The Stockfish program the pool runs.
    pub fn stockfish(&self) -> &Path {
        &self.shared.stockfish
    }

    /// How many processes are alive now.
    pub fn alive_count(&self) -> usize {
        *self.shared.alive.borrow()
    }

    /// The number of live processes, as it changes.
    pub fn alive(&self) -> watch::Receiver<usize> {
        self.shared.alive.subscribe()
    }

    /// How many requests are waiting.
    pub fn queued(&self) -> usize {
        self.shared.waiting.len()
    }

    /// Stops taking requests, lets the workers finish what is queued and
    /// quit their processes (waiting a few seconds at most).
    pub async fn stop(&self) {
        self.shared.stop.cancel();
        if tokio::time::timeout(STOP_GRACE, self.shared.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("Stockfish processes still running at exit; killing them");
        }
    }

    pub(crate) fn metrics(&self) -> &Metrics {
        &self.shared.metrics
    }

    /// The best move. Fails with [`Error::NoLegalMoves`] when there is none.
    pub async fn best_move(&self, request: SearchRequest) -> Result<SearchOutcome, Error> {
        if !request.position.has_legal_moves() {
            return Err(Error::NoLegalMoves);
        }
        let (reply, answer) = oneshot::channel();
        self.submit(Work::BestMove { request, reply })?;
        answer.await.unwrap_or(Err(Error::ShuttingDown))
    }

    /// Starts an analysis: progress reports arrive on the returned channel,
    /// then the outcome (or an error) as the last message. Dropping the
    /// receiver stops the search.
    pub fn analyse(
        &self,
        request: SearchRequest,
    ) -> Result<mpsc::UnboundedReceiver<Result<AnalyseEvent, Error>>, Error> {
        if !request.position.has_legal_moves() {
            return Err(Error::NoLegalMoves);
        }
        // Unbounded so a slow reader never stalls Stockfish's output; a search
        // sends at most a few reports per depth and line.
        let (updates, receiver) = mpsc::unbounded_channel();
        self.submit(Work::Analyse { request, updates })?;
        Ok(receiver)
    }

    /// Every legal move in Stockfish's `go perft 1` order; empty when there
    /// is none.
    pub async fn list_moves(&self, position: GamePosition) -> Result<Vec<UciMove>, Error> {
        if !position.has_legal_moves() {
            return Ok(Vec::new());
        }
        let (reply, answer) = oneshot::channel();
        self.submit(Work::ListMoves { position, reply })?;
        answer.await.unwrap_or(Err(Error::ShuttingDown))
    }

    fn submit(&self, work: Work) -> Result<(), Error> {
        if self.alive_count() == 0 {
            return Err(Error::NoEngine);
        }
        let job = Job {
            work,
            queued: Instant::now(),
            retried: false,
        };
        match self.shared.queue.try_send(job) {
            Ok(()) => Ok(()),
            Err(async_channel::TrySendError::Full(_)) => Err(Error::QueueFull(self.queued())),
            Err(async_channel::TrySendError::Closed(_)) => Err(Error::ShuttingDown),
        }
    }
}

impl Shared {
    /// Adds `delta` to the live count and returns the new count.
    fn add_alive(&self, delta: isize) -> usize {
        let mut now = 0;
        self.alive.send_modify(|alive| {
            *alive = alive.saturating_add_signed(delta);
            now = *alive;
        });
        now
    }

    /// Puts a request that was not started back in the queue (at its end),
    /// or fails it if the queue is full or closed.
    fn requeue(&self, job: Job) {
        if let Err(e) = self.queue.try_send(job) {
            e.into_inner().fail(Error::NoEngine);
        }
    }

    /// Fails every waiting request: no process is alive to serve it.
    fn fail_waiting(&self) {
        while let Ok(job) = self.waiting.try_recv() {
            job.fail(Error::NoEngine);
        }
    }
}

/// The restart delay after `failures` failures in a row.
fn backoff(failures: u32) -> Duration {
    match failures {
        0 => Duration::ZERO,
        n => BACKOFF_BASE
            .saturating_mul(1 << (n - 1).min(16))
            .min(BACKOFF_MAX),
    }
}

/// How a process's service ended.
enum Ended {
    Shutdown,
    Fault(Fault),
}

/// Owns one process slot: serves requests with its process, restarts it
/// when it fails, and quits it at shutdown.
async fn worker(
    index: usize,
    shared: Arc<Shared>,
    config: Arc<ProcessConfig>,
    mut process: Option<Process>,
) {
    let queue = shared.waiting.clone();
    let mut failures: u32 = if process.is_some() { 0 } else { 1 };
    let mut closing = false;
    loop {
        let mut current = match process.take() {
            Some(current) => current,
            None => {
                tokio::select! {
                    () = tokio::time::sleep(backoff(failures)) => {}
                    () = shared.stop.cancelled() => {
                        queue.close();
                        return;
                    }
                }
                shared.metrics.restarted();
                match Process::start(&config).await {
                    Ok(started) => {
                        let alive = shared.add_alive(1);
                        tracing::info!(
                            worker = index,
                            pid = started.pid(),
                            alive,
                            "Stockfish restarted"
                        );
                        started
                    }
                    Err(e) => {
                        failures = failures.saturating_add(1);
                        tracing::warn!(worker = index, error = %e, retry_in = ?backoff(failures), "cannot restart Stockfish");
                        continue;
                    }
                }
            }
        };
        match serve(&mut current, &queue, &shared, &mut closing).await {
            Ended::Shutdown => {
                current.quit().await;
                shared.add_alive(-1);
                return;
            }
            Ended::Fault(fault) => {
                let pid = current.pid();
                failures = if current.was_healthy() {
                    1
                } else {
                    failures.saturating_add(1)
                };
                current.kill().await;
                let alive = shared.add_alive(-1);
                tracing::warn!(worker = index, pid, error = %fault, alive, "Stockfish failed; restarting it");
                if alive == 0 {
                    shared.fail_waiting();
                }
            }
        }
    }
}

/// Serves requests with `process` until it fails or the pool stops.
async fn serve(
    process: &mut Process,
    queue: &async_channel::Receiver<Job>,
    shared: &Shared,
    closing: &mut bool,
) -> Ended {
    loop {
        let job = tokio::select! {
            biased;
            () = shared.stop.cancelled(), if !*closing => {
                // Take no new requests; serve what is queued, then stop.
                *closing = true;
                queue.close();
                continue;
            }
            job = queue.recv() => match job {
                Ok(job) => job,
                Err(_closed_and_empty) => return Ended::Shutdown,
            },
            fault = process.watch(IDLE_PING) => return Ended::Fault(fault),
        };
        shared.metrics.waited(job.queued.elapsed());
        if job.abandoned() {
            continue;
        }
        if process.is_dead() {
            // It died while idle and the request was not started: it goes
            // back in the queue, for a live process.
            shared.requeue(Job {
                retried: true,
                ..job
            });
            return Ended::Fault(Fault::Wrong("the process died while idle".into()));
        }
        if let Err(fault) = run(process, job, shared).await {
            return Ended::Fault(fault);
        }
    }
}

/// Runs one job on `process`, answering its caller.
///
/// A job whose process turns out to be gone before it wrote a single line
/// for it was never really started: it goes back in the queue, once, for a
/// live process, instead of failing because of a death it did not witness.
async fn run(process: &mut Process, job: Job, shared: &Shared) -> Result<(), Fault> {
    let Job {
        work,
        queued,
        retried,
    } = job;
    let mark = process.output_mark();
    let (work, fault) = match work {
        Work::BestMove { request, mut reply } => {
            let started = Instant::now();
            let outcome = process.search(&request, reply.closed(), |_| {}).await;
            shared.metrics.searched("BestMove", started.elapsed());
            match outcome {
                Ok(Some(found)) => {
                    let _caller_gone = reply.send(Ok(found));
                    return Ok(());
                }
                Ok(None) => return Ok(()),
                Err(fault) => (Work::BestMove { request, reply }, fault),
            }
        }
        Work::Analyse { request, updates } => {
            let started = Instant::now();
            let outcome = process
                .search(&request, updates.closed(), |info| {
                    // Only exact reports of a line are worth showing; a
                    // reader that has gone away is noticed by `closed`.
                    if info.score.is_some()
                        && !info.pv.is_empty()
                        && info.bound == chess_uci::Bound::Exact
                    {
                        let _reader_gone =
                            updates.send(Ok(AnalyseEvent::Info(Box::new(info.clone()))));
                    }
                })
                .await;
            shared.metrics.searched("Analyse", started.elapsed());
            match outcome {
                Ok(Some(found)) => {
                    let _reader_gone = updates.send(Ok(AnalyseEvent::Done(found)));
                    return Ok(());
                }
                Ok(None) => return Ok(()),
                Err(fault) => (Work::Analyse { request, updates }, fault),
            }
        }
        Work::ListMoves { position, reply } => match process.list_moves(&position).await {
            Ok(moves) => {
                let _caller_gone = reply.send(Ok(moves));
                return Ok(());
            }
            Err(fault) => (Work::ListMoves { position, reply }, fault),
        },
    };
    let job = Job {
        work,
        queued,
        retried: true,
    };
    if !retried && fault.is_closed() && process.output_mark() == mark {
        shared.requeue(job);
    } else {
        job.fail(Error::EngineFailed(fault.to_string()));
    }
    Err(fault)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_a_bound() {
        assert_eq!(backoff(0), Duration::ZERO);
        assert_eq!(backoff(1), Duration::from_millis(100));
        assert_eq!(backoff(2), Duration::from_millis(200));
        assert_eq!(backoff(4), Duration::from_millis(800));
        assert_eq!(backoff(8), BACKOFF_MAX);
        assert_eq!(backoff(u32::MAX), BACKOFF_MAX);
    }
}
