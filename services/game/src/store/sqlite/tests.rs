//! The SQLite writer's log of moves, through the store: moves read back
//! while still in the log, copied out a group at a time, the key's rule kept,
//! and what a crash leaves there kept at the next open.

use chess_domain::{GameId, Timestamp};
use shakmaty::Color;

use super::{
    super::{
        Store, WriteOp, moves, ops_for,
        tests::{count, insert_games, new_game, sqlite_store},
    },
    move_log,
};
use crate::model::Game;

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

/// The side to make move `ply` (from 0).
fn side(ply: usize) -> Color {
    if ply.is_multiple_of(2) {
        Color::White
    } else {
        Color::Black
    }
}

/// A move goes into the log of moves first; a read of its game finds it
/// there all the same, by having it copied into `moves`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_still_in_the_log_is_read_back() {
    let (_dir, url, store) = sqlite_store().await;
    let mut game = new_game("g");
    insert_games(&store, std::slice::from_ref(&game)).await;
    for (ply, uci) in ["e2e4", "e7e5"].iter().enumerate() {
        let at = Timestamp::from_millis(1_000);
        let events = game.play(side(ply), uci, at).unwrap();
        store
            .write(None, ops_for(&game, &events, at))
            .await
            .unwrap();
    }
    assert_eq!(count(&url, "move_log").await, 2);
    assert_eq!(count(&url, "moves").await, 0);
    let stored = store.load(&GameId::trusted("g")).await.unwrap().unwrap();
    assert_eq!(stored.ply(), 2);
    assert_eq!(stored.fen(), game.fen());
    assert_eq!(count(&url, "moves").await, 2);
}

/// A game's moves leave the log for `moves` once it has a group of them,
/// and the front of the log is deleted once copied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moves_are_copied_out_of_the_log_a_group_at_a_time() {
    let (_dir, url, store) = sqlite_store().await;
    let games: Vec<Game> = (0..4).map(|i| new_game(&format!("g{i}"))).collect();
    insert_games(&store, &games).await;
    let group = move_log::GROUP as i32;
    // Four games, two groups and a half each, a move of each in turn.
    let plies = 2 * group + group / 2;
    for ply in 1..=plies {
        for game in &games {
            store
                .write(None, raw_moves(game.id().as_str(), ply..=ply))
                .await
                .unwrap();
        }
    }
    assert_eq!(count(&url, "moves").await, i64::from(4 * 2 * group));
    // The rows copied before the oldest still waiting are deleted, a page
    // or so at a time.
    let waiting = i64::from(4 * (group / 2));
    let log = count(&url, "move_log").await;
    assert!(
        log >= waiting && log < waiting + 4 * i64::from(group) + 1_024,
        "{log} rows in the log"
    );
}

/// Once the log is emptied at once (as when a lone replica starts), SQLite
/// numbers its rows from 1 again, and the writer's reckoning of which moves
/// are old starts again with them: a game's new moves wait for their group
/// rather than being copied one by one as if old.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_emptied_at_once_is_reckoned_afresh() {
    let (_dir, url, store) = sqlite_store().await;
    insert_games(&store, &[new_game("long"), new_game("new")]).await;
    let many = move_log::WINDOW as i32 + 1_000;
    store
        .write(None, raw_moves("long", 1..=many))
        .await
        .unwrap();
    store.fold_log(None).await.unwrap();
    assert_eq!(count(&url, "move_log").await, 0);
    assert_eq!(count(&url, "moves").await, i64::from(many));
    for ply in 1..=10 {
        store
            .write(None, raw_moves("new", ply..=ply))
            .await
            .unwrap();
    }
    assert_eq!(count(&url, "move_log").await, 10);
    assert_eq!(count(&url, "moves").await, i64::from(many));
}

/// The log keeps the rule of the key of `moves`: a ply stored once is
/// refused again, whether it is still in the log or copied out, and the
/// refusal changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ply_stored_once_is_refused_again() {
    let (_dir, url, store) = sqlite_store().await;
    insert_games(&store, &[new_game("g")]).await;
    store.write(None, raw_moves("g", 1..=3)).await.unwrap();
    // Still in the log.
    assert!(store.write(None, raw_moves("g", 3..=3)).await.is_err());
    assert!(store.write(None, raw_moves("g", 4..=5)).await.is_ok());
    assert!(store.write(None, raw_moves("g", 6..=6)).await.is_ok());
    assert!(store.write(None, raw_moves("g", 7..=7)).await.is_ok());
    assert!(store.write(None, raw_moves("g", 2..=2)).await.is_err());
    assert_eq!(count(&url, "move_log").await, 7);
    // Copied out by a read of the game.
    store.fold_log(Some(&GameId::trusted("g"))).await.unwrap();
    assert_eq!(count(&url, "moves").await, 7);
    assert!(store.write(None, raw_moves("g", 7..=7)).await.is_err());
    assert!(store.write(None, raw_moves("g", 8..=8)).await.is_ok());
    assert_eq!(count(&url, "move_log").await, 8);
}

/// A crash leaves moves in the log, answered as durable but not yet in
/// `moves`: opening the file copies them there before any game is read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moves_a_crash_leaves_in_the_log_are_kept() {
    let (dir, _, store) = sqlite_store().await;
    let mut games: Vec<Game> = (0..10).map(|i| new_game(&format!("g{i}"))).collect();
    insert_games(&store, &games).await;
    for (ply, uci) in ["d2d4", "d7d5", "c2c4"].iter().enumerate() {
        let at = Timestamp::from_millis(1_000);
        for game in &mut games {
            let events = game.play(side(ply), uci, at).unwrap();
            store.write(None, ops_for(game, &events, at)).await.unwrap();
        }
    }
    // The file as a crash would leave it now: the database and its log as
    // they are on disk, the store still open.
    let crashed = tempfile::tempdir().unwrap();
    for suffix in ["", "-wal"] {
        std::fs::copy(
            dir.path().join(format!("game.sqlite{suffix}")),
            crashed.path().join(format!("game.sqlite{suffix}")),
        )
        .unwrap();
    }
    store.close().await;
    let copy = chess_storage::sqlite_url(&crashed.path().join("game.sqlite"));
    assert_eq!(count(&copy, "move_log").await, 30);
    assert_eq!(count(&copy, "moves").await, 0);

    let reopened = Store::open(&copy).await.unwrap();
    assert_eq!(count(&copy, "move_log").await, 0);
    assert_eq!(count(&copy, "moves").await, 30);
    let active = reopened.load_active(None).await.unwrap();
    assert_eq!(active.len(), games.len());
    for game in &games {
        let stored = reopened.load(game.id()).await.unwrap().unwrap();
        assert_eq!(stored.ply(), 3);
        assert_eq!(stored.fen(), game.fen());
    }
}
