//! Many requests at once, a full queue, and callers that go away.

mod common;

use std::time::Duration;

use chess_proto::engine::v1::{self as pb, analyse_response::Update, best_move_request::Strength};
use common::*;
use tonic::{Code, Request};

const POSITIONS: [(&str, &[&str]); 6] = [
    ("", &[]),
    ("", &["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6"]),
    (
        "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
        &[],
    ),
    (
        "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
        &[],
    ),
    ("r3k2r/1P4P1/8/8/8/8/6p1/R3K2R b KQkq - 0 1", &[]),
    ("8/2k5/8/8/8/8/2K5/2R5 w - - 0 1", &["c2d3"]),
];

#[tokio::test]
async fn fifty_concurrent_mixed_requests_are_all_answered_correctly() {
    let service = Service::start(&["--pool-size", "2", "--queue-capacity", "64"]).await;
    let expected_lists: Vec<Vec<String>> = POSITIONS
        .iter()
        .map(|(fen, moves)| stockfish_perft(fen, moves))
        .collect();

    let mut calls = tokio::task::JoinSet::new();
    for i in 0..50usize {
        let mut client = service.client();
        let which = i % POSITIONS.len();
        let (fen, moves) = POSITIONS[which];
        let expected = expected_lists[which].clone();
        let game_id = format!("game-{}", i % 7);
        calls.spawn(async move {
            match i % 5 {
                0 | 1 => {
                    let strength = if i % 5 == 0 {
                        limits(40, 0)
                    } else {
                        Some(Strength::Level((i % 8) as u32 + 1))
                    };
                    let found = client
                        .best_move(pb::BestMoveRequest {
                            position: position(fen, moves),
                            strength,
                            game_id,
                        })
                        .await
                        .unwrap_or_else(|e| panic!("request {i}: {e}"))
                        .into_inner()
                        .result
                        .unwrap();
                    assert!(
                        is_legal(fen, moves, &found.best_move),
                        "request {i}: {} in {fen} {moves:?}",
                        found.best_move
                    );
                }
                2 | 3 => {
                    let listed = client
                        .list_moves(pb::ListMovesRequest {
                            position: position(fen, moves),
                        })
                        .await
                        .unwrap_or_else(|e| panic!("request {i}: {e}"))
                        .into_inner()
                        .moves;
                    assert_eq!(listed, expected, "request {i}");
                }
                _ => {
                    let mut stream = client
                        .analyse(analyse_request(fen, moves, (0, 6), 2, &game_id))
                        .await
                        .unwrap_or_else(|e| panic!("request {i}: {e}"))
                        .into_inner();
                    let mut result = None;
                    while let Some(message) = stream.message().await.unwrap() {
                        match message.update.unwrap() {
                            Update::Info(info) => {
                                assert!(is_legal(fen, moves, &info.pv[0]), "request {i}: {info:?}");
                                assert!(info.depth <= 6 + 1);
                            }
                            Update::Result(found) => result = Some(found),
                        }
                    }
                    let found = result.expect("a result");
                    assert!(is_legal(fen, moves, &found.best_move), "request {i}");
                }
            }
            i
        });
    }
    let mut answered = 0;
    while let Some(call) = calls.join_next().await {
        call.unwrap();
        answered += 1;
    }
    assert_eq!(answered, 50);
}

#[tokio::test]
async fn a_full_queue_refuses_requests() {
    // One process, two waiting places: of ten long searches at once, at most
    // three can be taken.
    let service = Service::start(&["--queue-capacity", "2"]).await;
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..10 {
        let mut client = service.client();
        calls.spawn(async move {
            let result = client
                .best_move(best_move_request("", &[], limits(1500, 0)))
                .await;
            code_of(&result)
        });
    }
    let mut codes = Vec::new();
    while let Some(code) = calls.join_next().await {
        codes.push(code.unwrap());
    }
    let exhausted = codes
        .iter()
        .filter(|c| **c == Code::ResourceExhausted)
        .count();
    let ok = codes.iter().filter(|c| **c == Code::Ok).count();
    assert_eq!(exhausted + ok, 10, "{codes:?}");
    assert!(exhausted >= 7, "{codes:?}");
    assert!(ok >= 1, "{codes:?}");
}

/// A request on the single process that must be served well before the
/// 30-second search it follows would have ended.
async fn prompt_request(service: &Service) {
    let mut request = Request::new(best_move_request("", &["d2d4"], limits(100, 0)));
    request.set_timeout(Duration::from_secs(10));
    let found = service
        .client()
        .best_move(request)
        .await
        .expect("the process was freed")
        .into_inner()
        .result
        .unwrap();
    assert!(is_legal("", &["d2d4"], &found.best_move));
}

#[tokio::test]
async fn a_deadline_stops_the_search_and_frees_the_process() {
    let service = Service::start(&[]).await;
    given_up_after(&service, Duration::from_millis(500)).await;
    prompt_request(&service).await;
}

/// Asks for a 30-second search and gives up after `patience`: the call
/// must end as a missed deadline (or a cancelled call).
async fn given_up_after(service: &Service, patience: Duration) {
    let mut request = Request::new(best_move_request("", &[], limits(30_000, 0)));
    request.set_timeout(patience);
    let result = service.client().best_move(request).await;
    assert!(
        matches!(code_of(&result), Code::DeadlineExceeded | Code::Cancelled),
        "{result:?}"
    );
}

/// A search of the start position at `strength`, called on a task of its
/// own, once the service's (first) Stockfish has spent `ticks` of CPU on
/// it.
async fn occupy(
    service: &Service,
    strength: Option<Strength>,
    ticks: u64,
) -> tokio::task::JoinHandle<Result<tonic::Response<pb::BestMoveResponse>, tonic::Status>> {
    let stockfish = service.stockfish_pids()[0];
    let before = cpu_ticks(stockfish);
    let mut client = service.client();
    let call =
        tokio::spawn(async move { client.best_move(best_move_request("", &[], strength)).await });
    wait_until_busy(stockfish, before, ticks).await;
    call
}

#[tokio::test]
async fn a_caller_that_drops_the_call_frees_the_process() {
    let service = Service::start(&[]).await;
    // No movetime: without cancellation this runs for a minute.
    let call = occupy(&service, limits(0, 50), 20).await;
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    prompt_request(&service).await;
}

#[tokio::test]
async fn a_dropped_analysis_frees_the_process() {
    let service = Service::start(&[]).await;
    let mut stream = service
        .client()
        .analyse(analyse_request("", &[], (30_000, 0), 1, ""))
        .await
        .unwrap()
        .into_inner();
    let first = stream.message().await.unwrap().unwrap();
    assert!(matches!(first.update, Some(Update::Info(_))));
    drop(stream);
    prompt_request(&service).await;
}

#[tokio::test]
async fn a_request_abandoned_in_the_queue_is_skipped() {
    let service = Service::start(&[]).await;
    // Occupies the process for 2 seconds.
    let busy = occupy(&service, limits(2000, 0), 10).await;
    // Waits behind it, and gives up first.
    given_up_after(&service, Duration::from_millis(300)).await;
    busy.await.unwrap().expect("the first search completes");
    // The abandoned 30-second search was never started.
    prompt_request(&service).await;
}
