//! Best moves, analyses and move lists from the real service with real
//! Stockfish, and the requests it must refuse.

mod common;

use chess_proto::engine::v1::{self as pb, analyse_response::Update, best_move_request::Strength};
use common::*;
use shakmaty::{Position as _, uci::UciMove};
use tonic::Code;

const KIWIPETE: &str = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1";

#[tokio::test]
async fn best_moves_are_legal_and_mates_in_one_are_found() {
    let service = Service::start(&["--pool-size", "2"]).await;
    let mut client = service.client();

    // Any position: a legal move.
    for (fen, moves) in [
        ("", vec![]),
        ("", vec!["e2e4", "c7c5", "g1f3"]),
        (KIWIPETE, vec![]),
        (
            "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
            vec![],
        ),
        ("r3k2r/1P4P1/8/8/8/8/6p1/R3K2R b KQkq - 0 1", vec![]),
    ] {
        let found = best(&mut client, best_move_request(fen, &moves, limits(0, 8))).await;
        assert!(
            is_legal(fen, &moves, &found.best_move),
            "{found:?} in {fen} {moves:?}"
        );
        assert_eq!(found.pv.first(), Some(&found.best_move));
        assert!(found.depth >= 8 && found.nodes > 0, "{found:?}");
        if !found.ponder.is_empty() {
            assert_eq!(found.pv.get(1), Some(&found.ponder));
        }
    }

    // Mate in one: the move mates, and the score says so.
    for (fen, moves) in [
        (
            "r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4",
            vec![],
        ),
        ("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1", vec![]),
        ("k7/2P5/1K6/8/8/8/8/8 w - - 0 1", vec![]),
        ("6rk/6pp/8/6N1/8/8/8/7K w - - 0 1", vec![]),
        ("", vec!["f2f3", "e7e5", "g2g4"]),
    ] {
        let found = best(&mut client, best_move_request(fen, &moves, limits(300, 0))).await;
        let mut pos = chess(fen, &moves);
        let m = found
            .best_move
            .parse::<UciMove>()
            .unwrap()
            .to_move(&pos)
            .unwrap();
        pos.play_unchecked(m);
        assert!(
            pos.is_checkmate(),
            "{} does not mate in {fen} {moves:?}",
            found.best_move
        );
        assert_eq!(
            found.score.unwrap().value,
            Some(pb::score::Value::MateIn(1)),
            "{found:?}"
        );
    }
}

#[tokio::test]
async fn every_level_plays_a_legal_move() {
    let service = Service::start(&["--pool-size", "2"]).await;
    let moves = ["e2e4", "e7e5", "g1f3", "b8c6"];
    let mut calls = Vec::new();
    for level in 1..=8 {
        let mut client = service.client();
        calls.push(tokio::spawn(async move {
            let request = best_move_request("", &moves, Some(Strength::Level(level)));
            (level, client.best_move(request).await)
        }));
    }
    for call in calls {
        let (level, result) = call.await.unwrap();
        let found = result.unwrap().into_inner().result.unwrap();
        assert!(
            is_legal("", &moves, &found.best_move),
            "level {level}: {found:?}"
        );
        // Every level is depth-limited.
        assert!(found.depth <= 22, "level {level}: {found:?}");
    }
}

#[tokio::test]
async fn analysis_streams_progress_then_the_result() {
    let service = Service::start(&[]).await;
    let mut client = service.client();
    let mut stream = client
        .analyse(analyse_request(KIWIPETE, &[], (0, 8), 3, "analysis"))
        .await
        .unwrap()
        .into_inner();
    let mut infos = Vec::new();
    let mut result = None;
    while let Some(message) = stream.message().await.unwrap() {
        assert!(result.is_none(), "a message after the result");
        match message.update.unwrap() {
            Update::Info(info) => infos.push(info),
            Update::Result(found) => result = Some(found),
        }
    }
    let result = result.expect("the stream ends with the result");
    assert!(is_legal(KIWIPETE, &[], &result.best_move));
    let lines: std::collections::BTreeSet<u32> = infos.iter().map(|i| i.multipv).collect();
    assert_eq!(lines, [1, 2, 3].into());
    let depths: Vec<u32> = infos
        .iter()
        .filter(|i| i.multipv == 1)
        .map(|i| i.depth)
        .collect();
    assert!(depths.windows(2).all(|w| w[0] <= w[1]), "{depths:?}");
    assert_eq!(depths.last(), Some(&8));
    for info in &infos {
        assert!(info.score.is_some() && !info.pv.is_empty(), "{info:?}");
        assert!(is_legal(KIWIPETE, &[], &info.pv[0]), "{info:?}");
    }
    // The three lines of the deepest iteration start with different moves.
    let last: std::collections::HashSet<&String> = infos
        .iter()
        .filter(|i| i.depth == 8)
        .map(|i| &i.pv[0])
        .collect();
    assert_eq!(last.len(), 3, "{infos:?}");
}

