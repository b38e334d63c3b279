//! The service's clock: wall-clock milliseconds derived from Tokio's
//! monotonic clock, so that timers and clocks agree, the time never jumps
//! backwards with the system clock, and tests can run under paused time.

use std::time::Duration;

pub use chess_domain::time::timestamp;
use chess_domain::{Millis, now_ms};
use tokio::time::Instant;

/// Converts between Tokio instants and wall-clock milliseconds.
#[derive(Clone, Copy, Debug)]
pub struct TimeSource {
    base_wall: Millis,
    base_instant: Instant,
}

impl TimeSource {
    /// Anchored at the current wall-clock time.
    pub fn system() -> Self {
        Self::anchored(now_ms())
    }

    /// Anchored at `wall` milliseconds now (for tests).
    pub fn anchored(wall: Millis) -> Self {
        Self {
            base_wall: wall,
            base_instant: Instant::now(),
        }
    }

    /// The current time in milliseconds since the epoch.
    pub fn now(&self) -> Millis {
        self.base_wall + self.base_instant.elapsed().as_millis() as Millis
    }

    /// The instant at which it will be `at`.
    pub fn instant_at(&self, at: Millis) -> Instant {
        let offset = (at - self.base_wall).max(0) as u64;
        self.base_instant + Duration::from_millis(offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn follows_tokio_time() {
        let t = TimeSource::anchored(1_000);
        assert_eq!(t.now(), 1_000);
        tokio::time::advance(Duration::from_millis(2_500)).await;
        assert_eq!(t.now(), 3_500);
        assert_eq!(
            t.instant_at(5_000) - Instant::now(),
            Duration::from_millis(1_500)
        );
        assert_eq!(timestamp(1_234).seconds, 1);
        assert_eq!(timestamp(1_234).nanos, 234_000_000);
        assert_eq!(timestamp(-1).seconds, -1);
        assert_eq!(timestamp(-1).nanos, 999_000_000);
    }
}
