//! Who is calling: the signed, short-lived caller assertions every call
//! between the services carries, and their check on the receiving side.
//!
//! Every service of one system shares one internal key (`--internal-key-file`).
//! A caller mints an assertion for each call ([`Signer`], [`Mint`]) and sends
//! it as the `x-chess-caller` metadata:
//!
//! ```text
//! v1.<caller>.<player>.<game>.<expires ms>.<signature>
//! ```
//!
//! `caller`, `player` and `game` are base64url without padding (empty when
//! the call acts for nobody or for no one game), `expires ms` the Unix time
//! in milliseconds after which it is refused ([`LIFETIME`] after minting),
//! and `signature` the base64url HMAC-SHA256 under the internal key of
//! everything before it. An internal server refuses a call without a valid,
//! unexpired one with UNAUTHENTICATED ([`VerifyLayer`]); the [`Claims`] of a
//! valid one ride in the request's extensions, where each RPC that acts for
//! a player checks them against its request.

use std::{
    path::{Path, PathBuf},
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD as B64};
use chess_domain::Timestamp;
use hmac::Mac as _;
use tonic::{Code, Status, metadata::MetadataValue, service::interceptor::InterceptedService};

use crate::{
    Channel, Reason,
    secret::{self, HmacKey, HmacSha256},
};

/// The metadata key of the assertion.
pub const HEADER: &str = "x-chess-caller";

/// How long an assertion is accepted after it was minted.
pub const LIFETIME: Duration = Duration::from_secs(60);

/// The shortest internal key accepted.
pub const MIN_KEY_BYTES: usize = 32;

/// The longest player or game id an assertion carries: ids are short, and a
/// long one would make the header itself a burden on the connection.
pub const MAX_FIELD_BYTES: usize = 256;

/// Clock skew between machines tolerated on the expiry time.
const SKEW: Duration = Duration::from_secs(5);

/// Calls open to anyone: Kubernetes probes cannot sign, and reflection
/// reveals only the schema.
const OPEN_PREFIXES: [&str; 2] = ["/grpc.health.v1.Health/", "/grpc.reflection."];

/// Flag of every service that calls or serves internal calls.
#[derive(Clone, Debug, clap::Args)]
pub struct KeyArgs {
    /// File holding the internal key that signs and checks the calls
    /// between the services: at least 32 random bytes (e.g. `openssl rand
    /// -hex 32`), trailing whitespace ignored. Every service of the system
    /// needs the same one.
    #[arg(long)]
    pub internal_key_file: Option<PathBuf>,
}

impl KeyArgs {
    /// The key the flag names; an error if none is named.
    pub fn load(&self) -> Result<InternalKey, KeyError> {
        match self
            .internal_key_file
            .as_deref()
            .filter(|p| !p.as_os_str().is_empty())
        {
            Some(path) => InternalKey::read(path),
            None => Err(KeyError::Missing),
        }
    }
}

/// Why the internal key cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error(
        "no internal key: give --internal-key-file (a file of at least {MIN_KEY_BYTES} random bytes every service shares)"
    )]
    Missing,
    #[error("cannot read the internal key file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("the internal key in {path} is shorter than {MIN_KEY_BYTES} bytes")]
    TooShort { path: String },
}

/// The secret every service of one system shares: an [`HmacKey`] of at
/// least [`MIN_KEY_BYTES`].
#[derive(Clone, Debug)]
pub struct InternalKey(HmacKey);

impl InternalKey {
    /// `bytes` as a key, if long enough.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        HmacKey::new(bytes, MIN_KEY_BYTES).map(Self)
    }

    /// The key in the file at `path`, its trailing whitespace ignored.
    pub fn read(path: &Path) -> Result<Self, KeyError> {
        let bytes = secret::read_key_file(path).map_err(|source| KeyError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_bytes(&bytes).ok_or_else(|| KeyError::TooShort {
            path: path.display().to_string(),
        })
    }

    /// A fresh key's file contents: 32 random bytes as hex.
    pub fn generate_hex() -> String {
        secret::random_key_hex()
    }

    fn mac(&self) -> HmacSha256 {
        self.0.mac()
    }
}

