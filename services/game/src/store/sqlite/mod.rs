//! What the store does only on a SQLite file.
//!
//! One process writes a file (`chess_runtime::lock::database`), through
//! the same sea-orm pool as its reads; WAL lets the reads run beside the
//! writer, and each connection checkpoints the log in the commit that takes
//! it past SQLite's threshold.
//!
//! Earlier versions appended each move to `move_log` (migration
//! `m20261126_000004_move_log`) and copied it into `moves` later, so a file
//! they left after a crash may hold moves answered as durable that are not
//! yet in `moves`. Opening the file copies them there, before any game is
//! read. The table stays, as files in the field have it, and nothing
//! writes to it any more.

use sea_orm::{ConnectionTrait as _, DatabaseConnection, DbBackend, DbErr, TransactionTrait as _};

/// Copies whatever `move_log` holds into `moves` and empties it, in one
/// transaction; nothing to do on other databases.
pub(super) async fn recover_move_log(db: &DatabaseConnection) -> Result<(), DbErr> {
    if db.get_database_backend() != DbBackend::Sqlite {
        return Ok(());
    }
    const COLUMNS: &str = "game_id, ply, uci, san, submitted, played_at, clock_after_ms";
    let txn = db.begin().await?;
    txn.execute_unprepared(&format!(
        "INSERT OR IGNORE INTO moves ({COLUMNS}) \
         SELECT {COLUMNS} FROM move_log ORDER BY game_id, ply"
    ))
    .await?;
    txn.execute_unprepared("DELETE FROM move_log").await?;
    txn.commit().await
}
