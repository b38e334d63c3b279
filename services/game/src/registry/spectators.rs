//! Who watches a game besides its players: a count that the game's actor
//! publishes as it changes, and the ticket each counted watch holds.
//!
//! A watch leaves by dropping its stream, which the actor never sees; the
//! ticket's drop lowers the count and wakes the actor instead, so a watcher
//! that vanishes (a closed tab, a cut connection) is no longer counted.

use std::sync::{
    Arc,
    atomic::{AtomicU32, Ordering},
};

use tokio::sync::Notify;

/// The spectators of one game.
#[derive(Debug, Default)]
pub(super) struct Spectators {
    count: AtomicU32,
    changed: Notify,
}

impl Spectators {
    /// Counts one more spectator for as long as the ticket lives.
    pub(super) fn admit(self: &Arc<Self>) -> Spectating {
        self.count.fetch_add(1, Ordering::Relaxed);
        self.changed.notify_one();
        Spectating(Arc::clone(self))
    }

    /// How many watch now.
    pub(super) fn count(&self) -> u32 {
        self.count.load(Ordering::Relaxed)
    }

    /// Waits until the count may have changed since the last wait.
    pub(super) async fn changed(&self) {
        self.changed.notified().await;
    }
}

/// One counted spectator, held by its watch's stream.
#[derive(Debug)]
pub struct Spectating(Arc<Spectators>);

impl Drop for Spectating {
    fn drop(&mut self) {
        self.0.count.fetch_sub(1, Ordering::Relaxed);
        self.0.changed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn tickets_count_while_held_and_wake_the_owner() {
        let spectators = Arc::new(Spectators::default());
        let first = spectators.admit();
        let second = spectators.admit();
        assert_eq!(spectators.count(), 2);
        // The wake-up of an admission waits until someone looks.
        spectators.changed().await;
        drop(first);
        spectators.changed().await;
        assert_eq!(spectators.count(), 1);
        drop(second);
        assert_eq!(spectators.count(), 0);
    }
}
