//! Durable accounts, ratings and results: the tables, their migrations, and
//! the transactions that keep them consistent.
//!
//! A game is applied in one transaction that first inserts its `results` row
//! (keyed by game id), then updates both players' ratings and adds their
//! history rows. The key makes every later delivery of the same game a
//! repeat, even across restarts and replicas; the transaction makes the
//! rating changes all-or-nothing with it.
//!
//! Concurrent games of one player must not lose updates:
//! - SQLite: write transactions start with `BEGIN IMMEDIATE`, which takes the
//!   database's write lock before anything is read. (A deferred transaction
//!   would read first and fail to upgrade to a writer once another one
//!   committed.) Writers of this process also queue on a gate so they wait in
//!   line rather than in SQLite's busy handler.
//! - PostgreSQL: both rating rows are read `FOR UPDATE`, in player-id order,
//!   so a second game of the same player waits for the first and then reads
//!   its result. Serialization failures and deadlocks are retried.
//!
//! - `entities` and [`migration`]: the tables and how they came to be.
//! - `open`: opening the database, the initial ratings, and the retry loop
//!   every write transaction runs in.
//! - `accounts`: registering players and finding them.
//! - `sessions`: session generations, revoked sessions and password
//!   changes.
//! - `nostr`: linking a Nostr public key to a player, and finding the
//!   player by it.
//! - `record`: applying a finished game once.
//! - `reads`: ratings, history and leaderboards, rows into
//!   [`crate::model`] values.
//! - `directory`: every registered player by username prefix, sorted and
//!   paged.
//! - [`community`]: chat standing (moderator role, server-wide mute, chat
//!   off) and personal mutes.
//! - `changes`: the rating changes of given games, for game lists.

mod accounts;
mod changes;
pub mod community;
mod directory;
mod entities;
pub mod migration;
mod nostr;
mod open;
mod reads;
mod record;
mod sessions;

use std::sync::Arc;

use chess_ratings::System;
use chess_storage::Backend;
use sea_orm::DatabaseConnection;
use tokio::sync::Mutex;

pub use directory::DirectoryRow;
pub use entities::{players, rating_history, ratings, results, revoked_sessions};

chess_storage::store_error! {
    /// A storage failure.
    pub enum StoreError {
        #[error("the {0} is already registered")]
        Taken(Field),
        #[error("stored data is inconsistent: {0}")]
        Corrupt(String),
    }
}

/// An account field that must be unique.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Username,
    Email,
    /// A linked Nostr public key.
    NostrKey,
}

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Username => "username",
            Self::Email => "email",
            Self::NostrKey => "Nostr public key",
        })
    }
}

/// The rating database, for one rating system.
#[derive(Clone, Debug)]
pub struct Store {
    db: DatabaseConnection,
    backend: Backend,
    system: System,
    /// SQLite only: this process's writers take turns here.
    write_gate: Option<Arc<Mutex<()>>>,
}

impl Store {
    /// Closes the database for good (see [`chess_storage::close`]).
    pub async fn close(&self) {
        chess_storage::close(&self.db).await;
    }
}