/// What a valid assertion vouches for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claims {
    /// The calling service ("gateway", "matchmaking", "game", or an
    /// operator's name).
    pub caller: String,
    /// The player the call acts for, if any.
    pub player: Option<String>,
    /// The game the call acts in, if any.
    pub game: Option<String>,
    /// When the assertion stops being accepted.
    pub expires: Timestamp,
}

/// Why an assertion was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AssertionError {
    #[error("the call carries no caller assertion ({HEADER}); only the services call here")]
    Missing,
    #[error("the caller assertion is malformed")]
    Malformed,
    #[error("the caller assertion's signature is wrong")]
    BadSignature,
    #[error("the caller assertion has expired")]
    Expired,
}

impl From<AssertionError> for Status {
    fn from(e: AssertionError) -> Self {
        Status::unauthenticated(e.to_string())
    }
}

/// The assertion for `caller` acting for `player` in `game` until
/// `expires`, signed with `key`. Built in one buffer: the gateway mints
/// one for every move it relays.
fn sign(
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
    Ok(Claims {
        caller: text(caller)?,
        player: optional(player)?,
        game: optional(game)?,
        expires,
    })
}

/// The claims of `assertion` if `key` signed it and it is valid now: the
/// check a server makes of an assertion carried in a message rather than
/// in the call's metadata.
pub fn verify_now(key: &InternalKey, assertion: &str) -> Result<Claims, AssertionError> {
    verify(key, assertion, Timestamp::now())
}

/// Mints assertions for one calling service.
#[derive(Clone, Debug)]
pub struct Signer {
    key: InternalKey,
    caller: Arc<str>,
}

impl Signer {
    /// Signs as `caller` with `key`.
    pub fn new(key: InternalKey, caller: &str) -> Self {
        Self {
            key,
            caller: caller.into(),
        }
    }

    /// The calling service's name.
    pub fn caller(&self) -> &str {
        &self.caller
    }

    /// An assertion for a call acting for `player` in `game` (either may be
    /// none), valid for [`LIFETIME`] from now.
    pub fn mint(&self, player: Option<&str>, game: Option<&str>) -> Result<String, Status> {
        self.mint_expiring(player, game, Timestamp::now().after(LIFETIME))
    }

    /// An assertion as [`mint`](Self::mint) makes, expiring at `expires`.
    pub fn mint_expiring(
        &self,
        player: Option<&str>,
        game: Option<&str>,
        expires: Timestamp,
    ) -> Result<String, Status> {
        for (what, field) in [("player", player), ("game", game)] {
            if field.is_some_and(|f| f.len() > MAX_FIELD_BYTES) {
                return Err(Status::invalid_argument(format!(
                    "the {what} id is longer than {MAX_FIELD_BYTES} bytes"
                )));
            }
        }
        Ok(sign(&self.key, &self.caller, player, game, expires))
    }

    /// An interceptor that puts a fresh assertion for `player` in `game`
    /// on every call.
    pub fn bound(&self, player: Option<&str>, game: Option<&str>) -> Mint {
        Mint {
            signer: self.clone(),
            player: player.map(Into::into),
            game: game.map(Into::into),
        }
    }

    /// `channel` with every call signed for `player` in `game`.
    pub fn channel(&self, channel: Channel, player: Option<&str>, game: Option<&str>) -> Signed {
        InterceptedService::new(channel, self.bound(player, game))
    }
}

/// Puts a fresh assertion on each call.
#[derive(Clone, Debug)]
pub struct Mint {
    signer: Signer,
    player: Option<Arc<str>>,
    game: Option<Arc<str>>,
}

impl tonic::service::Interceptor for Mint {
    fn call(&mut self, mut request: tonic::Request<()>) -> Result<tonic::Request<()>, Status> {
        let assertion = self
            .signer
            .mint(self.player.as_deref(), self.game.as_deref())?;
        let value = MetadataValue::try_from(assertion)
            .map_err(|_| Status::internal("the caller assertion is not valid metadata"))?;
        request.metadata_mut().insert(HEADER, value);
        Ok(request)
    }
}

