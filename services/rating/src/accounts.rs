//! Account rules: what makes a username, an email and a password acceptable,
//! and the Argon2id hashing of passwords.
//!
//! Hashing is deliberately expensive, so it runs on Tokio's blocking pool
//! instead of stalling the request threads. A login for a name nobody owns is
//! checked against a dummy hash with the same cost, so the answer takes as
//! long as for a wrong password and tells nothing about which part was wrong.

use std::sync::Arc;

use argon2::{
    Argon2, PasswordHash, PasswordHasher as _, PasswordVerifier as _, password_hash::SaltString,
};

/// Fewest characters in a username.
pub const USERNAME_MIN: usize = 3;
/// Most characters in a username.
pub const USERNAME_MAX: usize = 20;
/// Fewest characters in a password.
pub const PASSWORD_MIN: usize = 8;
/// Most characters in a password; longer ones only make hashing a weapon.
pub const PASSWORD_MAX: usize = 1024;
/// Most characters in an email address (RFC 5321's path limit).
pub const EMAIL_MAX: usize = 254;

/// Input that breaks an account rule.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("a username must be {USERNAME_MIN} to {USERNAME_MAX} letters, digits, `_` or `-`")]
    Username,
    #[error("not a valid email address")]
    Email,
    #[error("a password must be at least {PASSWORD_MIN} characters")]
    PasswordTooShort,
    #[error("a password must be at most {PASSWORD_MAX} characters")]
    PasswordTooLong,
}

/// A username that follows the rules: 3 to 20 ASCII letters, digits, `_` and
/// `-`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Username(String);

