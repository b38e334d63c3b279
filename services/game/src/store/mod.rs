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
//! - `postgres`: fencing each write by its shard's lease, among replicas;
//!   `sqlite`: what a SQLite file needs alone (the log of moves an earlier
//!   version kept, copied into `moves` at the open).
//! - `reads`: loading games, listing a player's games, the results outbox.
//! - `rows`: domain values to rows and back ([`ops_for`], [`row_setup`], the
//!   stored spellings of colours, results, time controls and players).

mod entities;
pub mod migration;
mod plan;
mod postgres;
mod reads;
mod rows;
mod sqlite;
mod writer;

use sea_orm::DatabaseConnection;
use sea_orm_migration::MigratorTrait as _;

pub use entities::{clock_credits, games, moves, results_outbox};
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
        let db = chess_storage::connect(url, 8).await?;
        // Replicas starting together take turns.
        chess_storage::migrate_exclusively(&db, 0x4348_4553_5347, || {
            migration::Migrator::up(&db, None)
        })
        .await?;
        sqlite::recover_move_log(&db).await?;
        let writer = writer::spawn(db.clone(), replica);
        Ok(Self { db, writer })
    }

    /// Commits the writes already queued, then closes the database for
    /// good. The last connection to a SQLite file to close copies its log
    /// back and removes it. Writes after this fail with
    /// [`StoreError::WriterGone`].
    pub async fn close(&self) {
        self.writer.close().await;
        chess_storage::close(&self.db).await;
    }

    /// The connection, for the shard leases kept beside the games.
    pub fn connection(&self) -> &DatabaseConnection {
        &self.db
    }
}

#[cfg(test)]
mod tests;
