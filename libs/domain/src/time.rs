//! Instants as every service keeps them, [`Timestamp`]: milliseconds since
//! the Unix epoch, with their seconds, protobuf and stored forms. Spans of
//! time (clocks, increments, time-outs) are `std::time::Duration` or, where
//! they travel as integers, [`Millis`].

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A count of milliseconds: a span on a clock, or a [`Timestamp`]'s stored
/// and wire integer.
pub type Millis = i64;

/// An instant: milliseconds since the Unix epoch (negative before 1970).
/// Stored as an `i64` column of milliseconds; on the wire a protobuf
/// `Timestamp`; where a protocol counts seconds (session expiry, Nostr's
/// `created_at`), [`Timestamp::secs`] and [`Timestamp::from_secs`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(Millis);

impl Timestamp {
    /// The Unix epoch itself.
    pub const EPOCH: Timestamp = Timestamp(0);

    /// The current wall-clock time (the epoch if the clock is set before it).
    pub fn now() -> Timestamp {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(Timestamp::EPOCH, |d| {
                Timestamp(Millis::try_from(d.as_millis()).unwrap_or(Millis::MAX))
            })
    }

    /// The instant `ms` milliseconds after the epoch.
    pub const fn from_millis(ms: Millis) -> Timestamp {
        Timestamp(ms)
    }

    /// The instant `secs` seconds after the epoch.
    pub const fn from_secs(secs: i64) -> Timestamp {
        Timestamp(secs.saturating_mul(1000))
    }

    /// Milliseconds since the epoch.
    pub const fn millis(self) -> Millis {
        self.0
    }

    /// Whole seconds since the epoch (rounded down).
    pub const fn secs(self) -> i64 {
        self.0.div_euclid(1000)
    }

    /// Whole seconds since the epoch, as protocols that cannot count before
    /// 1970 take them (0 for an earlier instant).
    pub fn unsigned_secs(self) -> u64 {
        u64::try_from(self.secs()).unwrap_or(0)
    }

    /// `ms` milliseconds later (earlier if negative), saturating at either
    /// end of time: where a span is kept as a count, as on a game's clock.
    pub const fn plus_millis(self, ms: Millis) -> Timestamp {
        Timestamp(self.0.saturating_add(ms))
    }

    /// `span` later (saturating at the end of time).
    pub fn after(self, span: Duration) -> Timestamp {
        let ms = Millis::try_from(span.as_millis()).unwrap_or(Millis::MAX);
        Timestamp(self.0.saturating_add(ms))
    }

    /// How long after `earlier` this is; zero if it is not later.
    pub fn since(self, earlier: Timestamp) -> Duration {
        Duration::from_millis(u64::try_from(self.0.saturating_sub(earlier.0)).unwrap_or(0))
    }

    /// Milliseconds from `earlier` to this (negative if `earlier` is later).
    pub const fn millis_since(self, earlier: Timestamp) -> Millis {
        self.0.saturating_sub(earlier.0)
    }

    /// The protobuf form (before 1970 too).
    pub fn to_proto(self) -> prost_types::Timestamp {
        prost_types::Timestamp {
            seconds: self.0.div_euclid(1000),
            // In 0..1000 ms: fits.
            nanos: (self.0.rem_euclid(1000) * 1_000_000) as i32,
        }
    }

    /// A protobuf timestamp (sub-millisecond parts dropped), or `None` if it
    /// lies beyond what milliseconds can count.
    pub fn from_proto(ts: &prost_types::Timestamp) -> Option<Timestamp> {
        ts.seconds
            .checked_mul(1000)
            .and_then(|ms| ms.checked_add(i64::from(ts.nanos.clamp(0, 999_999_999) / 1_000_000)))
            .map(Timestamp)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ms", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milliseconds_and_timestamps_round_trip() {
        for ms in [0, 1, 999, 1000, 1_700_000_000_123, -1, -1001] {
            let at = Timestamp::from_millis(ms);
            assert_eq!(Timestamp::from_proto(&at.to_proto()), Some(at), "{ms}");
            assert_eq!(at.millis(), ms);
        }
        let t = Timestamp::from_millis(-1).to_proto();
        assert_eq!((t.seconds, t.nanos), (-1, 999_000_000));
        assert!(Timestamp::now() > Timestamp::from_secs(1_700_000_000));
        let far = prost_types::Timestamp {
            seconds: i64::MAX,
            nanos: 0,
        };
        assert_eq!(Timestamp::from_proto(&far), None);
    }

    #[test]
    fn seconds_spans_and_order() {
        let at = Timestamp::from_millis(1_700_000_000_999);
        assert_eq!(at.secs(), 1_700_000_000);
        assert_eq!(Timestamp::from_secs(at.secs()).millis(), 1_700_000_000_000);
        assert_eq!(Timestamp::from_millis(-1).secs(), -1);
        assert_eq!(Timestamp::from_millis(-1).unsigned_secs(), 0);
        let later = at.after(Duration::from_millis(1500));
        assert_eq!(later.since(at), Duration::from_millis(1500));
        assert_eq!(at.since(later), Duration::ZERO);
        assert_eq!(at.millis_since(later), -1500);
        assert_eq!(at.plus_millis(1500), later);
        assert_eq!(later.plus_millis(-1500), at);
        assert!(later > at);
        assert_eq!(
            Timestamp::from_millis(i64::MAX)
                .after(Duration::MAX)
                .millis(),
            i64::MAX
        );
    }
}
