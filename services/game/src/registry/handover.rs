//! Shards handed in and out of the registry: a lone replica's games at
//! start-up, the games of shards taken over from another replica, and the
//! games of a shard given up or lost.

use std::{collections::HashMap, sync::Arc, time::Duration};

use chess_shards::shard_of;
use tokio_util::{sync::CancellationToken, task::TaskTracker};

use super::Registry;
use crate::{
    error::Error,
    model::Game,
    shards::{Serving, leases::Taken},
    store::{self, Fence},
};

/// How long stopping a shard waits for its games' actors to finish what
/// they are doing.
const STOP_WAIT: Duration = Duration::from_secs(10);

impl Registry {
    /// Starts every game given (a lone replica's active games at start-up).
    pub fn start_all(self: &Arc<Self>, games: Vec<Game>) -> Result<(), Error> {
        for game in games {
            let shard = shard_of(game.id());
            let serving = self.serving(game.id(), shard)?;
            self.start(game, serving);
        }
        Ok(())
    }

    /// Starts serving shards just taken over: loads their active games,
    /// gives each the time its shard spent without a replica (since
    /// `previous_renewal`, on the database's clock), and only then accepts
    /// calls about them. On failure nothing is served and the caller gives
    /// the leases back.
    pub async fn take_shards(self: &Arc<Self>, taken: &[Taken]) -> Result<usize, Error> {
        let shards: Vec<u16> = taken.iter().map(|t| t.shard).collect();
        let games = self.ctx.store.load_active(Some(&shards)).await?;
        let now = self.ctx.time.now();
        let mut by_shard: HashMap<u16, Vec<Game>> = HashMap::new();
        for game in games {
            by_shard.entry(shard_of(game.id())).or_default().push(game);
        }
        // Every credit is stored before any game starts, so that a failure
        // leaves nothing running.
        let mut ready = Vec::with_capacity(taken.len());
        for t in taken {
            let fence = Fence {
                shard: t.shard,
                epoch: t.epoch,
            };
            let mut games = by_shard.remove(&t.shard).unwrap_or_default();
            let mut credits = Vec::new();
            for game in &mut games {
                if let Some(credit) = game.credit_ownerless(t.previous_renewal, now) {
                    credits.push(store::credit_op(game, &credit));
                }
            }
            self.ctx.store.write(Some(fence), credits).await?;
            ready.push((t.shard, fence, games));
        }
        let mut count = 0;
        for (shard, fence, games) in ready {
            let serving = Arc::new(Serving {
                fence: Some(fence),
                stop: CancellationToken::new(),
                tasks: TaskTracker::new(),
            });
            count += games.len();
            for game in games {
                self.start(game, Arc::clone(&serving));
            }
            self.shards.start(shard, serving);
        }
        // Results of those shards' games may wait in the outbox.
        self.ctx.reporter.notify();
        Ok(count)
    }

    /// Stops serving `shard` (only under the lease of `epoch`, when given):
    /// calls about its games are refused from now on, and its actors finish
    /// what they are doing and stop. Returns once they have.
    pub async fn drop_shard(&self, shard: u16, epoch: Option<i64>) {
        let Some(serving) = self.shards.stop(shard, epoch) else {
            return;
        };
        self.live[usize::from(shard)]
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        serving.tasks.close();
        if tokio::time::timeout(STOP_WAIT, serving.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!(shard, "the games of a shard did not stop in time");
        }
    }

    /// A write of shard `shard` under `epoch` was refused: another replica
    /// holds the shard now, so it is dropped here.
    pub fn lost(self: &Arc<Self>, shard: u16, epoch: i64) {
        let registry = Arc::clone(self);
        // Not awaited by the actor that found out: stopping waits for it.
        tokio::spawn(async move {
            if registry.shards.serves(shard) {
                tracing::warn!(
                    shard,
                    epoch,
                    "a write was refused: another replica took the shard over; dropping it"
                );
            }
            registry.drop_shard(shard, Some(epoch)).await;
        });
    }
}
