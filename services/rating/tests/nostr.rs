//! Nostr keys end to end: linking, replacing and unlinking a player's key,
//! looking players up by it, one key for one player; every test body run
//! once on a SQLite file and once on PostgreSQL.

mod common;

use chess_proto::{
    common::v1 as cpb,
    rating::v1::{self as pb, get_player_request::Key},
};
use common::{RatingService, register};
use futures::future::join_all;
use tonic::Code;

common::on_sqlite_and_postgres!(
    nostr_keys_link_replace_and_unlink,
    a_nostr_key_goes_to_one_player,
);

/// A well-formed Nostr public key, different for each `n`.
fn nostr_key(n: u8) -> String {
    format!("{n:02x}").repeat(32)
}

/// `request` as the gateway sends it for `player_id`.
fn for_player<T>(request: T, player_id: &str) -> tonic::Request<T> {
    chess_testkit::acting(request, player_id, None)
}

async fn link(
    client: &mut common::Client,
    player_id: &str,
    key: &str,
) -> Result<cpb::PlayerProfile, tonic::Status> {
    let request = pb::LinkNostrKeyRequest {
        player_id: player_id.into(),
        public_key: key.into(),
    };
    let response = client
        .link_nostr_key(for_player(request, player_id))
        .await?
        .into_inner();
    Ok(response.profile.expect("a profile"))
}

async fn unlink(
    client: &mut common::Client,
    player_id: &str,
) -> Result<cpb::PlayerProfile, tonic::Status> {
    let request = pb::UnlinkNostrKeyRequest {
        player_id: player_id.into(),
    };
    let response = client
        .unlink_nostr_key(for_player(request, player_id))
        .await?
        .into_inner();
    Ok(response.profile.expect("a profile"))
}

async fn get_player(
    client: &mut common::Client,
    key: Key,
) -> Result<pb::GetPlayerResponse, tonic::Status> {
    Ok(client
        .get_player(pb::GetPlayerRequest { key: Some(key) })
        .await?
        .into_inner())
}

/// The key `player_id`'s profile shows, as read by id.
async fn shown_key(client: &mut common::Client, player_id: &str) -> String {
    get_player(client, Key::PlayerId(player_id.into()))
        .await
        .expect("profile")
        .profile
        .expect("a profile")
        .nostr_public_key
}

