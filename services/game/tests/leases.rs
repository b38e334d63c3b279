//! Shard leases and fencing on a real PostgreSQL server: two replicas'
//! stores over one database, as two processes would have them.
//!
//! A replica whose lease ran out (it was paused, or cut off) and was taken
//! over can no longer write the shard's games — neither moves (one
//! statement that checks the lease itself) nor anything else (a
//! transaction that checks it first) — while the new owner can; a takeover
//! waits for a write of the old owner still under way; renewals tell a
//! replica which leases it lost.

use std::time::Duration;

use chess_domain::{GameId, RuleSet, TimeControl, Timestamp};
use chess_game::{
    model::{Game, GameSetup, Participant},
    shards::leases,
    store::{Fence, Store, StoreError, WriteOp, moves, new_game_row, ops_for},
};
use chess_shards::shard_of;
use sea_orm::{ConnectionTrait as _, DbBackend, Statement, TransactionTrait as _};
use shakmaty::Color;

const TTL_MS: i64 = 300;

#[path = "common/fixtures.rs"]
mod fixtures;
use fixtures::new_game;

/// Takes the free `shard` for `replica` for `ttl_ms`, and the fence its
/// writes then carry.
async fn hold(store: &Store, replica: &str, shard: u16, ttl_ms: i64) -> Fence {
    let taken = leases::take(store.connection(), replica, &[shard], ttl_ms, false)
        .await
        .unwrap();
    assert_eq!(taken.len(), 1, "{taken:?}");
    Fence {
        shard,
        epoch: taken[0].epoch,
    }
}

/// Stores `game` as new, under `fence`.
async fn insert(store: &Store, fence: Fence, game: &Game) {
    let row = new_game_row(game, None);
    store
        .write(Some(fence), vec![WriteOp::InsertGame(Box::new(row))])
        .await
        .unwrap();
}

/// `side` plays `uci` in `game` at `ms` after the epoch: the writes that
/// store the move.
fn played(game: &mut Game, side: Color, uci: &str, ms: i64) -> Vec<WriteOp> {
    let at = Timestamp::from_millis(ms);
    let events = game.play(side, uci, at).unwrap();
    ops_for(game, &events, at)
}

fn move_op(game_id: &GameId, ply: i32, uci: &str) -> WriteOp {
    WriteOp::InsertMove(moves::Model {
        game_id: game_id.to_string(),
        ply,
        uci: uci.to_owned(),
        san: uci.to_owned(),
        submitted: uci.to_owned(),
        played_at: 2_000,
        clock_after_ms: None,
    })
}

