//! Challenges over gRPC, against the real rating and game services:
//! accepted, declined, cancelled and expired.

mod common;

use std::time::Duration;

use chess_domain::{PlayerId, Username};

use chess_matchmaking::lobby::{
    model::{Challenge, ChallengeStatus, Member},
    store::Store,
};
use chess_proto::{
    common::v1::{self as wire, lobby_event::Kind},
    matchmaking::v1 as pb,
};
use common::{
    Lobby, accept_challenge, blitz, cancel_challenge, expect_event, for_player, game_players,
    game_state, list_challenges, next_event, next_event_within, only_for, refused, send_challenge,
    watch,
};
use tonic::Code;

#[tokio::test]
async fn challenges_are_accepted_declined_and_cancelled() {
    let (lobby, [alice, bob], mut client) = Lobby::with_players(["alice", "bob"]).await;
    let mut alice_events = watch(&mut client, &alice).await;
    let mut bob_events = watch(&mut client, &bob).await;
    let challenge = |color: wire::ColorChoice| pb::CreateChallengeRequest {
        player_id: alice.id.clone(),
        username: alice.name.clone(),
        opponent_username: "bob".into(),
        time_control: Some(blitz()),
        color: color as i32,
        rated: true,
        expires_in_seconds: 0,
        allow_hints: false,
    };

    // Nobody by that name; oneself.
    for (opponent, code) in [("nobody", Code::NotFound), ("alice", Code::InvalidArgument)] {
        let request = pb::CreateChallengeRequest {
            opponent_username: opponent.into(),
            ..challenge(wire::ColorChoice::White)
        };
        refused(client.create_challenge(for_player(request)).await, code);
    }

    let first = send_challenge(&mut client, challenge(wire::ColorChoice::Black)).await;
    let expires = first.expires_at.unwrap().seconds - first.created_at.unwrap().seconds;
    assert_eq!(expires, 600, "real-time challenges wait ten minutes");
    expect_event!(&mut bob_events, Kind::ChallengeReceived(c) => assert_eq!(c.challenge_id, first.challenge_id));
    // Only the challenged player accepts.
    let accepted = only_for(
        accept_challenge,
        &mut client,
        &first.challenge_id,
        &alice,
        &bob,
    )
    .await;
    assert_eq!(accepted.status, wire::ChallengeStatus::Accepted as i32);
    assert_eq!(
        game_players(&lobby, &accepted.game_id).await,
        (bob.id.clone(), alice.id.clone())
    );
    // A rated challenge: no hints in its game.
    let game = game_state(&lobby, &accepted.game_id).await;
    assert!(game.rated && !game.hints_allowed);
    expect_event!(&mut alice_events, Kind::ChallengeAccepted(c) => assert_eq!(c.game_id, accepted.game_id));
    let _ = next_event(&mut bob_events).await;

    let second = send_challenge(&mut client, challenge(wire::ColorChoice::Either)).await;
    let _ = next_event(&mut bob_events).await;
    let declined = client
        .decline_challenge(for_player(pb::DeclineChallengeRequest {
            challenge_id: second.challenge_id.clone(),
            player_id: bob.id.clone(),
            reason: "  not today  ".into(),
        }))
        .await
        .unwrap()
        .into_inner()
        .challenge
        .unwrap();
    assert_eq!(declined.status, wire::ChallengeStatus::Declined as i32);
    expect_event!(&mut alice_events, Kind::ChallengeDeclined(c) => assert_eq!(c.decline_reason, "not today"));

    let third = send_challenge(&mut client, challenge(wire::ColorChoice::White)).await;
    let _ = next_event(&mut bob_events).await;
    let listed = list_challenges(&mut client, &alice).await;
    assert_eq!(listed.outgoing.len(), 1);
    assert!(listed.incoming.is_empty());
    only_for(
        cancel_challenge,
        &mut client,
        &third.challenge_id,
        &bob,
        &alice,
    )
    .await;
    expect_event!(&mut bob_events, Kind::ChallengeCancelled(c) => assert_eq!(c.challenge_id, third.challenge_id));
    refused(
        accept_challenge(&mut client, &third.challenge_id, &bob).await,
        Code::NotFound,
    );
}

#[tokio::test]
async fn challenges_expire_on_their_timer() {
    let dir = tempfile::tempdir().unwrap();
    let url = chess_storage::sqlite_url(&dir.path().join("matchmaking.sqlite"));
    let mut lobby = Lobby::start_on(dir, url.clone()).await;
    let [alice, bob] = lobby.register_all(["alice", "bob"]).await;
    // The shortest lifetime a client may ask for is a minute; a challenge
    // stored with a shorter one shows the timer without the wait.
    lobby.crash_matchmaking().await;
    let now = chess_domain::Timestamp::now();
    let store = Store::open(&url).await.unwrap();
    store
        .insert_challenge(&Challenge {
            id: "soon".into(),
            challenger: member(&alice),
            challenged: member(&bob),
            time_control: chess_domain::TimeControl::Untimed,
            color: chess_domain::ColorChoice::Either,
            rated: false,
            allow_hints: false,
            status: ChallengeStatus::Pending,
            decline_reason: String::new(),
            game_id: None,
            created_at: now,
            // Long enough for the restart and the watches below on a slow
            // machine: the challenge must still be pending when listed.
            expires_at: now.after(std::time::Duration::from_secs(10)),
        })
        .await
        .unwrap();
    drop(store);
    lobby.start_matchmaking().await;
    let mut client = lobby.client().await;
    let mut alice_events = watch(&mut client, &alice).await;
    let mut bob_events = watch(&mut client, &bob).await;
    let incoming = list_challenges(&mut client, &bob).await.incoming;
    assert_eq!(incoming.len(), 1);
    for events in [&mut alice_events, &mut bob_events] {
        match next_event_within(events, Duration::from_secs(30)).await {
            Kind::ChallengeExpired(c) => {
                assert_eq!(c.challenge_id, "soon");
                assert_eq!(c.status, wire::ChallengeStatus::Expired as i32);
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    refused(
        accept_challenge(&mut client, "soon", &bob).await,
        Code::NotFound,
    );
}

/// A registered player as the lobby holds them.
fn member(player: &common::Player) -> Member {
    Member {
        id: PlayerId::trusted(player.id.clone()),
        username: Username::trusted(player.name.clone()),
    }
}
