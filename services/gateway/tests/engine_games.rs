//! Games against the engine and hints through the public API, end to end:
//! the real gateway in front of the real services and Stockfish.

mod common;

use std::time::Duration;

use chess_proto::{
    common::v1::{self as wire, game_event::Kind as GameKind},
    gateway::v1 as pb,
};
use chess_runtime::Reason;
use chess_testkit::process::{cpu_ticks_of, stockfish_under, ticks_in_a_second_after};
use common::{Answer as _, System, User, blitz, events, next_game_event};
use tonic::{Code, Streaming};

/// The system, with Alice signed up and her event stream open.
async fn alice_listening() -> (System, User, Streaming<pb::StreamEventsResponse>) {
    let system = System::start(&[]).await;
    let alice = system.sign_up("alice").await;
    let alice_events = events(&system, &alice).await;
    (system, alice, alice_events)
}

#[tokio::test]
async fn playing_the_engine_at_full_strength() {
    let (system, alice, mut alice_events) = alice_listening().await;
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
    let request = pb::PlayEngineRequest {
        full_strength: true,
        color: wire::ColorChoice::Black as i32,
        ..Default::default()
    };
    let game = system.engine_game(&alice, request).await;
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
    let reply = system.legal_moves(&game.game_id).await.swap_remove(0).uci;
    system
        .make_move(&alice, &game.game_id, &reply)
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
    let (system, alice, mut alice_events) = alice_listening().await;
    let mut lobby = system.lobby().await;
    let bad = lobby
        .play_engine(alice.call(pb::PlayEngineRequest {
            level: 9,
            ..Default::default()
        }))
        .await
        .unwrap_err();
    assert_eq!(bad.code(), Code::InvalidArgument);
    let game = system.play_engine(&alice).await;
    // Untimed: filed under its own category, unrated, hints allowed.
    assert!(!game.rated);
    assert!(game.hints_allowed);
    assert_eq!(game.speed, wire::SpeedCategory::Untimed as i32);
    assert!(matches!(
        game.black.and_then(|p| p.kind),
        Some(wire::player::Kind::Engine(wire::EnginePlayer { level: 1 }))
    ));
    let mut play = system.play().await;
    let legal = system.legal_moves(&game.game_id).await;
    assert_eq!(legal.len(), 20);
    let hint = play
        .hint(alice.call(pb::HintRequest {
            game_id: game.game_id.clone(),
        }))
        .answer()
        .await
        .best_move;
    assert!(legal.iter().any(|m| m.uci == hint), "{hint}");
    system
        .make_move(&alice, &game.game_id, &hint)
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
        .answer()
        .await
        .board;
    assert!(board.contains("+---+"), "{board}");

    // Finishing it changes no rating.
    play.resign(alice.call(pb::ResignRequest {
        game_id: game.game_id.clone(),
    }))
    .await
    .unwrap();
    let profile = system.profile("alice").await;
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
    let game = system.play_engine(&alice).await;
    let engines = stockfish_under(system.engine.pid());
    assert!(!engines.is_empty(), "no Stockfish under the engine service");
    let idle = cpu_ticks_of(&engines);
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
    assert!(
        cpu_ticks_of(&engines) > idle,
        "the hints never reached the engine"
    );
    calls.abort_all();
    while calls.join_next().await.is_some() {}
    // Counted after time for the calls to be cancelled down to the engine
    // pool and the search in progress to be stopped.
    let spent = ticks_in_a_second_after(&engines, Duration::from_millis(800)).await;
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
        let seek = lobby
            .create_seek(alice.call(pb::CreateSeekRequest {
                time_control: Some(time_control),
                rated: true,
                allow_hints,
                ..Default::default()
            }))
            .await;
        chess_testkit::refused(seek, Code::InvalidArgument, word);
    }

    let hint = |game_id: &str| {
        let mut play = play.clone();
        let request = bob.call(pb::HintRequest {
            game_id: game_id.to_owned(),
        });
        async move { play.hint(request).await }
    };
    let game_of = async |allow_hints: bool| {
        let seek = pb::CreateSeekRequest {
            time_control: Some(blitz()),
            color: wire::ColorChoice::Black as i32,
            rated: false,
            accept_mode: wire::AcceptMode::Automatic as i32,
            allow_hints,
            ..Default::default()
        };
        let seek = system.post_seek(&alice, seek).await;
        let listed = system.seeks().await;
        let shown = listed.iter().find(|s| s.seek_id == seek.seek_id).unwrap();
        assert_eq!(shown.allow_hints, allow_hints);
        system.request_seek(&bob, &seek.seek_id).await.game_id
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
    system.make_move(&bob, &with_hints, &best).await.unwrap();
    let answer = play
        .hint(alice.call(pb::HintRequest {
            game_id: with_hints.clone(),
        }))
        .answer()
        .await
        .best_move;
    assert!(!answer.is_empty());
}
