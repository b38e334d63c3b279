//! The lobby over gRPC, against the real rating and game services.

mod common;

use std::time::Duration;

use chess_matchmaking::lobby::{
    model::{Challenge, ChallengeStatus, Member},
    store::Store,
};
use chess_proto::{
    common::v1::{self as wire, lobby_event::Kind},
    game::v1::GetGameRequest,
    matchmaking::v1 as pb,
};
use common::{Lobby, Player, blitz, daily, for_player, next_event, next_event_within, seek, watch};
use tonic::Code;

/// The seeks `viewer` sees once there are `n` of them, awaited for 20 s at
/// most (the last list seen if never): how soon a seek lapses, with its
/// poster's last stream or after the presence grace (two seconds in these
/// tests), depends on the machine.
async fn list_once(lobby: &Lobby, viewer: &Player, n: usize) -> Vec<wire::Seek> {
    chess_testkit::settled(
        Duration::from_secs(20),
        || list(lobby, viewer),
        |seen| seen.len() == n,
    )
    .await
}

async fn list(lobby: &Lobby, viewer: &Player) -> Vec<wire::Seek> {
    lobby
        .client()
        .await
        .list_seeks(for_player(pb::ListSeeksRequest {
            viewer_id: viewer.id.clone(),
            ..Default::default()
        }))
        .await
        .expect("list seeks")
        .into_inner()
        .seeks
}

async fn request(
    lobby: &Lobby,
    seek_id: &str,
    player: &Player,
) -> Result<wire::SeekRequest, tonic::Status> {
    lobby
        .client()
        .await
        .request_seek(for_player(pb::RequestSeekRequest {
            seek_id: seek_id.to_owned(),
            player_id: player.id.clone(),
            username: player.name.clone(),
        }))
        .await
        .map(|r| r.into_inner().request.expect("request"))
}

async fn game_players(lobby: &Lobby, game_id: &str) -> (String, String) {
    let game = game_state(lobby, game_id).await;
    let id = |p: Option<wire::Player>| match p.and_then(|p| p.kind) {
        Some(wire::player::Kind::Registered(r)) => r.player_id,
        other => panic!("not a registered player: {other:?}"),
    };
    (id(game.white), id(game.black))
}

async fn game_state(lobby: &Lobby, game_id: &str) -> wire::GameState {
    lobby
        .games()
        .await
        .get_game(GetGameRequest {
            game_id: game_id.to_owned(),
        })
        .await
        .expect("the game exists")
        .into_inner()
        .game
        .expect("state")
}

#[tokio::test]
async fn a_manual_seek_is_requested_accepted_and_started() {
    let lobby = Lobby::start().await;
    let alice = lobby.register("alice").await;
    let bob = lobby.register("bob").await;
    let carol = lobby.register("carol").await;
    let mut client = lobby.client().await;
    let mut alice_events = watch(&mut client, &alice).await;
    let mut carol_events = watch(&mut client, &carol).await;

    let posted = client
        .create_seek(for_player(seek(&alice, blitz(), wire::AcceptMode::Manual)))
        .await
        .expect("create seek")
        .into_inner()
        .seek
        .unwrap();
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
    match next_event(&mut alice_events).await {
        Kind::SeekRequestReceived(r) => assert_eq!(r.request_id, by_bob.request_id),
        other => panic!("unexpected {other:?}"),
    }
    let by_carol = request(&lobby, &posted.seek_id, &carol).await.unwrap();
    let _ = next_event(&mut alice_events).await;
    // Twice is refused; so is playing your own seek.
    let again = request(&lobby, &posted.seek_id, &bob).await.unwrap_err();
    assert_eq!(again.code(), Code::FailedPrecondition);
    let own = request(&lobby, &posted.seek_id, &alice).await.unwrap_err();
    assert_eq!(own.code(), Code::FailedPrecondition);
    // Only the poster accepts.
    let stolen = client
        .accept_seek_request(for_player(pb::AcceptSeekRequestRequest {
            request_id: by_bob.request_id.clone(),
            player_id: carol.id.clone(),
        }))
        .await
        .unwrap_err();
    assert_eq!(stolen.code(), Code::PermissionDenied);

    let accepted = client
        .accept_seek_request(for_player(pb::AcceptSeekRequestRequest {
            request_id: by_bob.request_id.clone(),
            player_id: alice.id.clone(),
        }))
        .await
        .expect("accept")
        .into_inner()
        .request
        .unwrap();
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
    let listed = client
        .list_seek_requests(for_player(pb::ListSeekRequestsRequest {
            player_id: alice.id.clone(),
        }))
        .await
        .unwrap()
        .into_inner();
    assert!(listed.received.is_empty() && listed.seeks.is_empty());
    // Accepting twice finds nothing.
    let twice = client
        .accept_seek_request(for_player(pb::AcceptSeekRequestRequest {
            request_id: by_bob.request_id,
            player_id: alice.id.clone(),
        }))
        .await
        .unwrap_err();
    assert_eq!(twice.code(), Code::NotFound);
}

