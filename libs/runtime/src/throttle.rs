//! Exponential back-off after repeated failures, per key (an account, a
//! source address), in bounded memory.
//!
//! The first [`Policy::free`] failures cost nothing; each one after them
//! doubles the wait before the key may try again, from [`Policy::base`] up
//! to [`Policy::cap`]. A key that has neither failed for
//! [`Policy::forget_after`] nor is still waiting starts afresh, and a success
//! forgives it at once. Callers check before doing the expensive or
//! sensitive work, so a waiting key costs a map lookup.

use std::{
    collections::HashMap,
    hash::Hash,
    sync::Mutex,
    time::{Duration, Instant},
};

use tonic::{Code, Status};

use crate::Reason;

/// How failures turn into waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Failures allowed before any wait.
    pub free: u32,
    /// The wait after the first failure beyond the free ones.
    pub base: Duration,
    /// The longest wait.
    pub cap: Duration,
    /// Quiet time after which a key's failures are forgotten.
    pub forget_after: Duration,
}

impl Policy {
    /// A policy that never makes anyone wait.
    pub const UNLIMITED: Self = Self {
        free: u32::MAX,
        base: Duration::ZERO,
        cap: Duration::ZERO,
        forget_after: Duration::ZERO,
    };

    /// The wait imposed right after the `failures`-th failure in a row.
    pub fn wait_after(&self, failures: u32) -> Duration {
        let Some(beyond) = failures.checked_sub(self.free).filter(|n| *n > 0) else {
            return Duration::ZERO;
        };
        // 2^31 times any base is past every sensible cap.
        let doublings = (beyond - 1).min(31);
        self.base
            .checked_mul(1 << doublings)
            .unwrap_or(Duration::MAX)
            .min(self.cap)
    }
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    failures: u32,
    last_failure: Instant,
    /// No new attempt before this.
    until: Instant,
}

impl Entry {
    /// Whether the entry still matters at `now`: the key is waiting, or its
    /// failures are recent enough to count.
    fn live(&self, policy: &Policy, now: Instant) -> bool {
        now < self.until || now < self.last_failure + policy.forget_after
    }
}

/// Failures per key under one [`Policy`], at most `max_keys` keys remembered:
/// when full, forgotten keys go first, then the longest quiet one.
#[derive(Debug)]
pub struct Throttle<K> {
    policy: Policy,
    max_keys: usize,
    entries: Mutex<HashMap<K, Entry>>,
}

