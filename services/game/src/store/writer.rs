//! The single writer: callers' changes queue up and are committed together
//! (group commit), on either back end. What a commit writes is planned by
//! [`super::plan`]; on PostgreSQL among several replicas each write is also
//! fenced by its shard's lease ([`super::postgres`]). The writer of a SQLite
//! file runs on a thread of its own and commits straight into SQLite on a
//! connection of its own ([`super::sqlite`]), moves appended to the log of
//! moves.

use std::future::Future;

use sea_orm::{DatabaseConnection, DbErr};
use tokio::{
    runtime::Handle,
    sync::{mpsc, oneshot, watch},
};
use tokio_util::sync::CancellationToken;

use super::{
    Store, StoreError, clock_credits, games, moves, plan, postgres::Fencing, results_outbox,
    sqlite::DirectWriter, takebacks,
};

/// Largest number of callers' changes committed in one transaction.
const MAX_BATCH: usize = 256;

/// A commit taking this long is logged: the moves in it, and those queued
/// behind it, were that late.
const SLOW_COMMIT: std::time::Duration = std::time::Duration::from_millis(100);

/// One change, part of a caller's atomic set.
#[derive(Debug)]
pub enum WriteOp {
    InsertGame(Box<games::ActiveModel>),
    InsertMove(moves::Model),
    UpdateGame(Box<games::ActiveModel>),
    InsertResult(results_outbox::ActiveModel),
    DeleteResult(chess_domain::GameId),
    InsertCredit(clock_credits::Model),
    /// A takeback: the game's moves after the row's ply are removed, and so
    /// are its credits and takebacks from that ply on; the row is stored.
    TakeBack(takebacks::Model),
    /// A lone replica is alive at this time: after a restart, the time since
    /// is given back to the players to move.
    Heartbeat(chess_domain::Timestamp),
    /// The moves of this game (of every game: `None`) still in the SQLite
    /// writer's log are copied into `moves`, so that a read of `moves`
    /// finds them all (see `sqlite::move_log`). Nothing to do elsewhere.
    FoldLog(Option<chess_domain::GameId>),
}

/// The lease a write is made under: its game's shard, and the epoch of the
/// lease on that shard the writing replica holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Fence {
    pub shard: u16,
    pub epoch: i64,
}

/// One caller's changes, and where its answer goes.
pub(super) struct Job {
    pub(super) ops: Vec<WriteOp>,
    pub(super) fence: Option<Fence>,
    done: oneshot::Sender<Result<(), StoreError>>,
}

/// What each job of a batch came to.
pub(super) type Answers = Vec<Result<(), StoreError>>;

/// The writer's queue, and how to stop it.
#[derive(Clone, Debug)]
pub(super) struct Writer {
    jobs: mpsc::Sender<Job>,
    closing: CancellationToken,
    /// Becomes true once the writer has stopped and closed its connections.
    stopped: watch::Receiver<bool>,
}

impl Writer {
    /// Stops the writer once the jobs already queued are committed, and
    /// waits until its own connections (and its checkpoint thread's) are
    /// closed. Later writes fail with [`StoreError::WriterGone`].
    pub(super) async fn close(&self) {
        self.closing.cancel();
        let mut stopped = self.stopped.clone();
        // An error means the writer is gone already.
        let _ = stopped.wait_for(|stopped| *stopped).await;
    }
}

/// Starts the writer task over `db` (at `url`); returns its queue. Writes
/// are fenced when `replica` names the replica whose leases they are made
/// under.
pub(super) fn spawn(
    db: DatabaseConnection,
    url: &str,
    replica: Option<String>,
) -> Result<Writer, StoreError> {
    let direct = DirectWriter::open(url)?;
    let own_thread = direct.is_some();
    let (writer, jobs) = mpsc::channel(4096);
    let closing = CancellationToken::new();
    let (stop, stopped) = watch::channel(false);
    let fencing = replica.map(|replica| Fencing { replica });
    let run = {
        let closing = closing.clone();
        async move {
            write_loop(db, direct, fencing, jobs, closing).await;
            // `direct`, and with it the checkpoint thread, is gone by now.
            // A send error means no one waits for the stop.
            let _ = stop.send(true);
        }
    };
    if own_thread {
        // SQLite's commit blocks for the flush, so the writer of a SQLite
        // file has a thread of its own. On a runtime worker each commit
        // would hand the worker's queue to another thread and back
        // (`block_in_place`): when moves are few, several thread wake-ups
        // for every commit of one or two moves.
        let runtime = Handle::current();
        std::thread::Builder::new()
            .name("game-writer".to_owned())
            .spawn(move || runtime.block_on(run))
            .map_err(|e| DbErr::Custom(format!("cannot start the writer: {e}")))?;
    } else {
        tokio::spawn(run);
    }
    Ok(Writer {
        jobs: writer,
        closing,
        stopped,
    })
}

