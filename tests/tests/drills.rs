//! Fault drills: the whole system (`chess-stack`, real binaries) under steady
//! load through the public gRPC API while each service in turn is killed
//! with SIGKILL and restarted by the stack.
//!
//! What must hold: every move a client was told was made is in its game's
//! record at its ply, and in its PGN, and nothing is played twice (clients send each move
//! with its ply and send it again, unchanged, while the service is
//! unavailable; every answer must be for the ply it was sent for); during
//! an outage clients see only
//! UNAVAILABLE, which tells them to retry; each finished rated game counts
//! exactly once in both players' ratings. Each outage's length is printed.

mod support;

use std::{
    collections::BTreeMap,
    sync::Arc,
    time::{Duration, Instant},
};

use chess_e2e::{StackProcess, load::grpc::Player};
use chess_proto::{
    common::v1 as common,
    gateway::v1::{
        self as pb, account_service_client::AccountServiceClient,
        play_service_client::PlayServiceClient,
    },
};
use chess_testkit::process::kill9;
use support::*;
use tonic::{Code, transport::Channel};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_service_killed_under_load_loses_nothing() {
    let stack = StackProcess::start(&[], UNLIMITED).await;
    let channel = gateway_channel(&stack);
    // Steady load first: every pair playing.
    let load = Load::start(&channel, PAIRS, OUTAGE_LIMIT, 200).await;
    let log = Arc::clone(&load.log);

    let mut outages = Vec::new();
    for program in [
        "chess-game",
        "chess-gateway",
        "chess-rating",
        "chess-matchmaking",
        "chess-engine",
    ] {
        let pid = service_pid(&stack, program).expect("the service runs");
        let killed = Instant::now();
        kill9(pid);
        // Restarted by the stack, and serving the load again.
        let deadline = killed + OUTAGE_LIMIT;
        while service_pid(&stack, program).is_none_or(|p| p == pid)
            || log.successes_since(killed) < RECOVERED_AFTER
        {
            assert!(Instant::now() < deadline, "{program} did not come back");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let failures: Vec<Failure> = log
            .failures
            .lock()
            .expect("not poisoned")
            .iter()
            .filter(|f| f.at >= killed)
            .cloned()
            .collect();
        // The outage as clients saw it: from the kill to the last failure
        // of the calls made during it.
        let outage = failures
            .iter()
            .map(|f| f.at.duration_since(killed))
            .max()
            .unwrap_or_default();
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        for f in &failures {
            let what = if f.connection_lost {
                "connection lost".to_owned()
            } else {
                format!("{:?}", f.code)
            };
            *seen.entry(what).or_default() += 1;
        }
        println!(
            "drill: {program} killed: outage {:.2} s, {} failed calls: {seen:?}",
            outage.as_secs_f64(),
            failures.len(),
        );
        outages.push((program, failures));
    }
    load.stop().await;

    // Every answer during every outage was UNAVAILABLE. Only with the
    // gateway itself killed may a client's connection break with nobody
    // there to answer.
    for (program, failures) in &outages {
        let other: Vec<String> = failures
            .iter()
            .filter(|f| {
                if f.connection_lost {
                    *program != "chess-gateway"
                } else {
                    f.code != Code::Unavailable
                }
            })
            .map(|f| {
                format!(
                    "{:?}: {} (connection lost: {})",
                    f.code, f.message, f.connection_lost
                )
            })
            .collect();
        assert!(
            other.is_empty(),
            "with {program} killed, clients saw more than UNAVAILABLE: {other:?}"
        );
    }

    check_records(&channel, &log).await;
    let finished = check_ratings(&channel, &log).await;
    println!("drill: {finished} finished games rated once each");
    stack.stop().await;
}

/// Oversized input from one caller hurts nobody else: a 100 KB username in
/// `GetProfile` and a 100 KB game id in `GetGame` (no token needed for
/// either) are refused by the gateway at once, without quoting them, while
/// many other callers' reads go on, every one answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_input_does_not_break_other_callers() {
    let stack = StackProcess::start(&[], UNLIMITED).await;
    let channel = gateway_channel(&stack);
    let log = Log::default();
    let white = sign_up(&channel, "owhite".to_owned()).await;
    let black = sign_up(&channel, "oblack".to_owned()).await;
    let game_id = start_game(&channel, &log, &white, &black).await;

    let mut calls = tokio::task::JoinSet::new();
    for i in 0..200 {
        let channel = channel.clone();
        let gateway = stack.gateway.clone();
        let game_id = game_id.clone();
        calls.spawn(async move {
            if i % 10 == 0 {
                // A hostile client, on its own connection to the gateway.
                let own = Channel::from_shared(format!("http://{gateway}"))
                    .expect("uri")
                    .connect_lazy();
                let huge = "x".repeat(100_000);
                let profile = AccountServiceClient::new(own.clone())
                    .get_profile(pb::GetProfileRequest {
                        username: huge.clone(),
                    })
                    .await;
                let game = PlayServiceClient::new(own)
                    .get_game(pb::GetGameRequest { game_id: huge })
                    .await;
                (true, vec![profile.err(), game.err()])
            } else {
                let game = PlayServiceClient::new(channel)
                    .get_game(pb::GetGameRequest { game_id })
                    .await;
                (false, vec![game.err()])
            }
        });
    }
    while let Some(done) = calls.join_next().await {
        let (hostile, errors) = done.expect("a call task");
        for error in errors {
            if hostile {
                let status = error.expect("oversized input is refused");
                assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
                assert!(
                    status.message().ends_with("is too long: at most 64 bytes"),
                    "{status:?}"
                );
            } else {
                assert!(error.is_none(), "another caller's read failed: {error:?}");
            }
        }
    }
    stack.stop().await;
}

