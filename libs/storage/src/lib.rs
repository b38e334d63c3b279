//! Database connections for the chess services.
//!
//! Every service that stores data takes a `--database-url`: a SQLite file
//! (`sqlite://data/game.sqlite`, the default for one machine) or a PostgreSQL
//! server (`postgres://user:pass@host/db`, for Kubernetes). [`connect`] opens
//! either the same way, so the services' code and migrations are identical on
//! both.
//!
//! SQLite files are opened in WAL mode with `synchronous=FULL`: a commit is on
//! disk before it returns, so an acknowledged write survives a crash of the
//! process or of the machine.
//!
//! [`migration`] holds what the services' schema migrations are written
//! with.

use std::{path::Path, time::Duration};

pub use sea_orm::DbErr;
use sea_orm::{ConnectOptions, Database, DatabaseConnection};

pub mod migration;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

/// Why a database could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("unsupported database url {0:?} (expected sqlite:// or postgres://)")]
    Scheme(String),
    #[error("cannot create the directory for {path}: {source}")]
    Directory {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot open database {url}: {source}")]
    Connect { url: String, source: DbErr },
}

/// Declares a service's store error: the failures every store shares
/// (opening the database, and what the database itself reports) followed by
/// the variants given, which only that service's store can have. Each
/// store's error is then matched by its own cases while the shared ones read
/// the same everywhere. The calling crate derives with `thiserror`.
///
/// ```
/// chess_storage::store_error! {
///     /// A storage failure.
///     pub enum StoreError {
///         #[error("stored row {0} is unreadable")]
///         Corrupt(String),
///     }
/// }
/// let e = StoreError::from(chess_storage::Error::Scheme("x".into()));
/// assert!(matches!(e, StoreError::Open(_)));
/// ```
#[macro_export]
macro_rules! store_error {
    ($(#[$attr:meta])* $vis:vis enum $name:ident { $($variants:tt)* }) => {
        $(#[$attr])*
        #[derive(Debug, thiserror::Error)]
        $vis enum $name {
            #[error(transparent)]
            Open(#[from] $crate::Error),
            #[error("database error: {0}")]
            Db(#[from] $crate::DbErr),
            $($variants)*
        }
    };
}

/// Who copies a SQLite file's write-ahead log back into the database.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Checkpoints {
    /// Each connection, in the commit that takes the log past SQLite's
    /// `wal_autocheckpoint` (1,000 pages).
    #[default]
    InCommits,
    /// Not the pool's connections: the caller checkpoints the file itself
    /// (the game store's writer does, off its commits).
    Elsewhere,
}

/// How long a SQLite connection waits for another's write lock; a caller
/// opening connections of its own beside the pool's gives them the same.
pub const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Which kind of database a URL names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    /// The backend for `url`, by its scheme.
    pub fn of(url: &str) -> Result<Self, Error> {
        if url.starts_with("sqlite:") {
            Ok(Self::Sqlite)
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Ok(Self::Postgres)
        } else {
            Err(Error::Scheme(url.to_owned()))
        }
    }
}

/// The file a `sqlite:` URL names, if it names one (not `:memory:`); None
/// for other databases.
pub fn sqlite_path(url: &str) -> Option<&Path> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or(rest);
    (!path.is_empty() && !path.starts_with(":memory:")).then(|| Path::new(path))
}

/// A URL for the SQLite file at `path`, created if missing.
pub fn sqlite_url(path: &Path) -> String {
    format!("sqlite://{}?mode=rwc", path.display())
}

/// Opens the database at `url`, creating a SQLite file (and its directory) if
/// needed. `max_connections` bounds the pool.
pub async fn connect(url: &str, max_connections: u32) -> Result<DatabaseConnection, Error> {
    connect_with(url, max_connections, Checkpoints::InCommits).await
}

/// [`connect`], with the pool's connections to a SQLite file leaving the
/// checkpoints to `checkpoints` (no matter for other databases).
pub async fn connect_with(
    url: &str,
    max_connections: u32,
    checkpoints: Checkpoints,
) -> Result<DatabaseConnection, Error> {
    let backend = Backend::of(url)?;
    let mut options = ConnectOptions::new(url.to_owned());
    options
        .max_connections(max_connections)
        .min_connections(1)
        .connect_timeout(Duration::from_secs(10))
        .acquire_timeout(Duration::from_secs(30))
        .sqlx_logging(false);
    if backend == Backend::Sqlite {
        // A file on this machine cannot drop a connection the way a network
        // can: pinging it before every use would only add a round trip to
        // every transaction.
        options.test_before_acquire(false);
        if let Some(dir) = sqlite_path(url)
            .and_then(Path::parent)
            .filter(|d| !d.as_os_str().is_empty())
        {
            std::fs::create_dir_all(dir).map_err(|source| Error::Directory {
                path: dir.display().to_string(),
                source,
            })?;
        }
        options.map_sqlx_sqlite_opts(move |o| {
            use sea_orm::sqlx::sqlite::{SqliteJournalMode, SqliteSynchronous};
            let o = o
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Full)
                .busy_timeout(SQLITE_BUSY_TIMEOUT)
                .foreign_keys(true);
            match checkpoints {
                Checkpoints::InCommits => o,
                Checkpoints::Elsewhere => o.pragma("wal_autocheckpoint", "0"),
            }
        });
    }
    let db = Database::connect(options)
        .await
        .map_err(|source| Error::Connect {
            url: redact(url),
            source,
        })?;
    tracing::debug!(url = %redact(url), "database open");
    Ok(db)
}

