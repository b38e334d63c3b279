//! An assertion's text: `v1.<caller>.<player>.<game>.<expires ms>.<signature>`
//! (see the module above), signed in one buffer and verified field by field.

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD as B64};
use chess_domain::{GameId, PlayerId, Timestamp};
use hmac::Mac as _;

use super::{AssertionError, Claims, InternalKey, LIFETIME, MAX_FIELD_BYTES, SKEW};

/// The assertion for `caller` acting for `player` in `game` until
/// `expires`, signed with `key`. Built in one buffer: the gateway mints
/// one for every move it relays.
pub(super) fn sign(
    key: &InternalKey,
    caller: &str,
    player: Option<&str>,
    game: Option<&str>,
    expires: Timestamp,
) -> String {
    let fields = caller.len() + player.map_or(0, str::len) + game.map_or(0, str::len);
    // base64 makes 4 bytes of 3; the rest is the version, the dots, the
    // expiry (20 digits at most) and the signature's 43 characters.
    let mut out = String::with_capacity(fields.div_ceil(3) * 4 + 80);
    out.push_str("v1.");
    B64.encode_string(caller, &mut out);
    out.push('.');
    B64.encode_string(player.unwrap_or_default(), &mut out);
    out.push('.');
    B64.encode_string(game.unwrap_or_default(), &mut out);
    out.push('.');
    out.push_str(&expires.millis().to_string());
    let mut mac = key.mac();
    mac.update(out.as_bytes());
    out.push('.');
    B64.encode_string(mac.finalize().into_bytes(), &mut out);
    out
}

/// The claims of `assertion` if `key` signed it and it is valid at `now`.
pub fn verify(
    key: &InternalKey,
    assertion: &str,
    now: Timestamp,
) -> Result<Claims, AssertionError> {
    // Caller, player and game are bounded, so a longer one is no assertion.
    if assertion.len() > 4 * MAX_FIELD_BYTES {
        return Err(AssertionError::Malformed);
    }
    let (signed, signature) = assertion
        .rsplit_once('.')
        .ok_or(AssertionError::Malformed)?;
    let mut fields = signed.split('.');
    let (Some("v1"), Some(caller), Some(player), Some(game), Some(expires), None) = (
        fields.next(),
        fields.next(),
        fields.next(),
        fields.next(),
        fields.next(),
        fields.next(),
    ) else {
        return Err(AssertionError::Malformed);
    };
    // A signature is 32 bytes; room for a longer one, which fails below.
    let mut signature_bytes = [0u8; 64];
    let length = B64
        .decode_slice(signature, &mut signature_bytes)
        .map_err(|_| AssertionError::Malformed)?;
    let mut mac = key.mac();
    mac.update(signed.as_bytes());
    mac.verify_slice(&signature_bytes[..length])
        .map_err(|_| AssertionError::BadSignature)?;
    let text = |f: &str| -> Result<String, AssertionError> {
        B64.decode(f)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .ok_or(AssertionError::Malformed)
    };
    let optional = |f: &str| -> Result<Option<String>, AssertionError> {
        Ok(Some(text(f)?).filter(|s| !s.is_empty()))
    };
    // Digits only, as minted: no sign.
    let expires = expires
        .parse::<u64>()
        .ok()
        .and_then(|ms| i64::try_from(ms).ok())
        .map(Timestamp::from_millis)
        .ok_or(AssertionError::Malformed)?;
    // Minted for at most LIFETIME: one expiring later was not minted here.
    if expires < now || expires > now.after(LIFETIME + SKEW) {
        return Err(AssertionError::Expired);
    }
    // Signed with our key: the ids are those one of our own services
    // vouched for.
    Ok(Claims {
        caller: text(caller)?,
        player: optional(player)?.map(PlayerId::trusted),
        game: optional(game)?.map(GameId::trusted),
        expires,
    })
}

/// The claims of `assertion` if `key` signed it and it is valid now: the
/// check a server makes of an assertion carried in a message rather than
/// in the call's metadata.
pub fn verify_now(key: &InternalKey, assertion: &str) -> Result<Claims, AssertionError> {
    verify(key, assertion, Timestamp::now())
}
