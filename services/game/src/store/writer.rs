//! The single writer: callers' changes queue up and are committed together,
//! moves alone straight into SQLite when the database is a SQLite file.

use sea_orm::{
    ColumnTrait as _, DatabaseConnection, DbErr, EntityTrait as _, QueryFilter as _, Set,
    TransactionTrait as _,
};
use tokio::{
    runtime::{Handle, RuntimeFlavor},
    sync::{mpsc, oneshot},
};

use super::{Store, StoreError, games, moves, results_outbox};

/// Largest number of callers' changes committed in one transaction.
const MAX_BATCH: usize = 256;

/// One change, part of a caller's atomic set.
#[derive(Debug)]
pub enum WriteOp {
    InsertGame(Box<games::ActiveModel>),
    InsertMove(moves::Model),
    UpdateGame(Box<games::ActiveModel>),
    InsertResult(results_outbox::ActiveModel),
    DeleteResult(String),
}

pub(super) struct Job {
    ops: Vec<WriteOp>,
    done: oneshot::Sender<Result<(), DbErr>>,
}

/// Starts the writer task over `db` (at `url`); returns its queue.
pub(super) fn spawn(db: DatabaseConnection, url: &str) -> Result<mpsc::Sender<Job>, StoreError> {
    let direct = chess_storage::connect_sqlite_direct(url)?.map(|conn| DirectMoves { conn });
    let (writer, jobs) = mpsc::channel(4096);
    tokio::spawn(write_loop(db, direct, jobs));
    Ok(writer)
}

impl Store {
    /// Commits `ops` atomically; returns once they are durable.
    pub async fn write(&self, ops: Vec<WriteOp>) -> Result<(), StoreError> {
        if ops.is_empty() {
            return Ok(());
        }
        let (done, result) = oneshot::channel();
        self.writer
            .send(Job { ops, done })
            .await
            .map_err(|_| StoreError::WriterGone)?;
        result
            .await
            .map_err(|_| StoreError::WriterGone)?
            .map_err(StoreError::from)
    }
}

/// Commits queued jobs, batching those that arrive during a commit.
async fn write_loop(
    db: DatabaseConnection,
    mut direct: Option<DirectMoves>,
    mut jobs: mpsc::Receiver<Job>,
) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while jobs.recv_many(&mut batch, MAX_BATCH).await > 0 {
        let ops: Vec<&WriteOp> = batch.iter().flat_map(|j| j.ops.iter()).collect();
        match commit_any(&db, direct.as_mut(), &ops).await {
            Ok(()) => {
                for job in batch.drain(..) {
                    // A caller that stopped waiting no longer needs the answer.
                    let _ = job.done.send(Ok(()));
                }
            }
            Err(e) if batch.len() == 1 => {
                if let Some(job) = batch.pop() {
                    let _ = job.done.send(Err(e));
                }
            }
            Err(_) => {
                // One job's failure must not fail the others: commit each
                // on its own.
                for job in batch.drain(..) {
                    let ops: Vec<&WriteOp> = job.ops.iter().collect();
                    let result = commit_any(&db, direct.as_mut(), &ops).await;
                    let _ = job.done.send(result);
                }
            }
        }
    }
}

/// Commits `ops` in one transaction: moves alone straight into SQLite when
/// the database is a SQLite file, everything else through sea-orm.
async fn commit_any(
    db: &DatabaseConnection,
    direct: Option<&mut DirectMoves>,
    ops: &[&WriteOp],
) -> Result<(), DbErr> {
    match direct {
        Some(direct) if only_moves(ops) => {
            // The write blocks this thread for the flush; on a multi-threaded
            // runtime the thread's other tasks move to another one meanwhile.
            // (A single-threaded runtime, as in some tests, simply waits.)
            let mut write = || direct.insert(ops).map_err(direct_error);
            match Handle::current().runtime_flavor() {
                RuntimeFlavor::MultiThread => tokio::task::block_in_place(write),
                _ => write(),
            }
        }
        _ => commit(db, ops).await,
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
    // Games first: their moves refer to them.
    for op in ops {
        if let WriteOp::InsertGame(game) = op {
            games::Entity::insert((**game).clone())
                .exec_without_returning(&txn)
                .await?;
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
        moves::Entity::insert_many(chunk.to_vec())
            .exec_without_returning(&txn)
            .await?;
    }
    for op in ops {
        match op {
            WriteOp::InsertGame(_) | WriteOp::InsertMove(_) => {}
            WriteOp::UpdateGame(game) => {
                let game = (**game).clone();
                let id = match &game.id {
                    sea_orm::ActiveValue::Set(id) | sea_orm::ActiveValue::Unchanged(id) => {
                        id.clone()
                    }
                    sea_orm::ActiveValue::NotSet => {
                        return Err(DbErr::Custom("game update without an id".to_owned()));
                    }
                };
                let updated = games::Entity::update_many()
                    .set(game)
                    .filter(games::Column::Id.eq(id.clone()))
                    .exec(&txn)
                    .await?;
                if updated.rows_affected != 1 {
                    return Err(DbErr::RecordNotUpdated);
                }
            }
            WriteOp::InsertResult(result) => {
                results_outbox::Entity::insert(result.clone())
                    .on_conflict(
                        sea_orm::sea_query::OnConflict::column(results_outbox::Column::GameId)
                            .do_nothing()
                            .to_owned(),
                    )
                    .exec_without_returning(&txn)
                    .await?;
            }
            WriteOp::DeleteResult(game_id) => {
                results_outbox::Entity::delete_by_id(game_id.clone())
                    .exec(&txn)
                    .await?;
            }
        }
    }
    txn.commit().await
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

/// The SQLite moves table, written straight from the writer's thread. A
/// commit through sqlx hands each statement to sqlx's worker thread and back;
/// on the one write every move makes, that cost about as much as the write
/// itself (see BENCHMARKS.md). Every other write and every read goes through
/// sea-orm; the single writer keeps the two connections from contending.
struct DirectMoves {
    conn: rusqlite::Connection,
}

impl DirectMoves {
    const INSERT: &str = "INSERT INTO moves \
        (game_id, ply, uci, san, submitted, played_at, clock_after_ms) \
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";

    /// Inserts the moves of `ops` in one transaction; durable on return.
    fn insert(&mut self, ops: &[&WriteOp]) -> rusqlite::Result<()> {
        let txn = self.conn.transaction()?;
        {
            let mut insert = txn.prepare_cached(Self::INSERT)?;
            for op in ops {
                let WriteOp::InsertMove(mv) = op else {
                    continue;
                };
                insert.execute(rusqlite::params![
                    mv.game_id,
                    mv.ply,
                    mv.uci,
                    mv.san,
                    mv.submitted,
                    mv.played_at,
                    mv.clock_after_ms,
                ])?;
            }
        }
        txn.commit()
    }
}

impl std::fmt::Debug for DirectMoves {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectMoves").finish_non_exhaustive()
    }
}

fn direct_error(e: rusqlite::Error) -> DbErr {
    DbErr::Custom(format!("sqlite: {e}"))
}
