//! Account rules: what makes a username, an email, a password and a linked
//! Nostr key acceptable, and the Argon2id hashing of passwords.
//!
//! Hashing is deliberately expensive, so it runs on a few threads of its own
//! instead of stalling the request threads. A login for a name nobody owns is
//! checked against a dummy hash with the same cost, so the answer takes as
//! long as for a wrong password and tells nothing about which part was wrong.

use std::{cell::RefCell, sync::Arc};

use argon2::{
    Algorithm, Argon2, Block, Params, PasswordHash, Version,
    password_hash::{Output, ParamsString, SaltString},
};

pub use chess_domain::id::{USERNAME_MAX, USERNAME_MIN, Username, username_key};
/// Fewest characters in a password.
pub const PASSWORD_MIN: usize = 8;
/// Most characters in a password; longer ones only make hashing a weapon.
pub const PASSWORD_MAX: usize = 1024;
/// Most characters in an email address (RFC 5321's path limit).
pub const EMAIL_MAX: usize = 254;

/// Input that breaks an account rule.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("not a valid email address")]
    Email,
    #[error("a password must be at least {PASSWORD_MIN} characters")]
    PasswordTooShort,
    #[error("a password must be at most {PASSWORD_MAX} characters")]
    PasswordTooLong,
    #[error("a Nostr public key must be {NOSTR_KEY_LEN} lowercase hexadecimal digits")]
    NostrKey,
}

/// Hexadecimal digits in a Nostr public key (the 32-byte x coordinate of a
/// BIP-340 key).
pub const NOSTR_KEY_LEN: usize = 64;

/// A Nostr public key as linked and looked up: exactly 64 lowercase
/// hexadecimal digits, the form Nostr events carry, so that one key has one
/// spelling.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NostrKey(String);

impl NostrKey {
    pub fn parse(key: &str) -> Result<Self, RuleError> {
        let digit = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
        if key.len() == NOSTR_KEY_LEN && key.bytes().all(digit) {
            Ok(Self(key.to_owned()))
        } else {
            Err(RuleError::NostrKey)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
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
    /// A hasher, with its dummy hash made on the hashing threads.
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
        let matches = blocking(move || matches(password.as_bytes(), &stored)).await??;
        Ok(known && matches)
    }
}

/// Most Argon2 memory a stored hash may ask for when checked (64 MiB); ours
/// ask for 19 MiB.
const MAX_BLOCKS: usize = 64 * 1024;

thread_local! {
    /// This thread's Argon2 memory, kept between runs: allocating and
    /// freeing 19 MiB per run fragments the allocator's heap, which after
    /// a burst of sign-ups held hundreds of MiB.
    static MEMORY: RefCell<Vec<Block>> = const { RefCell::new(Vec::new()) };
}

/// Runs `argon2` over `password` and `salt` into `out`, in this thread's
/// memory. Every block is written before it is read, so what an earlier run
/// left there does not matter.
fn argon2_into(
    argon2: &Argon2<'_>,
    password: &[u8],
    salt: &[u8],
    out: &mut [u8],
) -> Result<(), HashError> {
    let blocks = argon2.params().block_count();
    if blocks > MAX_BLOCKS {
        return Err(HashError(format!(
            "a hash asking for {blocks} KiB of memory is not checked"
        )));
    }
    MEMORY.with_borrow_mut(|memory| {
        if memory.len() < blocks {
            memory.resize(blocks, Block::default());
        }
        argon2
            .hash_password_into_with_memory(password, salt, out, &mut memory[..blocks])
            .map_err(|e| HashError(e.to_string()))
    })
}

fn hash(password: &[u8]) -> Result<String, HashError> {
    let fault = |e: argon2::password_hash::Error| HashError(e.to_string());
    let salt: [u8; 16] = rand::random();
    let encoded_salt = SaltString::encode_b64(&salt).map_err(fault)?;
    let argon2 = Argon2::default();
    let params = argon2.params();
    let mut out = [0; Params::DEFAULT_OUTPUT_LEN];
    argon2_into(&argon2, password, &salt, &mut out)?;
    let phc = PasswordHash {
        algorithm: Algorithm::Argon2id.ident(),
        version: Some(Version::V0x13.into()),
        params: ParamsString::try_from(params).map_err(fault)?,
        salt: Some(encoded_salt.as_salt()),
        hash: Some(Output::new(&out).map_err(fault)?),
    };
    Ok(phc.to_string())
}

/// Whether `password` hashes to `stored` (a PHC string), with the
/// algorithm, version and parameters recorded there.
fn matches(password: &[u8], stored: &str) -> Result<bool, HashError> {
    let fault = |e: argon2::password_hash::Error| HashError(e.to_string());
    let parsed = PasswordHash::new(stored).map_err(fault)?;
    let (Some(salt), Some(expected)) = (parsed.salt, parsed.hash) else {
        return Err(HashError("a stored hash without salt or output".to_owned()));
    };
    let algorithm = Algorithm::try_from(parsed.algorithm).map_err(fault)?;
    let version = parsed
        .version
        .map(Version::try_from)
        .transpose()
        .map_err(|e| HashError(e.to_string()))?
        .unwrap_or_default();
    let params = Params::try_from(&parsed).map_err(fault)?;
    let mut salt_bytes = [0; 64];
    let salt = salt.decode_b64(&mut salt_bytes).map_err(fault)?;
    let argon2 = Argon2::new(algorithm, version, params);
    let mut out = vec![0; expected.len()];
    argon2_into(&argon2, password, salt, &mut out)?;
    let computed = Output::new(&out).map_err(fault)?;
    // `Output`'s comparison takes the same time wherever they differ.
    Ok(computed == expected)
}

/// Runs password hashing off the async threads, on one thread per core
/// that lives as long as the process. Each Argon2id run takes 19 MiB and a
/// core's worth of time, so a burst of logins queues here rather than
/// exhausting memory; and because the same few threads do every run, the
/// allocator keeps at most one such buffer per thread afterwards (on a
/// pool of short-lived threads each would hold its own, hundreds of MiB
/// after a burst). A request abandoned while queued is skipped.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, HashError> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        if tx.is_closed() {
            return;
        }
        // A panic drops `tx`, which the caller sees as a failure; the
        // thread goes on with the next run.
        if let Ok(value) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)) {
            let _ = tx.send(value);
        }
    });
    hashing_threads()
        .send(job)
        .map_err(|_| HashError("the hashing threads are gone".to_owned()))?;
    rx.await
        .map_err(|_| HashError("a hashing run failed".to_owned()))
}

