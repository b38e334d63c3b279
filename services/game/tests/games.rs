//! The game service over gRPC: playing, endings, errors, listing (watching
//! is in `watching.rs`).

mod common;

use chess_proto::{common::v1 as c, game::v1 as pb};
use chess_runtime::Reason;
use common::*;
use tokio_stream::StreamExt as _;
use tonic::Code;

fn reason(status: &tonic::Status) -> Option<Reason> {
    Reason::of(status)
}

/// The answer of a call that must succeed.
async fn ok<T>(call: impl Future<Output = Result<tonic::Response<T>, tonic::Status>>) -> T {
    call.await.unwrap().into_inner()
}

/// How the game of an answer ended (it must have).
fn termination(ended: Option<c::GameEnded>) -> c::Termination {
    c::Termination::try_from(ended.expect("the game ended").termination).unwrap()
}

/// The refusal of a call that must fail.
async fn refused<T: std::fmt::Debug>(
    call: impl Future<Output = Result<tonic::Response<T>, tonic::Status>>,
) -> tonic::Status {
    call.await.unwrap_err()
}

#[tokio::test]
async fn fools_mate_with_watchers_board_and_pgn() {
    let (_dir, _service, mut client) = on_sqlite().await;
    let game = create(&mut client, "w", "b", untimed()).await;
    assert_eq!(game.status, c::GameStatus::Active as i32);
    assert_eq!(game.turn, c::Color::White as i32);

    let mut watch = ok(client.watch_game(pb::WatchGameRequest {
        from_chat_revision: None,
        chat_rooms: Vec::new(),
        game_id: game.game_id.clone(),
        from_ply: None,
        without_moves_of: None,
        watcher_id: String::new(),
    }))
    .await;
    let first = watch.next().await.unwrap().unwrap().event.unwrap();
    assert!(matches!(first.kind, Some(c::game_event::Kind::Snapshot(_))));

    let r = play(&mut client, &game.game_id, "w", "f2f3").await.unwrap();
    assert_eq!(r.ply, 1);
    assert_eq!(
        r.move_made.as_ref().unwrap().r#move.as_ref().unwrap().san,
        "f3"
    );
    play(&mut client, &game.game_id, "b", "e5").await.unwrap();
    play(&mut client, &game.game_id, "w", "g4").await.unwrap();
    let mate = play(&mut client, &game.game_id, "b", "d8h4").await.unwrap();
    let ended = mate.game_ended.expect("mate ends the game");
    assert_eq!(ended.termination, c::Termination::Checkmate as i32);
    assert_eq!(ended.winner, c::Color::Black as i32);
    assert_eq!(mate.move_made.unwrap().r#move.unwrap().san, "Qh4#");

    let mut plies = Vec::new();
    while let Some(event) = watch.next().await {
        let event = event.unwrap().event.unwrap();
        match event.kind {
            Some(c::game_event::Kind::MoveMade(m)) => {
                plies.push((event.ply, m.r#move.unwrap().uci))
            }
            Some(c::game_event::Kind::GameEnded(e)) => {
                assert_eq!(e.result, c::GameResult::BlackWins as i32);
                break;
            }
            // Another watcher of the game coming or going.
            Some(c::game_event::Kind::SpectatorsChanged(_)) => {}
            other => panic!("unexpected event {other:?}"),
        }
    }
    assert_eq!(
        plies,
        vec![
            (1, "f2f3".into()),
            (2, "e7e5".into()),
            (3, "g2g4".into()),
            (4, "d8h4".into())
        ]
    );
    assert!(
        watch.next().await.is_none(),
        "the stream ends with the game"
    );

    let state = get(&mut client, &game.game_id).await;
    assert_eq!(state.status, c::GameStatus::Finished as i32);
    assert_eq!(sans(&state), ["f3", "e5", "g4", "Qh4#"]);
    assert_eq!(
        state.fen,
        "rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3"
    );

    let board = ok(client.board(pb::BoardRequest {
        game_id: game.game_id.clone(),
    }))
    .await
    .board;
    assert!(board.starts_with("\n +---+"));
    assert!(
        board.contains(" |   |   |   |   |   |   | P | q | 4\n"),
        "{board}"
    );
    let pgn = ok(client.export_pgn(pb::ExportPgnRequest {
        game_id: game.game_id.clone(),
    }))
    .await
    .pgn;
    assert!(pgn.contains("[Result \"0-1\"]"), "{pgn}");
    assert!(pgn.trim_end().ends_with("1. f3 e5 2. g4 Qh4# 0-1"), "{pgn}");
}

/// A move sent with its ply is safe to send again: a retry after a lost
/// answer gets the first answer (across a restart of the service too), and
/// is never played twice; a move for a ply the game is not at is refused.
#[tokio::test]
async fn a_move_with_its_ply_is_played_once_however_often_it_is_sent() {
    let (_dir, url) = sqlite();
    let service = GameService::start(&url).await;
    let mut client = service.client().await;
    let game = create(&mut client, "w", "b", untimed()).await;
    let send = |player: &str, mv: &str, ply: u32| pb::MakeMoveRequest {
        game_id: game.game_id.clone(),
        player_id: player.to_owned(),
        r#move: mv.to_owned(),
        ply: Some(ply),
    };
    let first = ok(client.make_move(acting(send("w", "e4", 1), "w", Some(&game.game_id)))).await;
    assert_eq!(first.ply, 1);
    for again in ["e4", "e2e4"] {
        let retried =
            ok(client.make_move(acting(send("w", again, 1), "w", Some(&game.game_id)))).await;
        assert_eq!(retried.ply, 1);
        assert_eq!(retried.move_made, first.move_made);
    }
    assert_eq!(get(&mut client, &game.game_id).await.ply, 1);

    // Another move for a ply that is taken, the other side's move for it,
    // and a ply ahead: all stale, and nothing changes.
    for (player, mv, ply) in [("w", "d4", 1), ("b", "e4", 1), ("b", "e5", 3)] {
        let refused =
            refused(client.make_move(acting(send(player, mv, ply), player, Some(&game.game_id))))
                .await;
        assert_eq!(refused.code(), Code::FailedPrecondition, "{refused:?}");
        assert_eq!(reason(&refused), Some(Reason::StalePosition));
    }
    assert_eq!(get(&mut client, &game.game_id).await.ply, 1);

    // After a crash the record still answers the retry.
    drop(client);
    service.crash().await;
    let service = GameService::start(&url).await;
    let mut client = service.client().await;
    let retried = ok(client.make_move(acting(send("w", "e4", 1), "w", Some(&game.game_id)))).await;
    assert_eq!(retried.ply, 1);
    assert_eq!(retried.move_made, first.move_made);
    let reply = ok(client.make_move(acting(send("b", "e5", 2), "b", Some(&game.game_id)))).await;
    assert_eq!(reply.ply, 2);
    assert_eq!(get(&mut client, &game.game_id).await.ply, 2);
}

#[tokio::test]
async fn bad_input_is_refused_and_changes_nothing() {
    let (_dir, _service, mut client) = on_sqlite().await;
    let game = create(&mut client, "w", "b", untimed()).await;
    let id = game.game_id.as_str();

    let e = play(&mut client, id, "b", "e7e5").await.unwrap_err();
    assert_eq!(
        (e.code(), reason(&e)),
        (Code::FailedPrecondition, Some(Reason::NotYourTurn))
    );
    let e = play(&mut client, id, "mallory", "e2e4").await.unwrap_err();
    assert_eq!(
        (e.code(), reason(&e)),
        (Code::PermissionDenied, Some(Reason::NotAPlayer))
    );
    let e = play(&mut client, id, "w", "e2e5").await.unwrap_err();
    assert_eq!(
        (e.code(), reason(&e)),
        (Code::FailedPrecondition, Some(Reason::IllegalMove))
    );
    assert!(e.message().contains("e2e5"), "{}", e.message());
    let e = play(&mut client, id, "w", "hello").await.unwrap_err();
    assert_eq!(
        (e.code(), reason(&e)),
        (Code::InvalidArgument, Some(Reason::MalformedMove))
    );
    let e = play(&mut client, id, "w", "").await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    let e = play(&mut client, "no-such-game", "w", "e2e4")
        .await
        .unwrap_err();
    assert_eq!(
        (e.code(), reason(&e)),
        (Code::NotFound, Some(Reason::NotFound))
    );
    let e = refused(client.create_game(pb::CreateGameRequest {
        white: Some(guest("x")),
        black: Some(guest("y")),
        time_control: Some(untimed()),
        initial_fen: "not a fen".into(),
        ..Default::default()
    }))
    .await;
    assert_eq!(e.code(), Code::InvalidArgument);
    let e = refused(client.create_game(pb::CreateGameRequest {
        white: Some(guest("x")),
        black: Some(guest("y")),
        time_control: Some(untimed()),
        rated: true,
        ..Default::default()
    }))
    .await;
    assert_eq!(e.code(), Code::InvalidArgument);

    // Untimed games are never rated, and a rated game allows no hints.
    for (time_control, allow_hints, word) in [
        (untimed(), false, "untimed"),
        (incremental(300, 0), true, "hints"),
    ] {
        let e = refused(client.create_game(pb::CreateGameRequest {
            white: Some(registered("p1", "alice")),
            black: Some(registered("p2", "bob")),
            time_control: Some(time_control),
            rated: true,
            allow_hints,
            ..Default::default()
        }))
        .await;
        assert_eq!(e.code(), Code::InvalidArgument);
        assert!(e.message().contains(word), "{}", e.message());
    }
    // Two people who did not allow hints get none; the refusal comes before
    // the engine is asked (none is reachable here) and changes nothing.
    assert_eq!(game.speed, c::SpeedCategory::Untimed as i32);
    assert!(!game.hints_allowed);
    let e = refused(client.hint(acting(
        pb::HintRequest {
            game_id: id.into(),
            player_id: "w".into(),
            kind: pb::HintKind::Best as i32,
        },
        "w",
        Some(id),
    )))
    .await;
    assert_eq!(
        (e.code(), reason(&e)),
        (Code::FailedPrecondition, Some(Reason::HintsNotAllowed))
    );
    // Legal moves are the rules' list, open to all.
    let legal = ok(client.legal_moves(pb::LegalMovesRequest { game_id: id.into() }))
        .await
        .moves;
    assert_eq!(legal.len(), 20);

    let state = get(&mut client, id).await;
    assert_eq!(state.ply, 0);
    assert!(state.moves.is_empty());
    assert_eq!(state.status, c::GameStatus::Active as i32);

    resign(&mut client, id, "b").await.unwrap();
    let e = play(&mut client, id, "w", "e2e4").await.unwrap_err();
    assert_eq!(
        (e.code(), reason(&e)),
        (Code::FailedPrecondition, Some(Reason::GameOver))
    );
}

#[tokio::test]
async fn draws_claims_and_aborts() {
    let (_dir, _service, mut client) = on_sqlite().await;

    // Agreement.
    let g = create(&mut client, "w", "b", untimed()).await.game_id;
    let r = client
        .offer_draw(pb::OfferDrawRequest::by("w", &g))
        .await
        .unwrap();
    assert!(r.into_inner().game_ended.is_none());
    assert_eq!(
        get(&mut client, &g).await.draw_offer,
        c::Color::White as i32
    );
    let e = refused(client.accept_draw(pb::AcceptDrawRequest::by("w", &g))).await;
    assert_eq!(e.code(), Code::FailedPrecondition);
    let r = ok(client.decline_draw(pb::DeclineDrawRequest::by("b", &g))).await;
    assert_eq!(r.offered_by, c::Color::White as i32);
    ok(client.offer_draw(pb::OfferDrawRequest::by("b", &g))).await;
    let r = ok(client.accept_draw(pb::AcceptDrawRequest::by("w", &g))).await;
    assert_eq!(termination(r.game_ended), c::Termination::DrawAgreement);

    // Threefold repetition, claimed.
    let g = create(&mut client, "w", "b", untimed()).await.game_id;
    let e = refused(client.claim_draw(pb::ClaimDrawRequest::by("w", &g))).await;
    assert_eq!(e.code(), Code::FailedPrecondition);
    for (player, mv) in [
        ("w", "Nf3"),
        ("b", "Nf6"),
        ("w", "Ng1"),
        ("b", "Ng8"),
        ("w", "Nf3"),
        ("b", "Nf6"),
        ("w", "Ng1"),
        ("b", "Ng8"),
    ] {
        play(&mut client, &g, player, mv).await.unwrap();
    }
    let r = ok(client.claim_draw(pb::ClaimDrawRequest::by("w", &g))).await;
    assert_eq!(
        termination(r.game_ended),
        c::Termination::ThreefoldRepetition
    );

    // Abort before both sides moved, not after.
    let g = create(&mut client, "w", "b", untimed()).await.game_id;
    play(&mut client, &g, "w", "e4").await.unwrap();
    let ended = ok(client.abort(pb::AbortRequest::by("b", &g)))
        .await
        .game_ended;
    assert_eq!(termination(ended), c::Termination::Aborted);
    let ended = ended.unwrap();
    assert_eq!(ended.result, c::GameResult::Unspecified as i32);
    let g = create(&mut client, "w", "b", untimed()).await.game_id;
    play(&mut client, &g, "w", "e4").await.unwrap();
    play(&mut client, &g, "b", "e5").await.unwrap();
    let e = refused(client.abort(pb::AbortRequest::by("w", &g))).await;
    assert_eq!(e.code(), Code::FailedPrecondition);
}

#[tokio::test]
async fn the_flag_falls_with_nobody_connected() {
    let (_dir, _service, mut client) = on_sqlite().await;
    let g = create(&mut client, "w", "b", incremental(3, 0))
        .await
        .game_id;
    play(&mut client, &g, "w", "e4").await.unwrap();
    play(&mut client, &g, "b", "e5").await.unwrap();
    let state = get(&mut client, &g).await;
    assert_eq!(state.status, c::GameStatus::Active as i32);
    let clock = state.clock.unwrap();
    assert!(clock.timed);
    assert_eq!(clock.running, c::Color::White as i32);
    assert!(clock.flag_at.is_some());
    // Nobody acts; the server ends the game when white's seconds run out.
    let state = finished(&mut client, &g).await;
    assert_eq!(state.status, c::GameStatus::Finished as i32);
    assert_eq!(state.termination, c::Termination::Timeout as i32);
    assert_eq!(state.result, c::GameResult::BlackWins as i32);
    assert_eq!(state.clock.unwrap().white.unwrap().remaining_ms, 0);
}

#[tokio::test]
async fn listing_pages_and_idempotent_creation() {
    let (_dir, _service, mut client) = on_sqlite().await;
    let mut ids = Vec::new();
    for i in 0..5 {
        let opponent = format!("o{i}");
        ids.push(
            create(&mut client, "me", &opponent, untimed())
                .await
                .game_id,
        );
    }
    resign(&mut client, &ids[0], "me").await.unwrap();
    let mut seen = Vec::new();
    let mut token = String::new();
    loop {
        let page = ok(client.list_games(acting(
            pb::ListGamesRequest {
                player_id: "me".into(),
                filter: 0,
                page_size: 2,
                page_token: token,
            },
            "me",
            None,
        )))
        .await;
        assert!(page.games.len() <= 2);
        seen.extend(page.games.into_iter().map(|g| g.game_id));
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    assert_eq!(seen.len(), 5);
    ids.reverse();
    assert_eq!(seen, ids, "newest first");
    let finished = ok(client.list_games(acting(
        pb::ListGamesRequest {
            player_id: "me".into(),
            filter: pb::GameFilter::Finished as i32,
            page_size: 10,
            page_token: String::new(),
        },
        "me",
        None,
    )))
    .await;
    assert_eq!(finished.games.len(), 1);
    assert_eq!(
        finished.games[0].termination,
        c::Termination::Resignation as i32
    );

    let request = pb::CreateGameRequest {
        white: Some(guest("a")),
        black: Some(guest("b")),
        time_control: Some(untimed()),
        idempotency_key: "pairing-42".into(),
        ..Default::default()
    };
    let first = ok(client.create_game(request.clone())).await.game.unwrap();
    let again = ok(client.create_game(request)).await.game.unwrap();
    assert_eq!(first.game_id, again.game_id);
}
