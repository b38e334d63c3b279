//! The uqchess line protocol (`../shared/protocols/uqchess.md`) on a TCP
//! port: each connection is a guest player; games go through the game
//! service and human pairings through matchmaking.
//!
//! - [`protocol`]: parsing requests.
//! - [`lines`]: bounded line reading.
//! - [`session`]: one connection's conversation.

pub mod lines;
pub mod protocol;
pub mod session;

use std::sync::atomic::{AtomicI64, Ordering};

use chess_domain::{PlayerId, Timestamp};
use tokio::net::TcpListener;
use tokio_util::{sync::CancellationToken, task::TaskTracker};

use crate::core::{clients::Backends, play::Games};

/// A strictly increasing connection time, so that the clients that connected
/// earliest are paired first even within one clock tick (a burst of
/// connections runs a few milliseconds ahead of the clock: only the order
/// matters).
fn connection_time() -> Timestamp {
    static LAST: AtomicI64 = AtomicI64::new(0);
    let now = Timestamp::now().millis();
    let mut previous = LAST.load(Ordering::Relaxed);
    let stamp = loop {
        let candidate = now.max(previous + 1);
        match LAST.compare_exchange_weak(previous, candidate, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => break candidate,
            Err(actual) => previous = actual,
        }
    };
    Timestamp::from_millis(stamp)
}

/// Accepts connections until shutdown, then waits for the sessions to end
/// (each resigns its game in progress).
pub async fn serve(listener: TcpListener, backends: Backends, shutdown: CancellationToken) {
    let sessions = TaskTracker::new();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = shutdown.cancelled() => break,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of descriptors or a connection reset before accept:
                // keep serving the others.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        // Small writes must go out at once.
        let _ = stream.set_nodelay(true);
        let guest_id = PlayerId::trusted(format!("guest-{}", uuid::Uuid::new_v4().simple()));
        tracing::debug!(%peer, %guest_id, "uqchess client connected");
        let (reader, writer) = stream.into_split();
        let session = session::Session::new(
            guest_id,
            connection_time(),
            Games::new(backends.clone()),
            reader,
            writer,
        );
        sessions.spawn(session.run(shutdown.clone()));
    }
    sessions.close();
    sessions.wait().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_times_strictly_increase() {
        let mut last = connection_time();
        for _ in 0..1000 {
            let next = connection_time();
            assert!(next > last);
            last = next;
        }
    }
}
