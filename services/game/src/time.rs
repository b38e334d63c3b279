//! The service's clock: wall-clock instants derived from Tokio's monotonic
//! clock, so that timers and clocks agree, the time never jumps backwards
//! with the system clock, and tests can run under paused time.

use chess_domain::Timestamp;
use tokio::time::Instant;

/// Converts between Tokio instants and wall-clock instants.
#[derive(Clone, Copy, Debug)]
pub struct TimeSource {
    base_wall: Timestamp,
    base_instant: Instant,
}

impl TimeSource {
    /// Anchored at the current wall-clock time.
    pub fn system() -> Self {
        Self::anchored(Timestamp::now())
    }

    /// Anchored at `wall` now (for tests).
    pub fn anchored(wall: Timestamp) -> Self {
        Self {
            base_wall: wall,
            base_instant: Instant::now(),
        }
    }

    /// The current wall-clock time.
    pub fn now(&self) -> Timestamp {
        self.base_wall.after(self.base_instant.elapsed())
    }

    /// The instant at which it will be `at`.
    pub fn instant_at(&self, at: Timestamp) -> Instant {
        self.base_instant + at.since(self.base_wall)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn follows_tokio_time() {
        let t = TimeSource::anchored(Timestamp::from_millis(1_000));
        assert_eq!(t.now(), Timestamp::from_millis(1_000));
        tokio::time::advance(Duration::from_millis(2_500)).await;
        assert_eq!(t.now(), Timestamp::from_millis(3_500));
        assert_eq!(
            t.instant_at(Timestamp::from_millis(5_000)) - Instant::now(),
            Duration::from_millis(1_500)
        );
    }
}
