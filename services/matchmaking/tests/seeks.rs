//! Seeks over gRPC, against the real rating and game services: requested,
//! accepted, rejected and withdrawn, started automatically, lapsing with
//! their poster, and untimed.

mod common;

use std::time::Duration;

use chess_proto::{
    common::v1::{self as wire, lobby_event::Kind},
    matchmaking::v1 as pb,
};
use common::{
    Lobby, accept_seek_request, blitz, cancel_seek, daily, expect_event, for_player, game_players,
    game_state, list, list_once, list_seek_requests, next_event, only_for, post_seek, refused,
    reject_seek_request, request, seek, watch, withdraw_seek_request,
};
use tonic::Code;

#[tokio::test]
async fn a_manual_seek_is_requested_accepted_and_started() {
    let (lobby, [alice, bob, carol], mut client) =
        Lobby::with_players(["alice", "bob", "carol"]).await;
    let mut alice_events = watch(&mut client, &alice).await;
    let mut carol_events = watch(&mut client, &carol).await;

    let posted = post_seek(&mut client, seek(&alice, blitz(), wire::AcceptMode::Manual)).await;
    // The poster sees their own name and id; others see neither, as the name
    // is hidden, but do see the rating and the game type.
    assert_eq!(posted.poster_username, "alice");
    assert_eq!(posted.poster_id, alice.id);
    let seen = list(&lobby, &bob).await;
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].poster_username, "");
    assert_eq!(seen[0].poster_id, "");
    assert_eq!(seen[0].poster_rating, 1200);
    assert_eq!(seen[0].speed, wire::SpeedCategory::Blitz as i32);
    assert_eq!(seen[0].time_control, Some(blitz()));

    let by_bob = request(&lobby, &posted.seek_id, &bob).await.unwrap();
    assert_eq!(by_bob.status, wire::SeekRequestStatus::Pending as i32);
    assert_eq!(by_bob.requester_rating, 1200);
    expect_event!(&mut alice_events, Kind::SeekRequestReceived(r) => assert_eq!(r.request_id, by_bob.request_id));
    let by_carol = request(&lobby, &posted.seek_id, &carol).await.unwrap();
    let _ = next_event(&mut alice_events).await;
    // Twice is refused; so is playing your own seek.
    let again = request(&lobby, &posted.seek_id, &bob).await.unwrap_err();
    assert_eq!(again.code(), Code::FailedPrecondition);
    let own = request(&lobby, &posted.seek_id, &alice).await.unwrap_err();
    assert_eq!(own.code(), Code::FailedPrecondition);
    // Only the poster accepts.
    refused(
        accept_seek_request(&mut client, &by_bob.request_id, &carol).await,
        Code::PermissionDenied,
    );

    let accepted = accept_seek_request(&mut client, &by_bob.request_id, &alice)
        .await
        .expect("accept");
    assert_eq!(accepted.status, wire::SeekRequestStatus::Accepted as i32);
    assert!(!accepted.game_id.is_empty());
    // The poster asked for white.
    assert_eq!(
        game_players(&lobby, &accepted.game_id).await,
        (alice.id.clone(), bob.id.clone())
    );
    // The seek is gone, and carol's request with it.
    assert!(list(&lobby, &bob).await.is_empty());
    match next_event(&mut carol_events).await {
        Kind::SeekRequestCancelled(r) => {
            assert_eq!(r.request_id, by_carol.request_id);
            assert_eq!(r.status, wire::SeekRequestStatus::Cancelled as i32);
        }
        other => panic!("unexpected {other:?}"),
    }
    let listed = list_seek_requests(&mut client, &alice).await;
    assert!(listed.received.is_empty() && listed.seeks.is_empty());
    // Accepting twice finds nothing.
    refused(
        accept_seek_request(&mut client, &by_bob.request_id, &alice).await,
        Code::NotFound,
    );
}

#[tokio::test]
async fn requests_are_rejected_and_withdrawn() {
    let (lobby, [alice, bob], mut client) = Lobby::with_players(["alice", "bob"]).await;
    let mut alice_events = watch(&mut client, &alice).await;
    let mut bob_events = watch(&mut client, &bob).await;
    let posted = post_seek(&mut client, seek(&alice, blitz(), wire::AcceptMode::Manual)).await;

    let first = request(&lobby, &posted.seek_id, &bob).await.unwrap();
    let _ = next_event(&mut alice_events).await;
    let rejected = reject_seek_request(&mut client, &first.request_id, &alice)
        .await
        .unwrap();
    assert_eq!(rejected.status, wire::SeekRequestStatus::Rejected as i32);
    expect_event!(&mut bob_events, Kind::SeekRequestRejected(r) => assert_eq!(r.request_id, first.request_id));
    // The seek stays open; bob may ask again and then change his mind.
    let second = request(&lobby, &posted.seek_id, &bob).await.unwrap();
    let _ = next_event(&mut alice_events).await;
    let sent = list_seek_requests(&mut client, &bob).await.sent;
    assert_eq!(sent.len(), 1);
    only_for(
        withdraw_seek_request,
        &mut client,
        &second.request_id,
        &alice,
        &bob,
    )
    .await;
    expect_event!(&mut alice_events, Kind::SeekRequestCancelled(r) => assert_eq!(r.request_id, second.request_id));
    // The poster cancels; only they may.
    only_for(cancel_seek, &mut client, &posted.seek_id, &bob, &alice).await;
    assert!(list(&lobby, &bob).await.is_empty());
}

