//! Delivers finished games to the rating service.
//!
//! A finished game between registered players is written to the results
//! outbox in the same transaction that ends it, so it cannot be lost. This
//! task sends every outbox entry with `RecordResult` and deletes it once the
//! rating service acknowledged it; failures are retried with backoff. The
//! rating service applies each game id once, so a repeat after a crash
//! between acknowledgement and deletion changes nothing.

use std::{sync::Arc, time::Duration};

use chess_internal_clients::RatingClient;
use chess_runtime::Shutdown;
use tokio::sync::Notify;

use crate::{
    shards::Shards,
    store::{Store, WriteOp},
};

/// Wakes the reporter when a new result is in the outbox.
#[derive(Clone, Debug, Default)]
pub struct Reporter {
    wake: Arc<Notify>,
}

impl Reporter {
    /// Asks the reporter to look at the outbox now.
    pub fn notify(&self) {
        self.wake.notify_one();
    }

    /// Starts delivering the outbox of `store` to the rating service: the
    /// results of the games of the shards this replica serves (`shards`).
    pub fn spawn(
        store: Store,
        shards: Arc<Shards>,
        rating: RatingClient,
        shutdown: Shutdown,
    ) -> Self {
        let reporter = Self::default();
        let wake = Arc::clone(&reporter.wake);
        tokio::spawn(async move {
            let mut backoff = Duration::from_millis(500);
            loop {
                let delivered_all = deliver(&store, &shards, &rating).await;
                let wait = if delivered_all {
                    backoff = Duration::from_millis(500);
                    Duration::from_secs(60)
                } else {
                    backoff = (backoff * 2).min(Duration::from_secs(30));
                    backoff
                };
                tokio::select! {
                    () = wake.notified() => {}
                    () = tokio::time::sleep(wait) => {}
                    () = shutdown.cancelled() => break,
                }
            }
        });
        reporter
    }
}

/// Sends every pending result of the shards served here; true if all were
/// acknowledged.
async fn deliver(store: &Store, shards: &Shards, rating: &RatingClient) -> bool {
    let pending = match store.pending_results().await {
        Ok(pending) => pending,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the results outbox");
            return false;
        }
    };
    let mut all = true;
    for pending in pending {
        // Each replica delivers the results of the shards it serves.
        let Ok(serving) = shards.serving(chess_domain::shard_of(&pending.game_id)) else {
            continue;
        };
        let game_id = pending.game_id.clone();
        match rating.record_result(pending).await {
            Ok(_) => {
                if let Err(e) = store
                    .write(serving.fence, vec![WriteOp::DeleteResult(game_id.clone())])
                    .await
                {
                    tracing::warn!(%game_id, error = %e, "result delivered but not cleared; it will be sent again");
                    all = false;
                }
                tracing::debug!(%game_id, "result recorded by the rating service");
            }
            Err(status) => {
                tracing::warn!(%game_id, error = %status, "rating service did not take the result; retrying later");
                all = false;
                break;
            }
        }
    }
    all
}
