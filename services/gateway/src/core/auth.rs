//! Session tokens: HMAC-SHA256-signed, expiring bearer tokens.
//!
//! A token is `<payload>.<signature>`, both base64url without padding; the
//! payload is `v2|<player id>|<username>|<expiry, Unix seconds>|<session
//! id>|<session generation>`. Checking the signature and expiry needs only
//! the key, so any gateway replica holding the same key accepts the tokens
//! of any other. Whether the session was ended since (sign-out, sign-out
//! everywhere, a password change) is the session id and generation checked
//! against the rating service's record, which [`crate::core::sessions`] caches.
//! Changing the key still ends every session at once.
//!
//! `v1` tokens (before sessions could end) carry neither, so they could never
//! be revoked: they are refused, and their holders sign in again once.

use std::{fmt, path::Path, time::Duration};

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use chess_domain::{PlayerId, Timestamp, Username};
use chess_runtime::secret::{HmacKey, random_key, read_key_file};
use http::HeaderMap;

/// Shortest key accepted, in bytes.
pub const MIN_KEY_BYTES: usize = 16;
const VERSION: &str = "v2";
/// The token format before sessions could be revoked.
const OLD_VERSION: &str = "v1";

/// Why the signing key could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("cannot read the token key file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("the token key must be at least {MIN_KEY_BYTES} bytes")]
    TooShort,
    #[error("give either --token-key or --token-key-file, not both")]
    Both,
}

/// Why a token was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("sign in: send `authorization: Bearer <token>` from Login")]
    Missing,
    #[error("the authorization metadata is not text")]
    NotText,
    #[error("authorization must be `Bearer <token>`")]
    NotBearer,
    #[error("the token is malformed")]
    Malformed,
    #[error("the token's signature is wrong")]
    BadSignature,
    #[error("the token has expired; log in again")]
    Expired,
    #[error("the token is of an older kind that is no longer accepted; log in again")]
    Outdated,
    #[error("the session has ended; log in again")]
    Ended,
}

/// A signed-in player, as a valid token vouches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Session {
    pub player_id: PlayerId,
    pub username: Username,
    /// Unix seconds.
    pub expires_at: i64,
    /// Random, one per sign-in: what Logout revokes.
    pub session_id: String,
    /// The player's session generation when the token was issued; tokens
    /// of an older generation than the player's current one are ended.
    pub generation: i64,
}

/// Issues and checks tokens. Cloning is cheap.
#[derive(Clone)]
pub struct Tokens {
    key: HmacKey,
    ttl: Duration,
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the key.
        f.debug_struct("Tokens").field("ttl", &self.ttl).finish()
    }
}

impl Tokens {
    /// Tokens signed with `key`, valid for `ttl`.
    pub fn new(key: &[u8], ttl: Duration) -> Result<Self, KeyError> {
        let key = HmacKey::new(key, MIN_KEY_BYTES).ok_or(KeyError::TooShort)?;
        Ok(Self { key, ttl })
    }

    /// The key from `--token-key` or the file of `--token-key-file` (its
    /// trailing whitespace ignored). With neither, a random key: tokens then
    /// die with the process and only this replica accepts them.
    pub fn from_config(
        key: Option<&str>,
        key_file: Option<&Path>,
        ttl: Duration,
    ) -> Result<Self, KeyError> {
        match (key, key_file) {
            (Some(_), Some(_)) => Err(KeyError::Both),
            (Some(key), None) => Self::new(key.as_bytes(), ttl),
            (None, Some(path)) => {
                let bytes = read_key_file(path).map_err(|source| KeyError::Read {
                    path: path.display().to_string(),
                    source,
                })?;
                Self::new(&bytes, ttl)
            }
            (None, None) => {
                tracing::warn!(
                    "no --token-key or --token-key-file: sessions end when the gateway stops and other replicas refuse them"
                );
                Self::new(&random_key(), ttl)
            }
        }
    }