#[tokio::test]
async fn move_lists_match_stockfishs_own_perft_order() {
    let service = Service::start(&[]).await;
    let mut client = service.client();
    let cases: Vec<(&str, Vec<&str>)> = vec![
        ("", vec![]),
        // Castling both ways, many captures.
        (KIWIPETE, vec![]),
        // En passant, given in the FEN and reached by moves.
        (
            "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
            vec![],
        ),
        ("", vec!["e2e4", "a7a6", "e4e5", "d7d5"]),
        // Promotions with and without capture, castling through an attack.
        ("r3k2r/1P4P1/8/8/8/8/6p1/R3K2R w KQkq - 0 1", vec![]),
        ("r3k2r/1P4P1/8/8/8/8/6p1/R3K2R b KQkq - 0 1", vec![]),
        // Castling reached by moves; a check to answer.
        ("", vec!["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6"]),
        (
            "rnbqkbnr/ppp2ppp/8/1B1pp3/4P3/8/PPPP1PPP/RNBQK1NR b KQkq - 1 3",
            vec![],
        ),
        // A promotion written in upper case, then a reply.
        ("4k3/1P6/8/8/8/8/8/4K3 w - - 0 1", vec!["b7b8Q", "e8e7"]),
    ];
    for (fen, moves) in cases {
        let listed = client
            .list_moves(pb::ListMovesRequest {
                position: position(fen, &moves),
            })
            .await
            .unwrap()
            .into_inner()
            .moves;
        let lowered: Vec<String> = moves.iter().map(|m| m.to_lowercase()).collect();
        let lowered: Vec<&str> = lowered.iter().map(String::as_str).collect();
        let expected = stockfish_perft(fen, &lowered);
        assert!(!expected.is_empty());
        assert_eq!(listed, expected, "{fen} {moves:?}");
    }

    // No legal move: an empty list, as Stockfish's own.
    let mated = ["f2f3", "e7e5", "g2g4", "d8h4"];
    assert!(stockfish_perft("", &mated).is_empty());
    let listed = client
        .list_moves(pb::ListMovesRequest {
            position: position("", &mated),
        })
        .await
        .unwrap()
        .into_inner()
        .moves;
    assert!(listed.is_empty());
}

#[tokio::test]
async fn positions_without_a_legal_move_cannot_be_searched() {
    let service = Service::start(&[]).await;
    let mut client = service.client();
    let mated = ["f2f3", "e7e5", "g2g4", "d8h4"];
    let stalemate = "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1";
    for (fen, moves) in [("", &mated[..]), (stalemate, &[][..])] {
        let result = client
            .best_move(best_move_request(fen, moves, limits(100, 0)))
            .await;
        assert_eq!(code_of(&result), Code::FailedPrecondition);
        let result = client
            .analyse(analyse_request(fen, moves, (100, 0), 1, ""))
            .await;
        assert_eq!(code_of(&result), Code::FailedPrecondition);
    }
}

