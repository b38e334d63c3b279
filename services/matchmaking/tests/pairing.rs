//! The pairing queues over gRPC, against the real rating and game services:
//! players pair only within their pool, and each pool makes its own kind of
//! game.

mod common;

use std::time::Duration;

use chess_proto::{
    common::v1 as wire,
    game::v1::GetGameRequest,
    matchmaking::v1::{self as pb, join_pairing_queue_response::Update},
};
use common::{Lobby, for_player};
use tonic::Streaming;

async fn join(
    lobby: &Lobby,
    guest_id: &str,
    pool: pb::PairingPool,
    account: Option<wire::RegisteredPlayer>,
) -> Streaming<pb::JoinPairingQueueResponse> {
    lobby
        .client()
        .await
        .join_pairing_queue(for_player(pb::JoinPairingQueueRequest {
            guest_id: guest_id.to_owned(),
            color: wire::ColorChoice::Either as i32,
            pool: pool as i32,
            account,
            ..Default::default()
        }))
        .await
        .expect("join the queue")
        .into_inner()
}

async fn next(stream: &mut Streaming<pb::JoinPairingQueueResponse>) -> Update {
    let message = chess_testkit::next_message(stream, Duration::from_secs(20)).await;
    message.update.expect("an update")
}

#[tokio::test]
async fn nostr_waiters_pair_only_with_each_other_in_timed_standard_games() {
    let lobby = Lobby::start().await;
    let bob = lobby.register("bob").await;
    let mut uqchess = join(&lobby, "guest-u", pb::PairingPool::Unspecified, None).await;
    assert!(matches!(next(&mut uqchess).await, Update::Queued(q) if q.waiting == 1));
    let mut first = join(&lobby, "nostr-a", pb::PairingPool::Nostr, None).await;
    // Alone in its pool, whoever waits in the other.
    assert!(matches!(next(&mut first).await, Update::Queued(q) if q.waiting == 1));
    let account = wire::RegisteredPlayer {
        player_id: bob.id.clone(),
        username: bob.name.clone(),
    };
    let mut second = join(&lobby, "nostr-b", pb::PairingPool::Nostr, Some(account)).await;
    let Update::Paired(paired) = next(&mut second).await else {
        panic!("the second Nostr waiter is paired");
    };
    assert_eq!(paired.opponent_id, "nostr-a");
    let Update::Paired(theirs) = next(&mut first).await else {
        panic!("the first Nostr waiter is paired");
    };
    assert_eq!(theirs.game_id, paired.game_id);
    assert_eq!(theirs.opponent_id, "nostr-b");

    let game = lobby
        .games()
        .await
        .get_game(GetGameRequest {
            game_id: paired.game_id.clone(),
        })
        .await
        .expect("the game exists")
        .into_inner()
        .game
        .expect("state");
    assert_eq!(game.rules, wire::RuleSet::Standard as i32);
    assert!(!game.rated);
    let Some(wire::time_control::Kind::Incremental(clock)) = game.time_control.and_then(|t| t.kind)
    else {
        panic!("a clocked game");
    };
    assert_eq!((clock.initial_seconds, clock.increment_seconds), (900, 10));
    // The one who waited plays white; the linked key is seated as its account.
    let seat = |p: Option<wire::Player>| p.and_then(|p| p.kind);
    assert!(
        matches!(seat(game.white), Some(wire::player::Kind::Guest(g)) if g.guest_id == "nostr-a")
    );
    assert!(
        matches!(seat(game.black), Some(wire::player::Kind::Registered(r)) if r.player_id == bob.id)
    );

    // An account seat is only for the Nostr pool.
    let refused = lobby
        .client()
        .await
        .join_pairing_queue(for_player(pb::JoinPairingQueueRequest {
            guest_id: "guest-x".to_owned(),
            color: wire::ColorChoice::Either as i32,
            account: Some(wire::RegisteredPlayer {
                player_id: bob.id.clone(),
                username: bob.name.clone(),
            }),
            ..Default::default()
        }))
        .await
        .expect_err("refused");
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    // The uqchess waiter still waits.
    drop(uqchess);
}
