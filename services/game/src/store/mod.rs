//! Durable games: the tables, their migrations, and the single writer.
//!
//! Every change to a game goes through [`Store::write`], which hands it to one
//! writer task. The writer commits whatever has queued up while the previous
//! commit was on its way to disk in one transaction (group commit), so many
//! games' moves share one `fsync` while each caller still learns that *its*
//! change is durable before it acknowledges or publishes anything.
//!
//! - `entities` and [`migration`]: the tables and how they came to be.
//! - `writer`: the group-committing writer task behind [`Store::write`];
//!   `plan`: the sea-orm statements a commit runs, on either back end.
//! - `postgres`: fencing each write by its shard's lease, among replicas,
//!   through sea-orm's pool.
//! - `sqlite`: a SQLite file is written straight through SQLite, on the
//!   writer's own thread and connection: moves are appended to a log of
//!   moves (`move_log`) and copied into `moves` a game at a time, and the
//!   file's checkpoints run on a thread of their own. Starting, the moves of
//!   every game in play are read on a connection of their own too.
//! - [`chat`]: a game's chat lines and their reports.
//! - `reads`: loading games, listing a player's games, the results outbox.
//! - `history`: a player's finished games with filters, for their history.
//! - `rows`: domain values to rows and back ([`ops_for`], [`row_setup`], the
//!   stored spellings of colours, results, time controls and players).

pub mod chat;
mod entities;
mod history;
pub mod migration;
mod plan;
mod postgres;
mod reads;
mod rows;
mod sqlite;
mod writer;

use chess_domain::GameId;
use sea_orm::DatabaseConnection;
use sea_orm_migration::MigratorTrait as _;

pub use entities::{clock_credits, games, moves, results_outbox, takebacks};
pub use history::HistoryFilter;
pub use rows::{credit_op, new_game_row, ops_for, row_setup};
pub use writer::{Fence, WriteOp};

chess_storage::store_error! {
    /// A storage failure.
    pub enum StoreError {
        #[error("the database writer has stopped")]
        WriterGone,
        #[error("stored game {id} is unreadable: {reason}")]
        Corrupt { id: String, reason: String },
        #[error("shard {shard} is no longer this replica's: its lease of epoch {epoch} ended")]
        Fenced { shard: u16, epoch: i64 },
    }
}

/// Which games a listing includes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListFilter {
    All,
    Active,
    Finished,
}

/// The game database.
#[derive(Clone, Debug)]
pub struct Store {
    db: DatabaseConnection,
    writer: writer::Writer,
    /// The URL of the SQLite file, when the database is one: bulk reads go
    /// to it on a connection of their own (see `sqlite::active_moves`).
    sqlite_file: Option<std::sync::Arc<str>>,
}

impl Store {
    /// Opens the database at `url`, applies the migrations and starts the
    /// writer, whose writes are not fenced: a lone replica's.
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        Self::open_as(url, None).await
    }

    /// Opens the database at `url` for replica `replica` among several:
    /// every write carrying a [`Fence`] is made only while `replica` holds
    /// that lease.
    pub async fn open_fenced(url: &str, replica: &str) -> Result<Self, StoreError> {
        Self::open_as(url, Some(replica.to_owned())).await
    }

    async fn open_as(url: &str, replica: Option<String>) -> Result<Self, StoreError> {
        // A SQLite file's checkpoints are the writer's (see `sqlite`).
        let db = chess_storage::connect_with(url, 8, chess_storage::Checkpoints::Elsewhere).await?;
        // Replicas starting together take turns.
        chess_storage::migrate_exclusively(&db, 0x4348_4553_5347, || {
            migration::Migrator::up(&db, None)
        })
        .await?;
        // The writer of a SQLite file copies what a crash left in its log
        // of moves into `moves` before it starts, so before any read.
        let writer = writer::spawn(db.clone(), url, replica)?;
        let sqlite_file = chess_storage::sqlite_path(url).map(|_| url.into());
        Ok(Self {
            db,
            writer,
            sqlite_file,
        })
    }

    /// Commits the writes already queued, then closes the database for
    /// good: the writer's connections, then the pool's. The last
    /// connection to a SQLite file to close copies its log back and
    /// removes it. Writes after this fail with [`StoreError::WriterGone`].
    pub async fn close(&self) {
        self.writer.close().await;
        chess_storage::close(&self.db).await;
    }

    /// Has the writer copy the moves of `game` (of every game: `None`)
    /// still in the log of a SQLite file into `moves`, before they are read
    /// from there.
    async fn fold_log(&self, game: Option<&GameId>) -> Result<(), StoreError> {
        if self.sqlite_file.is_none() {
            return Ok(());
        }
        self.write(None, vec![WriteOp::FoldLog(game.cloned())])
            .await
    }

    /// The connection, for the shard leases kept beside the games.
    pub fn connection(&self) -> &DatabaseConnection {
        &self.db
    }
}

#[cfg(test)]
mod tests;
