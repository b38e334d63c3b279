//! Instants as every service keeps them: milliseconds since the Unix epoch,
//! and their protobuf form.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch.
pub type Millis = i64;

/// The current wall-clock time.
pub fn now_ms() -> Millis {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| {
        Millis::try_from(d.as_millis()).unwrap_or(Millis::MAX)
    })
}

/// `ms` as a protobuf timestamp (before 1970 too).
pub fn timestamp(ms: Millis) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: ms.div_euclid(1000),
        // In 0..1000 ms: fits.
        nanos: (ms.rem_euclid(1000) * 1_000_000) as i32,
    }
}

/// A protobuf timestamp in milliseconds (sub-millisecond parts dropped),
/// or `None` if it lies beyond what milliseconds can count.
pub fn millis(ts: &prost_types::Timestamp) -> Option<Millis> {
    ts.seconds
        .checked_mul(1000)
        .and_then(|ms| ms.checked_add(i64::from(ts.nanos.clamp(0, 999_999_999) / 1_000_000)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milliseconds_and_timestamps_round_trip() {
        for ms in [0, 1, 999, 1000, 1_700_000_000_123, -1, -1001] {
            assert_eq!(millis(&timestamp(ms)), Some(ms), "{ms}");
        }
        let t = timestamp(-1);
        assert_eq!((t.seconds, t.nanos), (-1, 999_000_000));
        assert!(now_ms() > 1_700_000_000_000);
        let far = prost_types::Timestamp {
            seconds: i64::MAX,
            nanos: 0,
        };
        assert_eq!(millis(&far), None);
    }
}
