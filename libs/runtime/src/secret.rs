//! Secret keys kept in files, and HMAC-SHA256 keyed by them: the one home
//! of both for the internal key every service shares
//! ([`identity`](crate::identity)) and the gateway's session-token key.
//!
//! A key file holds the key's bytes as written (operators make them with
//! `openssl rand -hex 32`); trailing whitespace, such as the newline an
//! editor adds, is not part of the key.

use std::{path::Path, sync::Arc};

use hmac::{Hmac, Mac as _};
use sha2::Sha256;

/// HMAC-SHA256, the one signature of the system.
pub type HmacSha256 = Hmac<Sha256>;

/// The bytes of the key file at `path`, its trailing whitespace dropped.
pub fn read_key_file(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut bytes = std::fs::read(path)?;
    let end = bytes
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(0, |i| i + 1);
    bytes.truncate(end);
    Ok(bytes)
}

/// 32 fresh random bytes: a key for a process that was given none.
pub fn random_key() -> [u8; 32] {
    rand::random()
}

/// A fresh key file's contents: 32 random bytes as hex.
pub fn random_key_hex() -> String {
    random_key().iter().map(|b| format!("{b:02x}")).collect()
}

/// A secret key, held as HMAC-SHA256 already keyed: keying hashes the inner
/// and the outer padded key, a third of what signing a short message costs,
/// and the services sign or check on every internal call and every
/// signed-in request. Cloning is cheap; `Debug` shows no byte of it.
#[derive(Clone)]
pub struct HmacKey(Arc<HmacSha256>);

impl std::fmt::Debug for HmacKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HmacKey(…)")
    }
}

impl HmacKey {
    /// `bytes` as a key, if at least `min_len` long.
    pub fn new(bytes: &[u8], min_len: usize) -> Option<Self> {
        if bytes.len() < min_len {
            return None;
        }
        // HMAC takes keys of any length.
        let mac = HmacSha256::new_from_slice(bytes).expect("HMAC accepts any key length");
        Some(Self(Arc::new(mac)))
    }

    /// A keyed MAC to feed a message into.
    pub fn mac(&self) -> HmacSha256 {
        HmacSha256::clone(&self.0)
    }

    /// The signature of `message`.
    pub fn sign(&self, message: &[u8]) -> [u8; 32] {
        let mut mac = self.mac();
        mac.update(message);
        mac.finalize().into_bytes().into()
    }

    /// Whether `signature` is this key's of `message`, compared in constant
    /// time.
    pub fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        let mut mac = self.mac();
        mac.update(message);
        mac.verify_slice(signature).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_files_lose_their_trailing_whitespace() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, " a key\t \n\n").unwrap();
        assert_eq!(read_key_file(&path).unwrap(), b" a key");
        std::fs::write(&path, "\n").unwrap();
        assert_eq!(read_key_file(&path).unwrap(), b"");
        assert!(read_key_file(&dir.path().join("none")).is_err());
        let hex = random_key_hex();
        assert_eq!(hex.len(), 64);
        assert_ne!(hex, random_key_hex());
    }

    #[test]
    fn signatures_verify_under_their_key_only() {
        assert!(HmacKey::new(b"short", 16).is_none());
        let key = HmacKey::new(b"0123456789abcdef", 16).unwrap();
        let other = HmacKey::new(b"fedcba9876543210", 16).unwrap();
        let signature = key.sign(b"message");
        assert!(key.verify(b"message", &signature));
        assert!(!key.verify(b"massage", &signature));
        assert!(!other.verify(b"message", &signature));
        assert!(!key.verify(b"message", &signature[..31]));
        assert_eq!(format!("{key:?}"), "HmacKey(…)");
    }
}