impl Username {
    pub fn parse(name: &str) -> Result<Self, RuleError> {
        let allowed = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
        if (USERNAME_MIN..=USERNAME_MAX).contains(&name.len()) && name.chars().all(allowed) {
            Ok(Self(name.to_owned()))
        } else {
            Err(RuleError::Username)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The form uniqueness is decided on.
    pub fn key(&self) -> String {
        username_key(&self.0)
    }
}

/// The lower-cased form of a username, which is what is unique.
pub fn username_key(name: &str) -> String {
    name.to_lowercase()
}

/// A plausible email address: `local@domain`, the local part of RFC 5322
/// "atext" characters and single dots, the domain of at least two labels of
/// letters, digits and inner hyphens. Whether mail arrives is another matter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Email(String);

impl Email {
    pub fn parse(address: &str) -> Result<Self, RuleError> {
        if valid_email(address) {
            Ok(Self(address.to_owned()))
        } else {
            Err(RuleError::Email)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The form uniqueness is decided on.
    pub fn key(&self) -> String {
        email_key(&self.0)
    }
}

/// The lower-cased form of an email address, which is what is unique.
pub fn email_key(address: &str) -> String {
    address.to_lowercase()
}

fn valid_email(address: &str) -> bool {
    if address.len() > EMAIL_MAX {
        return false;
    }
    let Some((local, domain)) = address.rsplit_once('@') else {
        return false;
    };
    let local_ok = !local.is_empty()
        && local.len() <= 64
        && local.split('.').all(|atom| {
            !atom.is_empty()
                && atom
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+/=?^_`{|}~-".contains(c))
        });
    let labels: Vec<&str> = domain.split('.').collect();
    let domain_ok = labels.len() >= 2
        && labels.iter().all(|label| {
            (1..=63).contains(&label.len())
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        });
    local_ok && domain_ok
}

/// A password long enough to keep.
#[derive(Clone, PartialEq, Eq)]
pub struct Password(String);

impl Password {
    pub fn parse(password: &str) -> Result<Self, RuleError> {
        match password.chars().count() {
            n if n < PASSWORD_MIN => Err(RuleError::PasswordTooShort),
            n if n > PASSWORD_MAX => Err(RuleError::PasswordTooLong),
            _ => Ok(Self(password.to_owned())),
        }
    }
}

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Password(***)")
    }
}

/// Hashing failed (a fault, not bad input).
#[derive(Debug, thiserror::Error)]
#[error("password hashing failed: {0}")]
pub struct HashError(String);

/// Hashes and checks passwords with Argon2id (the crate's default cost:
/// 19 MiB, 2 passes, 1 lane).
#[derive(Clone, Debug)]
pub struct Hasher {
    /// A hash of a random password, checked against for unknown logins.
    dummy: Arc<str>,
}

impl Hasher {
    /// A hasher, with its dummy hash made on the blocking pool.
    pub async fn new() -> Result<Self, HashError> {
        let secret: [u8; 32] = rand::random();
        let dummy = blocking(move || hash(&secret)).await??;
        Ok(Self {
            dummy: dummy.into(),
        })
    }

    /// The PHC string of `password` with a fresh salt.
    pub async fn hash(&self, password: &Password) -> Result<String, HashError> {
        let password = password.0.clone();
        blocking(move || hash(password.as_bytes())).await?
    }

    /// Whether `password` matches `stored`; with no stored hash (no such
    /// account) the dummy is checked, so the work done is the same, and the
    /// answer is no.
    pub async fn verify(&self, password: &str, stored: Option<String>) -> Result<bool, HashError> {
        let known = stored.is_some();
        let stored = stored.unwrap_or_else(|| self.dummy.to_string());
        let password = password.to_owned();
        let matches = blocking(move || {
            let parsed = PasswordHash::new(&stored).map_err(|e| HashError(e.to_string()))?;
            Ok::<_, HashError>(
                Argon2::default()
                    .verify_password(password.as_bytes(), &parsed)
                    .is_ok(),
            )
        })
        .await??;
        Ok(known && matches)
    }
}

fn hash(password: &[u8]) -> Result<String, HashError> {
    let salt: [u8; 16] = rand::random();
    let salt = SaltString::encode_b64(&salt).map_err(|e| HashError(e.to_string()))?;
    Argon2::default()
        .hash_password(password, &salt)
        .map(|h| h.to_string())
        .map_err(|e| HashError(e.to_string()))
}

/// Runs password hashing off the async threads, a few at a time: each
/// Argon2id run takes 19 MiB and a core's worth of time, so a burst of logins
/// must queue rather than exhaust memory.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, HashError> {
    static HASHING: std::sync::OnceLock<tokio::sync::Semaphore> = std::sync::OnceLock::new();
    let permits = HASHING.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
        tokio::sync::Semaphore::new(cores)
    });
    let _permit = permits
        .acquire()
        .await
        .map_err(|e| HashError(e.to_string()))?;
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| HashError(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usernames() {
        for good in ["abc", "Magnus_C", "a-b_c-123", "x".repeat(20).as_str()] {
            assert!(Username::parse(good).is_ok(), "{good}");
        }
        for bad in [
            "ab",
            "",
            "x".repeat(21).as_str(),
            "has space",
            "dot.ted",
            "émile",
            "a@b",
        ] {
            assert_eq!(Username::parse(bad), Err(RuleError::Username), "{bad}");
        }
        assert_eq!(Username::parse("MiXeD").unwrap().key(), "mixed");
    }

    #[test]
    fn emails() {
        for good in [
            "a@b.co",
            "first.last+tag@mail.example.org",
            "X_Y@Sub-Domain.Example",
        ] {
            assert!(Email::parse(good).is_ok(), "{good}");
        }
        for bad in [
            "", "plain", "@b.co", "a@", "a@b", "a@@b.co", "a b@c.de", "a@b..co", ".a@b.co",
            "a.@b.co", "a@-b.co", "a@b.co ",
        ] {
            assert_eq!(Email::parse(bad), Err(RuleError::Email), "{bad:?}");
        }
        assert_eq!(
            Email::parse("Ann@Example.COM").unwrap().key(),
            "ann@example.com"
        );
    }

    #[test]
    fn passwords() {
        assert_eq!(Password::parse("1234567"), Err(RuleError::PasswordTooShort));
        assert!(Password::parse("12345678").is_ok());
        // Characters, not bytes.
        assert_eq!(Password::parse("ééééééé"), Err(RuleError::PasswordTooShort));
        assert_eq!(
            Password::parse(&"x".repeat(PASSWORD_MAX + 1)),
            Err(RuleError::PasswordTooLong)
        );
        assert_eq!(
            format!("{:?}", Password::parse("secret-pw").unwrap()),
            "Password(***)"
        );
    }

    #[tokio::test]
    async fn hashes_verify_and_unknown_accounts_never_match() {
        let hasher = Hasher::new().await.unwrap();
        let password = Password::parse("correct horse").unwrap();
        let stored = hasher.hash(&password).await.unwrap();
        assert!(stored.starts_with("$argon2id$"), "{stored}");
        assert!(
            hasher
                .verify("correct horse", Some(stored.clone()))
                .await
                .unwrap()
        );
        assert!(!hasher.verify("wrong horse", Some(stored)).await.unwrap());
        assert!(!hasher.verify("correct horse", None).await.unwrap());
    }
}