#[tokio::test]
async fn bad_requests_are_invalid_arguments() {
    let service = Service::start(&[]).await;
    let mut client = service.client();
    let bad_best_moves = [
        best_move_request("nonsense", &[], limits(100, 0)),
        // The side not to move is in check: Stockfish could crash on it.
        best_move_request("4k3/8/8/8/8/8/4R3/4K3 w - - 0 1", &[], limits(100, 0)),
        // No kings.
        best_move_request("8/8/8/8/8/8/8/8 w - - 0 1", &[], limits(100, 0)),
        best_move_request("", &["e2e4", "e7e5", "e4e5"], limits(100, 0)),
        best_move_request("", &["e2"], limits(100, 0)),
        best_move_request("", &[], limits(60_001, 0)),
        best_move_request("", &[], limits(0, 51)),
        best_move_request("", &[], limits(0, 0)),
        best_move_request("", &[], None),
        best_move_request("", &[], Some(Strength::Level(0))),
        best_move_request("", &[], Some(Strength::Level(9))),
    ];
    for request in bad_best_moves {
        let result = client.best_move(request.clone()).await;
        assert_eq!(code_of(&result), Code::InvalidArgument, "{request:?}");
    }
    let illegal = client
        .best_move(best_move_request("", &["e2e5"], limits(100, 0)))
        .await
        .unwrap_err();
    assert_eq!(
        illegal.metadata().get("chess-reason").unwrap(),
        "illegal-move"
    );

    let analyse = |multipv, limits| pb::AnalyseRequest {
        position: position("", &[]),
        limits,
        multipv,
        game_id: String::new(),
    };
    for request in [
        analyse(
            6,
            Some(pb::SearchLimits {
                movetime_ms: 100,
                depth: 0,
            }),
        ),
        analyse(1, None),
        analyse(
            1,
            Some(pb::SearchLimits {
                movetime_ms: 0,
                depth: 99,
            }),
        ),
    ] {
        let result = client.analyse(request.clone()).await;
        assert_eq!(code_of(&result), Code::InvalidArgument, "{request:?}");
    }
    let result = client
        .list_moves(pb::ListMovesRequest {
            position: position("", &["e2e4", "e2e4"]),
        })
        .await;
    assert_eq!(code_of(&result), Code::InvalidArgument);

    // The service is still fine.
    let found = client
        .best_move(best_move_request("", &[], limits(50, 0)))
        .await
        .unwrap();
    assert!(is_legal(
        "",
        &[],
        &found.into_inner().result.unwrap().best_move
    ));
}

/// The best move and node count of a fresh Stockfish at `depth`.
fn reference_search(moves: &[&str], depth: u32) -> (String, u64) {
    let lines = stockfish_directly(
        &[
            "ucinewgame".to_owned(),
            position_command("", moves),
            format!("go depth {depth}"),
        ],
        |line| line.starts_with("bestmove"),
    );
    let nodes = lines
        .iter()
        .rev()
        .filter(|l| l.starts_with("info") && l.contains(" pv "))
        .find_map(|l| {
            let mut words = l.split_whitespace();
            words.find(|w| *w == "nodes")?;
            words.next()?.parse::<u64>().ok()
        })
        .unwrap();
    let best = lines.last().unwrap().split_whitespace().nth(1).unwrap();
    (best.to_owned(), nodes)
}

#[tokio::test]
async fn full_strength_after_a_weak_level_and_a_fresh_hash_per_game() {
    // Stockfish is deterministic at a fixed depth with one thread and a
    // cleared hash, so a search after `ucinewgame` at full strength must
    // match a fresh Stockfish's node for node.
    let moves = ["e2e4", "c7c5", "g1f3", "d7d6"];
    let (reference_best, reference_nodes) = reference_search(&moves, 12);

    let service = Service::start(&["--threads", "1", "--hash-mb", "16"]).await;
    let mut client = service.client();
    let search = |game_id: &str, strength| pb::BestMoveRequest {
        position: position("", &moves),
        strength,
        game_id: game_id.to_owned(),
    };
    // A weak search first, leaving Skill Level and MultiPV lowered…
    client
        .best_move(search("weak", Some(Strength::Level(1))))
        .await
        .unwrap();
    // …then full strength in another game.
    let strong = best(&mut client, search("strong", limits(0, 12))).await;
    assert_eq!(
        (strong.best_move.as_str(), strong.nodes),
        (reference_best.as_str(), reference_nodes)
    );

    // No game after a game: a fresh hash again.
    let none = best(&mut client, search("", limits(0, 12))).await;
    assert_eq!(none.nodes, reference_nodes);

    // The same (no) game again keeps the hash, which shows in the count: so
    // the equalities above do measure the fresh hash.
    let warm = best(&mut client, search("", limits(0, 12))).await;
    assert_ne!(warm.nodes, reference_nodes);
}