async fn nostr_keys_link_replace_and_unlink(url: &str) {
    let (service, mut client, [ann, ben]) = RatingService::with_players(url, ["Ann", "Ben"]).await;
    let (first, second) = (nostr_key(1), nostr_key(0xab));
    assert_eq!(shown_key(&mut client, &ann).await, "");

    // Only 64 lowercase hexadecimal digits make a key.
    for bad in [
        String::new(),
        first[1..].to_owned(),
        format!("{first}0"),
        second.to_uppercase(),
        format!("{}g", &first[1..]),
        format!("npub1{}", &first[5..]),
    ] {
        let status = link(&mut client, &ann, &bad)
            .await
            .expect_err("bad key linked");
        assert_eq!(status.code(), Code::InvalidArgument, "{bad:?}: {status:?}");
        let status = get_player(&mut client, Key::NostrPublicKey(bad.clone()))
            .await
            .expect_err("bad key looked up");
        assert_eq!(status.code(), Code::InvalidArgument, "{bad:?}: {status:?}");
    }
    assert_eq!(shown_key(&mut client, &ann).await, "");
    let nobody = uuid::Uuid::now_v7().to_string();
    let status = link(&mut client, &nobody, &first)
        .await
        .expect_err("key linked to nobody");
    assert_eq!(status.code(), Code::NotFound, "{status:?}");
    let status = unlink(&mut client, &nobody)
        .await
        .expect_err("nobody's key unlinked");
    assert_eq!(status.code(), Code::NotFound, "{status:?}");
    let status = link(&mut client, "", &first)
        .await
        .expect_err("key linked without a player");
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    let status = get_player(&mut client, Key::NostrPublicKey(first.clone()))
        .await
        .expect_err("unlinked key found");
    assert_eq!(status.code(), Code::NotFound, "{status:?}");

    // Linked: the profile shows it, and it finds the player.
    let profile = link(&mut client, &ann, &first).await.expect("link");
    assert_eq!(
        (profile.player_id.as_str(), profile.username.as_str()),
        (ann.as_str(), "Ann")
    );
    assert_eq!(profile.nostr_public_key, first);
    assert_eq!(profile.ratings.len(), 5);
    let found = get_player(&mut client, Key::NostrPublicKey(first.clone()))
        .await
        .expect("by key");
    assert_eq!(found.email, "Ann@example.org");
    let found = found.profile.expect("a profile");
    assert_eq!(
        (found.player_id, found.nostr_public_key),
        (ann.clone(), first.clone())
    );
    let by_name = get_player(&mut client, Key::Username("ann".into()))
        .await
        .expect("by name")
        .profile
        .expect("a profile");
    assert_eq!(by_name.nostr_public_key, first);
    assert_eq!(shown_key(&mut client, &ben).await, "");

    // Linking it again is fine.
    let again = link(&mut client, &ann, &first).await.expect("link again");
    assert_eq!(again.nostr_public_key, first);

    // Another player cannot have it.
    let status = link(&mut client, &ben, &first)
        .await
        .expect_err("a key linked twice");
    assert_eq!(status.code(), Code::AlreadyExists, "{status:?}");
    assert!(status.message().contains("Nostr"), "{}", status.message());
    assert_eq!(shown_key(&mut client, &ben).await, "");
    assert_eq!(shown_key(&mut client, &ann).await, first);

    // A new key replaces the old one, which is then free.
    let replaced = link(&mut client, &ann, &second).await.expect("replace");
    assert_eq!(replaced.nostr_public_key, second);
    let status = get_player(&mut client, Key::NostrPublicKey(first.clone()))
        .await
        .expect_err("the old key still finds her");
    assert_eq!(status.code(), Code::NotFound, "{status:?}");
    let found = get_player(&mut client, Key::NostrPublicKey(second.clone()))
        .await
        .expect("by the new key")
        .profile
        .expect("a profile");
    assert_eq!(found.player_id, ann);
    let bens = link(&mut client, &ben, &first)
        .await
        .expect("the freed key");
    assert_eq!(
        (bens.player_id, bens.nostr_public_key),
        (ben.clone(), first.clone())
    );

    // Unlinked: gone from the profile and from lookups; unlinking again is
    // fine.
    let profile = unlink(&mut client, &ann).await.expect("unlink");
    assert_eq!(
        (
            profile.player_id.as_str(),
            profile.nostr_public_key.as_str()
        ),
        (ann.as_str(), "")
    );
    let status = get_player(&mut client, Key::NostrPublicKey(second.clone()))
        .await
        .expect_err("an unlinked key finds her");
    assert_eq!(status.code(), Code::NotFound, "{status:?}");
    assert_eq!(
        unlink(&mut client, &ann)
            .await
            .expect("unlink again")
            .nostr_public_key,
        ""
    );
    assert_eq!(shown_key(&mut client, &ben).await, first);
    service.stop().await;

    // Links last.
    let service = RatingService::start(url).await;
    let mut client = service.client().await;
    let found = get_player(&mut client, Key::NostrPublicKey(first.clone()))
        .await
        .expect("by key after restart")
        .profile
        .expect("a profile");
    assert_eq!(found.player_id, ben);
    assert_eq!(shown_key(&mut client, &ann).await, "");
    link(&mut client, &ann, &second)
        .await
        .expect("link after restart");
    service.stop().await;
}

async fn a_nostr_key_goes_to_one_player(url: &str) {
    let service = RatingService::start(url).await;
    let mut client = service.client().await;
    let mut players = Vec::new();
    for name in ["racer_a", "racer_b", "racer_c", "racer_d", "racer_e"] {
        players.push(register(&mut client, name).await);
    }
    let key = nostr_key(7);
    // Linked by all at once: the unique index lets one through.
    let attempts = players.iter().map(|player_id| {
        let mut client = client.clone();
        let key = key.clone();
        async move { link(&mut client, player_id, &key).await }
    });
    let outcomes = join_all(attempts).await;
    let winners: Vec<&cpb::PlayerProfile> =
        outcomes.iter().filter_map(|o| o.as_ref().ok()).collect();
    assert_eq!(winners.len(), 1, "{outcomes:?}");
    for outcome in outcomes.iter().filter_map(|o| o.as_ref().err()) {
        assert_eq!(outcome.code(), Code::AlreadyExists, "{outcome:?}");
    }
    let found = get_player(&mut client, Key::NostrPublicKey(key.clone()))
        .await
        .expect("by key")
        .profile
        .expect("a profile");
    assert_eq!(found.player_id, winners[0].player_id);
    for player_id in &players {
        let shown = shown_key(&mut client, player_id).await;
        if *player_id == found.player_id {
            assert_eq!(shown, key);
        } else {
            assert_eq!(shown, "");
        }
    }
    service.stop().await;
}
