//! The public API end to end: the real gateway in front of the real
//! matchmaking, game, rating and engine services.

mod common;

use std::time::Duration;

use chess_proto::{
    common::v1::{self as wire, game_event::Kind as GameKind, lobby_event::Kind as LobbyKind},
    gateway::v1::{self as pb, stream_events_response::Event},
};
use chess_runtime::Reason;
use chess_testkit::process::{children_of, cpu_ticks, process_name};
use common::{System, User, blitz, daily, events, next_event, next_game_event};
use tonic::{Code, Request};

/// `challenger` challenges `opponent`, who accepts; returns the game id.
async fn challenge_and_accept(
    system: &System,
    challenger: &User,
    opponent: &User,
    color: wire::ColorChoice,
    time_control: wire::TimeControl,
) -> String {
    let mut lobby = system.lobby().await;
    let challenge = lobby
        .create_challenge(challenger.call(pb::CreateChallengeRequest {
            opponent_username: opponent.name.clone(),
            time_control: Some(time_control),
            color: color as i32,
            rated: true,
            expires_in_seconds: 0,
            allow_hints: false,
        }))
        .await
        .expect("challenge")
        .into_inner()
        .challenge
        .unwrap();
    lobby
        .accept_challenge(opponent.call(pb::AcceptChallengeRequest {
            challenge_id: challenge.challenge_id,
        }))
        .await
        .expect("accept")
        .into_inner()
        .challenge
        .unwrap()
        .game_id
}

async fn make_move(
    system: &System,
    user: &User,
    game_id: &str,
    mv: &str,
) -> Result<pb::MakeMoveResponse, tonic::Status> {
    system
        .play()
        .await
        .make_move(user.call(pb::MakeMoveRequest {
            game_id: game_id.to_owned(),
            r#move: mv.to_owned(),
            ply: None,
        }))
        .await
        .map(tonic::Response::into_inner)
}

