//! Durable games: the tables, their migrations, and the single writer.
//!
//! Every change to a game goes through [`Store::write`], which hands it to one
//! writer task. The writer commits whatever has queued up while the previous
//! commit was on its way to disk in one transaction (group commit), so many
//! games' moves share one `fsync` while each caller still learns that *its*
//! change is durable before it acknowledges or publishes anything.
//!
//! - `entities` and [`migration`]: the tables and how they came to be.
//! - `writer`: the group-committing writer task behind [`Store::write`], and
//!   the straight-to-SQLite path for every write of a SQLite file.
//! - `move_log`: the SQLite writer's log of moves, copied into `moves` a
//!   game's moves at a time.
//! - `reads`: loading games, listing a player's games, the results outbox.
//! - `rows`: domain values to rows and back ([`ops_for`], [`row_setup`], the
//!   stored spellings of colours, results, time controls and players).

mod entities;
pub mod migration;
mod move_log;
mod reads;
mod rows;
mod writer;

use sea_orm::{DatabaseConnection, DbErr};
use sea_orm_migration::MigratorTrait as _;

pub use entities::{clock_credits, games, moves, results_outbox};
pub use rows::{credit_op, encode_color, new_game_row, ops_for, row_setup};
pub use writer::{Fence, WriteOp};

// What the tests below reach through `super::*`.
#[cfg(test)]
use {
    crate::model::{Game, GameSetup, Participant},
    chess_domain::{RuleSet, TimeControl},
    sea_orm::{EntityTrait as _, sea_query::Query},
    shakmaty::Color,
};

