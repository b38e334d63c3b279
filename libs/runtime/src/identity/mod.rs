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
//!
//! Here the key, the claims and their checks; `assertion.rs` the text of an
//! assertion, signed and verified; `layer.rs` the client interceptor that
//! mints one per call and the server layer that checks them.

mod assertion;
mod layer;
#[cfg(test)]
mod tests;

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use chess_domain::{GameId, PlayerId, Timestamp};
use tonic::{Code, Status};

use crate::{
    Reason,
    secret::{self, HmacKey, HmacSha256},
};

pub use assertion::{verify, verify_now};
pub use layer::{Mint, Signed, Signer, Verify, VerifyLayer};

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
pub(crate) const SKEW: Duration = Duration::from_secs(5);

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

    pub(crate) fn mac(&self) -> HmacSha256 {
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
    pub player: Option<PlayerId>,
    /// The game the call acts in, if any.
    pub game: Option<GameId>,
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

    /// Refuses unless the assertion acts for `player_id` (as a request
    /// names it).
    pub fn check_player(&self, player_id: &str) -> Result<(), Status> {
        if self.player.as_ref().is_some_and(|p| *p == *player_id) {
            Ok(())
        } else {
            Err(mismatch("the caller's assertion acts for another player"))
        }
    }

    /// Refuses unless the assertion acts in `game_id` (as a request names
    /// it).
    pub fn check_game(&self, game_id: &str) -> Result<(), Status> {
        if self.game.as_ref().is_some_and(|g| *g == *game_id) {
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
