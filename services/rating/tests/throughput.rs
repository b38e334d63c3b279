//! Throughput figures for docs/performance.md, not assertions: ignored by default.
//!
//! `cargo test -p chess-rating --release --test throughput -- --ignored --nocapture --test-threads 1`

mod common;

use std::time::Instant;

use chess_proto::common::v1::GameResult;
use common::{Database, RatingService, from_game, game, register};
use futures::{StreamExt as _, stream};

const PLAYERS: usize = 20;
const GAMES: usize = 2000;
const CONCURRENCY: usize = 32;

async fn measure(label: &str, url: &str) {
    let service = RatingService::start(url).await;
    let mut client = service.client().await;

    let started = Instant::now();
    let mut players = Vec::new();
    for i in 0..PLAYERS {
        players.push(register(&mut client, &format!("bench{i}")).await);
    }
    let per_registration = started.elapsed() / PLAYERS as u32;

    let started = Instant::now();
    let recorded = stream::iter(0..GAMES)
        .map(|i| {
            let mut client = client.clone();
            let white = &players[i % PLAYERS];
            let black = &players[(i * 7 + 1 + i / PLAYERS) % PLAYERS];
            let black = if black == white {
                &players[(i + 1) % PLAYERS]
            } else {
                black
            };
            let request = game(
                &format!("bench-{i}"),
                white,
                black,
                [
                    GameResult::WhiteWins,
                    GameResult::BlackWins,
                    GameResult::Draw,
                ][i % 3],
            );
            async move { client.record_result(from_game(request)).await }
        })
        .buffer_unordered(CONCURRENCY)
        .filter(|r| std::future::ready(r.is_ok()))
        .count()
        .await;
    let elapsed = started.elapsed();
    assert_eq!(recorded, GAMES);

    let started = Instant::now();
    for i in 0..200 {
        let repeat = game(
            &format!("bench-{i}"),
            &players[0],
            &players[1],
            GameResult::Draw,
        );
        assert!(
            !client
                .record_result(from_game(repeat))
                .await
                .unwrap()
                .into_inner()
                .first_time
        );
    }
    let per_repeat = started.elapsed() / 200;

    println!(
        "{label}: {GAMES} results among {PLAYERS} players, {CONCURRENCY} in flight: \
         {:.2} s, {:.0} results/s; sequential repeat {:.2} ms; registration (Argon2id) {:.0} ms",
        elapsed.as_secs_f64(),
        GAMES as f64 / elapsed.as_secs_f64(),
        per_repeat.as_secs_f64() * 1000.0,
        per_registration.as_secs_f64() * 1000.0,
    );
    service.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement for docs/performance.md"]
async fn record_result_throughput() {
    let sqlite = Database::sqlite();
    measure("sqlite", &sqlite.url).await;
    let postgres = Database::postgres().await;
    measure("postgres", &postgres.url).await;
}
