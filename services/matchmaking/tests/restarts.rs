//! What of the lobby survives a crash of the matchmaking service, on SQLite
//! and on PostgreSQL.

mod common;

use std::time::Duration;

use chess_proto::{
    common::v1::{self as wire, lobby_event::Kind},
    matchmaking::v1 as pb,
};
use common::{
    Lobby, accept_seek_request, blitz, daily, for_player, game_players, game_state, list,
    list_challenges, list_once, list_seek_requests, next_event, post_seek, request, seek,
    send_challenge, watch,
};

/// Runs each named test body on a lobby storing into SQLite and into
/// PostgreSQL.
macro_rules! on_sqlite_and_postgres {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name(crate::common::Lobby::start().await).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name(crate::common::Lobby::start_on_postgres().await).await;
                }
            )*
        }
    };
}

on_sqlite_and_postgres!(tables_survive_a_restart, real_time_seeks_survive_a_restart);

/// Tables and their requests, and challenges, survive a crash of the
/// matchmaking service; a real-time seek too, until the presence grace
/// ends without its poster.
async fn tables_survive_a_restart(mut lobby: Lobby) {
    let [alice, bob] = lobby.register_all(["alice", "bob"]).await;
    let mut client = lobby.client().await;
    let _alice_events = watch(&mut client, &alice).await;
    let mut table = seek(&alice, daily(72), wire::AcceptMode::Manual);
    table.color = wire::ColorChoice::Black as i32;
    table.rated = false;
    table.allow_hints = true;
    let table = post_seek(&mut client, table).await;
    client
        .create_seek(for_player(seek(&alice, blitz(), wire::AcceptMode::Manual)))
        .await
        .unwrap();
    let pending = request(&lobby, &table.seek_id, &bob).await.unwrap();
    let challenge = send_challenge(
        &mut client,
        pb::CreateChallengeRequest {
            player_id: bob.id.clone(),
            username: bob.name.clone(),
            opponent_username: "ALICE".into(),
            time_control: Some(daily(24)),
            color: wire::ColorChoice::White as i32,
            rated: false,
            expires_in_seconds: 0,
            allow_hints: true,
        },
    )
    .await;
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
    let received = list_seek_requests(&mut client, &alice).await.received;
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].request_id, pending.request_id);
    let accepted = accept_seek_request(&mut client, &pending.request_id, &alice)
        .await
        .unwrap();
    assert_eq!(
        game_players(&lobby, &accepted.game_id).await,
        (bob.id.clone(), alice.id.clone())
    );
    // The table's consent to hints reached its game.
    assert!(game_state(&lobby, &accepted.game_id).await.hints_allowed);
    let incoming = list_challenges(&mut client, &alice).await.incoming;
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
    let [alice, bob] = lobby.register_all(["alice", "bob"]).await;
    let mut client = lobby.client().await;
    let _before = watch(&mut client, &alice).await;
    let open = post_seek(&mut client, seek(&alice, blitz(), wire::AcceptMode::Manual)).await;
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
    let accepted = accept_seek_request(&mut client, &pending.request_id, &alice)
        .await
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
