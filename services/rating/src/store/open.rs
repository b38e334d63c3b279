//! Opening the database, and the retry loop every write transaction runs in.

use std::{sync::Arc, time::Duration};

use chess_domain::{PlayerId, SpeedCategory};
use chess_ratings::System;
use chess_storage::Backend;
use sea_orm::{
    ConnectionTrait as _, DatabaseTransaction, DbErr, RuntimeErr, Set, SqliteTransactionMode,
    TransactionOptions, TransactionTrait as _,
    sea_query::{Expr, OnConflict, Query},
};
use sea_orm_migration::MigratorTrait as _;
use tokio::sync::Mutex;

use super::{Store, StoreError, migration, players, ratings};

/// Attempts at a transaction that keeps failing for transient reasons.
const MAX_ATTEMPTS: u32 = 12;

/// Runs `$work`, a future of the transaction `$txn`, in a write transaction
/// of `$store`: committed if the work succeeds, rolled back if not, and
/// retried as [`Store::write`] retries. (A macro: a function taking the work
/// as a closure would need it to borrow the transaction for any lifetime,
/// which rules out its borrowing the caller's values.)
macro_rules! transact {
    ($store:expr, |$txn:ident| $work:expr) => {
        $store.write(|| async {
            let txn = $store.begin_write().await?;
            let result = {
                let $txn = &txn;
                $work.await
            };
            $crate::store::open::finish(txn, result).await
        })
    };
}
pub(super) use transact;

/// Commits `txn` if `result` is a success, else rolls it back.
pub(super) async fn finish<T>(
    txn: DatabaseTransaction,
    result: Result<T, StoreError>,
) -> Result<T, StoreError> {
    match result {
        Ok(value) => {
            txn.commit().await?;
            Ok(value)
        }
        Err(e) => {
            let _already_failing = txn.rollback().await;
            Err(e)
        }
    }
}

impl Store {
    /// Opens the database at `url`, applies the migrations and gives every
    /// player rows for `system` (players registered under another system, or
    /// before this one was chosen, start at its initial rating).
    pub async fn open(url: &str, connections: u32, system: System) -> Result<Self, StoreError> {
        let backend = Backend::of(url)?;
        let db = chess_storage::connect(url, connections).await?;
        // Replicas starting together take turns.
        chess_storage::migrate_exclusively(&db, 0x4348_4553_5352, || {
            migration::Migrator::up(&db, None)
        })
        .await?;
        let store = Self {
            db,
            backend,
            system,
            write_gate: (backend == Backend::Sqlite).then(|| Arc::new(Mutex::new(()))),
        };
        store.backfill_ratings().await?;
        Ok(store)
    }

    /// The rating system ratings are kept in.
    pub fn system(&self) -> &System {
        &self.system
    }

