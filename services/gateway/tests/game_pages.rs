//! The game pages on the public port, fetched over plain HTTP/1.1 from a real
//! TCP socket while gRPC and gRPC-Web keep answering on the same port.

mod common;

use chess_proto::{
    common::v1 as wire,
    gateway::v1::{self as pb},
};
use common::{System, User, blitz, http};
use prost::Message as _;

/// Alice (white) and Bob play the fool's mate in a rated blitz game.
async fn fools_mate(system: &System, alice: &User, bob: &User) -> String {
    let game_id = system
        .challenge_and_accept(alice, bob, wire::ColorChoice::White, blitz())
        .await;
    for (player, mv) in [(alice, "f3"), (bob, "e5"), (alice, "g4"), (bob, "Qh4")] {
        system
            .make_move(player, &game_id, mv)
            .await
            .unwrap_or_else(|e| panic!("{mv}: {e}"));
    }
    game_id
}

/// A gRPC-Web call over HTTP/1.1: one length-prefixed message in, the
/// response message and the trailers frame out.
async fn grpc_web_get_game(addr: &str, game_id: &str) -> (pb::GetGameResponse, String) {
    let message = pb::GetGameRequest {
        game_id: game_id.to_owned(),
    }
    .encode_to_vec();
    let mut frame = vec![0u8];
    frame.extend_from_slice(&u32::try_from(message.len()).unwrap().to_be_bytes());
    frame.extend_from_slice(&message);
    let answer = http(
        addr,
        "POST",
        "/chess.gateway.v1.PlayService/GetGame",
        &[
            ("Content-Type", "application/grpc-web+proto"),
            ("X-Grpc-Web", "1"),
        ],
        &frame,
    )
    .await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(
        answer.header("content-type"),
        Some("application/grpc-web+proto")
    );
    let mut body = answer.body.as_slice();
    let mut response = None;
    let mut trailers = String::new();
    while body.len() >= 5 {
        let flag = body[0];
        let length = u32::from_be_bytes(body[1..5].try_into().unwrap()) as usize;
        let payload = &body[5..5 + length];
        if flag & 0x80 == 0 {
            response = Some(pb::GetGameResponse::decode(payload).expect("a GetGameResponse"));
        } else {
            trailers = String::from_utf8_lossy(payload).into_owned();
        }
        body = &body[5 + length..];
    }
    (response.expect("a response message"), trailers)
}

#[tokio::test]
async fn a_game_is_a_page_and_a_pgn_beside_grpc_and_grpc_web() {
    let system = System::start(&[]).await;
    let addr = system.gateway.addr.clone();
    let alice = system.sign_up("alice").await;
    let bob = system.sign_up("bob").await;
    let game_id = fools_mate(&system, &alice, &bob).await;

    let page = http(&addr, "GET", &format!("/games/{game_id}"), &[], b"").await;
    assert_eq!(page.status, 200, "{}", page.text());
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(page.header("cache-control"), Some("no-store"));
    let html = page.text();
    assert!(html.starts_with("<!DOCTYPE html>"), "{html}");
    assert!(html.contains("<h1>alice vs bob</h1>"), "{html}");
    assert!(html.contains("Blitz · 5+0 · rated"), "{html}");
    assert!(html.contains("0-1 · Black wins by checkmate."), "{html}");
    assert!(html.contains("<li>f3 e5</li>\n<li>g4 Qh4#</li>"), "{html}");
    // Both players' blitz ratings are known.
    assert!(html.contains("White: <b>alice</b> (1"), "{html}");
    assert!(html.contains("Black: <b>bob</b> (1"), "{html}");
    assert!(html.contains("title=\"h4: black queen\""), "{html}");
    assert_eq!(html.matches("<td").count(), 64, "{html}");
    assert!(
        html.contains(&format!("<a href=\"{game_id}.pgn\" download>")),
        "{html}"
    );

    let head = http(&addr, "HEAD", &format!("/games/{game_id}"), &[], b"").await;
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty());

    let pgn = http(&addr, "GET", &format!("/games/{game_id}.pgn"), &[], b"").await;
    assert_eq!(pgn.status, 200, "{}", pgn.text());
    assert_eq!(
        pgn.header("content-type"),
        Some("application/x-chess-pgn; charset=utf-8")
    );
    assert_eq!(
        pgn.header("content-disposition"),
        Some(format!("attachment; filename=\"rookery-{game_id}.pgn\"").as_str())
    );
    let text = pgn.text();
    assert!(text.contains("[Result \"0-1\"]"), "{text}");
    assert!(
        text.contains("[White \"alice\"]\n[Black \"bob\"]"),
        "{text}"
    );
    assert!(text.contains("2... Qh4#"), "{text}");

    let unknown = http(&addr, "GET", "/games/nosuchgame12", &[], b"").await;
    assert_eq!(unknown.status, 404);
    assert_eq!(
        unknown.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert!(
        unknown.text().contains("There is no game nosuchgame12."),
        "{}",
        unknown.text()
    );
    let unknown_pgn = http(&addr, "GET", "/games/nosuchgame12.pgn", &[], b"").await;
    assert_eq!(unknown_pgn.status, 404);
    let malformed = http(&addr, "GET", "/games/%3Cscript%3E", &[], b"").await;
    assert_eq!(malformed.status, 404);
    assert!(
        malformed
            .text()
            .contains("This address does not name a game."),
        "{}",
        malformed.text()
    );
    // The address is not written back into the page in any form.
    assert!(
        !malformed.text().contains("<script>") && !malformed.text().contains("%3Cscript"),
        "{}",
        malformed.text()
    );
    for path in [
        "/games",
        "/index.html",
        "/chess.gateway.v1.PlayService/GetGame",
    ] {
        let other = http(&addr, "GET", path, &[], b"").await;
        assert_eq!(other.status, 404, "{path}");
    }
    let post = http(
        &addr,
        "POST",
        &format!("/games/{game_id}"),
        &[("Content-Type", "text/plain")],
        b"x",
    )
    .await;
    assert_eq!(post.status, 405);
    assert_eq!(post.header("allow"), Some("GET, HEAD"));

    // The same port still speaks gRPC-Web over HTTP/1.1 …
    let (web, trailers) = grpc_web_get_game(&addr, &game_id).await;
    let state = web.game.expect("a game");
    assert_eq!(state.game_id, game_id);
    assert_eq!(state.moves.len(), 4);
    assert!(trailers.contains("grpc-status:0"), "{trailers:?}");
    // … and gRPC over HTTP/2.
    let game = system.game(&game_id).await;
    assert_eq!(game.moves.last().unwrap().san, "Qh4#");
}