/// A storage failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(transparent)]
    Open(#[from] chess_storage::Error),
    #[error("database error: {0}")]
    Db(#[from] DbErr),
    #[error("the database writer has stopped")]
    WriterGone,
    #[error("stored game {id} is unreadable: {reason}")]
    Corrupt { id: String, reason: String },
    #[error("shard {shard} is no longer this replica's: its lease of epoch {epoch} ended")]
    Fenced { shard: u16, epoch: i64 },
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
    /// to it on a connection of their own (see `reads`).
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
        // A SQLite file's checkpoints are the writer's (see `writer`).
        let db = chess_storage::connect_with(url, 8, chess_storage::Checkpoints::Elsewhere).await?;
        // Replicas starting together take turns.
        chess_storage::migrate_exclusively(&db, 0x4348_4553_5347, || {
            migration::Migrator::up(&db, None)
        })
        .await?;
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
    /// connection to a SQLite file to close copies its log back and removes
    /// it. Writes after this fail with [`StoreError::WriterGone`].
    pub async fn close(&self) {
        self.writer.close().await;
        chess_storage::close(&self.db).await;
    }

    /// Has the writer copy the moves of `game` (of every game: `None`)
    /// still in the log of a SQLite file into `moves`, before they are read
    /// from there.
    async fn fold_log(&self, game: Option<&str>) -> Result<(), StoreError> {
        if self.sqlite_file.is_none() {
            return Ok(());
        }
        self.write(None, vec![WriteOp::FoldLog(game.map(str::to_owned))])
            .await
    }

    /// The connection, for the shard leases kept beside the games.
    pub fn connection(&self) -> &DatabaseConnection {
        &self.db
    }
}

#[cfg(test)]
mod tests {
    use chess_domain::SpeedCategory;

    use super::*;

    fn guest(id: &str) -> Participant {
        Participant::Guest {
            id: id.to_owned(),
            name: id.to_owned(),
        }
    }

    fn new_game(id: &str) -> Game {
        let setup = GameSetup {
            white: guest("w"),
            black: guest("b"),
            time_control: TimeControl::Untimed,
            rules: RuleSet::Standard,
            rated: false,
            allow_hints: false,
            initial_fen: None,
        };
        Game::new(id.to_owned(), setup, 0).unwrap()
    }

    /// Stores `games` as new, each in a write of its own.
    async fn insert_games(store: &Store, games: &[Game]) {
        for game in games {
            let row = new_game_row(game, None);
            store
                .write(None, vec![WriteOp::InsertGame(Box::new(row))])
                .await
                .unwrap();
        }
    }

    /// A database made before untimed games had their category and games
    /// said whether they allow hints is brought up to date: untimed games are
    /// filed as untimed, those in play and undelivered results become
    /// unrated, and only engine and uqchess games allow hints.
    async fn older_games_are_migrated(url: String) {
        use sea_orm::ConnectionTrait as _;

        let db = chess_storage::connect(&url, 1).await.unwrap();
        migration::Migrator::up(&db, Some(1)).await.unwrap();
        let old_row =
            |id: &str, black_kind: &str, tc: &str, speed: &str, rules: &str, status: &str| {
                Query::insert()
                    .into_table("games")
                    .columns([
                        "id",
                        "white_kind",
                        "white_id",
                        "white_name",
                        "white_level",
                        "black_kind",
                        "black_id",
                        "black_name",
                        "black_level",
                        "time_control",
                        "speed",
                        "rules",
                        "rated",
                        "initial_fen",
                        "fen",
                        "ply",
                        "status",
                        "created_at",
                        "updated_at",
                    ])
                    .values_panic([
                        id.into(),
                        "registered".into(),
                        "a".into(),
                        "alice".into(),
                        0.into(),
                        black_kind.into(),
                        (if black_kind == "engine" { "" } else { "b" }).into(),
                        "bob".into(),
                        (if black_kind == "engine" { 3 } else { 0 }).into(),
                        tc.into(),
                        speed.into(),
                        rules.into(),
                        (black_kind == "registered").into(),
                        crate::model::game::STARTING_FEN.into(),
                        crate::model::game::STARTING_FEN.into(),
                        0.into(),
                        status.into(),
                        1i64.into(),
                        1i64.into(),
                    ])
                    .to_owned()
            };
        for row in [
            old_row(
                "engine",
                "engine",
                "untimed",
                "correspondence",
                "standard",
                "active",
            ),
            old_row(
                "uq",
                "guest",
                "untimed",
                "correspondence",
                "uqchess",
                "active",
            ),
            old_row(
                "casual",
                "registered",
                "untimed",
                "correspondence",
                "standard",
                "active",
            ),
            old_row(
                "done",
                "registered",
                "untimed",
                "correspondence",
                "standard",
                "finished",
            ),
            old_row(
                "blitz",
                "registered",
                "incremental:300:0",
                "blitz",
                "standard",
                "active",
            ),
        ] {
            db.execute(&row).await.unwrap();
        }
        db.execute(
            &Query::insert()
                .into_table("results_outbox")
                .columns([
                    "game_id",
                    "white_id",
                    "black_id",
                    "result",
                    "speed",
                    "rated",
                    "finished_at",
                ])
                .values_panic([
                    "done".into(),
                    "a".into(),
                    "b".into(),
                    "white".into(),
                    "correspondence".into(),
                    true.into(),
                    2i64.into(),
                ])
                .to_owned(),
        )
        .await
        .unwrap();
        drop(db);

        let store = Store::open(&url).await.unwrap();
        let row = |id: &'static str| {
            let db = store.db.clone();
            async move {
                games::Entity::find_by_id(id)
                    .one(&db)
                    .await
                    .unwrap()
                    .unwrap()
            }
        };
        for (id, speed, rated, hints) in [
            ("engine", "untimed", false, true),
            ("uq", "untimed", false, true),
            ("casual", "untimed", false, false),
            ("done", "untimed", true, false),
            ("blitz", "blitz", true, false),
        ] {
            let stored = row(id).await;
            assert_eq!(
                (stored.speed.as_str(), stored.rated, stored.hints_allowed),
                (speed, rated, hints),
                "{id}"
            );
        }
        let pending = store.pending_results().await.unwrap();
        assert_eq!(pending.len(), 1);
        assert_eq!(
            (pending[0].speed, pending[0].rated),
            (SpeedCategory::Untimed, false)
        );
        // Every game still loads: the finished one keeps its rated flag.
        assert_eq!(store.load_active(None).await.unwrap().len(), 4);
        assert!(store.load("done").await.unwrap().unwrap().rated());
    }

    #[tokio::test]
    async fn older_games_are_migrated_on_sqlite() {
        let dir = tempfile::tempdir().unwrap();
        older_games_are_migrated(chess_storage::sqlite_url(&dir.path().join("game.sqlite"))).await;
    }

    #[tokio::test]
    async fn older_games_are_migrated_on_postgres() {
        older_games_are_migrated(chess_storage::testing::fresh_postgres_database().await).await;
    }

    /// Moves written straight into SQLite by many concurrent callers are
    /// all stored, and a caller whose move cannot be stored fails alone.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_moves_on_sqlite_are_kept_and_a_bad_one_fails_alone() {
        let dir = tempfile::tempdir().unwrap();
        let url = chess_storage::sqlite_url(&dir.path().join("game.sqlite"));
        let store = Store::open(&url).await.unwrap();
        let mut games: Vec<Game> = (0..20).map(|i| new_game(&format!("g{i}"))).collect();
        insert_games(&store, &games).await;
        let line = ["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6"];
        for (ply, uci) in line.iter().enumerate() {
            let side = if ply % 2 == 0 {
                Color::White
            } else {
                Color::Black
            };
            let mut writes = Vec::new();
            for game in &mut games {
                let events = game.play(side, uci, 1_000).unwrap();
                let ops = ops_for(game, &events, 1_000);
                let store = store.clone();
                writes.push(tokio::spawn(async move { store.write(None, ops).await }));
            }
            // A move of a game that does not exist breaks the foreign key.
            let orphan = WriteOp::InsertMove(moves::Model {
                game_id: "missing".to_owned(),
                ply: ply as i32 + 1,
                uci: (*uci).to_owned(),
                san: String::new(),
                submitted: (*uci).to_owned(),
                played_at: 1_000,
                clock_after_ms: None,
            });
            let bad = {
                let store = store.clone();
                tokio::spawn(async move { store.write(None, vec![orphan]).await })
            };
            for write in writes {
                write.await.unwrap().unwrap();
            }
            assert!(bad.await.unwrap().is_err());
        }
        drop(store);
        let reopened = Store::open(&url).await.unwrap();
        for game in &games {
            let stored = reopened.load(game.id()).await.unwrap().unwrap();
            assert_eq!(stored.fen(), game.fen());
            assert_eq!(stored.ply() as usize, line.len());
        }
    }

    /// Writes other than moves go straight into the SQLite file too: a
    /// game's end (its row, its result to report) is written whole, and
    /// an update of a game that does not exist fails alone, changing
    /// nothing, when it shares a batch with good writes.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_games_end_is_written_whole_and_an_update_of_no_game_fails_alone() {
        let dir = tempfile::tempdir().unwrap();
        let url = chess_storage::sqlite_url(&dir.path().join("game.sqlite"));
        let store = Store::open(&url).await.unwrap();
        // Between registered players, so that each end has a result to
        // report.
        let registered = |id: &str| Participant::Registered {
            id: id.to_owned(),
            username: id.to_owned(),
        };
        let mut games: Vec<Game> = (0..20)
            .map(|i| {
                let setup = GameSetup {
                    white: registered("alice"),
                    black: registered("bob"),
                    time_control: TimeControl::Untimed,
                    rules: RuleSet::Standard,
                    rated: false,
                    allow_hints: false,
                    initial_fen: None,
                };
                Game::new(format!("g{i}"), setup, 0).unwrap()
            })
            .collect();
        insert_games(&store, &games).await;
        let mut writes = Vec::new();
        for game in &mut games {
            let events = game.resign(Color::Black, 5_000).unwrap();
            let ops = ops_for(game, &events, 5_000);
            let store = store.clone();
            writes.push(tokio::spawn(async move { store.write(None, ops).await }));
        }
        let ghost = new_game_row(&new_game("ghost"), None);
        let bad = {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .write(None, vec![WriteOp::UpdateGame(Box::new(ghost))])
                    .await
            })
        };
        for write in writes {
            write.await.unwrap().unwrap();
        }
        assert!(bad.await.unwrap().is_err());
        store.close().await;

        let reopened = Store::open(&url).await.unwrap();
        for game in &games {
            let stored = reopened.load(game.id()).await.unwrap().unwrap();
            assert!(!stored.is_active());
            assert_eq!(stored.fen(), game.fen());
        }
        assert!(reopened.load("ghost").await.unwrap().is_none());
        let mut reported: Vec<String> = reopened
            .pending_results()
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.game_id)
            .collect();
        reported.sort_unstable();
        let mut ids: Vec<String> = games.iter().map(|g| g.id().to_owned()).collect();
        ids.sort_unstable();
        assert_eq!(reported, ids);
    }

    /// Closing commits the writes already queued, refuses later ones, and
    /// leaves the SQLite file without its log, every move in the file.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn closing_commits_what_is_queued_then_refuses_writes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("game.sqlite");
        let url = chess_storage::sqlite_url(&path);
        let store = Store::open(&url).await.unwrap();
        let mut games: Vec<Game> = (0..50).map(|i| new_game(&format!("g{i}"))).collect();
        insert_games(&store, &games).await;
        // Fifty moves in flight as the store closes.
        let mut writes = Vec::new();
        for game in &mut games {
            let events = game.play(Color::White, "e2e4", 1_000).unwrap();
            let ops = ops_for(game, &events, 1_000);
            let store = store.clone();
            writes.push(tokio::spawn(async move { store.write(None, ops).await }));
        }
        tokio::task::yield_now().await;
        store.close().await;
        let mut committed = 0;
        for write in writes {
            match write.await.unwrap() {
                Ok(()) => committed += 1,
                Err(StoreError::WriterGone) => {}
                Err(e) => panic!("{e}"),
            }
        }
        let late = games[0].play(Color::Black, "e7e5", 2_000).unwrap();
        assert!(matches!(
            store.write(None, ops_for(&games[0], &late, 2_000)).await,
            Err(StoreError::WriterGone)
        ));
        drop(store);

        let log = dir.path().join("game.sqlite-wal");
        assert!(!log.exists(), "{} is left", log.display());
        assert_eq!(
            count(&path, "move_log"),
            0,
            "the log of moves is copied at the stop"
        );
        // What was answered as written is in the file: the moves of the
        // writes that succeeded, and nothing of the refused ones.
        let reopened = Store::open(&url).await.unwrap();
        let mut stored = 0;
        for game in &games {
            stored += reopened.load(game.id()).await.unwrap().unwrap().ply();
        }
        assert_eq!(stored, committed);
    }

    /// A store on a SQLite file in a directory of its own.
    async fn sqlite_store() -> (tempfile::TempDir, std::path::PathBuf, Store) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("game.sqlite");
        let store = Store::open(&chess_storage::sqlite_url(&path))
            .await
            .unwrap();
        (dir, path, store)
    }

    /// Rows of `table` in the SQLite file at `path`, read on a connection
    /// of its own.
    fn count(path: &std::path::Path, table: &str) -> i64 {
        let conn = rusqlite::Connection::open(path).unwrap();
        conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |row| {
            row.get(0)
        })
        .unwrap()
    }

    /// Moves of `game` from ply `from` to `to`, as the writer gets them (the
    /// writer does not check that they are legal).
    fn raw_moves(game: &str, plies: std::ops::RangeInclusive<i32>) -> Vec<WriteOp> {
        plies
            .map(|ply| {
                WriteOp::InsertMove(moves::Model {
                    game_id: game.to_owned(),
                    ply,
                    uci: "a2a3".to_owned(),
                    san: "a3".to_owned(),
                    submitted: "a2a3".to_owned(),
                    played_at: i64::from(ply),
                    clock_after_ms: None,
                })
            })
            .collect()
    }

    /// A move goes into the log of moves first; a read of its game finds
    /// it there all the same, by having it copied into `moves`.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_move_still_in_the_log_is_read_back() {
        let (_dir, path, store) = sqlite_store().await;
        let mut game = new_game("g");
        insert_games(&store, std::slice::from_ref(&game)).await;
        for (side, uci) in [(Color::White, "e2e4"), (Color::Black, "e7e5")] {
            let events = game.play(side, uci, 1_000).unwrap();
            store
                .write(None, ops_for(&game, &events, 1_000))
                .await
                .unwrap();
        }
        assert_eq!(count(&path, "move_log"), 2);
        assert_eq!(count(&path, "moves"), 0);
        let stored = store.load("g").await.unwrap().unwrap();
        assert_eq!(stored.ply(), 2);
        assert_eq!(stored.fen(), game.fen());
        assert_eq!(count(&path, "moves"), 2);
    }

    /// A game's moves leave the log for `moves` once it has a group of
    /// them, and the front of the log is deleted once copied.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn moves_are_copied_out_of_the_log_a_group_at_a_time() {
        let (_dir, path, store) = sqlite_store().await;
        let games: Vec<Game> = (0..4).map(|i| new_game(&format!("g{i}"))).collect();
        insert_games(&store, &games).await;
        let group = move_log::GROUP as i32;
        // Four games, two groups and a half each, a move of each in turn.
        let plies = 2 * group + group / 2;
        for ply in 1..=plies {
            for game in &games {
                store
                    .write(None, raw_moves(game.id(), ply..=ply))
                    .await
                    .unwrap();
            }
        }
        assert_eq!(count(&path, "moves"), i64::from(4 * 2 * group));
        // The rows copied before the oldest still waiting are deleted, a
        // page or so at a time.
        let waiting = i64::from(4 * (group / 2));
        let log = count(&path, "move_log");
        assert!(
            log >= waiting && log < waiting + 4 * i64::from(group) + 1_024,
            "{log} rows in the log"
        );
    }

    /// Once the log is emptied at once (as when a lone replica starts),
    /// SQLite numbers its rows from 1 again, and the writer's reckoning of
    /// which moves are old starts again with them: a game's new moves wait
    /// for their group rather than being copied one by one as if old.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_log_emptied_at_once_is_reckoned_afresh() {
        let (_dir, path, store) = sqlite_store().await;
        insert_games(&store, &[new_game("long"), new_game("new")]).await;
        let many = move_log::WINDOW as i32 + 1_000;
        store
            .write(None, raw_moves("long", 1..=many))
            .await
            .unwrap();
        store.fold_log(None).await.unwrap();
        assert_eq!(count(&path, "move_log"), 0);
        assert_eq!(count(&path, "moves"), i64::from(many));
        for ply in 1..=10 {
            store
                .write(None, raw_moves("new", ply..=ply))
                .await
                .unwrap();
        }
        assert_eq!(count(&path, "move_log"), 10);
        assert_eq!(count(&path, "moves"), i64::from(many));
    }

    /// The log keeps the rule of the key of `moves`: a ply stored once is
    /// refused again, whether it is still in the log or copied out, and
    /// the refusal changes nothing.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_ply_stored_once_is_refused_again() {
        let (_dir, path, store) = sqlite_store().await;
        insert_games(&store, &[new_game("g")]).await;
        store.write(None, raw_moves("g", 1..=3)).await.unwrap();
        // Still in the log.
        assert!(store.write(None, raw_moves("g", 3..=3)).await.is_err());
        assert!(store.write(None, raw_moves("g", 4..=5)).await.is_ok());
        assert!(store.write(None, raw_moves("g", 6..=6)).await.is_ok());
        assert!(store.write(None, raw_moves("g", 7..=7)).await.is_ok());
        assert!(store.write(None, raw_moves("g", 2..=2)).await.is_err());
        assert_eq!(count(&path, "move_log"), 7);
        // Copied out by a read of the game.
        store.fold_log(Some("g")).await.unwrap();
        assert_eq!(count(&path, "moves"), 7);
        assert!(store.write(None, raw_moves("g", 7..=7)).await.is_err());
        assert!(store.write(None, raw_moves("g", 8..=8)).await.is_ok());
        assert_eq!(count(&path, "move_log"), 8);
    }

    /// A crash leaves moves in the log, answered as durable but not yet in
    /// `moves`: opening the file copies them there before any game is read.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn moves_a_crash_leaves_in_the_log_are_kept() {
        let (dir, _, store) = sqlite_store().await;
        let mut games: Vec<Game> = (0..10).map(|i| new_game(&format!("g{i}"))).collect();
        insert_games(&store, &games).await;
        for (ply, uci) in ["d2d4", "d7d5", "c2c4"].iter().enumerate() {
            let side = if ply % 2 == 0 {
                Color::White
            } else {
                Color::Black
            };
            for game in &mut games {
                let events = game.play(side, uci, 1_000).unwrap();
                store
                    .write(None, ops_for(game, &events, 1_000))
                    .await
                    .unwrap();
            }
        }
        // The file as a crash would leave it now: the database and its log
        // as they are on disk, the store still open.
        let crashed = tempfile::tempdir().unwrap();
        let copy = crashed.path().join("game.sqlite");
        for suffix in ["", "-wal"] {
            std::fs::copy(
                dir.path().join(format!("game.sqlite{suffix}")),
                crashed.path().join(format!("game.sqlite{suffix}")),
            )
            .unwrap();
        }
        store.close().await;
        assert_eq!(count(&copy, "move_log"), 30);
        assert_eq!(count(&copy, "moves"), 0);

        let reopened = Store::open(&chess_storage::sqlite_url(&copy))
            .await
            .unwrap();
        assert_eq!(count(&copy, "move_log"), 0);
        assert_eq!(count(&copy, "moves"), 30);
        let active = reopened.load_active(None).await.unwrap();
        assert_eq!(active.len(), games.len());
        for game in &games {
            let stored = reopened.load(game.id()).await.unwrap().unwrap();
            assert_eq!(stored.ply(), 3);
            assert_eq!(stored.fen(), game.fen());
        }
    }
}
