//! The assertion's round trips and refusals, the claims' checks and key files.

use super::{assertion::sign, *};

fn key(byte: u8) -> InternalKey {
    InternalKey::from_bytes(&[byte; 32]).unwrap()
}

const NOW: Timestamp = Timestamp::from_millis(1_800_000_000_000);

fn at(ms: i64) -> Timestamp {
    Timestamp::from_millis(NOW.millis() + ms)
}

fn sign_claims(key: &InternalKey, c: &Claims) -> String {
    sign(
        key,
        &c.caller,
        c.player.as_ref().map(PlayerId::as_str),
        c.game.as_ref().map(GameId::as_str),
        c.expires,
    )
}

fn claims(player: Option<&str>, game: Option<&str>) -> Claims {
    Claims {
        caller: "gateway".to_owned(),
        player: player.map(PlayerId::trusted),
        game: game.map(GameId::trusted),
        expires: at(30_000),
    }
}

#[test]
fn an_assertion_round_trips() {
    for c in [
        claims(Some("p1"), Some("g1")),
        claims(None, Some("g1")),
        claims(None, None),
    ] {
        let assertion = sign_claims(&key(1), &c);
        assert!(assertion.starts_with("v1."), "{assertion}");
        assert_eq!(assertion.split('.').count(), 6, "{assertion}");
        assert_eq!(verify(&key(1), &assertion, NOW), Ok(c));
    }
}

#[test]
fn fields_may_hold_dots_and_anything_else() {
    let c = claims(Some("a.b.c"), Some("g.1/é"));
    let assertion = sign_claims(&key(1), &c);
    assert_eq!(assertion.split('.').count(), 6, "{assertion}");
    assert_eq!(verify(&key(1), &assertion, NOW), Ok(c));
}

#[test]
fn a_tampered_assertion_is_refused() {
    let assertion = sign_claims(&key(1), &claims(Some("p1"), Some("g1")));
    let other = sign_claims(&key(1), &claims(Some("p2"), Some("g1")));
    // p2's player field with p1's signature.
    let (_, their_sig) = assertion.rsplit_once('.').unwrap();
    let (their_claims, _) = other.rsplit_once('.').unwrap();
    let forged = format!("{their_claims}.{their_sig}");
    assert_eq!(
        verify(&key(1), &forged, NOW),
        Err(AssertionError::BadSignature)
    );
    let longer = assertion.replacen(
        &at(30_000).millis().to_string(),
        &at(50_000).millis().to_string(),
        1,
    );
    assert_eq!(
        verify(&key(1), &longer, NOW),
        Err(AssertionError::BadSignature)
    );
    for malformed in ["", "v1", "v2.a.b.c.1.x", "v1.a.b.c.x.y", "v1.a.b.1.sig"] {
        assert!(verify(&key(1), malformed, NOW).is_err(), "{malformed}");
    }
}

#[test]
fn an_expired_assertion_is_refused() {
    let assertion = sign_claims(&key(1), &claims(Some("p1"), None));
    assert!(verify(&key(1), &assertion, at(30_000)).is_ok());
    assert_eq!(
        verify(&key(1), &assertion, at(30_001)),
        Err(AssertionError::Expired)
    );
    // Expiring beyond any lifetime minted here.
    let far = Claims {
        expires: at(3_600_000),
        ..claims(None, None)
    };
    assert_eq!(
        verify(&key(1), &sign_claims(&key(1), &far), NOW),
        Err(AssertionError::Expired)
    );
}

#[test]
fn another_keys_assertion_is_refused() {
    let assertion = sign_claims(&key(2), &claims(Some("p1"), Some("g1")));
    assert_eq!(
        verify(&key(1), &assertion, NOW),
        Err(AssertionError::BadSignature)
    );
}

#[test]
fn minted_assertions_verify_and_bound_their_fields() {
    let signer = Signer::new(key(1), "matchmaking");
    let assertion = signer.mint(Some("p1"), Some("")).unwrap();
    let c = verify(&key(1), &assertion, Timestamp::now()).unwrap();
    assert_eq!(c.caller, "matchmaking");
    assert_eq!(c.player, Some(PlayerId::trusted("p1")));
    assert_eq!(c.game, None);
    let long = "x".repeat(MAX_FIELD_BYTES + 1);
    let refused = signer.mint(None, Some(&long)).unwrap_err();
    assert_eq!(refused.code(), Code::InvalidArgument);
    assert!(!refused.message().contains(&long));
}

#[test]
fn claims_are_checked_against_the_request() {
    let c = claims(Some("p1"), Some("g1"));
    assert!(c.check_player_in("p1", "g1").is_ok());
    for (player, game) in [("p2", "g1"), ("p1", "g2")] {
        let refused = c.check_player_in(player, game).unwrap_err();
        assert_eq!(refused.code(), Code::PermissionDenied);
        assert_eq!(Reason::of(&refused), Some(Reason::CallerMismatch));
    }
    let nobody = claims(None, None);
    assert!(nobody.check_player("p1").is_err());
    assert!(c.check_caller(&["gateway"]).is_ok());
    assert!(c.check_caller(&["game"]).is_err());
}

#[test]
fn keys_are_read_from_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("internal.key");
    std::fs::write(&path, format!("{}\n", InternalKey::generate_hex())).unwrap();
    assert!(InternalKey::read(&path).is_ok());
    std::fs::write(&path, "short\n").unwrap();
    assert!(matches!(
        InternalKey::read(&path),
        Err(KeyError::TooShort { .. })
    ));
    let none = KeyArgs {
        internal_key_file: None,
    };
    assert!(matches!(none.load(), Err(KeyError::Missing)));
}