type Job = Box<dyn FnOnce() + Send>;

/// The queue of the hashing threads, started on first use.
fn hashing_threads() -> &'static std::sync::mpsc::Sender<Job> {
    static QUEUE: std::sync::OnceLock<std::sync::mpsc::Sender<Job>> = std::sync::OnceLock::new();
    QUEUE.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        let rx = Arc::new(std::sync::Mutex::new(rx));
        let threads = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
        for n in 0..threads {
            let rx = Arc::clone(&rx);
            let started = std::thread::Builder::new()
                .name(format!("argon2-{n}"))
                .spawn(move || {
                    loop {
                        let next = rx
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .recv();
                        match next {
                            Ok(job) => job(),
                            Err(_) => return,
                        }
                    }
                });
            if let Err(e) = started {
                tracing::error!(error = %e, "could not start a password hashing thread");
            }
        }
        tx
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nostr_keys() {
        let good = "0123456789abcdef".repeat(4);
        assert_eq!(NostrKey::parse(&good).unwrap().as_str(), good);
        for bad in [
            String::new(),
            good[1..].to_owned(),
            format!("{good}0"),
            good.to_uppercase(),
            format!("{}g", &good[1..]),
            format!("npub1{}", &good[5..]),
            format!("{} ", &good[1..]),
        ] {
            assert_eq!(NostrKey::parse(&bad), Err(RuleError::NostrKey), "{bad}");
        }
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

    /// Hashes made here and by the argon2 crate's own path (accounts stored
    /// before memory was reused) check against each other, run after run on
    /// the same memory.
    #[test]
    fn reused_memory_agrees_with_the_crates_own_hashing() {
        use argon2::{PasswordHasher as _, PasswordVerifier as _};
        for _ in 0..2 {
            let ours = hash(b"correct horse").unwrap();
            let parsed = PasswordHash::new(&ours).unwrap();
            assert!(
                Argon2::default()
                    .verify_password(b"correct horse", &parsed)
                    .is_ok()
            );
            assert!(
                Argon2::default()
                    .verify_password(b"wrong horse", &parsed)
                    .is_err()
            );
            let salt = SaltString::encode_b64(&rand::random::<[u8; 16]>()).unwrap();
            let theirs = Argon2::default()
                .hash_password(b"correct horse", &salt)
                .unwrap()
                .to_string();
            assert!(matches(b"correct horse", &theirs).unwrap());
            assert!(!matches(b"correct horsf", &theirs).unwrap());
            assert!(matches(b"correct horse", &ours).unwrap());
        }
        assert!(matches(b"x", "not a hash").is_err());
        // A hash asking for too much memory is refused, not run.
        let greedy = "$argon2id$v=19$m=1048576,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$\
                      AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
        let refused = matches(b"x", greedy).unwrap_err().to_string();
        assert!(refused.contains("memory"), "{refused}");
    }

    fn resident_kib() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap()
    }

    /// A burst of sign-ups leaves no more memory held than the first few
    /// did: every run reuses the buffers of the same few threads.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_burst_of_hashes_leaves_no_more_memory_held_than_a_few() {
        let hasher = Hasher::new().await.unwrap();
        let password = Password::parse("correct horse").unwrap();
        let burst = |n: usize| {
            let runs: Vec<_> = (0..n)
                .map(|_| {
                    let hasher = hasher.clone();
                    let password = password.clone();
                    tokio::spawn(async move { hasher.hash(&password).await.unwrap() })
                })
                .collect();
            async move {
                for run in runs {
                    run.await.unwrap();
                }
            }
        };
        let threads = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
        burst(threads * 2).await;
        let settled = resident_kib();
        burst(threads * 12).await;
        let after = resident_kib();
        // Less than one more Argon2id buffer (19 MiB) in all.
        assert!(
            after < settled + 16 * 1024,
            "{settled} KiB after a few hashes, {after} KiB after a burst"
        );
    }
}