/// A channel whose every call carries an assertion.
pub type Signed = InterceptedService<Channel, Mint>;

/// A refusal with the `caller-mismatch` reason.
fn mismatch(message: &str) -> Status {
    Reason::CallerMismatch.status(Code::PermissionDenied, message)
}

impl Claims {
    /// The claims the server's [`VerifyLayer`] found on `request`.
    pub fn of<T>(request: &tonic::Request<T>) -> Result<Self, Status> {
        request
            .extensions()
            .get::<Self>()
            .cloned()
            .ok_or_else(|| AssertionError::Missing.into())
    }

    /// Refuses unless the assertion acts for `player_id`.
    pub fn check_player(&self, player_id: &str) -> Result<(), Status> {
        if self.player.as_deref() == Some(player_id) {
            Ok(())
        } else {
            Err(mismatch("the caller's assertion acts for another player"))
        }
    }

    /// Refuses unless the assertion acts in `game_id`.
    pub fn check_game(&self, game_id: &str) -> Result<(), Status> {
        if self.game.as_deref() == Some(game_id) {
            Ok(())
        } else {
            Err(mismatch("the caller's assertion acts in another game"))
        }
    }

    /// Refuses unless the assertion acts for `player_id` in `game_id`.
    pub fn check_player_in(&self, player_id: &str, game_id: &str) -> Result<(), Status> {
        self.check_player(player_id)?;
        self.check_game(game_id)
    }

    /// Refuses unless the call comes from one of `callers`.
    pub fn check_caller(&self, callers: &[&str]) -> Result<(), Status> {
        if callers.contains(&self.caller.as_str()) {
            Ok(())
        } else {
            Err(mismatch("this call is not open to the calling service"))
        }
    }
}

/// Refuses every call without a valid assertion (the open health and
/// reflection services aside) and puts the [`Claims`] of a valid one in the
/// request's extensions.
#[derive(Clone, Debug)]
pub struct VerifyLayer {
    key: InternalKey,
}

impl VerifyLayer {
    pub fn new(key: InternalKey) -> Self {
        Self { key }
    }
}

impl<S> tower::Layer<S> for VerifyLayer {
    type Service = Verify<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Verify {
            inner,
            key: self.key.clone(),
        }
    }
}

/// The service [`VerifyLayer`] makes.
#[derive(Clone, Debug)]
pub struct Verify<S> {
    inner: S,
    key: InternalKey,
}

impl<S> Verify<S> {
    fn claims<B>(&self, request: &http::Request<B>) -> Result<Claims, AssertionError> {
        let value = request
            .headers()
            .get(HEADER)
            .ok_or(AssertionError::Missing)?
            .to_str()
            .map_err(|_| AssertionError::Malformed)?;
        verify(&self.key, value, Timestamp::now())
    }
}

impl<S, B, ResBody> tower::Service<http::Request<B>> for Verify<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<ResBody>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    ResBody: Default + Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        let path = request.uri().path();
        if !OPEN_PREFIXES.iter().any(|open| path.starts_with(open)) {
            match self.claims(&request) {
                Ok(claims) => {
                    request.extensions_mut().insert(claims);
                }
                Err(e) => {
                    tracing::debug!(path, error = %e, "refused an unauthenticated call");
                    let response = Status::from(e).into_http();
                    return Box::pin(async move { Ok(response) });
                }
            }
        }
        Box::pin(self.inner.call(request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            c.player.as_deref(),
            c.game.as_deref(),
            c.expires,
        )
    }

    fn claims(player: Option<&str>, game: Option<&str>) -> Claims {
        Claims {
            caller: "gateway".to_owned(),
            player: player.map(str::to_owned),
            game: game.map(str::to_owned),
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
        assert_eq!(c.player.as_deref(), Some("p1"));
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
}
