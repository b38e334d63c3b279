//! What the store does only on a SQLite file: every write goes straight to
//! SQLite, on a connection of the writer's own and on the writer's own
//! thread, and the bulk read of a start on a connection of its own.
//!
//! Through sqlx each statement crosses to sqlx's worker thread and back; on
//! the one write every move makes, that cost about as much as the write
//! itself, and writing directly carries a fifth more moves a second, with
//! shorter paced latencies and a start that resumes games in a third of the
//! time (measured apart in `docs/performance.md`).
//!
//! - `direct`: the writer's connection: moves appended to the log of moves,
//!   any other change as sea-orm plans it;
//! - `move_log`: that log, copied into `moves` a game's moves at a time (a
//!   crash leaves moves in it; opening the file copies them into `moves`);
//! - `checkpoint`: the file's checkpoints, made off the writer's commits,
//!   mostly on a thread of their own;
//! - [`active_moves`] here: the moves of every game in play, read at once.
//!
//! One process writes a file (`chess_runtime::lock::database`). Reads of a
//! single game go through sea-orm's pool, which WAL lets run beside the
//! writer; they first have the writer copy the game's moves out of the log
//! (`WriteOp::FoldLog`).

mod checkpoint;
mod direct;
pub(super) mod move_log;

use std::collections::HashMap;

use chess_domain::GameStatus;
use rusqlite::{Connection, OpenFlags};
use sea_orm::DbErr;

pub(super) use direct::DirectWriter;

use super::{StoreError, moves};

/// A plain connection to the SQLite file `url` names, with the settings of
/// `chess_storage::connect`'s pool. None for other databases and in-memory
/// SQLite. The file must exist (open the pool first).
fn connect(url: &str) -> Result<Option<Connection>, StoreError> {
    let Some(path) = chess_storage::sqlite_path(url) else {
        return Ok(None);
    };
    let open = || {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(chess_storage::SQLITE_BUSY_TIMEOUT)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        Ok(conn)
    };
    open().map(Some).map_err(|e: rusqlite::Error| {
        StoreError::Open(chess_storage::Error::Connect {
            url: chess_storage::redact(url),
            source: sqlite(e),
        })
    })
}

/// A SQLite failure, as the store reports database errors.
fn sqlite(e: rusqlite::Error) -> DbErr {
    DbErr::Custom(format!("sqlite: {e}"))
}

/// Adds `m` to its game's moves (the rows come ordered by game and ply).
pub(super) fn group(moves_by_game: &mut HashMap<String, Vec<moves::Model>>, m: moves::Model) {
    match moves_by_game.get_mut(&m.game_id) {
        Some(moves) => moves.push(m),
        None => {
            moves_by_game.insert(m.game_id.clone(), vec![m]);
        }
    }
}

/// The moves of every active game, read from the SQLite file at `url` on a
/// connection of its own, on a blocking thread: through sqlx, each of what
/// may be hundreds of thousands of rows would cross from its SQLite thread
/// to the runtime on its own. The log of moves is to be copied first.
pub(super) async fn active_moves(
    url: std::sync::Arc<str>,
) -> Result<HashMap<String, Vec<moves::Model>>, StoreError> {
    const QUERY: &str = "SELECT game_id, ply, uci, san, submitted, played_at, clock_after_ms \
        FROM moves WHERE game_id IN (SELECT id FROM games WHERE status = ?1) \
        ORDER BY game_id, ply";
    let read = move || -> Result<_, StoreError> {
        let conn = connect(&url)?.ok_or_else(|| DbErr::Custom("not a SQLite file".to_owned()))?;
        let mut statement = conn.prepare(QUERY).map_err(sqlite)?;
        let mut rows = statement
            .query([GameStatus::Active.as_str()])
            .map_err(sqlite)?;
        let mut moves_by_game = HashMap::new();
        while let Some(row) = rows.next().map_err(sqlite)? {
            let m = moves::Model {
                game_id: row.get(0).map_err(sqlite)?,
                ply: row.get(1).map_err(sqlite)?,
                uci: row.get(2).map_err(sqlite)?,
                san: row.get(3).map_err(sqlite)?,
                submitted: row.get(4).map_err(sqlite)?,
                played_at: row.get(5).map_err(sqlite)?,
                clock_after_ms: row.get(6).map_err(sqlite)?,
            };
            group(&mut moves_by_game, m);
        }
        Ok(moves_by_game)
    };
    tokio::task::spawn_blocking(read)
        .await
        .map_err(|e| DbErr::Custom(format!("reading the moves: {e}")))?
}

#[cfg(test)]
mod tests;
