//! What the lobby refuses: bad input, and an assertion acting for another
//! player.

mod common;

use chess_proto::{common::v1 as wire, matchmaking::v1 as pb};
use common::{Lobby, Player, blitz, daily, for_player, list, list_challenges, request, seek};
use tonic::Code;

#[tokio::test]
async fn bad_input_is_refused() {
    let lobby = Lobby::start().await;
    let alice = lobby.register("alice").await;
    let mut client = lobby.client().await;
    let mut bad = seek(&alice, daily(12), wire::AcceptMode::Manual);
    let status = client
        .create_seek(for_player(bad.clone()))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    bad.time_control = Some(blitz());
    bad.min_rating = 1600;
    bad.max_rating = 1400;
    let status = client.create_seek(for_player(bad)).await.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    let status = client
        .create_seek(for_player(seek(
            &Player {
                id: String::new(),
                name: "x".into(),
            },
            blitz(),
            wire::AcceptMode::Manual,
        )))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    let status = request(&lobby, "no-such-seek", &alice).await.unwrap_err();
    assert_eq!(status.code(), Code::NotFound);

    // Untimed games are never rated, and rated games allow no hints.
    let untimed: wire::TimeControl = chess_domain::TimeControl::Untimed.into();
    let rated_untimed = seek(&alice, untimed, wire::AcceptMode::Manual);
    let mut rated_hints = seek(&alice, blitz(), wire::AcceptMode::Manual);
    rated_hints.allow_hints = true;
    let mut ranged_untimed = seek(&alice, untimed, wire::AcceptMode::Manual);
    ranged_untimed.rated = false;
    ranged_untimed.min_rating = 1000;
    for (bad, word) in [
        (rated_untimed, "untimed"),
        (rated_hints, "hints"),
        (ranged_untimed, "untimed"),
    ] {
        let status = client.create_seek(for_player(bad)).await.unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
        assert!(status.message().contains(word), "{}", status.message());
    }
    let bob = lobby.register("bob").await;
    let challenge = |time_control: wire::TimeControl, allow_hints| pb::CreateChallengeRequest {
        player_id: bob.id.clone(),
        username: bob.name.clone(),
        opponent_username: "alice".into(),
        time_control: Some(time_control),
        color: wire::ColorChoice::White as i32,
        rated: true,
        expires_in_seconds: 0,
        allow_hints,
    };
    for (bad, word) in [
        (challenge(untimed, false), "untimed"),
        (challenge(blitz(), true), "hints"),
    ] {
        let status = client.create_challenge(for_player(bad)).await.unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
        assert!(status.message().contains(word), "{}", status.message());
    }
    let listed = list_challenges(&mut client, &alice).await;
    assert!(listed.incoming.is_empty(), "a refused challenge was kept");
}

#[tokio::test]
async fn a_players_assertion_cannot_act_for_another() {
    let (lobby, [alice, bob], mut client) = Lobby::with_players(["alice", "bob"]).await;
    // A seek for bob, carrying alice's assertion.
    let status = client
        .create_seek(chess_testkit::acting(
            seek(&bob, daily(24), wire::AcceptMode::Automatic),
            &alice.id,
            None,
        ))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
    assert_eq!(
        chess_runtime::Reason::of(&status),
        Some(chess_runtime::Reason::CallerMismatch)
    );
    // Without any assertion, nothing is answered at all.
    let mut raw =
        chess_proto::matchmaking::v1::matchmaking_service_client::MatchmakingServiceClient::new(
            lobby.matchmaking.as_ref().unwrap().channel().await,
        );
    let status = raw
        .create_seek(seek(&bob, daily(24), wire::AcceptMode::Automatic))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated, "{status:?}");
    assert!(
        list(&lobby, &alice).await.is_empty(),
        "a refused seek was posted"
    );
}