#[tokio::test]
async fn requests_are_rejected_and_withdrawn() {
    let lobby = Lobby::start().await;
    let alice = lobby.register("alice").await;
    let bob = lobby.register("bob").await;
    let mut client = lobby.client().await;
    let mut alice_events = watch(&mut client, &alice).await;
    let mut bob_events = watch(&mut client, &bob).await;
    let posted = client
        .create_seek(for_player(seek(&alice, blitz(), wire::AcceptMode::Manual)))
        .await
        .unwrap()
        .into_inner()
        .seek
        .unwrap();

    let first = request(&lobby, &posted.seek_id, &bob).await.unwrap();
    let _ = next_event(&mut alice_events).await;
    let rejected = client
        .reject_seek_request(for_player(pb::RejectSeekRequestRequest {
            request_id: first.request_id.clone(),
            player_id: alice.id.clone(),
        }))
        .await
        .unwrap()
        .into_inner()
        .request
        .unwrap();
    assert_eq!(rejected.status, wire::SeekRequestStatus::Rejected as i32);
    match next_event(&mut bob_events).await {
        Kind::SeekRequestRejected(r) => assert_eq!(r.request_id, first.request_id),
        other => panic!("unexpected {other:?}"),
    }
    // The seek stays open; bob may ask again and then change his mind.
    let second = request(&lobby, &posted.seek_id, &bob).await.unwrap();
    let _ = next_event(&mut alice_events).await;
    let sent = client
        .list_seek_requests(for_player(pb::ListSeekRequestsRequest {
            player_id: bob.id.clone(),
        }))
        .await
        .unwrap()
        .into_inner()
        .sent;
    assert_eq!(sent.len(), 1);
    let not_his = client
        .withdraw_seek_request(for_player(pb::WithdrawSeekRequestRequest {
            request_id: second.request_id.clone(),
            player_id: alice.id.clone(),
        }))
        .await
        .unwrap_err();
    assert_eq!(not_his.code(), Code::PermissionDenied);
    client
        .withdraw_seek_request(for_player(pb::WithdrawSeekRequestRequest {
            request_id: second.request_id.clone(),
            player_id: bob.id.clone(),
        }))
        .await
        .unwrap();
    match next_event(&mut alice_events).await {
        Kind::SeekRequestCancelled(r) => assert_eq!(r.request_id, second.request_id),
        other => panic!("unexpected {other:?}"),
    }
    // The poster cancels; only they may.
    let denied = client
        .cancel_seek(for_player(pb::CancelSeekRequest {
            seek_id: posted.seek_id.clone(),
            player_id: bob.id.clone(),
        }))
        .await
        .unwrap_err();
    assert_eq!(denied.code(), Code::PermissionDenied);
    client
        .cancel_seek(for_player(pb::CancelSeekRequest {
            seek_id: posted.seek_id.clone(),
            player_id: alice.id.clone(),
        }))
        .await
        .unwrap();
    assert!(list(&lobby, &bob).await.is_empty());
}

