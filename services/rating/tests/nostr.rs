//! Nostr keys end to end: linking, replacing and unlinking a player's key,
//! looking players up by it, one key for one player; every test body run
//! once on a SQLite file and once on PostgreSQL.

mod common;

use chess_proto::{
    common::v1 as cpb,
    rating::v1::{self as pb, get_player_request::Key},
};
use common::{RatingService, assert_refused, register};
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

/// Links `key` to `player_id`, or unlinks their key for None, as the
/// gateway asks for them; the profile answered.
async fn set_key(
    client: &mut common::Client,
    player_id: &str,
    key: Option<&str>,
) -> Result<cpb::PlayerProfile, tonic::Status> {
    let profile = if let Some(key) = key {
        let request = pb::LinkNostrKeyRequest {
            player_id: player_id.into(),
            public_key: key.into(),
        };
        let linked = client.link_nostr_key(for_player(request, player_id));
        linked.await?.into_inner().profile
    } else {
        let request = pb::UnlinkNostrKeyRequest {
            player_id: player_id.into(),
        };
        let unlinked = client.unlink_nostr_key(for_player(request, player_id));
        unlinked.await?.into_inner().profile
    };
    Ok(profile.expect("a profile"))
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

/// The profile of the player `key` finds.
async fn profile_by(client: &mut common::Client, key: Key) -> cpb::PlayerProfile {
    let answer = get_player(client, key).await;
    answer.expect("found").profile.expect("a profile")
}

/// The key `player_id`'s profile shows, as read by id.
async fn shown_key(client: &mut common::Client, player_id: &str) -> String {
    let profile = profile_by(client, Key::PlayerId(player_id.into())).await;
    profile.nostr_public_key
}

async fn nostr_keys_link_replace_and_unlink(url: &str) {
    let (service, mut client, [ann, ben]) = RatingService::with_players(url, ["Ann", "Ben"]).await;
    let (first, second) = (nostr_key(1), nostr_key(0xab));
    assert_eq!(shown_key(&mut client, &ann).await, "");

    // Only 64 lowercase hexadecimal digits make a key (the rule's cases are
    // `NostrKey::parse`'s tests): the service refuses the others.
    for bad in [
        format!("{first}0"),
        second.to_uppercase(),
        format!("npub1{}", &first[5..]),
    ] {
        assert_refused(
            set_key(&mut client, &ann, Some(&bad)).await,
            Code::InvalidArgument,
        );
        assert_refused(
            get_player(&mut client, Key::NostrPublicKey(bad.clone())).await,
            Code::InvalidArgument,
        );
    }
    assert_eq!(shown_key(&mut client, &ann).await, "");
    let nobody = uuid::Uuid::now_v7().to_string();
    assert_refused(
        set_key(&mut client, &nobody, Some(&first)).await,
        Code::NotFound,
    );
    assert_refused(set_key(&mut client, &nobody, None).await, Code::NotFound);
    assert_refused(
        set_key(&mut client, "", Some(&first)).await,
        Code::InvalidArgument,
    );
    assert_refused(
        get_player(&mut client, Key::NostrPublicKey(first.clone())).await,
        Code::NotFound,
    );

    // Linked: the profile shows it, and it finds the player.
    let profile = set_key(&mut client, &ann, Some(&first))
        .await
        .expect("link");
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
    let by_name = profile_by(&mut client, Key::Username("ann".into())).await;
    assert_eq!(by_name.nostr_public_key, first);
    assert_eq!(shown_key(&mut client, &ben).await, "");

    // Linking it again is fine.
    let again = set_key(&mut client, &ann, Some(&first))
        .await
        .expect("link again");
    assert_eq!(again.nostr_public_key, first);

    // Another player cannot have it.
    let status = set_key(&mut client, &ben, Some(&first))
        .await
        .expect_err("a key linked twice");
    assert_eq!(status.code(), Code::AlreadyExists, "{status:?}");
    assert!(status.message().contains("Nostr"), "{}", status.message());
    assert_eq!(shown_key(&mut client, &ben).await, "");
    assert_eq!(shown_key(&mut client, &ann).await, first);

    // A new key replaces the old one, which is then free.
    let replaced = set_key(&mut client, &ann, Some(&second))
        .await
        .expect("replace");
    assert_eq!(replaced.nostr_public_key, second);
    assert_refused(
        get_player(&mut client, Key::NostrPublicKey(first.clone())).await,
        Code::NotFound,
    );
    let found = profile_by(&mut client, Key::NostrPublicKey(second.clone())).await;
    assert_eq!(found.player_id, ann);
    let bens = set_key(&mut client, &ben, Some(&first))
        .await
        .expect("the freed key");
    assert_eq!(
        (bens.player_id, bens.nostr_public_key),
        (ben.clone(), first.clone())
    );

    // Unlinked: gone from the profile and from lookups; unlinking again is
    // fine.
    let profile = set_key(&mut client, &ann, None).await.expect("unlink");
    assert_eq!(
        (
            profile.player_id.as_str(),
            profile.nostr_public_key.as_str()
        ),
        (ann.as_str(), "")
    );
    assert_refused(
        get_player(&mut client, Key::NostrPublicKey(second.clone())).await,
        Code::NotFound,
    );
    assert_eq!(
        set_key(&mut client, &ann, None)
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
    let found = profile_by(&mut client, Key::NostrPublicKey(first.clone())).await;
    assert_eq!(found.player_id, ben);
    assert_eq!(shown_key(&mut client, &ann).await, "");
    set_key(&mut client, &ann, Some(&second))
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
        async move { set_key(&mut client, player_id, Some(&key)).await }
    });
    let outcomes = join_all(attempts).await;
    let winners: Vec<&cpb::PlayerProfile> =
        outcomes.iter().filter_map(|o| o.as_ref().ok()).collect();
    assert_eq!(winners.len(), 1, "{outcomes:?}");
    for outcome in outcomes.iter().filter_map(|o| o.as_ref().err()) {
        assert_eq!(outcome.code(), Code::AlreadyExists, "{outcome:?}");
    }
    let found = profile_by(&mut client, Key::NostrPublicKey(key.clone())).await;
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
