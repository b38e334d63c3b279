//! The SQLite file, written straight from the writer's thread. A commit
//! through sqlx hands each statement to sqlx's worker thread and back; on
//! the one write every move makes, that cost about as much as the write
//! itself, and a game's start or end, a few statements, cost several times
//! a move. Every write of the file goes through here: the moves appended to
//! the log of moves (`move_log`), the rest as sea-orm plans it.
//!
//! The file's checkpoints are not made in these commits (nor in the pool's:
//! see `Store::open_as`) but by `checkpoint`, mostly on a thread of its
//! own: a checkpoint in a commit held up every move queued behind it.

use chess_domain::GameId;
use rusqlite::Connection;
use sea_orm::{DbBackend, DbErr, Value};

use super::{
    super::{
        StoreError, WriteOp, moves,
        plan::{Planned, plan},
    },
    checkpoint::{Limits, WalCheckpoints},
    move_log::{Change, MoveLog},
    sqlite,
};

/// Pages of the file the writer's connection keeps in memory, in KiB.
/// SQLite's default (2,000 KiB) is less than the pages a thousand games in
/// play touch: each game's copy out of the log lands on its own page of the
/// key of `moves`. With that default the writer read a page back from the
/// file for every second move; with this, about one in a thousand. Pages
/// are only taken as they are touched.
const WRITER_CACHE_KIB: i64 = 8192;

/// Rows of the log copied into `moves` in a commit of moves, at least (two
/// a move appended, if more).
const COPIED_PER_COMMIT: usize = 256;

/// The writer's connection to a SQLite file, its log of moves and its
/// checkpoints.
pub(in super::super) struct DirectWriter {
    conn: Connection,
    checkpoints: WalCheckpoints,
    log: MoveLog,
}

impl DirectWriter {
    /// The writer of the SQLite file `url` names; None for other databases
    /// and in-memory SQLite. What a crash left in the log of moves goes
    /// into `moves` first, before any game is read.
    pub(in super::super) fn open(url: &str) -> Result<Option<Self>, StoreError> {
        let Some(mut conn) = super::connect(url)? else {
            return Ok(None);
        };
        conn.pragma_update(None, "cache_size", -WRITER_CACHE_KIB)
            .map_err(sqlite)?;
        let log = MoveLog::recover(&mut conn)?;
        let checkpoints = WalCheckpoints::take_over(url, &conn, Limits::default())?;
        Ok(Some(Self {
            conn,
            checkpoints,
            log,
        }))
    }

    /// Commits `ops` in one transaction, moves alone by appending them to
    /// the log; durable on return.
    pub(in super::super) fn write(&mut self, ops: &[&WriteOp]) -> Result<(), DbErr> {
        if super::super::plan::only_moves(ops.iter().copied()) {
            self.insert(ops)
        } else {
            self.commit(ops)
        }
    }

    /// Appends the moves of `ops` to the log in one transaction, with the
    /// copies into `moves` now due.
    fn insert(&mut self, ops: &[&WriteOp]) -> Result<(), DbErr> {
        let moves: Vec<&moves::Model> = ops
            .iter()
            .filter_map(|op| match op {
                WriteOp::InsertMove(mv) => Some(mv),
                _ => None,
            })
            .collect();
        let mut change = Change::default();
        let txn = self.conn.transaction().map_err(sqlite)?;
        self.log.append(&txn, moves.iter().copied(), &mut change)?;
        let budget = COPIED_PER_COMMIT.max(2 * moves.len());
        self.log.copy_due(&txn, budget, &mut change)?;
        self.log.trim(&txn, &mut change)?;
        txn.commit().map_err(sqlite)?;
        self.log.apply(change);
        Ok(())
    }

    /// Commits `ops`, of any kind, in one transaction. The moves still in
    /// the log of the games they add moves to are copied into `moves`
    /// first, so its key checks the moves among them. A game's end alone
    /// copies nothing: its moves leave the log as any others do, and a read
    /// of the game has them copied first.
    fn commit(&mut self, ops: &[&WriteOp]) -> Result<(), DbErr> {
        let planned = plan(ops, DbBackend::Sqlite)?;
        let games: Vec<&str> = ops
            .iter()
            .filter_map(|op| match op {
                WriteOp::InsertMove(mv) => Some(mv.game_id.as_str()),
                WriteOp::FoldLog(game) => game.as_ref().map(GameId::as_str),
                // The moves taken back may still be in the log.
                WriteOp::TakeBack(rewind) => Some(rewind.game_id.as_str()),
                _ => None,
            })
            .collect();
        let all = ops.iter().any(|op| matches!(op, WriteOp::FoldLog(None)));
        if planned.is_empty() && !all && !games.iter().any(|g| self.log.waits(g)) {
            return Ok(());
        }
        let mut change = Change::default();
        let txn = self.conn.transaction().map_err(sqlite)?;
        if all {
            self.log.copy_all(&txn, &mut change)?;
        } else {
            self.log.copy_games(&txn, games, &mut change)?;
            self.log.trim(&txn, &mut change)?;
        }
        for op in ops {
            if let WriteOp::TakeBack(rewind) = op {
                // Rows of the log already copied stay until trimmed, and a
                // crash copies the whole log again: the plies taken back
                // must not come back with it.
                txn.execute(
                    "DELETE FROM move_log WHERE game_id = ?1 AND ply > ?2",
                    rusqlite::params![rewind.game_id, rewind.ply],
                )
                .map_err(sqlite)?;
            }
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
                .map_err(sqlite)?;
            if one_row && changed != 1 {
                // Dropping the transaction rolls it back.
                return Err(DbErr::RecordNotUpdated);
            }
        }
        txn.commit().map_err(sqlite)?;
        self.log.apply(change);
        Ok(())
    }

    /// Copies the whole log into `moves`: at the stop.
    pub(in super::super) fn drain_log(&mut self) -> Result<(), DbErr> {
        self.commit(&[&WriteOp::FoldLog(None)])
    }

    /// After a batch's commit, once it is answered; `waiting` when more
    /// jobs are queued.
    pub(in super::super) fn after_commit(&mut self, waiting: bool) {
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
