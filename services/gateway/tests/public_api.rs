//! The public API end to end: the real gateway in front of the real
//! matchmaking, game, rating and engine services.

mod common;

use std::time::Duration;

use chess_proto::{
    common::v1::{self as wire, game_event::Kind as GameKind, lobby_event::Kind as LobbyKind},
    gateway::v1::{self as pb, stream_events_response::Event},
};
use chess_runtime::Reason;
use common::{Answer as _, PASSWORD, System, blitz, daily, events, next_event, next_game_event};
use tonic::{Code, Request};

#[tokio::test]
async fn accounts_sessions_and_profiles() {
    let system = System::start(&[]).await;
    let alice = system.sign_up("alice").await;
    let mut accounts = system.accounts().await;

    let duplicate = system.register("ALICE", "other@example.org").await;
    assert_eq!(duplicate.unwrap_err().code(), Code::AlreadyExists);
    let wrong = system.login("alice", "wrong password").await.unwrap_err();
    assert_eq!(wrong.code(), Code::Unauthenticated);
    // Email works as the login too.
    let by_email = system.login("alice@example.org", PASSWORD).await.unwrap();
    assert_eq!(by_email.player_id, alice.id);
    let expires = by_email.expires_at.unwrap().seconds;
    let now = chess_domain::Timestamp::now().secs();
    assert!((expires - now - 24 * 3600).abs() < 60, "a day by default");

    let me = accounts.me(alice.call(pb::MeRequest {})).answer().await;
    assert_eq!(me.email, "alice@example.org");
    assert_eq!(me.profile.unwrap().username, "alice");
    // Without a token, with a bad one, or with one from another key: refused.
    let missing = accounts.me(pb::MeRequest {}).await.unwrap_err();
    assert_eq!(missing.code(), Code::Unauthenticated);
    for bad in [
        "Bearer nonsense".to_owned(),
        format!("Bearer {}x", alice.token),
        format!("Token {}", alice.token),
    ] {
        let mut request = Request::new(pb::MeRequest {});
        request
            .metadata_mut()
            .insert("authorization", bad.parse().unwrap());
        let status = accounts.me(request).await.unwrap_err();
        assert_eq!(status.code(), Code::Unauthenticated, "{bad}");
    }

    let profile = system.profile("Alice").await;
    assert_eq!(profile.player_id, alice.id);
    let unknown = accounts
        .get_profile(pb::GetProfileRequest {
            username: "nobody".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound);
    assert_eq!(Reason::of(&unknown), Some(Reason::NotFound));
    let board = accounts
        .leaderboard(pb::LeaderboardRequest {
            category: wire::SpeedCategory::Blitz as i32,
            ..Default::default()
        })
        .answer()
        .await;
    assert_eq!(board.rating_system, wire::RatingSystem::ClubElo as i32);
    // Alice has not played: she is not ranked (her profile shows her
    // starting ratings).
    assert!(board.entries.is_empty(), "{:?}", board.entries);
    assert_eq!(profile.ratings.len(), 5);
    assert!(profile.ratings.iter().all(|r| r.games_played == 0));
    let untimed = accounts
        .leaderboard(pb::LeaderboardRequest {
            category: wire::SpeedCategory::Untimed as i32,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(untimed.code(), Code::InvalidArgument);
    // Signed-in calls need a session.
    let status = system
        .lobby()
        .await
        .create_seek(pb::CreateSeekRequest {
            time_control: Some(blitz()),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated);
}

#[tokio::test]
async fn only_a_games_players_act_in_it() {
    let system = System::start(&[]).await;
    let alice = system.sign_up("alice").await;
    let bob = system.sign_up("bob").await;
    let mallory = system.sign_up("mallory").await;
    let game_id = system
        .challenge_and_accept(&alice, &bob, wire::ColorChoice::White, blitz())
        .await;
    let mut play = system.play().await;

    // Mallory's token acts for Mallory, who is not in the game.
    let status = system
        .make_move(&mallory, &game_id, "e4")
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::PermissionDenied);
    assert_eq!(Reason::of(&status), Some(Reason::NotAPlayer));
    for status in [
        play.resign(mallory.call(pb::ResignRequest {
            game_id: game_id.clone(),
        }))
        .await
        .unwrap_err(),
        play.offer_draw(mallory.call(pb::OfferDrawRequest {
            game_id: game_id.clone(),
        }))
        .await
        .unwrap_err(),
        play.abort(mallory.call(pb::AbortRequest {
            game_id: game_id.clone(),
        }))
        .await
        .unwrap_err(),
    ] {
        assert_eq!(status.code(), Code::PermissionDenied);
    }
    // A rated game between two people allows no engine help: the hint is
    // refused, with its reason, and changes nothing; the rules' list of legal
    // moves stays open.
    let refused = play
        .hint(alice.call(pb::HintRequest {
            game_id: game_id.clone(),
        }))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::FailedPrecondition);
    assert_eq!(Reason::of(&refused), Some(Reason::HintsNotAllowed));
    assert_eq!(
        refused.metadata().get("chess-reason").unwrap(),
        "hints-not-allowed"
    );
    let unchanged = system.game(&game_id).await;
    assert_eq!(
        (unchanged.ply, unchanged.status),
        (0, wire::GameStatus::Active as i32)
    );
    assert!(unchanged.rated && !unchanged.hints_allowed);
    let legal = system.legal_moves(&game_id).await;
    assert_eq!(legal.len(), 20);
    // Bob cannot move for Alice.
    let status = system.make_move(&bob, &game_id, "e4").await.unwrap_err();
    assert_eq!(status.code(), Code::FailedPrecondition);
    assert_eq!(Reason::of(&status), Some(Reason::NotYourTurn));
    // Without a token nobody moves.
    let status = play
        .make_move(pb::MakeMoveRequest {
            game_id: game_id.clone(),
            r#move: "e4".into(),
            ply: None,
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated);

    let moved = system.make_move(&alice, &game_id, "e2e4").await.unwrap();
    assert_eq!(moved.ply, 1);
    assert_eq!(moved.move_made.unwrap().r#move.unwrap().san, "e4");
    let illegal = system.make_move(&bob, &game_id, "e5e4").await.unwrap_err();
    assert_eq!(Reason::of(&illegal), Some(Reason::IllegalMove));
    system.make_move(&bob, &game_id, "c5").await.unwrap();
    let state = system.game(&game_id).await;
    assert_eq!(state.ply, 2);
    // Mallory may watch: from the start, the whole state first.
    let mut watch = play
        .watch_game(pb::WatchGameRequest {
            from_chat_revision: None,
            game_id: game_id.clone(),
            from_ply: None,
        })
        .answer()
        .await;
    let first = watch.message().await.unwrap().unwrap().event.unwrap();
    match first.kind {
        Some(GameKind::Snapshot(state)) => assert_eq!(state.ply, 2),
        other => panic!("unexpected {other:?}"),
    }
    // Resuming after the first ply, only the second move comes: a client
    // applying every move it receives never plays one twice.
    let mut resumed = play
        .watch_game(pb::WatchGameRequest {
            from_chat_revision: None,
            game_id: game_id.clone(),
            from_ply: Some(1),
        })
        .answer()
        .await;
    let replayed = resumed.message().await.unwrap().unwrap().event.unwrap();
    assert_eq!(replayed.ply, 2);
    match replayed.kind {
        Some(GameKind::MoveMade(m)) => assert_eq!(m.r#move.unwrap().san, "c5"),
        other => panic!("unexpected {other:?}"),
    }
    let resigned = play
        .resign(bob.call(pb::ResignRequest {
            game_id: game_id.clone(),
        }))
        .answer()
        .await
        .game_ended
        .unwrap();
    assert_eq!(resigned.result, wire::GameResult::WhiteWins as i32);
    // The count of watchers may change first (another watch came and went).
    let live = loop {
        let event = resumed.message().await.unwrap().unwrap().event.unwrap();
        if !matches!(event.kind, Some(GameKind::SpectatorsChanged(_))) {
            break event;
        }
    };
    assert_eq!(live.ply, 2);
    assert!(
        matches!(live.kind, Some(GameKind::GameEnded(_))),
        "{live:?}"
    );
    // Once the result reaches the rating service, both players are ranked;
    // Mallory, registered but without a game, is not.
    let mut accounts = system.accounts().await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let ranked = loop {
        let board = accounts
            .leaderboard(pb::LeaderboardRequest {
                category: wire::SpeedCategory::Blitz as i32,
                ..Default::default()
            })
            .answer()
            .await
            .entries;
        if !board.is_empty() {
            break board;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the result never reached the leaderboard"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    let names: Vec<_> = ranked.iter().map(|e| e.username.as_str()).collect();
    assert_eq!(names, ["alice", "bob"]);
    let pgn = play
        .export_pgn(pb::ExportPgnRequest { game_id })
        .answer()
        .await
        .pgn;
    assert!(pgn.contains("[White \"alice\"]"), "{pgn}");
    assert!(pgn.contains("1. e4 ") && pgn.contains(" c5 "), "{pgn}");
    assert!(pgn.trim_end().ends_with("1-0"), "{pgn}");
}

/// A rated blitz seek for `color` that shows its poster's name and waits
/// for the poster to accept whoever asks.
fn named_blitz_seek(color: wire::ColorChoice) -> pb::CreateSeekRequest {
    pb::CreateSeekRequest {
        time_control: Some(blitz()),
        color: color as i32,
        rated: true,
        show_name: true,
        accept_mode: wire::AcceptMode::Manual as i32,
        ..Default::default()
    }
}

#[tokio::test]
async fn one_stream_carries_the_lobby_and_every_game() {
    let system = System::start(&[]).await;
    let alice = system.sign_up("alice").await;
    let bob = system.sign_up("bob").await;
    let mut alice_events = events(&system, &alice).await;
    let mut bob_events = events(&system, &bob).await;

    // Alice posts a seek; Bob asks; Alice hears of it and accepts.
    let seek = system
        .post_seek(&alice, named_blitz_seek(wire::ColorChoice::Black))
        .await;
    let listed = system.seeks().await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].poster_username, "alice");
    assert_eq!(listed[0].poster_id, "", "only the poster sees the id");
    let request = system.request_seek(&bob, &seek.seek_id).await;
    match next_event(&mut alice_events).await {
        Event::Lobby(wire::LobbyEvent {
            kind: Some(LobbyKind::SeekRequestReceived(r)),
        }) => assert_eq!(r.requester_username, "bob"),
        other => panic!("unexpected {other:?}"),
    }
    let accept = pb::AcceptSeekRequestRequest {
        request_id: request.request_id,
    };
    let mut lobby = system.lobby().await;
    let accepted = lobby.accept_seek_request(alice.call(accept)).answer().await;
    let first_game = accepted.request.expect("the accepted request").game_id;
    for stream in [&mut alice_events, &mut bob_events] {
        let started = next_game_event(stream, |k| matches!(k, GameKind::GameStarted(_))).await;
        assert_eq!(started.game_id, first_game);
    }

    // A second game at once, from a challenge.
    let second_game = system
        .challenge_and_accept(&bob, &alice, wire::ColorChoice::White, daily(24))
        .await;
    assert_ne!(first_game, second_game);
    // Bob is white in both games.
    system.make_move(&bob, &first_game, "d4").await.unwrap();
    system.make_move(&bob, &second_game, "Nf3").await.unwrap();
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let event =
            next_game_event(&mut alice_events, |k| matches!(k, GameKind::MoveMade(_))).await;
        if let Some(GameKind::MoveMade(m)) = event.kind {
            seen.push((event.game_id, m.r#move.unwrap().san));
        }
    }
    seen.sort();
    let mut expected = vec![
        (first_game.clone(), "d4".to_owned()),
        (second_game.clone(), "Nf3".to_owned()),
    ];
    expected.sort();
    assert_eq!(seen, expected);

    let mine = system
        .play()
        .await
        .list_my_games(alice.call(pb::ListMyGamesRequest {
            filter: pb::GameFilter::Active as i32,
            ..Default::default()
        }))
        .answer()
        .await
        .games;
    assert_eq!(mine.len(), 2);
}

/// A client's event stream holds the player's presence in the lobby, so a
/// real-time seek outlives the presence grace while the stream is open and
/// is withdrawn once the client closes it, with nothing else said.
#[tokio::test]
async fn a_real_time_seek_lapses_once_its_posters_event_stream_is_closed() {
    let system = System::start_with(&[], &["--presence-grace-secs", "1"]).await;
    let alice = system.sign_up("alice").await;
    let stream = events(&system, &alice).await;
    system
        .post_seek(&alice, named_blitz_seek(wire::ColorChoice::White))
        .await;
    let seeks = async || system.seeks().await.len();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(seeks().await, 1, "kept while the stream is open");

    drop(stream);
    let withdrawn = tokio::time::timeout(Duration::from_secs(20), async {
        while seeks().await != 0 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    assert!(withdrawn.is_ok(), "withdrawn after the stream is closed");
}

/// An event stream that is open when its session ends (here by Logout) is
/// closed with UNAUTHENTICATED, not left running on a revoked token.
#[tokio::test]
async fn an_open_event_stream_ends_with_its_session() {
    let system = System::start(&[]).await;
    let alice = system.sign_up("alice").await;
    let mut stream = events(&system, &alice).await;
    system
        .accounts()
        .await
        .logout(alice.call(pb::LogoutRequest {}))
        .await
        .expect("logout");
    let ended = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match stream.message().await {
                Ok(Some(_)) => {}
                Ok(None) => return None,
                Err(status) => return Some(status),
            }
        }
    })
    .await
    .expect("the stream is closed within 30 s of the logout")
    .expect("with a status");
    assert_eq!(ended.code(), Code::Unauthenticated, "{ended:?}");
}