/// Closes the pool of `db` for good, waiting for the connections in use to
/// come back. The last connection to a SQLite file to close copies its log
/// back into the file and removes it (with its shared-memory index), so a
/// service that closes its pools as it stops leaves the file alone.
pub async fn close(db: &DatabaseConnection) {
    if let Err(e) = db.close_by_ref().await {
        tracing::warn!(error = %e, "closing the database failed");
    }
}

/// Runs `migrate` while holding a database-wide lock, so that replicas of a
/// service starting together on PostgreSQL apply the migrations one at a
/// time (the others then find nothing left to do). SQLite needs no lock:
/// its writers already exclude each other.
pub async fn migrate_exclusively<F, Fut>(
    db: &DatabaseConnection,
    lock: i64,
    migrate: F,
) -> Result<(), DbErr>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<(), DbErr>>,
{
    use sea_orm::{ConnectionTrait as _, DbBackend, Statement, TransactionTrait as _};
    if db.get_database_backend() != DbBackend::Postgres {
        return migrate().await;
    }
    // A transaction-scoped advisory lock, held by this transaction's
    // connection until it ends, whatever connections the migrations use.
    let holder = db.begin().await?;
    holder
        .execute_raw(Statement::from_sql_and_values(
            DbBackend::Postgres,
            "SELECT pg_advisory_xact_lock($1)",
            [lock.into()],
        ))
        .await?;
    let result = migrate().await;
    holder.commit().await?;
    result
}

/// `url` with any password replaced by `***`, for messages.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let Some((userinfo, host)) = rest.split_once('@') else {
        return url.to_owned();
    };
    match userinfo.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_classified_and_redacted() {
        assert_eq!(Backend::of("sqlite://x.db").unwrap(), Backend::Sqlite);
        assert_eq!(
            Backend::of("postgres://u:p@h/d").unwrap(),
            Backend::Postgres
        );
        assert!(Backend::of("mysql://h").is_err());
        assert_eq!(
            redact("postgres://u:secret@h:5432/d"),
            "postgres://u:***@h:5432/d"
        );
        assert_eq!(redact("sqlite://data/x.sqlite"), "sqlite://data/x.sqlite");
        assert_eq!(
            sqlite_path("sqlite://data/g.sqlite?mode=rwc"),
            Some(Path::new("data/g.sqlite"))
        );
        assert_eq!(sqlite_path("sqlite::memory:"), None);
    }

    #[tokio::test]
    async fn a_pool_can_leave_the_checkpoints_of_a_sqlite_file_elsewhere() {
        use sea_orm::{ConnectionTrait as _, DbBackend, Statement};
        let dir = tempfile::tempdir().unwrap();
        let url = sqlite_url(&dir.path().join("x.sqlite"));
        let autocheckpoint = |db: DatabaseConnection| async move {
            let row = db
                .query_one_raw(Statement::from_string(
                    DbBackend::Sqlite,
                    "PRAGMA wal_autocheckpoint",
                ))
                .await
                .unwrap()
                .unwrap();
            row.try_get_by_index::<i64>(0).unwrap()
        };
        assert_eq!(autocheckpoint(connect(&url, 1).await.unwrap()).await, 1000);
        let elsewhere = connect_with(&url, 1, Checkpoints::Elsewhere).await.unwrap();
        assert_eq!(autocheckpoint(elsewhere).await, 0);
    }

    #[tokio::test]
    async fn migrations_take_turns_on_postgres() {
        use std::time::{Duration, Instant};
        let url = testing::fresh_postgres_database().await;
        let a = connect(&url, 4).await.unwrap();
        let b = connect(&url, 4).await.unwrap();
        let run = |db: DatabaseConnection| async move {
            let mut span = (Instant::now(), Instant::now());
            migrate_exclusively(&db, 42, || async {
                span.0 = Instant::now();
                tokio::time::sleep(Duration::from_millis(300)).await;
                span.1 = Instant::now();
                Ok(())
            })
            .await
            .unwrap();
            span
        };
        let (first, second) = tokio::join!(run(a), run(b));
        assert!(
            first.1 <= second.0 || second.1 <= first.0,
            "the two migrations overlapped"
        );
    }

    #[tokio::test]
    async fn sqlite_files_and_directories_are_created() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/deeper/test.sqlite");
        let db = connect(&sqlite_url(&path), 2).await.unwrap();
        use sea_orm::ConnectionTrait as _;
        db.execute_unprepared("CREATE TABLE t (x INTEGER)")
            .await
            .unwrap();
        assert!(path.exists());
    }
}