impl<K: Hash + Eq + Clone> Throttle<K> {
    /// A throttle remembering at most `max_keys` keys (at least one).
    pub fn new(policy: Policy, max_keys: usize) -> Self {
        Self {
            policy,
            max_keys: max_keys.max(1),
            entries: Mutex::new(HashMap::new()),
        }
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<K, Entry>> {
        // The map stays consistent whatever panicked while holding it.
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `Err(wait)` if `key` must wait that long before trying again.
    pub fn check(&self, key: &K) -> Result<(), Duration> {
        self.check_at(key, Instant::now())
    }

    /// [`check`](Self::check) at `now`.
    pub fn check_at(&self, key: &K, now: Instant) -> Result<(), Duration> {
        match self.entries().get(key) {
            Some(entry) if now < entry.until => Err(entry.until - now),
            _ => Ok(()),
        }
    }

    /// Counts a failure of `key`; returns the wait it now has before its
    /// next attempt (zero while its failures are free).
    pub fn fail(&self, key: K) -> Duration {
        self.fail_at(key, Instant::now())
    }

    /// [`fail`](Self::fail) at `now`.
    pub fn fail_at(&self, key: K, now: Instant) -> Duration {
        if self.policy.free == u32::MAX {
            return Duration::ZERO;
        }
        let mut entries = self.entries();
        if !entries.contains_key(&key) && entries.len() >= self.max_keys {
            let policy = self.policy;
            entries.retain(|_, entry| entry.live(&policy, now));
            if entries.len() >= self.max_keys
                && let Some(oldest) = entries
                    .iter()
                    .min_by_key(|(_, entry)| entry.last_failure)
                    .map(|(k, _)| k.clone())
            {
                entries.remove(&oldest);
            }
        }
        let entry = entries.entry(key).or_insert(Entry {
            failures: 0,
            last_failure: now,
            until: now,
        });
        if !entry.live(&self.policy, now) {
            entry.failures = 0;
        }
        entry.failures = entry.failures.saturating_add(1);
        entry.last_failure = now;
        let wait = self.policy.wait_after(entry.failures);
        entry.until = now + wait;
        wait
    }

    /// Forgets `key`'s failures (it succeeded).
    pub fn forgive(&self, key: &K) {
        self.entries().remove(key);
    }

    /// How many keys are remembered.
    pub fn len(&self) -> usize {
        self.entries().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Whole seconds to tell a client, rounded up so that trying again after
/// them always works.
pub fn wait_secs(wait: Duration) -> u64 {
    wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
}

/// RESOURCE_EXHAUSTED with the `too-many-attempts` reason and the wait in
/// the message: "too many {what}; try again in N s".
pub fn status(what: &str, wait: Duration) -> Status {
    Reason::TooManyAttempts.status(
        Code::ResourceExhausted,
        format!("too many {what}; try again in {} s", wait_secs(wait)),
    )
}

/// The wait a status from [`status`] announces, if it is one.
pub fn wait_of(status: &Status) -> Option<Duration> {
    if Reason::of(status) != Some(Reason::TooManyAttempts) {
        return None;
    }
    let secs = status
        .message()
        .rsplit_once("try again in ")?
        .1
        .strip_suffix(" s")?
        .parse()
        .ok()?;
    Some(Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: Policy = Policy {
        free: 3,
        base: Duration::from_secs(1),
        cap: Duration::from_secs(30),
        forget_after: Duration::from_secs(600),
    };

    /// A throttle under [`POLICY`] for `max_keys` keys, and the instant the
    /// test starts at.
    fn fresh<K: Hash + Eq + Clone>(max_keys: usize) -> (Throttle<K>, Instant) {
        (Throttle::new(POLICY, max_keys), Instant::now())
    }

    #[test]
    fn waits_double_after_the_free_failures_up_to_the_cap() {
        let waits: Vec<u64> = (0..=12).map(|n| POLICY.wait_after(n).as_secs()).collect();
        assert_eq!(waits, [0, 0, 0, 0, 1, 2, 4, 8, 16, 30, 30, 30, 30]);
        assert_eq!(POLICY.wait_after(u32::MAX), Duration::from_secs(30));
        assert_eq!(Policy::UNLIMITED.wait_after(u32::MAX), Duration::ZERO);
    }

    #[test]
    fn a_key_waits_after_its_failures_and_is_forgiven_by_a_success() {
        let (throttle, t0) = fresh(100);
        for _ in 0..3 {
            assert_eq!(throttle.check_at(&"a", t0), Ok(()));
            assert_eq!(throttle.fail_at("a", t0), Duration::ZERO);
        }
        assert_eq!(throttle.fail_at("a", t0), Duration::from_secs(1));
        assert_eq!(throttle.check_at(&"a", t0), Err(Duration::from_secs(1)));
        // Another key is not affected.
        assert_eq!(throttle.check_at(&"b", t0), Ok(()));
        let t1 = t0 + Duration::from_secs(1);
        assert_eq!(throttle.check_at(&"a", t1), Ok(()));
        assert_eq!(throttle.fail_at("a", t1), Duration::from_secs(2));
        assert_eq!(
            throttle.check_at(&"a", t1 + Duration::from_millis(500)),
            Err(Duration::from_millis(1500))
        );
        throttle.forgive(&"a");
        assert_eq!(throttle.check_at(&"a", t1), Ok(()));
        assert_eq!(throttle.fail_at("a", t1), Duration::ZERO);
    }

    #[test]
    fn old_failures_are_forgotten() {
        let (throttle, t0) = fresh(100);
        for _ in 0..4 {
            throttle.fail_at("a", t0);
        }
        let later = t0 + POLICY.forget_after;
        assert_eq!(throttle.fail_at("a", later), Duration::ZERO);
    }

    #[test]
    fn memory_stays_bounded() {
        let (throttle, t0) = fresh(10);
        for n in 0..10 {
            throttle.fail_at(n, t0 + Duration::from_secs(n));
        }
        // Full: the quietest key makes room.
        throttle.fail_at(100, t0 + Duration::from_secs(20));
        assert_eq!(throttle.len(), 10);
        // Forgotten keys all go when room is needed.
        let much_later = t0 + Duration::from_secs(10_000);
        throttle.fail_at(200, much_later);
        assert_eq!(throttle.len(), 1);
    }

    #[test]
    fn unlimited_never_remembers() {
        let throttle = Throttle::new(Policy::UNLIMITED, 10);
        for _ in 0..100 {
            assert_eq!(throttle.fail("a"), Duration::ZERO);
        }
        assert!(throttle.is_empty());
    }

    #[test]
    fn statuses_carry_the_wait_rounded_up() {
        let status = status("failed logins", Duration::from_millis(7_200));
        assert_eq!(status.code(), Code::ResourceExhausted);
        assert_eq!(status.message(), "too many failed logins; try again in 8 s");
        assert_eq!(Reason::of(&status), Some(Reason::TooManyAttempts));
        assert_eq!(wait_of(&status), Some(Duration::from_secs(8)));
        assert_eq!(wait_of(&Status::resource_exhausted("x")), None);
    }
}