#[tokio::test]
async fn accounts_sessions_and_profiles() {
    let system = System::start(&[]).await;
    let alice = system.sign_up("alice").await;
    let mut accounts = system.accounts().await;

    let duplicate = accounts
        .register(pb::RegisterRequest {
            username: "ALICE".into(),
            email: "other@example.org".into(),
            password: "correct horse battery".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(duplicate.code(), Code::AlreadyExists);
    let wrong = accounts
        .login(pb::LoginRequest {
            login: "alice".into(),
            password: "wrong password".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(wrong.code(), Code::Unauthenticated);
    // Email works as the login too.
    let by_email = accounts
        .login(pb::LoginRequest {
            login: "alice@example.org".into(),
            password: "correct horse battery".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(by_email.player_id, alice.id);
    let expires = by_email.expires_at.unwrap().seconds;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    assert!((expires - now - 24 * 3600).abs() < 60, "a day by default");

    let me = accounts
        .me(alice.call(pb::MeRequest {}))
        .await
        .unwrap()
        .into_inner();
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

    let profile = accounts
        .get_profile(pb::GetProfileRequest {
            username: "Alice".into(),
        })
        .await
        .unwrap()
        .into_inner()
        .profile
        .unwrap();
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
        .await
        .unwrap()
        .into_inner();
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
    let game_id =
        challenge_and_accept(&system, &alice, &bob, wire::ColorChoice::White, blitz()).await;
    let mut play = system.play().await;

    // Mallory's token acts for Mallory, who is not in the game.
    let status = make_move(&system, &mallory, &game_id, "e4")
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
    let unchanged = play
        .get_game(pb::GetGameRequest {
            game_id: game_id.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .game
        .unwrap();
    assert_eq!(
        (unchanged.ply, unchanged.status),
        (0, wire::GameStatus::Active as i32)
    );
    assert!(unchanged.rated && !unchanged.hints_allowed);
    let legal = play
        .legal_moves(pb::LegalMovesRequest {
            game_id: game_id.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .moves;
    assert_eq!(legal.len(), 20);
    // Bob cannot move for Alice.
    let status = make_move(&system, &bob, &game_id, "e4").await.unwrap_err();
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

    let moved = make_move(&system, &alice, &game_id, "e2e4").await.unwrap();
    assert_eq!(moved.ply, 1);
    assert_eq!(moved.move_made.unwrap().r#move.unwrap().san, "e4");
    let illegal = make_move(&system, &bob, &game_id, "e5e4")
        .await
        .unwrap_err();
    assert_eq!(Reason::of(&illegal), Some(Reason::IllegalMove));
    make_move(&system, &bob, &game_id, "c5").await.unwrap();
    let state = play
        .get_game(pb::GetGameRequest {
            game_id: game_id.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .game
        .unwrap();
    assert_eq!(state.ply, 2);
    // Mallory may watch: from the start, the whole state first.
    let mut watch = play
        .watch_game(pb::WatchGameRequest {
            game_id: game_id.clone(),
            from_ply: None,
        })
        .await
        .unwrap()
        .into_inner();
    let first = watch.message().await.unwrap().unwrap().event.unwrap();
    match first.kind {
        Some(GameKind::Snapshot(state)) => assert_eq!(state.ply, 2),
        other => panic!("unexpected {other:?}"),
    }
    // Resuming after the first ply, only the second move comes: a client
    // applying every move it receives never plays one twice.
    let mut resumed = play
        .watch_game(pb::WatchGameRequest {
            game_id: game_id.clone(),
            from_ply: Some(1),
        })
        .await
        .unwrap()
        .into_inner();
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
        .await
        .unwrap()
        .into_inner()
        .game_ended
        .unwrap();
    assert_eq!(resigned.result, wire::GameResult::WhiteWins as i32);
    let live = resumed.message().await.unwrap().unwrap().event.unwrap();
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
            .await
            .unwrap()
            .into_inner()
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
        .await
        .unwrap()
        .into_inner()
        .pgn;
    assert!(pgn.contains("[White \"alice\"]"), "{pgn}");
    assert!(pgn.contains("1. e4 ") && pgn.contains(" c5 "), "{pgn}");
    assert!(pgn.trim_end().ends_with("1-0"), "{pgn}");
}

#[tokio::test]
async fn one_stream_carries_the_lobby_and_every_game() {
    let system = System::start(&[]).await;
    let alice = system.sign_up("alice").await;
    let bob = system.sign_up("bob").await;
    let mut alice_events = events(&system, &alice).await;
    let mut bob_events = events(&system, &bob).await;
    let mut lobby = system.lobby().await;

    // Alice posts a seek; Bob asks; Alice hears of it and accepts.
    let seek = lobby
        .create_seek(alice.call(pb::CreateSeekRequest {
            time_control: Some(blitz()),
            color: wire::ColorChoice::Black as i32,
            rated: true,
            show_name: true,
            accept_mode: wire::AcceptMode::Manual as i32,
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner()
        .seek
        .unwrap();
    let listed = lobby
        .list_seeks(pb::ListSeeksRequest::default())
        .await
        .unwrap()
        .into_inner()
        .seeks;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].poster_username, "alice");
    assert_eq!(listed[0].poster_id, "", "only the poster sees the id");
    let request = lobby
        .request_seek(bob.call(pb::RequestSeekRequest {
            seek_id: seek.seek_id.clone(),
        }))
        .await
        .unwrap()
        .into_inner()
        .request
        .unwrap();
    match next_event(&mut alice_events).await {
        Event::Lobby(wire::LobbyEvent {
            kind: Some(LobbyKind::SeekRequestReceived(r)),
        }) => assert_eq!(r.requester_username, "bob"),
        other => panic!("unexpected {other:?}"),
    }
    let accepted = lobby
        .accept_seek_request(alice.call(pb::AcceptSeekRequestRequest {
            request_id: request.request_id,
        }))
        .await
        .unwrap()
        .into_inner()
        .request
        .unwrap();
    let first_game = accepted.game_id;
    for stream in [&mut alice_events, &mut bob_events] {
        let started = next_game_event(stream, |k| matches!(k, GameKind::GameStarted(_))).await;
        assert_eq!(started.game_id, first_game);
    }

    // A second game at once, from a challenge.
    let second_game =
        challenge_and_accept(&system, &bob, &alice, wire::ColorChoice::White, daily(24)).await;
    assert_ne!(first_game, second_game);
    // Bob is white in both games.
    make_move(&system, &bob, &first_game, "d4").await.unwrap();
    make_move(&system, &bob, &second_game, "Nf3").await.unwrap();
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
        .await
        .unwrap()
        .into_inner()
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
    let mut lobby = system.lobby().await;
    lobby
        .create_seek(alice.call(pb::CreateSeekRequest {
            time_control: Some(blitz()),
            color: wire::ColorChoice::White as i32,
            rated: true,
            show_name: true,
            accept_mode: wire::AcceptMode::Manual as i32,
            ..Default::default()
        }))
        .await
        .unwrap();
    let seeks = async || {
        system
            .lobby()
            .await
            .list_seeks(pb::ListSeeksRequest::default())
            .await
            .unwrap()
            .into_inner()
            .seeks
            .len()
    };
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

#[tokio::test]
async fn playing_the_engine_at_full_strength() {
    let system = System::start(&[]).await;
    let alice = system.sign_up("alice").await;
    let mut alice_events = events(&system, &alice).await;
    let mut lobby = system.lobby().await;
    // Full strength is asked for by name, never by a missing level.
    for (level, full_strength) in [(0, false), (3, true)] {
        let refused = lobby
            .play_engine(alice.call(pb::PlayEngineRequest {
                level,
                full_strength,
                ..Default::default()
            }))
            .await
            .unwrap_err();
        assert_eq!(refused.code(), Code::InvalidArgument, "{refused:?}");
    }
    let game = lobby
        .play_engine(alice.call(pb::PlayEngineRequest {
            full_strength: true,
            color: wire::ColorChoice::Black as i32,
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner()
        .game
        .unwrap();
    assert!(matches!(
        game.white.and_then(|p| p.kind),
        Some(wire::player::Kind::Engine(wire::EnginePlayer { level: 0 }))
    ));
    // The engine has white: its first move arrives on the stream.
    let event = next_game_event(&mut alice_events, |k| matches!(k, GameKind::MoveMade(_))).await;
    assert_eq!(
        (event.game_id.as_str(), event.ply),
        (game.game_id.as_str(), 1)
    );
    // A reply of Alice's, and the engine answers it.
    let reply = system
        .play()
        .await
        .legal_moves(pb::LegalMovesRequest {
            game_id: game.game_id.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .moves
        .swap_remove(0)
        .uci;
    make_move(&system, &alice, &game.game_id, &reply)
        .await
        .unwrap();
    loop {
        let event =
            next_game_event(&mut alice_events, |k| matches!(k, GameKind::MoveMade(_))).await;
        if event.ply == 3 {
            break;
        }
    }
}

#[tokio::test]
async fn playing_the_engine_with_hints() {
    let system = System::start(&[]).await;
    let alice = system.sign_up("alice").await;
    let mut alice_events = events(&system, &alice).await;
    let mut lobby = system.lobby().await;
    let bad = lobby
        .play_engine(alice.call(pb::PlayEngineRequest {
            level: 9,
            ..Default::default()
        }))
        .await
        .unwrap_err();
    assert_eq!(bad.code(), Code::InvalidArgument);
    let game = lobby
        .play_engine(alice.call(pb::PlayEngineRequest {
            level: 1,
            color: wire::ColorChoice::White as i32,
            time_control: None,
            full_strength: false,
        }))
        .await
        .unwrap()
        .into_inner()
        .game
        .unwrap();
    // Untimed: filed under its own category, unrated, hints allowed.
    assert!(!game.rated);
    assert!(game.hints_allowed);
    assert_eq!(game.speed, wire::SpeedCategory::Untimed as i32);
    assert!(matches!(
        game.black.and_then(|p| p.kind),
        Some(wire::player::Kind::Engine(wire::EnginePlayer { level: 1 }))
    ));
    let mut play = system.play().await;
    let legal = play
        .legal_moves(pb::LegalMovesRequest {
            game_id: game.game_id.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .moves;
    assert_eq!(legal.len(), 20);
    let hint = play
        .hint(alice.call(pb::HintRequest {
            game_id: game.game_id.clone(),
        }))
        .await
        .unwrap()
        .into_inner()
        .best_move;
    assert!(legal.iter().any(|m| m.uci == hint), "{hint}");
    make_move(&system, &alice, &game.game_id, &hint)
        .await
        .unwrap();
    // The engine answers on the stream.
    let mut engine_moved = false;
    while !engine_moved {
        let event =
            next_game_event(&mut alice_events, |k| matches!(k, GameKind::MoveMade(_))).await;
        engine_moved = event.ply == 2;
    }
    let board = play
        .board(pb::BoardRequest {
            game_id: game.game_id.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .board;
    assert!(board.contains("+---+"), "{board}");

    // Finishing it changes no rating.
    play.resign(alice.call(pb::ResignRequest {
        game_id: game.game_id.clone(),
    }))
    .await
    .unwrap();
    let profile = system
        .accounts()
        .await
        .get_profile(pb::GetProfileRequest {
            username: "alice".into(),
        })
        .await
        .unwrap()
        .into_inner()
        .profile
        .unwrap();
    assert!(profile.ratings.iter().all(|r| r.games_played == 0));
    assert!(
        profile
            .ratings
            .iter()
            .all(|r| r.category != wire::SpeedCategory::Untimed as i32)
    );
}

/// Callers that ask for hints and go away take their searches with them,
/// through the gateway and the game service to the engine pool: the pool is
/// idle within a moment instead of searching for nobody.
#[tokio::test]
async fn hints_of_callers_that_left_are_not_searched() {
    let system = System::start(&[]).await;
    let alice = system.sign_up("alice").await;
    let game = system
        .lobby()
        .await
        .play_engine(alice.call(pb::PlayEngineRequest {
            level: 1,
            color: wire::ColorChoice::White as i32,
            time_control: None,
            full_strength: false,
        }))
        .await
        .unwrap()
        .into_inner()
        .game
        .unwrap();
    let engines: Vec<u32> = children_of(system.engine.pid())
        .into_iter()
        .filter(|&pid| process_name(pid).as_deref() == Some("stockfish"))
        .collect();
    assert!(!engines.is_empty(), "no Stockfish under the engine service");
    let used = |pids: &[u32]| pids.iter().map(|&pid| cpu_ticks(pid)).sum::<u64>();
    let idle = used(&engines);
    // Enough full-strength searches to keep the pool busy for seconds.
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..40 {
        let mut play = system.play().await;
        let request = alice.call(pb::HintRequest {
            game_id: game.game_id.clone(),
        });
        calls.spawn(async move { play.hint(request).await });
    }
    // The searches start; then every caller goes away.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(used(&engines) > idle, "the hints never reached the engine");
    calls.abort_all();
    while calls.join_next().await.is_some() {}
    // Time for the calls to be cancelled down to the engine pool and the
    // search in progress to be stopped.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let before = used(&engines);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let spent = used(&engines) - before;
    // One search in progress alone would use about 100 ticks in that second.
    assert!(
        spent <= 10,
        "the engine pool used {spent} ticks in the second after its callers left"
    );
}

/// Between two people, hints need an unrated game whose seek (or challenge)
/// allowed them; the other player sees that before joining.
#[tokio::test]
async fn hints_between_people_need_their_consent() {
    let system = System::start(&[]).await;
    let alice = system.sign_up("alice").await;
    let bob = system.sign_up("bob").await;
    let _alice_events = events(&system, &alice).await;
    let mut lobby = system.lobby().await;
    let mut play = system.play().await;

    for (time_control, allow_hints, word) in [
        (blitz(), true, "hints"),
        (
            wire::TimeControl {
                kind: Some(wire::time_control::Kind::Untimed(wire::Untimed {})),
            },
            false,
            "untimed",
        ),
    ] {
        let refused = lobby
            .create_seek(alice.call(pb::CreateSeekRequest {
                time_control: Some(time_control),
                rated: true,
                allow_hints,
                ..Default::default()
            }))
            .await
            .unwrap_err();
        assert_eq!(refused.code(), Code::InvalidArgument);
        assert!(refused.message().contains(word), "{}", refused.message());
    }

    let hint = |game_id: &str| {
        let mut play = play.clone();
        let request = bob.call(pb::HintRequest {
            game_id: game_id.to_owned(),
        });
        async move { play.hint(request).await }
    };
    let mut game_of = async |allow_hints: bool| {
        let seek = lobby
            .create_seek(alice.call(pb::CreateSeekRequest {
                time_control: Some(blitz()),
                color: wire::ColorChoice::Black as i32,
                rated: false,
                accept_mode: wire::AcceptMode::Automatic as i32,
                allow_hints,
                ..Default::default()
            }))
            .await
            .unwrap()
            .into_inner()
            .seek
            .unwrap();
        let listed = lobby
            .list_seeks(pb::ListSeeksRequest::default())
            .await
            .unwrap()
            .into_inner()
            .seeks;
        let shown = listed.iter().find(|s| s.seek_id == seek.seek_id).unwrap();
        assert_eq!(shown.allow_hints, allow_hints);
        lobby
            .request_seek(bob.call(pb::RequestSeekRequest {
                seek_id: seek.seek_id,
            }))
            .await
            .unwrap()
            .into_inner()
            .request
            .unwrap()
            .game_id
    };
    let with_hints = game_of(true).await;
    let without = game_of(false).await;

    // Bob is white in both.
    let best = hint(&with_hints).await.unwrap().into_inner().best_move;
    assert_eq!(best.len(), 4, "{best}");
    let refused = hint(&without).await.unwrap_err();
    assert_eq!(refused.code(), Code::FailedPrecondition);
    assert_eq!(Reason::of(&refused), Some(Reason::HintsNotAllowed));
    // Alice may ask too, on her turn.
    make_move(&system, &bob, &with_hints, &best).await.unwrap();
    let answer = play
        .hint(alice.call(pb::HintRequest {
            game_id: with_hints.clone(),
        }))
        .await
        .unwrap()
        .into_inner()
        .best_move;
    assert!(!answer.is_empty());
}

#[tokio::test]
async fn daily_moves_are_emailed_over_smtp() {
    let sink = common::SmtpSink::start().await;
    let url = sink.url();
    // A public URL given explicitly is the base of the links, trailing
    // slash or not.
    let system = System::start(&[
        "--smtp-url",
        &url,
        "--mail-from",
        "Rookery <chess@example.org>",
        "--public-url",
        "https://chess.example.org/",
    ])
    .await;
    let alice = system.sign_up("alice").await;
    let bob = system.sign_up("bob").await;
    // A correspondence table: Alice takes white, Bob joins it.
    let mut lobby = system.lobby().await;
    let table = lobby
        .create_seek(alice.call(pb::CreateSeekRequest {
            time_control: Some(daily(48)),
            color: wire::ColorChoice::White as i32,
            accept_mode: wire::AcceptMode::Automatic as i32,
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner()
        .seek
        .unwrap();
    let joined = lobby
        .request_seek(bob.call(pb::RequestSeekRequest {
            seek_id: table.seek_id,
        }))
        .await
        .unwrap()
        .into_inner()
        .request
        .unwrap();
    let game_id = joined.game_id;
    // Nobody is connected; the moves are still announced.
    make_move(&system, &alice, &game_id, "e2e4").await.unwrap();
    let first = sink.messages(1).await;
    let (envelope, message) = &first[0];
    assert!(envelope.contains("bob@example.org"), "{envelope}");
    assert!(!envelope.contains("alice@example.org"), "{envelope}");
    assert!(
        message.contains("Subject: alice played 1. e4 in alice vs bob"),
        "{message}"
    );
    assert!(
        message.contains("From: Rookery <chess@example.org>"),
        "{message}"
    );
    assert!(
        message.contains(&format!("https://chess.example.org/games/{game_id}")),
        "{message}"
    );
    assert!(message.contains("48 hours"), "{message}");

    make_move(&system, &bob, &game_id, "Nf6").await.unwrap();
    let both = sink.messages(2).await;
    let (envelope, message) = &both[1];
    assert!(envelope.contains("alice@example.org"), "{envelope}");
    assert!(message.contains("1... Nf6"), "{message}");
    // Real-time games send nothing.
    let blitz_game =
        challenge_and_accept(&system, &alice, &bob, wire::ColorChoice::White, blitz()).await;
    make_move(&system, &alice, &blitz_game, "d4").await.unwrap();
    make_move(&system, &bob, &game_id, "Nc6").await.unwrap_err();
    make_move(&system, &alice, &game_id, "Nf3").await.unwrap();
    let all = sink.messages(3).await;
    assert_eq!(all.len(), 3, "only the daily game's moves are mailed");
    assert!(all[2].1.contains("2. Nf3"), "{}", all[2].1);
}

#[tokio::test]
async fn without_smtp_mail_goes_to_the_directory_and_one_replica_sends() {
    let system = System::start(&[]).await;
    // A second gateway with the notifier off, as on all but one replica.
    let quiet_mail = system.dir.path().join("quiet-mail");
    let quiet_dir = quiet_mail.display().to_string();
    let _quiet = common::Service::start(
        std::path::PathBuf::from(env!("CARGO_BIN_EXE_chess-gateway")),
        &[
            "--uqchess-listen",
            "",
            "--game-addr",
            &system.game.addr,
            "--matchmaking-addr",
            &system.matchmaking.addr,
            "--rating-addr",
            &system.rating.addr,
            "--token-key",
            "a test key that is long enough",
            "--mail-dir",
            &quiet_dir,
            "--notify-daily-moves",
            "false",
        ],
    )
    .await;
    let alice = system.sign_up("alice").await;
    let bob = system.sign_up("bob").await;
    let game_id =
        challenge_and_accept(&system, &alice, &bob, wire::ColorChoice::Black, daily(24)).await;
    make_move(&system, &bob, &game_id, "e4").await.unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let file = loop {
        let found: Vec<_> = std::fs::read_dir(&system.mail_dir)
            .into_iter()
            .flatten()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "eml"))
            .collect();
        if let Some(file) = found.first() {
            assert_eq!(found.len(), 1);
            break file.clone();
        }
        assert!(std::time::Instant::now() < deadline, "no mail was written");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    let text = std::fs::read_to_string(file).unwrap();
    assert!(text.contains("To: alice@example.org"), "{text}");
    assert!(text.contains("bob played 1. e4"), "{text}");
    assert!(!quiet_mail.exists(), "the quiet replica sent mail too");

    // Without --public-url the link is the gateway's own address, and it
    // opens the game over plain HTTP on the gRPC port.
    let link = text
        .split_whitespace()
        .find(|word| word.starts_with("http"))
        .unwrap_or_else(|| panic!("no link in {text}"));
    let expected = format!("http://{}/games/{game_id}", system.gateway.addr);
    assert_eq!(link, expected);
    let path = &link[format!("http://{}", system.gateway.addr).len()..];
    let page = common::http(&system.gateway.addr, "GET", path, &[], b"").await;
    assert_eq!(page.status, 200, "{}", page.text());
    let html = page.text();
    assert!(html.contains("<li>e4</li>"), "{html}");
    assert!(html.contains("Black to move."), "{html}");
    assert!(html.contains("White: <b>bob</b>"), "{html}");
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