    pub(super) fn system_name(&self) -> &'static str {
        self.system.kind().as_str()
    }

    /// Starts a write transaction; on SQLite it holds the write lock from
    /// the start.
    pub(super) async fn begin_write(&self) -> Result<DatabaseTransaction, DbErr> {
        match self.backend {
            Backend::Sqlite => {
                self.db
                    .begin_with_options(TransactionOptions {
                        sqlite_transaction_mode: Some(SqliteTransactionMode::Immediate),
                        ..TransactionOptions::default()
                    })
                    .await
            }
            Backend::Postgres => self.db.begin().await,
        }
    }

    /// Runs `attempt` until it succeeds, fails for good, or has failed
    /// transiently too often; this process's SQLite writers take turns.
    pub(super) async fn write<T, F, Fut>(&self, mut attempt: F) -> Result<T, StoreError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, StoreError>>,
    {
        let mut tries = 0;
        loop {
            let result = {
                let _turn = match &self.write_gate {
                    Some(gate) => Some(gate.lock().await),
                    None => None,
                };
                attempt().await
            };
            match result {
                Err(StoreError::Db(e)) if is_transient(&e) && tries + 1 < MAX_ATTEMPTS => {
                    tries += 1;
                    tracing::debug!(error = %e, tries, "transient database error; retrying");
                    let jitter = rand::random_range(0..=10u64 * u64::from(tries));
                    tokio::time::sleep(Duration::from_millis(5 + jitter)).await;
                }
                other => return other,
            }
        }
    }

    /// Inserts the missing rating rows of the current system for every
    /// player.
    async fn backfill_ratings(&self) -> Result<(), StoreError> {
        // Scoped: its blanket `min`/`max` would shadow the integers' own.
        use sea_orm::sea_query::ExprTrait as _;
        let initial = self.system.initial();
        for category in SpeedCategory::RATED {
            let existing = Query::select()
                .expr(Expr::val(1))
                .from(ratings::Entity)
                .and_where(
                    Expr::col((ratings::Entity, ratings::Column::PlayerId))
                        .equals((players::Entity, players::Column::Id)),
                )
                .and_where(
                    Expr::col((ratings::Entity, ratings::Column::System)).eq(self.system_name()),
                )
                .and_where(
                    Expr::col((ratings::Entity, ratings::Column::Category)).eq(category.as_str()),
                )
                .to_owned();
            let missing = Query::select()
                .column((players::Entity, players::Column::Id))
                .expr(Expr::val(self.system_name()))
                .expr(Expr::val(category.as_str()))
                .expr(Expr::val(initial.rating))
                .expr(Expr::val(initial.deviation))
                .expr(Expr::val(initial.volatility))
                .expr(Expr::val(0i32))
                .expr(Expr::val(0i32))
                .expr(Expr::val(0i32))
                .expr(Expr::val(0i32))
                .from(players::Entity)
                .and_where(Expr::exists(existing).not())
                .to_owned();
            let insert = Query::insert()
                .into_table(ratings::Entity)
                .columns([
                    ratings::Column::PlayerId,
                    ratings::Column::System,
                    ratings::Column::Category,
                    ratings::Column::Rating,
                    ratings::Column::Deviation,
                    ratings::Column::Volatility,
                    ratings::Column::GamesPlayed,
                    ratings::Column::Wins,
                    ratings::Column::Losses,
                    ratings::Column::Draws,
                ])
                .select_from(missing)
                .map_err(|e| StoreError::Corrupt(e.to_string()))?
                .on_conflict(
                    OnConflict::columns([
                        ratings::Column::PlayerId,
                        ratings::Column::System,
                        ratings::Column::Category,
                    ])
                    .do_nothing()
                    .to_owned(),
                )
                .to_owned();
            let insert = &insert;
            let added = self
                .write(|| async move { Ok(self.db.execute(insert).await?.rows_affected()) })
                .await?;
            if added > 0 {
                tracing::info!(%category, system = self.system_name(), added, "added initial ratings");
            }
        }
        Ok(())
    }

    pub(super) fn initial_row(
        &self,
        player_id: &PlayerId,
        category: SpeedCategory,
    ) -> ratings::ActiveModel {
        let initial = self.system.initial();
        ratings::ActiveModel {
            player_id: Set(player_id.to_string()),
            system: Set(self.system_name().to_owned()),
            category: Set(category.as_str().to_owned()),
            rating: Set(initial.rating),
            deviation: Set(initial.deviation),
            volatility: Set(initial.volatility),
            games_played: Set(0),
            wins: Set(0),
            losses: Set(0),
            draws: Set(0),
            last_played_at: Set(None),
        }
    }
}

/// Whether `error` is worth retrying: SQLite busy or locked, a PostgreSQL
/// serialization failure or deadlock.
pub(super) fn is_transient(error: &DbErr) -> bool {
    let (DbErr::Exec(RuntimeErr::SqlxError(e))
    | DbErr::Query(RuntimeErr::SqlxError(e))
    | DbErr::Conn(RuntimeErr::SqlxError(e))) = error
    else {
        return false;
    };
    let sea_orm::sqlx::Error::Database(db) = &**e else {
        return false;
    };
    matches!(
        db.code().as_deref(),
        // SQLite: BUSY, BUSY_RECOVERY, BUSY_SNAPSHOT, LOCKED, LOCKED_SHAREDCACHE.
        Some("5" | "261" | "517" | "6" | "262")
        // PostgreSQL: serialization_failure, deadlock_detected.
        | Some("40001" | "40P01")
    )
}
