//! The single writer: callers' changes queue up and are committed together.
//! On a SQLite file the writer runs them on a connection of its own, and
//! appends moves to the log of moves (`move_log`).
//!
//! With several replicas (PostgreSQL), every write of a game is fenced by
//! the lease of its shard: it carries the shard and the lease's epoch as its
//! replica knows them, and the same transaction (the same statement, for
//! moves alone) checks that the replica still holds that lease, taking a
//! `FOR KEY SHARE` lock on the lease row. A replica taking the shard over
//! locks that row `FOR UPDATE` (see `shards::leases`), so it waits for the
//! writes already under way and every later write of the deposed replica
//! finds the new epoch and fails with [`StoreError::Fenced`] instead of
//! forking the game. Lease renewals change no key and take no lock that
//! conflicts with the writes.

use std::collections::{HashMap, HashSet};

use sea_orm::{
    ColumnTrait as _, ConnectionTrait as _, DatabaseConnection, DatabaseTransaction, DbBackend,
    DbErr, EntityTrait as _, QueryFilter as _, QueryTrait as _, Set, Statement,
    TransactionTrait as _, Value,
};
use tokio::{
    runtime::Handle,
    sync::{mpsc, oneshot, watch},
};
use tokio_util::sync::CancellationToken;

use chess_storage::checkpoint::{Limits, WalCheckpoints};

use super::{
    Store, StoreError, clock_credits, games,
    move_log::{Change, MoveLog},
    moves, results_outbox,
};

/// Largest number of callers' changes committed in one transaction.
const MAX_BATCH: usize = 256;

/// A commit taking this long is logged: the moves in it, and those queued
/// behind it, were that late.
const SLOW_COMMIT: std::time::Duration = std::time::Duration::from_millis(100);

/// Pages of the file the writer's connection keeps in memory, in KiB.
/// SQLite's default (2,000 KiB) is less than the pages a thousand games in
/// play touch: each game's copy out of the log lands on its own page of the
/// key of `moves`. With that default the writer read a page back from the
/// file for every second move (see BENCHMARKS.md); with this, about one
/// in a thousand. Pages are only taken as they are touched.
const WRITER_CACHE_KIB: i64 = 8192;

/// One change, part of a caller's atomic set.
#[derive(Debug)]
pub enum WriteOp {
    InsertGame(Box<games::ActiveModel>),
    InsertMove(moves::Model),
    UpdateGame(Box<games::ActiveModel>),
    InsertResult(results_outbox::ActiveModel),
    DeleteResult(String),
    InsertCredit(clock_credits::Model),
    /// A lone replica is alive at this time (wall-clock ms): after a
    /// restart, the time since is given back to the players to move.
    Heartbeat(i64),
    /// The moves of this game (of every game: `None`) still in the SQLite
    /// writer's log are copied into `moves`, so that a read of `moves`
    /// finds them all (see `move_log`). Nothing to do elsewhere.
    FoldLog(Option<String>),
}

/// The lease a write is made under: its game's shard, and the epoch of the
/// lease on that shard the writing replica holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Fence {
    pub shard: u16,
    pub epoch: i64,
}

