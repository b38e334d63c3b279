//! Delivers finished games to the rating service.
//!
//! A finished game between registered players is written to the results
//! outbox in the same transaction that ends it, so it cannot be lost. This
//! task sends every outbox entry with `RecordResult` and deletes it once the
//! rating service acknowledged it; failures are retried with backoff. The
//! rating service applies each game id once, so a repeat after a crash
//! between acknowledgement and deletion changes nothing.

use std::{
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use chess_internal_clients::RatingClient;
use chess_runtime::Shutdown;
use tokio::{sync::Notify, task::JoinHandle};

use crate::{
    shards::Shards,
    store::{Store, WriteOp},
};

/// Wakes the reporter when a new result is in the outbox.
#[derive(Clone, Debug, Default)]
pub struct Reporter {
    wake: Arc<Notify>,
    /// The delivering task, until [`Reporter::stop`] waits for it.
    task: Arc<Mutex<Option<JoinHandle<()>>>>,
}

impl Reporter {
    /// Asks the reporter to look at the outbox now.
    pub fn notify(&self) {
        self.wake.notify_one();
    }

    /// Waits until the delivering task has ended, which it does once
    /// `shutdown` (given to [`Reporter::spawn`]) is cancelled and the result
    /// it may be sending is answered and cleared; after `grace`, ends it
    /// where it is. The store must stay open until then: a result
    /// acknowledged but not cleared is sent again at the next start (which
    /// the rating service ignores), so ending it only costs a repeat.
    pub async fn stop(&self, grace: Duration) {
        let task = self
            .task
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(mut task) = task else {
            return;
        };
        match tokio::time::timeout(grace, &mut task).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "the results reporter failed"),
            Err(_) => {
                tracing::warn!(
                    ?grace,
                    "the results reporter did not stop in time; ending it"
                );
                task.abort();
            }
        }
    }

    /// Starts delivering the outbox of `store` to the rating service: the
    /// results of the games of the shards this replica serves (`shards`),
    /// until `shutdown`.
    pub fn spawn(
        store: Store,
        shards: Arc<Shards>,
        rating: RatingClient,
        shutdown: Shutdown,
    ) -> Self {
        let reporter = Self::default();
        let wake = Arc::clone(&reporter.wake);
        let task = tokio::spawn(async move {
            let mut backoff = Duration::from_millis(500);
            loop {
                let delivered_all = deliver(&store, &shards, &rating, &shutdown).await;
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
        *reporter.task.lock().unwrap_or_else(PoisonError::into_inner) = Some(task);
        reporter
    }
}

/// Sends every pending result of the shards served here, one at a time
/// until `shutdown`; true if all were acknowledged.
async fn deliver(
    store: &Store,
    shards: &Shards,
    rating: &RatingClient,
    shutdown: &Shutdown,
) -> bool {
    let pending = match store.pending_results().await {
        Ok(pending) => pending,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the results outbox");
            return false;
        }
    };
    let mut all = true;
    for pending in pending {
        if shutdown.is_cancelled() {
            return false;
        }
        // Each replica delivers the results of the shards it serves.
        let Ok(serving) = shards.serving(chess_shards::shard_of(&pending.game_id)) else {
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