fn is_fenced(result: Result<(), StoreError>) -> bool {
    matches!(result, Err(StoreError::Fenced { .. }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deposed_replica_cannot_write_and_the_new_owner_can() {
    let url = chess_storage::testing::fresh_postgres_database().await;
    let a = Store::open_fenced(&url, "a").await.unwrap();
    let b = Store::open_fenced(&url, "b").await.unwrap();
    let mut game = new_game("fencedgame1");
    let shard = shard_of(game.id());

    // Held long enough for A's writes below however slow the disk.
    let fence_a = hold(&a, "a", shard, 60_000).await;
    insert(&a, fence_a, &game).await;
    let ops = played(&mut game, Color::White, "e4", 2_000);
    a.write(Some(fence_a), ops).await.unwrap();

    // While A's lease holds, B cannot take the shard.
    assert!(
        leases::take(b.connection(), "b", &[shard], TTL_MS, false)
            .await
            .unwrap()
            .is_empty()
    );
    // A renews one last time, for a short lease, and then stops (paused)
    // past it; B takes the shard over.
    let renewed = leases::renew(a.connection(), "a", &[(shard, fence_a.epoch)], TTL_MS)
        .await
        .unwrap();
    assert!(renewed.contains(&shard));
    tokio::time::sleep(Duration::from_millis(TTL_MS as u64 + 100)).await;
    let fence_b = hold(&b, "b", shard, TTL_MS).await;
    assert_eq!(fence_b.epoch, fence_a.epoch + 1);

    // A's late writes are refused: a move alone, and a change of the game.
    assert!(is_fenced(
        a.write(Some(fence_a), vec![move_op(game.id(), 2, "d7d5")])
            .await
    ));
    let mut stale = game.clone();
    let resigned = Timestamp::from_millis(3_000);
    let events = stale.resign(Color::Black, resigned).unwrap();
    let ops = ops_for(&stale, &events, resigned);
    assert!(is_fenced(a.write(Some(fence_a), ops).await));
    // And in a batch with writes of a shard A still holds, only the stale
    // one fails.
    let mut other = new_game("fencedgame2");
    let mut n = 2;
    while shard_of(other.id()) == shard {
        other = new_game(&format!("fencedgame{n}"));
        n += 1;
    }
    let other_shard = shard_of(other.id());
    let fence_other = hold(&a, "a", other_shard, 60_000).await;
    insert(&a, fence_other, &other).await;
    let ops = played(&mut other, Color::White, "d4", 2_000);
    let (good, bad) = tokio::join!(
        a.write(Some(fence_other), ops),
        a.write(Some(fence_a), vec![move_op(game.id(), 2, "c7c5")]),
    );
    good.unwrap();
    assert!(is_fenced(bad));

    // A learns it lost the shard when it renews; it keeps the other.
    let renewed = leases::renew(
        a.connection(),
        "a",
        &[(shard, fence_a.epoch), (other_shard, fence_other.epoch)],
        60_000,
    )
    .await
    .unwrap();
    assert_eq!(renewed, [other_shard].into_iter().collect());
    // A cannot give back what is no longer its own.
    assert!(
        !leases::release(a.connection(), "a", shard, fence_a.epoch)
            .await
            .unwrap()
    );

    // B, loading the game, sees everything A wrote before the takeover and
    // nothing after; its own moves go in.
    let mut loaded = b.load(game.id()).await.unwrap().unwrap();
    assert_eq!(loaded.uci_moves(), vec!["e2e4".to_owned()]);
    assert!(loaded.is_active());
    let ops = played(&mut loaded, Color::Black, "e5", 4_000);
    b.write(Some(fence_b), ops).await.unwrap();
    let stored = b.load(game.id()).await.unwrap().unwrap();
    assert_eq!(
        stored.uci_moves(),
        vec!["e2e4".to_owned(), "e7e5".to_owned()]
    );
}

/// A takeover waits for a write of the old owner that is under way (it
/// holds the lease row `FOR KEY SHARE`), so the new owner's load sees it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_takeover_waits_for_the_old_owners_write_under_way() {
    let url = chess_storage::testing::fresh_postgres_database().await;
    let a = Store::open_fenced(&url, "a").await.unwrap();
    let b = Store::open_fenced(&url, "b").await.unwrap();
    let shard = 7;
    let epoch = hold(&a, "a", shard, TTL_MS).await.epoch;
    // A write of A's, between its lease check and its commit.
    let txn = a.connection().begin().await.unwrap();
    let held = txn
        .query_all_raw(Statement::from_sql_and_values(
            DbBackend::Postgres,
            format!(
                "SELECT shard FROM game_shards WHERE owner = $1 AND shard = {shard} \
                 AND epoch = {epoch} FOR KEY SHARE"
            ),
            ["a".into()],
        ))
        .await
        .unwrap();
    assert_eq!(held.len(), 1);
    tokio::time::sleep(Duration::from_millis(TTL_MS as u64 + 100)).await;
    let takeover = tokio::spawn({
        let db = b.connection().clone();
        async move { leases::take(&db, "b", &[shard], TTL_MS, false).await }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !takeover.is_finished(),
        "the takeover did not wait for the write"
    );
    txn.commit().await.unwrap();
    let taken = takeover.await.unwrap().unwrap();
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].epoch, epoch + 1);
}

/// A lease given back is taken at once by another replica, under a new
/// epoch, and the time it was given back is what the taker learns as the
/// shard's last moment with an owner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_released_shard_is_taken_at_once() {
    let url = chess_storage::testing::fresh_postgres_database().await;
    let a = Store::open_fenced(&url, "a").await.unwrap();
    let b = Store::open_fenced(&url, "b").await.unwrap();
    let taken = leases::take(a.connection(), "a", &[3, 4], 60_000, false)
        .await
        .unwrap();
    assert_eq!(taken.len(), 2);
    let epoch = taken.iter().find(|t| t.shard == 3).unwrap().epoch;
    assert!(
        leases::release(a.connection(), "a", 3, epoch)
            .await
            .unwrap()
    );
    let snapshot = leases::read(b.connection(), 60_000).await.unwrap();
    let released = snapshot.leases.iter().find(|l| l.shard == 3).unwrap();
    assert_eq!(released.owner, None);
    let taken = leases::take(b.connection(), "b", &[3, 4], 60_000, false)
        .await
        .unwrap();
    assert_eq!(taken.len(), 1, "only the released shard: {taken:?}");
    assert_eq!(taken[0].shard, 3);
    assert_eq!(taken[0].epoch, epoch + 1);
    assert_eq!(taken[0].previous_renewal, released.renewed_at);
    // A restarted A takes back what its previous process held.
    let retaken = leases::take(a.connection(), "a", &[4], 60_000, true)
        .await
        .unwrap();
    assert_eq!(retaken.len(), 1);
}