pub(super) struct Job {
    ops: Vec<WriteOp>,
    fence: Option<Fence>,
    done: oneshot::Sender<Result<(), StoreError>>,
}

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
    let direct = match chess_storage::connect_sqlite_direct(url)? {
        Some(mut conn) => {
            conn.pragma_update(None, "cache_size", -WRITER_CACHE_KIB)
                .map_err(direct_error)?;
            // What a crash left in the log goes into `moves` before any
            // game is read.
            let log = MoveLog::recover(&mut conn)?;
            let checkpoints = WalCheckpoints::take_over(url, &conn, Limits::default())?;
            Some(DirectWriter {
                conn,
                checkpoints,
                log,
            })
        }
        None => None,
    };
    let own_thread = direct.is_some();
    let (writer, jobs) = mpsc::channel(4096);
    let closing = CancellationToken::new();
    let (stop, stopped) = watch::channel(false);
    let run = {
        let closing = closing.clone();
        let fencing = replica.map(|replica| Fencing { replica });
        async move {
            write_loop(db, direct, fencing, jobs, closing).await;
            // `direct`, and with it the checkpoint thread, is gone by now.
            let _ = stop.send(true);
        }
    };
    if own_thread {
        // SQLite's commit blocks for the flush, so the writer of a SQLite
        // file has a thread of its own. On a runtime worker each commit
        // would hand the worker's queue to another thread and back
        // (`block_in_place`): when moves are few, several thread wake-ups
        // for every commit of one or two moves (see BENCHMARKS.md).
        let runtime = Handle::current();
        std::thread::Builder::new()
            .name("game-writer".to_owned())
            .spawn(move || runtime.block_on(run))
            .map_err(|e| StoreError::Db(DbErr::Custom(format!("cannot start the writer: {e}"))))?;
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

/// The replica whose leases the writes are checked against.
struct Fencing {
    replica: String,
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
        // Moves alone take the fast path: one statement, or straight into
        // SQLite. Any other write (a heartbeat each second, a game's end)
        // would send a whole batch down the slower path with it, so the
        // jobs holding one are committed apart. Jobs of one batch never
        // depend on each other: a game has one write under way at a time.
        let (moves, others): (Vec<Job>, Vec<Job>) = batch.drain(..).partition(|job| {
            job.ops
                .iter()
                .all(|op| matches!(op, WriteOp::InsertMove(_)))
        });
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
    mut direct: Option<&mut DirectWriter>,
    batch: &[Job],
) -> Vec<Result<(), StoreError>> {
    let ops: Vec<&WriteOp> = batch.iter().flat_map(|j| j.ops.iter()).collect();
    match commit_any(db, direct.as_deref_mut(), &ops).await {
        Ok(()) => batch.iter().map(|_| Ok(())).collect(),
        Err(e) if batch.len() == 1 => vec![Err(e.into())],
        Err(_) => {
            let mut results = Vec::with_capacity(batch.len());
            for job in batch {
                let ops: Vec<&WriteOp> = job.ops.iter().collect();
                results.push(
                    commit_any(db, direct.as_deref_mut(), &ops)
                        .await
                        .map_err(StoreError::from),
                );
            }
            results
        }
    }
}

impl Fencing {
    /// Commits a batch, each job only under its lease. Moves alone go in
    /// one statement that checks the leases itself; anything else in a
    /// transaction that checks them first.
    async fn commit(&self, db: &DatabaseConnection, batch: &[Job]) -> Vec<Result<(), StoreError>> {
        let together = if batch
            .iter()
            .all(|j| j.ops.iter().all(|op| matches!(op, WriteOp::InsertMove(_))))
        {
            self.insert_moves(db, batch).await
        } else {
            self.commit_in_transaction(db, batch).await
        };
        match together {
            Ok(results) => results,
            Err(e) if batch.len() == 1 => vec![Err(e.into())],
            Err(_) => {
                let mut results = Vec::with_capacity(batch.len());
                for job in batch {
                    let one = std::slice::from_ref(job);
                    results.push(match self.commit_in_transaction(db, one).await {
                        Ok(mut r) => r.pop().unwrap_or(Ok(())),
                        Err(e) => Err(e.into()),
                    });
                }
                results
            }
        }
    }

    /// The leases of `fences` among the replica's, as a SQL condition on
    /// `game_shards` (the numbers are ours, never a caller's text).
    fn lease_condition(&self, fences: &HashSet<Fence>) -> String {
        let pairs: Vec<String> = fences
            .iter()
            .map(|f| format!("({}, {})", f.shard, f.epoch))
            .collect();
        if pairs.is_empty() {
            "FALSE".to_owned()
        } else {
            format!("owner = $1 AND (shard, epoch) IN ({})", pairs.join(", "))
        }
    }

    /// Moves of many games in one statement: only those whose lease the
    /// replica still holds are inserted (`RETURNING` tells which).
    async fn insert_moves(
        &self,
        db: &DatabaseConnection,
        batch: &[Job],
    ) -> Result<Vec<Result<(), StoreError>>, DbErr> {
        let fences: HashSet<Fence> = batch.iter().filter_map(|j| j.fence).collect();
        let mut values: Vec<Value> = vec![self.replica.clone().into()];
        let mut rows = Vec::new();
        for job in batch {
            let shard = job.fence.map_or(-1, |f| i32::from(f.shard));
            for op in &job.ops {
                let WriteOp::InsertMove(mv) = op else {
                    continue;
                };
                let n = values.len();
                rows.push(format!(
                    "(${}, ${}::integer, ${}, ${}, ${}, ${}::bigint, ${}::bigint, {shard})",
                    n + 1,
                    n + 2,
                    n + 3,
                    n + 4,
                    n + 5,
                    n + 6,
                    n + 7,
                ));
                values.extend([
                    mv.game_id.clone().into(),
                    mv.ply.into(),
                    mv.uci.clone().into(),
                    mv.san.clone().into(),
                    mv.submitted.clone().into(),
                    mv.played_at.into(),
                    mv.clock_after_ms.into(),
                ]);
            }
        }
        let sql = format!(
            "WITH lease AS MATERIALIZED \
               (SELECT shard FROM game_shards WHERE {} FOR KEY SHARE) \
             INSERT INTO moves (game_id, ply, uci, san, submitted, played_at, clock_after_ms) \
             SELECT v.game_id, v.ply, v.uci, v.san, v.submitted, v.played_at, v.clock_after_ms \
             FROM (VALUES {}) AS v(game_id, ply, uci, san, submitted, played_at, clock_after_ms, shard) \
             WHERE v.shard IN (SELECT shard FROM lease) \
             RETURNING game_id, ply",
            self.lease_condition(&fences),
            rows.join(", ")
        );
        let inserted: HashSet<(String, i32)> = db
            .query_all_raw(Statement::from_sql_and_values(
                DbBackend::Postgres,
                sql,
                values,
            ))
            .await?
            .into_iter()
            .map(|row| Ok((row.try_get("", "game_id")?, row.try_get("", "ply")?)))
            .collect::<Result<_, DbErr>>()?;
        Ok(batch
            .iter()
            .map(|job| {
                let all_in = job.ops.iter().all(|op| match op {
                    WriteOp::InsertMove(mv) => inserted.contains(&(mv.game_id.clone(), mv.ply)),
                    _ => true,
                });
                if all_in {
                    Ok(())
                } else {
                    Err(fenced(job.fence))
                }
            })
            .collect())
    }

    /// A transaction that locks the batch's leases, drops the jobs whose
    /// lease the replica no longer holds, and commits the others' writes.
    async fn commit_in_transaction(
        &self,
        db: &DatabaseConnection,
        batch: &[Job],
    ) -> Result<Vec<Result<(), StoreError>>, DbErr> {
        let txn = db.begin().await?;
        let fences: HashSet<Fence> = batch.iter().filter_map(|j| j.fence).collect();
        let held = held_leases(&txn, &self.replica, &self.lease_condition(&fences)).await?;
        let mut results = Vec::with_capacity(batch.len());
        let mut ops: Vec<&WriteOp> = Vec::new();
        for job in batch {
            match job.fence {
                Some(fence) if held.get(&fence.shard) != Some(&fence.epoch) => {
                    results.push(Err(fenced(job.fence)));
                }
                _ => {
                    ops.extend(job.ops.iter());
                    results.push(Ok(()));
                }
            }
        }
        write_ops(&txn, &ops).await?;
        txn.commit().await?;
        Ok(results)
    }
}

/// The leases matching `condition` (binding `$1` to `replica`), locked
/// against a takeover until the transaction ends: shard → epoch.
async fn held_leases(
    txn: &DatabaseTransaction,
    replica: &str,
    condition: &str,
) -> Result<HashMap<u16, i64>, DbErr> {
    if condition == "FALSE" {
        return Ok(HashMap::new());
    }
    let sql = format!("SELECT shard, epoch FROM game_shards WHERE {condition} FOR KEY SHARE");
    txn.query_all_raw(Statement::from_sql_and_values(
        DbBackend::Postgres,
        sql,
        [replica.into()],
    ))
    .await?
    .into_iter()
    .map(|row| {
        let shard: i32 = row.try_get("", "shard")?;
        let epoch: i64 = row.try_get("", "epoch")?;
        Ok((shard as u16, epoch))
    })
    .collect()
}

fn fenced(fence: Option<Fence>) -> StoreError {
    let fence = fence.unwrap_or(Fence { shard: 0, epoch: 0 });
    StoreError::Fenced {
        shard: fence.shard,
        epoch: fence.epoch,
    }
}

/// Commits `ops` in one transaction: moves alone straight into SQLite when
/// the database is a SQLite file, everything else through sea-orm.
async fn commit_any(
    db: &DatabaseConnection,
    direct: Option<&mut DirectWriter>,
    ops: &[&WriteOp],
) -> Result<(), DbErr> {
    match direct {
        // The writer's own thread (see `spawn`) waits for the flush.
        Some(direct) if only_moves(ops) => direct.insert(ops),
        Some(direct) => direct.commit(ops),
        None => commit(db, ops).await,
    }
}

fn only_moves(ops: &[&WriteOp]) -> bool {
    ops.iter().all(|op| matches!(op, WriteOp::InsertMove(_)))
}

/// Moves inserted per statement; SQLite allows 32766 bound values, seven a
/// move.
const MOVES_PER_INSERT: usize = 1000;

/// Commits `ops` in one transaction. Moves are written with one multi-row
/// insert per batch rather than a statement each: under load, one commit
/// carries the moves of hundreds of games.
async fn commit(db: &DatabaseConnection, ops: &[&WriteOp]) -> Result<(), DbErr> {
    if ops.is_empty() {
        return Ok(());
    }
    // The common case, moves and nothing else, is one statement: it commits
    // on its own, all or nothing, without the two extra trips to the
    // database that BEGIN and COMMIT cost.
    if ops.len() <= MOVES_PER_INSERT && only_moves(ops) {
        let moves = ops.iter().filter_map(|op| match op {
            WriteOp::InsertMove(mv) => Some(move_row(mv)),
            _ => None,
        });
        moves::Entity::insert_many(moves)
            .exec_without_returning(db)
            .await?;
        return Ok(());
    }
    let txn = db.begin().await?;
    write_ops(&txn, ops).await?;
    txn.commit().await
}

/// Writes `ops` within `txn`.
async fn write_ops(txn: &DatabaseTransaction, ops: &[&WriteOp]) -> Result<(), DbErr> {
    for planned in plan(ops, txn.get_database_backend())? {
        let done = txn.execute_raw(planned.statement).await?;
        if planned.one_row && done.rows_affected() != 1 {
            return Err(DbErr::RecordNotUpdated);
        }
    }
    Ok(())
}

/// One statement of a commit.
struct Planned {
    statement: Statement,
    /// It must change exactly one row (a game's update: the game exists).
    one_row: bool,
}

/// The statements that write `ops`, in the order they are to run: games
/// first (their moves and credits refer to them), then the moves, then the
/// rest in the order given.
fn plan(ops: &[&WriteOp], backend: DbBackend) -> Result<Vec<Planned>, DbErr> {
    let mut planned = Vec::new();
    let mut push = |statement: Statement, one_row: bool| {
        planned.push(Planned { statement, one_row });
    };
    for op in ops {
        if let WriteOp::InsertGame(game) = op {
            push(
                games::Entity::insert((**game).clone()).build(backend),
                false,
            );
        }
    }
    let moves: Vec<moves::ActiveModel> = ops
        .iter()
        .filter_map(|op| match op {
            WriteOp::InsertMove(mv) => Some(move_row(mv)),
            _ => None,
        })
        .collect();
    for chunk in moves.chunks(MOVES_PER_INSERT) {
        push(
            moves::Entity::insert_many(chunk.to_vec()).build(backend),
            false,
        );
    }
    for op in ops {
        match op {
            WriteOp::InsertGame(_) | WriteOp::InsertMove(_) | WriteOp::FoldLog(_) => {}
            WriteOp::UpdateGame(game) => {
                let id = updated_game(game)
                    .ok_or_else(|| DbErr::Custom("game update without an id".to_owned()))?
                    .to_owned();
                let mut game = (**game).clone();
                // The key stays out of the SET list: naming it there would
                // have SQLite look for the rows that refer to the game in
                // every table, the unindexed log of moves included.
                game.id = sea_orm::ActiveValue::NotSet;
                let update = games::Entity::update_many()
                    .set(game)
                    .filter(games::Column::Id.eq(id));
                push(update.build(backend), true);
            }
            WriteOp::InsertResult(result) => {
                let insert = results_outbox::Entity::insert(result.clone()).on_conflict(
                    sea_orm::sea_query::OnConflict::column(results_outbox::Column::GameId)
                        .do_nothing()
                        .to_owned(),
                );
                push(insert.build(backend), false);
            }
            WriteOp::DeleteResult(game_id) => {
                push(
                    results_outbox::Entity::delete_by_id(game_id.clone()).build(backend),
                    false,
                );
            }
            WriteOp::Heartbeat(at) => {
                let update = sea_orm::sea_query::Query::update()
                    .table("game_shards")
                    .value("renewed_at", *at)
                    .to_owned();
                push(backend.build(&update), false);
            }
            WriteOp::InsertCredit(credit) => {
                let insert = clock_credits::Entity::insert(clock_credits::ActiveModel {
                    game_id: Set(credit.game_id.clone()),
                    granted_at: Set(credit.granted_at),
                    ply: Set(credit.ply),
                    credit_ms: Set(credit.credit_ms),
                });
                push(insert.build(backend), false);
            }
        }
    }
    Ok(planned)
}

/// The id of the game an update is of.
fn updated_game(game: &games::ActiveModel) -> Option<&str> {
    match &game.id {
        sea_orm::ActiveValue::Set(id) | sea_orm::ActiveValue::Unchanged(id) => Some(id),
        sea_orm::ActiveValue::NotSet => None,
    }
}

fn move_row(mv: &moves::Model) -> moves::ActiveModel {
    moves::ActiveModel {
        game_id: Set(mv.game_id.clone()),
        ply: Set(mv.ply),
        uci: Set(mv.uci.clone()),
        san: Set(mv.san.clone()),
        submitted: Set(mv.submitted.clone()),
        played_at: Set(mv.played_at),
        clock_after_ms: Set(mv.clock_after_ms),
    }
}

/// The SQLite file, written straight from the writer's thread. A commit
/// through sqlx hands each statement to sqlx's worker thread and back; on
/// the one write every move makes, that cost about as much as the write
/// itself (see BENCHMARKS.md), and a game's start or end, a few statements,
/// cost several times a move. Every write goes through here: the moves
/// appended to the log of moves (`move_log`), the rest as sea-orm builds
/// it. Reads go through sea-orm's pool, and WAL lets them run beside the
/// writer.
///
/// The file's checkpoints are not made in these commits (nor in the pool's:
/// see `Store::open_as`) but by `checkpoints`, mostly on a thread of its
/// own: a checkpoint in a commit held up every move queued behind it.
struct DirectWriter {
    conn: rusqlite::Connection,
    checkpoints: WalCheckpoints,
    log: MoveLog,
}

/// Rows of the log copied into `moves` in a commit of moves, at least (two
/// a move appended, if more).
const COPIED_PER_COMMIT: usize = 256;

impl DirectWriter {
    /// Appends the moves of `ops` to the log in one transaction, with the
    /// copies into `moves` now due; durable on return.
    fn insert(&mut self, ops: &[&WriteOp]) -> Result<(), DbErr> {
        let moves: Vec<&moves::Model> = ops
            .iter()
            .filter_map(|op| match op {
                WriteOp::InsertMove(mv) => Some(mv),
                _ => None,
            })
            .collect();
        let mut change = Change::default();
        let txn = self.conn.transaction().map_err(direct_error)?;
        self.log.append(&txn, moves.iter().copied(), &mut change)?;
        let budget = COPIED_PER_COMMIT.max(2 * moves.len());
        self.log.copy_due(&txn, budget, &mut change)?;
        self.log.trim(&txn, &mut change)?;
        txn.commit().map_err(direct_error)?;
        self.log.apply(change);
        Ok(())
    }

    /// Commits `ops`, of any kind, in one transaction; durable on return.
    /// The moves still in the log of the games they add moves to are
    /// copied into `moves` first, so its key checks the moves among them.
    /// A game's end alone copies nothing: its moves leave the log as any
    /// others do, and a read of the game has them copied first.
    fn commit(&mut self, ops: &[&WriteOp]) -> Result<(), DbErr> {
        let planned = plan(ops, DbBackend::Sqlite)?;
        let games: Vec<&str> = ops
            .iter()
            .filter_map(|op| match op {
                WriteOp::InsertMove(mv) => Some(mv.game_id.as_str()),
                WriteOp::FoldLog(game) => game.as_deref(),
                _ => None,
            })
            .collect();
        let all = ops.iter().any(|op| matches!(op, WriteOp::FoldLog(None)));
        if planned.is_empty() && !all && !games.iter().any(|g| self.log.waits(g)) {
            return Ok(());
        }
        let mut change = Change::default();
        let txn = self.conn.transaction().map_err(direct_error)?;
        if all {
            self.log.copy_all(&txn, &mut change)?;
        } else {
            self.log.copy_games(&txn, games, &mut change)?;
            self.log.trim(&txn, &mut change)?;
        }
        for Planned { statement, one_row } in planned {
            let values = statement
                .values
                .map(|values| values.0)
                .unwrap_or_default()
                .iter()
                .map(sqlite_value)
                .collect::<Result<Vec<_>, _>>()?;
            let changed = txn
                .prepare_cached(&statement.sql)
                .and_then(|mut s| s.execute(rusqlite::params_from_iter(values)))
                .map_err(direct_error)?;
            if one_row && changed != 1 {
                // Dropping the transaction rolls it back.
                return Err(DbErr::RecordNotUpdated);
            }
        }
        txn.commit().map_err(direct_error)?;
        self.log.apply(change);
        Ok(())
    }

    /// Copies the whole log into `moves`: at the stop.
    fn drain_log(&mut self) -> Result<(), DbErr> {
        self.commit(&[&WriteOp::FoldLog(None)])
    }

    /// After a batch's commit, once it is answered; `waiting` when more
    /// jobs are queued.
    fn after_commit(&mut self, waiting: bool) {
        self.checkpoints.after_commit(&self.conn, waiting);
    }
}

impl std::fmt::Debug for DirectWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectWriter").finish_non_exhaustive()
    }
}

/// A value sea-orm bound into a statement, as SQLite stores it: the kinds
/// the game tables' columns hold.
fn sqlite_value(value: &Value) -> Result<rusqlite::types::Value, DbErr> {
    use rusqlite::types::Value as Sqlite;
    Ok(match value {
        Value::Bool(b) => b.map_or(Sqlite::Null, |b| Sqlite::Integer(i64::from(b))),
        Value::Int(n) => n.map_or(Sqlite::Null, |n| Sqlite::Integer(i64::from(n))),
        Value::BigInt(n) => n.map_or(Sqlite::Null, Sqlite::Integer),
        Value::String(s) => s.clone().map_or(Sqlite::Null, Sqlite::Text),
        other => {
            return Err(DbErr::Custom(format!(
                "no SQLite value for {other:?} in the game tables"
            )));
        }
    })
}

fn direct_error(e: rusqlite::Error) -> DbErr {
    DbErr::Custom(format!("sqlite: {e}"))
}