#[tokio::test]
async fn automatic_seeks_start_on_the_first_fitting_request() {
    let lobby = Lobby::start().await;
    let alice = lobby.register("alice").await;
    let bob = lobby.register("bob").await;
    let mut client = lobby.client().await;
    let mut alice_events = watch(&mut client, &alice).await;

    // A range nobody new fits: 1200 is below 1300.
    let mut picky = seek(&alice, blitz(), wire::AcceptMode::Automatic);
    picky.min_rating = 1300;
    picky.show_name = true;
    let picky = client
        .create_seek(for_player(picky))
        .await
        .unwrap()
        .into_inner()
        .seek
        .unwrap();
    assert_eq!(list(&lobby, &bob).await[0].poster_username, "alice");
    let refused = request(&lobby, &picky.seek_id, &bob).await.unwrap_err();
    assert_eq!(refused.code(), Code::FailedPrecondition);
    assert!(refused.message().contains("range"), "{}", refused.message());

    let mut open = seek(&alice, daily(48), wire::AcceptMode::Automatic);
    open.color = wire::ColorChoice::Black as i32;
    open.max_rating = 1500;
    let open = client
        .create_seek(for_player(open))
        .await
        .unwrap()
        .into_inner()
        .seek
        .unwrap();
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
    let lobby = Lobby::start().await;
    let alice = lobby.register("alice").await;
    let bob = lobby.register("bob").await;
    let mut client = lobby.client().await;
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

/// Tables and their requests, and challenges, survive a crash of the
/// matchmaking service; a real-time seek too, until the presence grace
/// ends without its poster.
async fn tables_survive_a_restart(mut lobby: Lobby) {
    let alice = lobby.register("alice").await;
    let bob = lobby.register("bob").await;
    let mut client = lobby.client().await;
    let _alice_events = watch(&mut client, &alice).await;
    let mut table = seek(&alice, daily(72), wire::AcceptMode::Manual);
    table.color = wire::ColorChoice::Black as i32;
    table.rated = false;
    table.allow_hints = true;
    let table = client
        .create_seek(for_player(table))
        .await
        .unwrap()
        .into_inner()
        .seek
        .unwrap();
    client
        .create_seek(for_player(seek(&alice, blitz(), wire::AcceptMode::Manual)))
        .await
        .unwrap();
    let pending = request(&lobby, &table.seek_id, &bob).await.unwrap();
    let challenge = client
        .create_challenge(for_player(pb::CreateChallengeRequest {
            player_id: bob.id.clone(),
            username: bob.name.clone(),
            opponent_username: "ALICE".into(),
            time_control: Some(daily(24)),
            color: wire::ColorChoice::White as i32,
            rated: false,
            expires_in_seconds: 0,
            allow_hints: true,
        }))
        .await
        .unwrap()
        .into_inner()
        .challenge
        .unwrap();
    assert_eq!(challenge.challenged_id, alice.id);
    assert!(challenge.allow_hints);

    lobby.crash_matchmaking().await;
    lobby.start_matchmaking().await;
    let mut client = lobby.client().await;

    // Both seeks survive; the blitz one lapses after the presence grace
    // (two seconds here), as alice's stream does not come back.
    assert_eq!(list(&lobby, &bob).await.len(), 2);
    let seen = list_once(&lobby, &bob, 1).await;
    assert_eq!(seen.len(), 1, "only the table outlives the grace: {seen:?}");
    assert_eq!(seen[0].seek_id, table.seek_id);
    assert_eq!(seen[0].time_control, Some(daily(72)));
    assert_eq!(seen[0].color, wire::ColorChoice::Black as i32);
    assert!(seen[0].allow_hints && !seen[0].rated);
    let received = client
        .list_seek_requests(for_player(pb::ListSeekRequestsRequest {
            player_id: alice.id.clone(),
        }))
        .await
        .unwrap()
        .into_inner()
        .received;
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].request_id, pending.request_id);
    let accepted = client
        .accept_seek_request(for_player(pb::AcceptSeekRequestRequest {
            request_id: pending.request_id.clone(),
            player_id: alice.id.clone(),
        }))
        .await
        .unwrap()
        .into_inner()
        .request
        .unwrap();
    assert_eq!(
        game_players(&lobby, &accepted.game_id).await,
        (bob.id.clone(), alice.id.clone())
    );
    // The table's consent to hints reached its game.
    assert!(game_state(&lobby, &accepted.game_id).await.hints_allowed);
    let incoming = client
        .list_challenges(for_player(pb::ListChallengesRequest {
            player_id: alice.id.clone(),
        }))
        .await
        .unwrap()
        .into_inner()
        .incoming;
    assert_eq!(incoming.len(), 1);
    assert_eq!(incoming[0].challenge_id, challenge.challenge_id);
    assert!(incoming[0].allow_hints);

    // And what is settled stays settled.
    lobby.crash_matchmaking().await;
    lobby.start_matchmaking().await;
    assert!(list(&lobby, &bob).await.is_empty());
}