/// A service behind the gateway, asked about a 100 KB game id, answers with
/// a short status, and the connection it shares with other calls survives:
/// every concurrent read on the same channel is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_quotes_oversized_input_only_briefly() {
    use chess_proto::game::v1::{self as game, game_service_client::GameServiceClient};

    let stack = StackProcess::start(&[], UNLIMITED).await;
    let channel = gateway_channel(&stack);
    let log = Log::default();
    let white = sign_up(&channel, "swhite".to_owned()).await;
    let black = sign_up(&channel, "sblack".to_owned()).await;
    let game_id = start_game(&channel, &log, &white, &black).await;
    // One connection to the game service, shared by every call below,
    // signed as an operator's calls with the stack's internal key.
    let key = chess_runtime::identity::InternalKey::read(&stack.data.path().join("internal.key"))
        .expect("the stack's internal key");
    let internal = chess_runtime::identity::Signer::new(key, "ops").channel(
        chess_runtime::channel(stack.internal("game")).expect("address"),
        None,
        None,
    );
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..100 {
        let mut client = GameServiceClient::new(internal.clone());
        let id = if i % 10 == 0 {
            "x".repeat(100_000)
        } else {
            game_id.clone()
        };
        calls.spawn(async move {
            let answer = client
                .get_game(game::GetGameRequest {
                    game_id: id.clone(),
                })
                .await;
            (id.len() > 64, answer.map(|_| ()))
        });
    }
    while let Some(done) = calls.join_next().await {
        match done.expect("a call task") {
            (true, answer) => {
                let status = answer.expect_err("no such game");
                assert_eq!(status.code(), Code::NotFound, "{status:?}");
                assert!(status.message().len() <= 1024, "a long status came back");
            }
            (false, answer) => answer.expect("another read on the same connection"),
        }
    }
    stack.stop().await;
}

/// A client's event stream resumed after the gateway was killed begins with
/// what the client missed: the opponent's move made while it was away, and
/// a game started meanwhile, before the live events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_stream_resumes_across_a_gateway_kill() {
    let stack = StackProcess::start(&[], UNLIMITED).await;
    let channel = gateway_channel(&stack);
    let log = Log::default();
    let alice = sign_up(&channel, "ralice".to_owned()).await;
    let bob = sign_up(&channel, "rbob".to_owned()).await;
    let game_id = start_game(&channel, &log, &alice, &bob).await;
    let play = PlayServiceClient::new(channel.clone());
    let make_move = |player: &Player, mv: &str, ply: u32| {
        let request = player.request(pb::MakeMoveRequest {
            game_id: game_id.clone(),
            r#move: mv.to_owned(),
            ply: Some(ply),
        });
        let mut play = play.clone();
        async move { play.make_move(request).await }
    };
    make_move(&alice, "e2e4", 1).await.expect("alice moves");
    let mut stream = play
        .clone()
        .stream_events(alice.request(pb::StreamEventsRequest::default()))
        .await
        .expect("stream")
        .into_inner();

    let gateway = service_pid(&stack, "chess-gateway").expect("the gateway runs");
    kill9(gateway);
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        while let Ok(Some(_)) = stream.message().await {}
    })
    .await;
    assert!(ended.is_ok(), "the stream outlived its gateway");
    // While alice is away: bob answers (once the gateway is back) and
    // starts another game.
    persist(&log, || make_move(&bob, "e7e5", 2)).await;
    let second = start_game(&channel, &log, &bob, &alice).await;

    let mut resumed = play
        .clone()
        .stream_events(alice.request(pb::StreamEventsRequest {
            resume: true,
            games: vec![common::GameCursor {
                chat_revision: None,
                game_id: game_id.clone(),
                ply: 1,
            }],
        }))
        .await
        .expect("resumed stream")
        .into_inner();
    let mut next_game_event = async || loop {
        let event = tokio::time::timeout(Duration::from_secs(10), resumed.message())
            .await
            .expect("an event in time")
            .expect("the stream is healthy")
            .expect("the stream is open");
        if let Some(pb::stream_events_response::Event::Game(event)) = event.event {
            return event;
        }
    };
    let mut missed = [next_game_event().await, next_game_event().await];
    missed.sort_by_key(|e| e.game_id == second);
    assert_eq!(
        (missed[0].game_id.as_str(), missed[0].ply),
        (game_id.as_str(), 2)
    );
    assert!(matches!(
        missed[0].kind,
        Some(common::game_event::Kind::MoveMade(_))
    ));
    assert_eq!(missed[1].game_id, second);
    assert!(matches!(
        missed[1].kind,
        Some(common::game_event::Kind::Snapshot(_))
    ));
    // Then live: alice's own next move comes back once.
    make_move(&alice, "g1f3", 3)
        .await
        .expect("alice moves again");
    let live = next_game_event().await;
    assert_eq!((live.game_id.as_str(), live.ply), (game_id.as_str(), 3));
    stack.stop().await;
}