#[tokio::test]
async fn automatic_seeks_start_on_the_first_fitting_request() {
    let (lobby, [alice, bob], mut client) = Lobby::with_players(["alice", "bob"]).await;
    let mut alice_events = watch(&mut client, &alice).await;

    // A range nobody new fits: 1200 is below 1300.
    let mut picky = seek(&alice, blitz(), wire::AcceptMode::Automatic);
    picky.min_rating = 1300;
    picky.show_name = true;
    let picky = post_seek(&mut client, picky).await;
    assert_eq!(list(&lobby, &bob).await[0].poster_username, "alice");
    let refused = request(&lobby, &picky.seek_id, &bob).await.unwrap_err();
    assert_eq!(refused.code(), Code::FailedPrecondition);
    assert!(refused.message().contains("range"), "{}", refused.message());

    let mut open = seek(&alice, daily(48), wire::AcceptMode::Automatic);
    open.color = wire::ColorChoice::Black as i32;
    open.max_rating = 1500;
    let open = post_seek(&mut client, open).await;
    let joined = request(&lobby, &open.seek_id, &bob).await.unwrap();
    assert_eq!(joined.status, wire::SeekRequestStatus::Accepted as i32);
    assert_eq!(
        game_players(&lobby, &joined.game_id).await,
        (bob.id.clone(), alice.id.clone())
    );
    // The poster hears that the table was taken.
    let mut heard_removed = false;
    for _ in 0..2 {
        match next_event(&mut alice_events).await {
            Kind::SeekRequestAccepted(r) => assert_eq!(r.game_id, joined.game_id),
            Kind::SeekRemoved(s) => {
                assert_eq!(s.seek_id, open.seek_id);
                heard_removed = true;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(heard_removed);
    let left: Vec<String> = list(&lobby, &bob)
        .await
        .into_iter()
        .map(|s| s.seek_id)
        .collect();
    assert_eq!(left, vec![picky.seek_id]);
}

#[tokio::test]
async fn real_time_seeks_vanish_with_the_last_stream_but_tables_stay() {
    let (lobby, [alice, bob], mut client) = Lobby::with_players(["alice", "bob"]).await;
    let first = watch(&mut client, &alice).await;
    let second = watch(&mut client, &alice).await;
    client
        .create_seek(for_player(seek(&alice, blitz(), wire::AcceptMode::Manual)))
        .await
        .unwrap();
    client
        .create_seek(for_player(seek(
            &alice,
            daily(24),
            wire::AcceptMode::Manual,
        )))
        .await
        .unwrap();
    assert_eq!(list(&lobby, &bob).await.len(), 2);
    drop(first);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        list(&lobby, &bob).await.len(),
        2,
        "one stream is still open"
    );
    drop(second);
    let left = list_once(&lobby, &bob, 1).await;
    assert_eq!(left.len(), 1, "the blitz seek stayed: {left:?}");
    assert_eq!(left[0].speed, wire::SpeedCategory::Correspondence as i32);
    // A real-time seek posted with no stream open lapses after the grace
    // period (two seconds in these tests).
    client
        .create_seek(for_player(seek(&alice, blitz(), wire::AcceptMode::Manual)))
        .await
        .unwrap();
    assert_eq!(list(&lobby, &bob).await.len(), 2);
    assert_eq!(list_once(&lobby, &bob, 1).await.len(), 1);
}

/// An unrated untimed seek is listed under its own category, without a
/// rating beside it, and its game is untimed and unrated.
#[tokio::test]
async fn untimed_seeks_have_their_own_category() {
    let (lobby, [alice, bob], mut client) = Lobby::with_players(["alice", "bob"]).await;
    let _alice_events = watch(&mut client, &alice).await;
    let untimed: wire::TimeControl = chess_domain::TimeControl::Untimed.into();
    let mut casual = seek(&alice, untimed, wire::AcceptMode::Automatic);
    casual.rated = false;
    let posted = post_seek(&mut client, casual).await;
    assert_eq!(posted.speed, wire::SpeedCategory::Untimed as i32);
    assert_eq!(posted.poster_rating, 0);
    assert!(!posted.allow_hints);
    let listed = |speed: wire::SpeedCategory| {
        let mut client = client.clone();
        let viewer = bob.id.clone();
        async move {
            client
                .list_seeks(for_player(pb::ListSeeksRequest {
                    viewer_id: viewer,
                    speed: speed as i32,
                    page_size: 0,
                    page_token: String::new(),
                }))
                .await
                .unwrap()
                .into_inner()
                .seeks
        }
    };
    assert_eq!(listed(wire::SpeedCategory::Untimed).await.len(), 1);
    assert!(listed(wire::SpeedCategory::Correspondence).await.is_empty());
    let started = request(&lobby, &posted.seek_id, &bob).await.unwrap();
    let game = game_state(&lobby, &started.game_id).await;
    assert_eq!(game.speed, wire::SpeedCategory::Untimed as i32);
    assert!(!game.rated && !game.hints_allowed);
}
