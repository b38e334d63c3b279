//! The store on both back ends: migrations of older tables, concurrent
//! writes and their failures, and closing. The SQLite writer's log of moves
//! has its own tests (`sqlite::tests`), which use the helpers here.

use chess_domain::{RuleSet, SpeedCategory, TimeControl, Timestamp};
use sea_orm::{ConnectionTrait as _, EntityTrait as _, sea_query::Query};
use shakmaty::Color;

use super::*;
use crate::model::{Game, GameSetup, Participant};

#[path = "../../tests/common/fixtures.rs"]
mod fixtures;
pub(super) use fixtures::new_game;

/// A store on a fresh SQLite file, with the file's directory and URL.
pub(super) async fn sqlite_store() -> (tempfile::TempDir, String, Store) {
    let dir = tempfile::tempdir().unwrap();
    let url = chess_storage::sqlite_url(&dir.path().join("game.sqlite"));
    let store = Store::open(&url).await.unwrap();
    (dir, url, store)
}

/// Stores `games` as new, each in a write of its own.
pub(super) async fn insert_games(store: &Store, games: &[Game]) {
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
    let db = chess_storage::connect(&url, 1).await.unwrap();
    migration::Migrator::up(&db, Some(1)).await.unwrap();
    let old_row = |id: &str, black_kind: &str, tc: &str, speed: &str, rules: &str, status: &str| {
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
    let done = store.load(&GameId::trusted("done")).await.unwrap();
    assert!(done.unwrap().rated());
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

/// Moves written into SQLite by many concurrent callers are all
/// stored, and a caller whose move cannot be stored fails alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_moves_on_sqlite_are_kept_and_a_bad_one_fails_alone() {
    let (_dir, url, store) = sqlite_store().await;
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
            let events = game.play(side, uci, Timestamp::from_millis(1_000)).unwrap();
            let ops = ops_for(game, &events, Timestamp::from_millis(1_000));
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

/// A game's end (its row, its result to report) is written whole, and
/// an update of a game that does not exist fails alone, changing
/// nothing, when it shares a batch with good writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_games_end_is_written_whole_and_an_update_of_no_game_fails_alone() {
    let (_dir, url, store) = sqlite_store().await;
    // Between registered players, so that each end has a result to
    // report.
    let registered = |id: &str| Participant::Registered {
        id: chess_domain::PlayerId::trusted(id),
        username: chess_domain::Username::trusted(id),
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
            Game::new(
                chess_domain::GameId::trusted(format!("g{i}")),
                setup,
                Timestamp::EPOCH,
            )
            .unwrap()
        })
        .collect();
    insert_games(&store, &games).await;
    let mut writes = Vec::new();
    for game in &mut games {
        let events = game
            .resign(Color::Black, Timestamp::from_millis(5_000))
            .unwrap();
        let ops = ops_for(game, &events, Timestamp::from_millis(5_000));
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
    let ghost = reopened.load(&GameId::trusted("ghost")).await.unwrap();
    assert!(ghost.is_none());
    let mut reported: Vec<String> = reopened
        .pending_results()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.game_id.into())
        .collect();
    reported.sort_unstable();
    let mut ids: Vec<String> = games.iter().map(|g| g.id().to_string()).collect();
    ids.sort_unstable();
    assert_eq!(reported, ids);
}