impl Store {
    /// Commits `ops` atomically under the lease `fence` (when the store
    /// fences writes); returns once they are durable, or
    /// [`StoreError::Fenced`] if the replica no longer holds that lease.
    pub async fn write(&self, fence: Option<Fence>, ops: Vec<WriteOp>) -> Result<(), StoreError> {
        if ops.is_empty() {
            return Ok(());
        }
        let (done, result) = oneshot::channel();
        self.writer
            .jobs
            .send(Job { ops, fence, done })
            .await
            .map_err(|_| StoreError::WriterGone)?;
        result.await.map_err(|_| StoreError::WriterGone)?
    }
}

/// Commits queued jobs, batching those that arrive during a commit, until
/// `closing` and the jobs queued by then are committed.
async fn write_loop(
    db: DatabaseConnection,
    mut direct: Option<DirectWriter>,
    fencing: Option<Fencing>,
    mut jobs: mpsc::Receiver<Job>,
    closing: CancellationToken,
) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    let mut closed = false;
    loop {
        let received = tokio::select! {
            biased;
            received = jobs.recv_many(&mut batch, MAX_BATCH) => received,
            () = closing.cancelled(), if !closed => {
                // No more jobs; those already queued are still committed.
                jobs.close();
                closed = true;
                continue;
            }
        };
        if received == 0 {
            break;
        }
        // Moves alone take the fast path: one statement, or appended to the
        // log of a SQLite file. Any other write (a
        // heartbeat each second, a game's end) would send a whole batch
        // down the slower path with it, so the jobs holding one are
        // committed apart. Jobs of one batch never depend on each other: a
        // game has one write under way at a time.
        let (moves, others): (Vec<Job>, Vec<Job>) = batch
            .drain(..)
            .partition(|job| plan::only_moves(job.ops.iter()));
        for (kind, group) in [("moves", moves), ("others", others)] {
            if group.is_empty() {
                continue;
            }
            let started = std::time::Instant::now();
            let results = match &fencing {
                Some(fencing) => fencing.commit(&db, &group).await,
                None => commit_unfenced(&db, direct.as_mut(), &group).await,
            };
            let took = started.elapsed();
            if took >= SLOW_COMMIT {
                // Every write in it, and every one queued behind it, waited.
                tracing::warn!(
                    ms = took.as_millis() as u64,
                    jobs = group.len(),
                    kind,
                    queued = jobs.len(),
                    "slow commit"
                );
            }
            for (job, result) in group.into_iter().zip(results) {
                // A caller that stopped waiting no longer needs the answer.
                let _ = job.done.send(result);
            }
            // Answered first: the checkpoint below may take a moment.
            if let Some(direct) = direct.as_mut() {
                direct.after_commit(!jobs.is_empty());
            }
        }
    }
    if let Some(direct) = direct.as_mut()
        && let Err(e) = direct.drain_log()
    {
        // Nothing is lost: the next start copies the log.
        tracing::warn!(error = %e, "the log of moves was not copied at the stop");
    }
}

/// Commits a batch of jobs together, or each on its own if that fails, so
/// that one job's failure does not fail the others.
async fn commit_unfenced(
    db: &DatabaseConnection,
    direct: Option<&mut DirectWriter>,
    batch: &[Job],
) -> Answers {
    let ops: Vec<&WriteOp> = batch.iter().flat_map(|j| j.ops.iter()).collect();
    let all_done = |()| batch.iter().map(|_| Ok(())).collect();
    match direct {
        // The writer's own thread (see `spawn`) waits for the flush.
        Some(direct) => {
            let together = direct.write(&ops).map(all_done);
            together_or_alone(batch, together, |job| {
                let ops: Vec<&WriteOp> = job.ops.iter().collect();
                std::future::ready(direct.write(&ops).map_err(StoreError::from))
            })
            .await
        }
        None => {
            let together = plan::commit(db, &ops).await.map(all_done);
            together_or_alone(batch, together, |job| async move {
                let ops: Vec<&WriteOp> = job.ops.iter().collect();
                plan::commit(db, &ops).await.map_err(StoreError::from)
            })
            .await
        }
    }
}

/// The answers of `batch` committed `together`, or, when that failed, of
/// each job committed `alone`: a batch of one fails with the error itself.
pub(super) async fn together_or_alone<'a, F, Fut>(
    batch: &'a [Job],
    together: Result<Answers, DbErr>,
    mut alone: F,
) -> Answers
where
    F: FnMut(&'a Job) -> Fut,
    Fut: Future<Output = Result<(), StoreError>>,
{
    match together {
        Ok(results) => results,
        Err(e) if batch.len() == 1 => vec![Err(e.into())],
        Err(_) => {
            let mut results = Vec::with_capacity(batch.len());
            for job in batch {
                results.push(alone(job).await);
            }
            results
        }
    }
}