    /// A token for a new session of the player in session generation
    /// `generation`, expiring `ttl` from `now` (Unix seconds).
    pub fn issue_at(
        &self,
        player_id: &PlayerId,
        username: &Username,
        generation: i64,
        now: i64,
    ) -> (String, Session) {
        let expires_at = now.saturating_add(i64::try_from(self.ttl.as_secs()).unwrap_or(i64::MAX));
        let session_id = URL_SAFE_NO_PAD.encode(rand::random::<[u8; 16]>());
        let payload =
            format!("{VERSION}|{player_id}|{username}|{expires_at}|{session_id}|{generation}");
        let signature = self.key.sign(payload.as_bytes());
        let token = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(payload.as_bytes()),
            URL_SAFE_NO_PAD.encode(signature)
        );
        let session = Session {
            player_id: player_id.clone(),
            username: username.clone(),
            expires_at,
            session_id,
            generation,
        };
        (token, session)
    }

    /// A token for a new session of the player, expiring `ttl` from now.
    pub fn issue(
        &self,
        player_id: &PlayerId,
        username: &Username,
        generation: i64,
    ) -> (String, Session) {
        self.issue_at(player_id, username, generation, Timestamp::now().secs())
    }

    /// The session `token` vouches for at `now` (Unix seconds).
    pub fn verify_at(&self, token: &str, now: i64) -> Result<Session, TokenError> {
        let (payload, signature) = token.split_once('.').ok_or(TokenError::Malformed)?;
        let payload = URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|_| TokenError::Malformed)?;
        let signature = URL_SAFE_NO_PAD
            .decode(signature)
            .map_err(|_| TokenError::Malformed)?;
        if !self.key.verify(&payload, &signature) {
            return Err(TokenError::BadSignature);
        }
        let payload = String::from_utf8(payload).map_err(|_| TokenError::Malformed)?;
        let fields: Vec<&str> = payload.split('|').collect();
        let [
            VERSION,
            player_id,
            username,
            expires_at,
            session_id,
            generation,
        ] = fields[..]
        else {
            return Err(match fields.first() {
                Some(&OLD_VERSION) => TokenError::Outdated,
                _ => TokenError::Malformed,
            });
        };
        let expires_at: i64 = expires_at.parse().map_err(|_| TokenError::Malformed)?;
        let generation: i64 = generation.parse().map_err(|_| TokenError::Malformed)?;
        if now >= expires_at {
            return Err(TokenError::Expired);
        }
        // Signed by this key: the ids were ours when the token was issued.
        Ok(Session {
            player_id: PlayerId::trusted(player_id),
            username: Username::trusted(username),
            expires_at,
            session_id: session_id.to_owned(),
            generation,
        })
    }

    /// The session a call's `authorization: Bearer <token>` metadata
    /// vouches for by signature and expiry. Whether it has ended since is
    /// [`crate::core::sessions::Sessions`]' to say.
    pub fn authenticate(&self, headers: &HeaderMap) -> Result<Session, TokenError> {
        self.optional(headers)?.ok_or(TokenError::Missing)
    }

    /// As [`authenticate`](Self::authenticate), for a call that may carry a
    /// token. A token that is present but invalid is still refused, so a
    /// client learns it expired.
    pub fn optional(&self, headers: &HeaderMap) -> Result<Option<Session>, TokenError> {
        let Some(value) = headers.get(http::header::AUTHORIZATION) else {
            return Ok(None);
        };
        let value = value.to_str().map_err(|_| TokenError::NotText)?;
        let token = value
            .strip_prefix("Bearer ")
            .or_else(|| value.strip_prefix("bearer "))
            .ok_or(TokenError::NotBearer)?;
        self.verify_at(token.trim(), Timestamp::now().secs())
            .map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens() -> Tokens {
        Tokens::new(b"0123456789abcdef0123", Duration::from_secs(3600)).unwrap()
    }

    fn id(id: &str) -> PlayerId {
        PlayerId::trusted(id)
    }

    fn name(name: &str) -> Username {
        Username::trusted(name)
    }

    #[test]
    fn tokens_round_trip_until_they_expire() {
        let t = tokens();
        let (token, issued) = t.issue_at(&id("p-1"), &name("alice"), 7, 1000);
        assert_eq!(issued.expires_at, 4600);
        let session = t.verify_at(&token, 4599).unwrap();
        assert_eq!(session, issued);
        assert_eq!(session.player_id, "p-1");
        assert_eq!(session.username, "alice");
        assert_eq!(session.generation, 7);
        assert_eq!(t.verify_at(&token, 4600), Err(TokenError::Expired));
    }

    #[test]
    fn every_sign_in_is_a_new_session() {
        let t = tokens();
        let (first, a) = t.issue_at(&id("p-1"), &name("alice"), 0, 1000);
        let (second, b) = t.issue_at(&id("p-1"), &name("alice"), 0, 1000);
        assert_ne!(first, second);
        assert_ne!(a.session_id, b.session_id);
        // 128 random bits, base64url.
        assert_eq!(a.session_id.len(), 22);
        let payload = String::from_utf8(
            URL_SAFE_NO_PAD
                .decode(first.split_once('.').unwrap().0)
                .unwrap(),
        )
        .unwrap();
        assert_eq!(payload, format!("v2|p-1|alice|4600|{}|0", a.session_id));
    }

    #[test]
    fn v1_tokens_are_refused_as_outdated() {
        let t = tokens();
        let payload = "v1|p-1|alice|99999999";
        let v1 = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(payload),
            URL_SAFE_NO_PAD.encode(t.key.sign(payload.as_bytes()))
        );
        assert_eq!(t.verify_at(&v1, 1000), Err(TokenError::Outdated));
    }

    #[test]
    fn forged_and_foreign_tokens_are_refused() {
        let t = tokens();
        let (token, _) = t.issue_at(&id("p-1"), &name("alice"), 0, 1000);
        let other = Tokens::new(b"another key of 16+ bytes", Duration::from_secs(3600)).unwrap();
        assert_eq!(other.verify_at(&token, 1001), Err(TokenError::BadSignature));
        // Claiming to be someone else breaks the signature.
        let (_, signature) = token.split_once('.').unwrap();
        let forged = format!(
            "{}.{signature}",
            URL_SAFE_NO_PAD.encode("v2|p-2|bob|99999999|s|0")
        );
        assert_eq!(t.verify_at(&forged, 1001), Err(TokenError::BadSignature));
        for junk in ["", "abc", "a.b", "..", "%%%.%%%"] {
            assert!(t.verify_at(junk, 1001).is_err(), "{junk}");
        }
    }

    #[test]
    fn metadata_is_read() {
        let t = tokens();
        let mut headers = HeaderMap::new();
        assert_eq!(t.optional(&headers).unwrap(), None);
        assert_eq!(t.authenticate(&headers), Err(TokenError::Missing));
        let (token, _) = t.issue(&id("p-1"), &name("alice"), 0);
        headers.insert(
            http::header::AUTHORIZATION,
            format!("Bearer {token}").parse().unwrap(),
        );
        assert_eq!(t.authenticate(&headers).unwrap().player_id, "p-1");
        headers.insert(http::header::AUTHORIZATION, "Basic abc".parse().unwrap());
        assert_eq!(t.optional(&headers), Err(TokenError::NotBearer));
    }

    #[test]
    fn keys_come_from_a_flag_or_a_file() {
        let ttl = Duration::from_secs(60);
        assert!(matches!(
            Tokens::from_config(Some("short"), None, ttl),
            Err(KeyError::TooShort)
        ));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, "a secret of some length\n").unwrap();
        let from_file = Tokens::from_config(None, Some(&path), ttl).unwrap();
        let from_flag = Tokens::from_config(Some("a secret of some length"), None, ttl).unwrap();
        let (token, _) = from_file.issue(&id("p"), &name("u"), 0);
        assert!(from_flag.verify_at(&token, Timestamp::now().secs()).is_ok());
        assert!(matches!(
            Tokens::from_config(Some("a secret of some length"), Some(&path), ttl),
            Err(KeyError::Both)
        ));
        assert!(Tokens::from_config(None, Some(&dir.path().join("none")), ttl).is_err());
        assert!(Tokens::from_config(None, None, ttl).is_ok());
    }
}