/// A real-time seek and the requests to it survive a crash of the
/// matchmaking service when the poster's stream comes back within the
/// presence grace; the poster then accepts a request made before the crash.
async fn real_time_seeks_survive_a_restart(mut lobby: Lobby) {
    let alice = lobby.register("alice").await;
    let bob = lobby.register("bob").await;
    let mut client = lobby.client().await;
    let _before = watch(&mut client, &alice).await;
    let open = client
        .create_seek(for_player(seek(&alice, blitz(), wire::AcceptMode::Manual)))
        .await
        .unwrap()
        .into_inner()
        .seek
        .unwrap();
    let pending = request(&lobby, &open.seek_id, &bob).await.unwrap();

    lobby.crash_matchmaking().await;
    lobby.start_matchmaking().await;
    let mut client = lobby.client().await;
    let mut events = watch(&mut client, &alice).await;
    // Well past the grace (two seconds here): the poster is back.
    tokio::time::sleep(Duration::from_millis(3000)).await;
    let seen = list(&lobby, &bob).await;
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].seek_id, open.seek_id);
    assert_eq!(seen[0].time_control, Some(blitz()));
    let accepted = client
        .accept_seek_request(for_player(pb::AcceptSeekRequestRequest {
            request_id: pending.request_id.clone(),
            player_id: alice.id.clone(),
        }))
        .await
        .unwrap()
        .into_inner()
        .request
        .unwrap();
    assert!(!accepted.game_id.is_empty());
    let players = game_players(&lobby, &accepted.game_id).await;
    assert!(
        players == (alice.id.clone(), bob.id.clone())
            || players == (bob.id.clone(), alice.id.clone())
    );
    // The poster hears that the seek was taken.
    let removed = loop {
        if let Kind::SeekRemoved(s) = next_event(&mut events).await {
            break s;
        }
    };
    assert_eq!(removed.seek_id, open.seek_id);
    // And it stays taken across another crash.
    lobby.crash_matchmaking().await;
    lobby.start_matchmaking().await;
    assert!(list(&lobby, &bob).await.is_empty());
}

#[tokio::test]
async fn real_time_seeks_survive_a_restart_on_sqlite() {
    real_time_seeks_survive_a_restart(Lobby::start().await).await;
}

#[tokio::test]
async fn real_time_seeks_survive_a_restart_on_postgres() {
    let url = chess_storage::testing::fresh_postgres_database().await;
    let lobby = Lobby::start_on(tempfile::tempdir().unwrap(), url).await;
    real_time_seeks_survive_a_restart(lobby).await;
}

