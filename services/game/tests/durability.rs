//! Games survive `kill -9`: moves, clocks with their deadlines and draw
//! offers — on SQLite and on PostgreSQL. The time the service was down is
//! given back to the players to move (nobody could move meanwhile), and
//! their flags fall after the restart with nobody connected.

mod common;

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use chess_domain::Timestamp;
use chess_proto::{common::v1 as c, game::v1 as pb};
use common::*;

async fn survives_a_crash(url: String) {
    let service = GameService::start(&url).await;
    let mut client = service.client().await;

    let long = create(&mut client, "w", "b", incremental(600, 5))
        .await
        .game_id;
    for (p, m) in [("w", "e4"), ("b", "e5"), ("w", "Nf3")] {
        play(&mut client, &long, p, m).await.unwrap();
    }
    let offered = create(&mut client, "w", "b", untimed()).await.game_id;
    play(&mut client, &offered, "w", "c4").await.unwrap();
    client
        .offer_draw(pb::OfferDrawRequest::by("w", &offered))
        .await
        .unwrap();

    let with_hints = client
        .create_game(pb::CreateGameRequest {
            white: Some(guest("w")),
            black: Some(guest("b")),
            time_control: Some(untimed()),
            allow_hints: true,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .game
        .unwrap();
    assert!(with_hints.hints_allowed);
    // The last game, so that little of white's five seconds runs out
    // before the crash, however slow the writes before it.
    let short = create(&mut client, "w", "b", incremental(5, 0))
        .await
        .game_id;
    play(&mut client, &short, "w", "d4").await.unwrap();
    play(&mut client, &short, "b", "d5").await.unwrap();

    let before = get(&mut client, &long).await;
    service.crash().await;
    // Longer than white's five seconds in `short`: they are not charged.
    let down = Duration::from_millis(5500);
    tokio::time::sleep(down).await;

    let service = GameService::start(&url).await;
    let mut client = service.client().await;
    let after = get(&mut client, &long).await;
    assert_eq!(after.moves, before.moves);
    assert_eq!(after.fen, before.fen);
    assert_eq!(after.status, c::GameStatus::Active as i32);
    let (clock_before, clock_after) = (before.clock.unwrap(), after.clock.unwrap());
    assert_eq!(clock_after.running, c::Color::Black as i32);
    assert_eq!(clock_after.white, clock_before.white);
    let instant = |t: Option<prost_types::Timestamp>| Timestamp::from_proto(&t.unwrap()).unwrap();
    let moved_by = instant(clock_after.flag_at).millis_since(instant(clock_before.flag_at));
    assert!(
        moved_by >= down.as_millis() as i64,
        "black's deadline moved by {moved_by} ms, less than the {down:?} the service was down"
    );
    let black_before = clock_before.black.unwrap().remaining_ms;
    let black_after = clock_after.black.unwrap().remaining_ms;
    // Only the moments around the crash and the restart are charged (at
    // most a few seconds on a slow machine), not the time down.
    assert!(
        black_after > black_before - 3000,
        "the time the service was down was charged: {black_before} ms then {black_after} ms"
    );

    // White's five seconds were given back too; with nobody moving, the
    // flag falls after the restart.
    let short_after = get(&mut client, &short).await;
    assert_eq!(short_after.status, c::GameStatus::Active as i32);
    let timed_out = finished(&mut client, &short).await;
    assert_eq!(timed_out.status, c::GameStatus::Finished as i32);
    assert_eq!(timed_out.termination, c::Termination::Timeout as i32);
    assert_eq!(timed_out.result, c::GameResult::BlackWins as i32);

    let still_offered = get(&mut client, &offered).await;
    assert_eq!(still_offered.draw_offer, c::Color::White as i32);
    // Whether a game allows hints is stored with it.
    assert!(get(&mut client, &with_hints.game_id).await.hints_allowed);
    assert!(!get(&mut client, &long).await.hints_allowed);

    // Play goes on where it stopped.
    let r = play(&mut client, &long, "b", "Nc6").await.unwrap();
    assert_eq!(r.ply, 4);
    service.crash().await;
    let service = GameService::start(&url).await;
    let mut client = service.client().await;
    assert_eq!(get(&mut client, &long).await.moves.len(), 4);
}

common::on_each_backend!(survives_a_crash_on_sqlite, survives_a_crash_on_postgres => survives_a_crash);

/// Every acknowledged move is stored: the service is killed while twenty
/// games are moving, and afterwards each game holds every move that was
/// acknowledged (and at most the one that was in flight).
async fn acknowledged_moves_are_durable(url: String) {
    let service = GameService::start(&url).await;
    let mut client = service.client().await;
    let mut games = Vec::new();
    for i in 0..20 {
        games.push(
            create(&mut client, &format!("w{i}"), &format!("b{i}"), untimed())
                .await
                .game_id,
        );
    }
    let made = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for (i, id) in games.iter().enumerate() {
        let mut client = client.clone();
        let id = id.clone();
        let made = Arc::clone(&made);
        tasks.push(tokio::spawn(async move {
            let cycle = [("w", "Nf3"), ("b", "Nf6"), ("w", "Ng1"), ("b", "Ng8")];
            let mut acknowledged = 0;
            // Fewer than 100 half-moves, so the fifty-move rule never ends it.
            for (side, mv) in cycle.iter().cycle().take(96) {
                match play(&mut client, &id, &format!("{side}{i}"), mv).await {
                    Ok(_) => {
                        acknowledged += 1;
                        made.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(_) => break,
                }
            }
            acknowledged
        }));
    }
    // Killed in the middle of the games: once twenty moves are answered,
    // however long that takes.
    for _ in 0..600 {
        if made.load(Ordering::Relaxed) >= 20 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    service.crash().await;
    let mut acknowledged = Vec::new();
    for task in tasks {
        acknowledged.push(task.await.unwrap());
    }
    assert!(
        acknowledged.iter().any(|&n| n > 0),
        "some moves were made before the crash"
    );
    let service = GameService::start(&url).await;
    let mut client = service.client().await;
    for (id, acked) in games.iter().zip(acknowledged) {
        let stored = get(&mut client, id).await.moves.len();
        assert!(
            stored == acked || stored == acked + 1,
            "game {id}: {acked} acknowledged, {stored} stored"
        );
    }
}

common::on_each_backend!(acknowledged_moves_are_durable_on_sqlite, acknowledged_moves_are_durable_on_postgres => acknowledged_moves_are_durable);