/// Closing commits the writes already queued, refuses later ones, and
/// leaves the SQLite file without its write-ahead log, every move in the
/// file rather than in the log of moves.
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
        let events = game
            .play(Color::White, "e2e4", Timestamp::from_millis(1_000))
            .unwrap();
        let ops = ops_for(game, &events, Timestamp::from_millis(1_000));
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
    let late = games[0]
        .play(Color::Black, "e7e5", Timestamp::from_millis(2_000))
        .unwrap();
    assert!(matches!(
        store
            .write(
                None,
                ops_for(&games[0], &late, Timestamp::from_millis(2_000))
            )
            .await,
        Err(StoreError::WriterGone)
    ));
    drop(store);

    let log = dir.path().join("game.sqlite-wal");
    assert!(!log.exists(), "{} is left", log.display());
    assert_eq!(
        count(&url, "move_log").await,
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

/// Rows of `table` in the database at `url`, read on a connection of its
/// own.
pub(super) async fn count(url: &str, table: &str) -> i64 {
    let db = chess_storage::connect(url, 1).await.unwrap();
    let row = db
        .query_one_raw(sea_orm::Statement::from_string(
            db.get_database_backend(),
            format!("SELECT count(*) AS n FROM {table}"),
        ))
        .await
        .unwrap()
        .unwrap();
    let n = row.try_get("", "n").unwrap();
    chess_storage::close(&db).await;
    n
}

/// A takeback is stored: the plies taken back leave `moves` (and the
/// SQLite log of moves), and the clocks it set replay, so the game read
/// back, alone or among the games in play, is the one in memory, also
/// after more moves and a second takeback to an earlier ply.
async fn a_takeback_replays_after_a_reload(url: String) {
    let store = Store::open(&url).await.unwrap();
    let mut game = Game::new(
        chess_domain::GameId::trusted("tb"),
        GameSetup {
            time_control: TimeControl::Incremental {
                initial_secs: 60,
                increment_secs: 2,
            },
            white: fixtures::guest("w"),
            black: fixtures::guest("b"),
            rules: RuleSet::Standard,
            rated: false,
            allow_hints: false,
            initial_fen: None,
        },
        Timestamp::EPOCH,
    )
    .unwrap();
    insert_games(&store, std::slice::from_ref(&game)).await;
    let at = Timestamp::from_millis;
    let write = async |game: &Game, events: Vec<crate::model::Event>, now: Timestamp| {
        store
            .write(None, ops_for(game, &events, now))
            .await
            .unwrap();
    };
    let line = ["e4", "e5", "Nf3", "Nc6", "Bb5", "a6"];
    for (i, san) in line.iter().enumerate() {
        let now = at(1_000 * (i as i64 + 1));
        let events = game.play(game.turn(), san, now).unwrap();
        write(&game, events, now).await;
    }
    // White takes back Bb5 and black's reply.
    let events = game
        .propose_takeback(Color::White, false, at(8_000))
        .unwrap();
    write(&game, events, at(8_000)).await;
    let events = game.accept_takeback(Color::Black, at(9_000)).unwrap();
    write(&game, events, at(9_000)).await;
    assert_eq!(game.ply(), 4);
    for (i, san) in ["Bc4", "Nf6", "d3"].iter().enumerate() {
        let now = at(10_000 + 1_000 * i as i64);
        let events = game.play(game.turn(), san, now).unwrap();
        write(&game, events, now).await;
    }
    let reread = |stored: &Game, game: &Game| {
        assert_eq!(stored.fen(), game.fen());
        assert_eq!(stored.moves(), game.moves());
        assert_eq!(stored.clock(at(20_000)), game.clock(at(20_000)));
        assert_eq!(stored.rewinds(), game.rewinds());
    };
    reread(&store.load(game.id()).await.unwrap().unwrap(), &game);
    // Black takes back Nf6 and d3: back before the first takeback's ply
    // is not reached, so both takebacks stay.
    let events = game
        .propose_takeback(Color::Black, false, at(14_000))
        .unwrap();
    write(&game, events, at(14_000)).await;
    let events = game.accept_takeback(Color::White, at(15_000)).unwrap();
    write(&game, events, at(15_000)).await;
    assert_eq!((game.ply(), game.rewinds().len()), (5, 2));
    store.close().await;
    let reopened = Store::open(&url).await.unwrap();
    reread(&reopened.load(game.id()).await.unwrap().unwrap(), &game);
    let active = reopened.load_active(None).await.unwrap();
    reread(&active[0], &game);
    reopened.close().await;
}

#[tokio::test]
async fn a_takeback_replays_after_a_reload_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    a_takeback_replays_after_a_reload(chess_storage::sqlite_url(&dir.path().join("game.sqlite")))
        .await;
}

#[tokio::test]
async fn a_takeback_replays_after_a_reload_on_postgres() {
    a_takeback_replays_after_a_reload(chess_storage::testing::fresh_postgres_database().await)
        .await;
}