#[tokio::test]
async fn tables_survive_a_restart_on_sqlite() {
    tables_survive_a_restart(Lobby::start().await).await;
}

#[tokio::test]
async fn tables_survive_a_restart_on_postgres() {
    let url = chess_storage::testing::fresh_postgres_database().await;
    let lobby = Lobby::start_on(tempfile::tempdir().unwrap(), url).await;
    tables_survive_a_restart(lobby).await;
}

#[tokio::test]
async fn challenges_are_accepted_declined_and_cancelled() {
    let lobby = Lobby::start().await;
    let alice = lobby.register("alice").await;
    let bob = lobby.register("bob").await;
    let mut client = lobby.client().await;
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

    let unknown = client
        .create_challenge(for_player(pb::CreateChallengeRequest {
            opponent_username: "nobody".into(),
            ..challenge(wire::ColorChoice::White)
        }))
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound);
    let herself = client
        .create_challenge(for_player(pb::CreateChallengeRequest {
            opponent_username: "alice".into(),
            ..challenge(wire::ColorChoice::White)
        }))
        .await
        .unwrap_err();
    assert_eq!(herself.code(), Code::InvalidArgument);

    let first = client
        .create_challenge(for_player(challenge(wire::ColorChoice::Black)))
        .await
        .unwrap()
        .into_inner()
        .challenge
        .unwrap();
    let expires = first.expires_at.unwrap().seconds - first.created_at.unwrap().seconds;
    assert_eq!(expires, 600, "real-time challenges wait ten minutes");
    match next_event(&mut bob_events).await {
        Kind::ChallengeReceived(c) => assert_eq!(c.challenge_id, first.challenge_id),
        other => panic!("unexpected {other:?}"),
    }
    // Only the challenged player accepts.
    let wrong = client
        .accept_challenge(for_player(pb::AcceptChallengeRequest {
            challenge_id: first.challenge_id.clone(),
            player_id: alice.id.clone(),
        }))
        .await
        .unwrap_err();
    assert_eq!(wrong.code(), Code::PermissionDenied);
    let accepted = client
        .accept_challenge(for_player(pb::AcceptChallengeRequest {
            challenge_id: first.challenge_id.clone(),
            player_id: bob.id.clone(),
        }))
        .await
        .unwrap()
        .into_inner()
        .challenge
        .unwrap();
    assert_eq!(accepted.status, wire::ChallengeStatus::Accepted as i32);
    assert_eq!(
        game_players(&lobby, &accepted.game_id).await,
        (bob.id.clone(), alice.id.clone())
    );
    // A rated challenge: no hints in its game.
    let game = game_state(&lobby, &accepted.game_id).await;
    assert!(game.rated && !game.hints_allowed);
    match next_event(&mut alice_events).await {
        Kind::ChallengeAccepted(c) => assert_eq!(c.game_id, accepted.game_id),
        other => panic!("unexpected {other:?}"),
    }
    let _ = next_event(&mut bob_events).await;

    let second = client
        .create_challenge(for_player(challenge(wire::ColorChoice::Either)))
        .await
        .unwrap()
        .into_inner()
        .challenge
        .unwrap();
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
    match next_event(&mut alice_events).await {
        Kind::ChallengeDeclined(c) => assert_eq!(c.decline_reason, "not today"),
        other => panic!("unexpected {other:?}"),
    }

    let third = client
        .create_challenge(for_player(challenge(wire::ColorChoice::White)))
        .await
        .unwrap()
        .into_inner()
        .challenge
        .unwrap();
    let _ = next_event(&mut bob_events).await;
    let listed = client
        .list_challenges(for_player(pb::ListChallengesRequest {
            player_id: alice.id.clone(),
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(listed.outgoing.len(), 1);
    assert!(listed.incoming.is_empty());
    let not_hers = client
        .cancel_challenge(for_player(pb::CancelChallengeRequest {
            challenge_id: third.challenge_id.clone(),
            player_id: bob.id.clone(),
        }))
        .await
        .unwrap_err();
    assert_eq!(not_hers.code(), Code::PermissionDenied);
    client
        .cancel_challenge(for_player(pb::CancelChallengeRequest {
            challenge_id: third.challenge_id.clone(),
            player_id: alice.id.clone(),
        }))
        .await
        .unwrap();
    match next_event(&mut bob_events).await {
        Kind::ChallengeCancelled(c) => assert_eq!(c.challenge_id, third.challenge_id),
        other => panic!("unexpected {other:?}"),
    }
    let gone = client
        .accept_challenge(for_player(pb::AcceptChallengeRequest {
            challenge_id: third.challenge_id,
            player_id: bob.id.clone(),
        }))
        .await
        .unwrap_err();
    assert_eq!(gone.code(), Code::NotFound);
}

#[tokio::test]
async fn challenges_expire_on_their_timer() {
    let dir = tempfile::tempdir().unwrap();
    let url = chess_storage::sqlite_url(&dir.path().join("matchmaking.sqlite"));
    let mut lobby = Lobby::start_on(dir, url.clone()).await;
    let alice = lobby.register("alice").await;
    let bob = lobby.register("bob").await;
    // The shortest lifetime a client may ask for is a minute; a challenge
    // stored with a shorter one shows the timer without the wait.
    lobby.crash_matchmaking().await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let store = Store::open(&url).await.unwrap();
    store
        .insert_challenge(&Challenge {
            id: "soon".into(),
            challenger: Member {
                id: alice.id.clone(),
                username: alice.name.clone(),
            },
            challenged: Member {
                id: bob.id.clone(),
                username: bob.name.clone(),
            },
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
            expires_at: now + 10_000,
        })
        .await
        .unwrap();
    drop(store);
    lobby.start_matchmaking().await;
    let mut client = lobby.client().await;
    let mut alice_events = watch(&mut client, &alice).await;
    let mut bob_events = watch(&mut client, &bob).await;
    let incoming = client
        .list_challenges(for_player(pb::ListChallengesRequest {
            player_id: bob.id.clone(),
        }))
        .await
        .unwrap()
        .into_inner()
        .incoming;
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
    let accepted = client
        .accept_challenge(for_player(pb::AcceptChallengeRequest {
            challenge_id: "soon".into(),
            player_id: bob.id.clone(),
        }))
        .await
        .unwrap_err();
    assert_eq!(accepted.code(), Code::NotFound);
}

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
    let untimed = wire::TimeControl {
        kind: Some(wire::time_control::Kind::Untimed(wire::Untimed {})),
    };
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
    let listed = client
        .list_challenges(for_player(pb::ListChallengesRequest {
            player_id: alice.id.clone(),
        }))
        .await
        .unwrap()
        .into_inner();
    assert!(listed.incoming.is_empty(), "a refused challenge was kept");
}

/// An unrated untimed seek is listed under its own category, without a
/// rating beside it, and its game is untimed and unrated.
#[tokio::test]
async fn untimed_seeks_have_their_own_category() {
    let lobby = Lobby::start().await;
    let alice = lobby.register("alice").await;
    let bob = lobby.register("bob").await;
    let mut client = lobby.client().await;
    let _alice_events = watch(&mut client, &alice).await;
    let untimed = wire::TimeControl {
        kind: Some(wire::time_control::Kind::Untimed(wire::Untimed {})),
    };
    let mut casual = seek(&alice, untimed, wire::AcceptMode::Automatic);
    casual.rated = false;
    let posted = client
        .create_seek(for_player(casual))
        .await
        .unwrap()
        .into_inner()
        .seek
        .unwrap();
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

#[tokio::test]
async fn a_players_assertion_cannot_act_for_another() {
    let lobby = Lobby::start().await;
    let alice = lobby.register("alice").await;
    let bob = lobby.register("bob").await;
    let mut client = lobby.client().await;
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
