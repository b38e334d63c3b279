//! The lease manager of a replica among several (PostgreSQL).
//!
//! Every `renew_every` (or sooner while shards it should have are being
//! handed over to it) the manager of each replica:
//!
//! 1. records a heartbeat, and renews the leases of the shards it serves;
//!    a shard whose lease it no longer holds (it was paused or cut off past
//!    the lease's end and another replica took the shard) is dropped;
//! 2. reads every lease and the live replicas, for the shard map and the
//!    refusals that redirect callers;
//! 3. works out which replica should serve each shard: rendezvous hashing
//!    over the live replicas, so that a replica coming or going moves only
//!    its share of the shards;
//! 4. hands over the shards it serves that should be another's: their games
//!    stop (each finishing what it was doing), then the lease is released;
//! 5. takes the shards that should be its own once they are free (released,
//!    or their owner died and the lease expired) — and any shard left
//!    ownerless for two lease lengths, whoever should have it — under a new
//!    epoch, loads their games and serves them.
//!
//! At start-up a replica also takes back at once the shards its previous
//! process held (same replica id), raising the epoch so that the old
//! process, if it still runs, can no longer write. On shutdown it hands
//! every shard back and removes its heartbeat, so the others take over
//! within one cycle.

use std::{sync::Arc, time::Duration};

use chess_domain::{Millis, Timestamp};
use chess_runtime::Shutdown;
use rand::Rng as _;
use sea_orm::{DatabaseConnection, DbErr};
use tokio::time::Instant;

use super::Registry;
use crate::shards::{
    Replica, Shards, View,
    leases::{self, Lease, Snapshot},
};

/// How often a replica waiting for shards to be handed over looks again.
const WAITING_POLL: Duration = Duration::from_millis(100);
/// Replicas not heard from for this long are removed from the table.
const FORGET_REPLICAS_AFTER_MS: i64 = 24 * 3_600_000;

/// How long a lease lasts and how often it is renewed.
#[derive(Clone, Copy, Debug)]
pub struct LeaseTiming {
    pub ttl: Duration,
    pub renew_every: Duration,
}

impl LeaseTiming {
    fn ttl_ms(self) -> i64 {
        i64::try_from(self.ttl.as_millis()).unwrap_or(i64::MAX)
    }
}

/// Takes, renews, hands over and gives up this replica's leases.
#[derive(Debug)]
pub struct Manager {
    registry: Arc<Registry>,
    shards: Arc<Shards>,
    db: DatabaseConnection,
    timing: LeaseTiming,
    /// This process, told apart from earlier ones of the same replica.
    instance: String,
    /// Until the first cycle succeeds: the shards this replica id still
    /// holds are its previous process's, to take back.
    first: bool,
}

impl Manager {
    pub fn new(registry: Arc<Registry>, timing: LeaseTiming) -> Self {
        let shards = Arc::clone(registry.shards());
        let db = registry.context().store.connection().clone();
        let instance = format!("{:016x}", rand::rng().random::<u64>());
        Self {
            registry,
            shards,
            db,
            timing,
            instance,
            first: true,
        }
    }

    /// Runs cycles until one succeeds (true), or until shutdown (false).
    pub async fn join(&mut self, shutdown: &Shutdown) -> bool {
        loop {
            match self.cycle().await {
                Ok(_) => return true,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot take part in the shard leases yet; retrying");
                }
            }
            tokio::select! {
                () = tokio::time::sleep(self.timing.renew_every) => {}
                () = shutdown.cancelled() => return false,
            }
        }
    }

    /// Keeps the leases until shutdown, then hands every shard back.
    pub async fn run(mut self, shutdown: Shutdown) {
        let mut next = Instant::now() + self.timing.renew_every;
        loop {
            tokio::select! {
                () = tokio::time::sleep_until(next) => {}
                () = shutdown.cancelled() => break,
            }
            let started = Instant::now();
            next = match self.cycle().await {
                Ok(true) => started + WAITING_POLL.min(self.timing.renew_every),
                Ok(false) => started + self.timing.renew_every,
                Err(e) => {
                    tracing::warn!(error = %e, "shard lease cycle failed; retrying");
                    started + (self.timing.renew_every / 2)
                }
            };
        }
        self.leave().await;
    }

    /// One cycle; true while shards this replica should serve are still
    /// held by others (being handed over).
    async fn cycle(&mut self) -> Result<bool, DbErr> {
        let me = self.shards.me().clone();
        let ttl_ms = self.timing.ttl_ms();
        let started = std::time::Instant::now();
        leases::heartbeat(&self.db, &me, &self.instance).await?;
        let held: Vec<(u16, i64)> = self
            .shards
            .served()
            .into_iter()
            .filter_map(|(shard, serving)| serving.fence.map(|f| (shard, f.epoch)))
            .collect();
        let renewed = leases::renew(&self.db, &me.id, &held, ttl_ms).await?;
        self.shards.renewed(started, self.timing.ttl);
        let lost: Vec<(u16, i64)> = held
            .iter()
            .copied()
            .filter(|(shard, _)| !renewed.contains(shard))
            .collect();
        if !lost.is_empty() {
            tracing::warn!(
                shards = ?lost.iter().map(|(s, _)| s).collect::<Vec<_>>(),
                "lost shards' leases to other replicas (this one was paused or cut off); dropping them"
            );
        }
        for (shard, epoch) in lost {
            self.registry.drop_shard(shard, Some(epoch)).await;
        }

        let snapshot = leases::read(&self.db, ttl_ms).await?;
        self.shards.set_view(view_of(&snapshot));
        let mut live = snapshot.replicas.clone();
        if !live.iter().any(|r| r.id == me.id) {
            live.push(me.clone());
        }
        let plan = plan(
            &me.id,
            &live,
            &snapshot,
            &held_now(&self.shards),
            self.first,
            ttl_ms,
        );

        for (shard, epoch) in plan.release {
            self.registry.drop_shard(shard, Some(epoch)).await;
            if leases::release(&self.db, &me.id, shard, epoch).await? {
                tracing::info!(shard, "handed a shard over");
            }
        }
        if !plan.take.is_empty() {
            let taken = leases::take(&self.db, &me.id, &plan.take, ttl_ms, self.first).await?;
            if !taken.is_empty() {
                match self.registry.take_shards(&taken).await {
                    Ok(games) => {
                        tracing::info!(shards = taken.len(), games, "took shards over");
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot load the games of shards taken over; giving them back");
                        for t in taken {
                            leases::release(&self.db, &me.id, t.shard, t.epoch).await?;
                        }
                    }
                }
            }
        }
        if self.first {
            // Tidy once per start: replicas gone for a day.
            leases::forget_replicas_older_than(&self.db, FORGET_REPLICAS_AFTER_MS).await?;
        }
        self.first = false;
        Ok(plan.waiting)
    }

    /// Removes the heartbeat, so that the others count this replica out and
    /// wait for its shards, then hands every shard back.
    async fn leave(&mut self) {
        let me = self.shards.me().id.clone();
        if let Err(e) = leases::leave(&self.db, &me, &self.instance).await {
            tracing::warn!(error = %e, "cannot remove this replica's heartbeat");
        }
        for (shard, serving) in self.shards.served() {
            let Some(fence) = serving.fence else { continue };
            self.registry.drop_shard(shard, Some(fence.epoch)).await;
            if let Err(e) = leases::release(&self.db, &me, shard, fence.epoch).await {
                tracing::warn!(shard, error = %e, "cannot release a shard's lease; it expires on its own");
            }
        }
        tracing::info!("handed every shard back");
    }
}

/// The shards served here and their epochs.
fn held_now(shards: &Shards) -> Vec<(u16, i64)> {
    shards
        .served()
        .into_iter()
        .filter_map(|(shard, serving)| serving.fence.map(|f| (shard, f.epoch)))
        .collect()
}

/// The shard map of a snapshot: each shard's owner while its lease holds.
fn view_of(snapshot: &Snapshot) -> View {
    let owners = snapshot
        .leases
        .iter()
        .map(|lease| {
            let owner = lease
                .owner
                .as_deref()
                .filter(|_| lease.expires_at > snapshot.now)?;
            snapshot.replicas.iter().position(|r| r.id == owner)
        })
        .collect();
    View {
        replicas: snapshot.replicas.clone(),
        owners,
    }
}

/// The replica that should serve `shard`: the live one with the highest
/// hash of (its id, the shard).
pub fn desired_owner(live: &[Replica], shard: u16) -> Option<&Replica> {
    live.iter()
        .max_by_key(|r| (weight(&r.id, shard), r.id.as_str()))
}

fn weight(replica: &str, shard: u16) -> u64 {
    // FNV-1a, 64 bits, then a final mix so that close ids spread well.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in replica.bytes().chain(shard.to_le_bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xff51_afd7_ed55_8ccd);
    hash ^ (hash >> 33)
}

/// What a cycle does with the leases.
#[derive(Debug, Default, PartialEq, Eq)]
struct Plan {
    release: Vec<(u16, i64)>,
    take: Vec<u16>,
    waiting: bool,
}

/// Works out, from `snapshot`, which shards replica `me` (serving `held`)
/// hands over and which it takes.
fn plan(
    me: &str,
    live: &[Replica],
    snapshot: &Snapshot,
    held: &[(u16, i64)],
    first: bool,
    ttl_ms: i64,
) -> Plan {
    let mut plan = Plan::default();
    for lease in &snapshot.leases {
        let desired = desired_owner(live, lease.shard).map(|r| r.id.as_str());
        if let Some(&(shard, epoch)) = held.iter().find(|(s, _)| *s == lease.shard) {
            if desired.is_some_and(|d| d != me) {
                plan.release.push((shard, epoch));
            }
            continue;
        }
        let free = lease.owner.is_none()
            || lease.expires_at <= snapshot.now
            || (first && lease.owner.as_deref() == Some(me));
        if desired == Some(me) {
            if free {
                plan.take.push(lease.shard);
            } else {
                plan.waiting = true;
            }
        } else if free && ownerless_for(lease, snapshot.now) > 2 * ttl_ms {
            plan.take.push(lease.shard);
        }
    }
    plan
}

/// How long a shard has gone without a live lease.
fn ownerless_for(lease: &Lease, now: Timestamp) -> Millis {
    match lease.owner {
        Some(_) => now.millis_since(lease.expires_at),
        None => now.millis_since(lease.renewed_at),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chess_shards::SHARDS;

    fn replicas(n: usize) -> Vec<Replica> {
        (0..n)
            .map(|i| Replica {
                id: format!("game-{i}"),
                address: format!("10.0.0.{i}:50053"),
            })
            .collect()
    }

    fn owners(live: &[Replica]) -> Vec<String> {
        (0..SHARDS)
            .map(|s| desired_owner(live, s).unwrap().id.clone())
            .collect()
    }

    #[test]
    fn shards_spread_evenly_and_move_only_as_much_as_they_must() {
        let three = owners(&replicas(3));
        for r in replicas(3) {
            let n = three.iter().filter(|o| **o == r.id).count();
            assert!((60..110).contains(&n), "{} has {n} shards", r.id);
        }
        // Scaling down: only the leaving replica's shards move.
        let two = owners(&replicas(2));
        for (s, (before, after)) in three.iter().zip(&two).enumerate() {
            if before != "game-2" {
                assert_eq!(before, after, "shard {s} moved between staying replicas");
            }
        }
    }

    fn snapshot(leases: Vec<Lease>, now: Millis) -> Snapshot {
        Snapshot {
            now: Timestamp::from_millis(now),
            leases,
            replicas: Vec::new(),
        }
    }

    fn lease(shard: u16, owner: Option<&str>, expires_at: Millis, renewed_at: Millis) -> Lease {
        Lease {
            shard,
            owner: owner.map(str::to_owned),
            epoch: 1,
            expires_at: Timestamp::from_millis(expires_at),
            renewed_at: Timestamp::from_millis(renewed_at),
        }
    }

    #[test]
    fn plans_take_free_shards_wait_for_held_ones_and_hand_over_others() {
        let live = replicas(2);
        let mine: Vec<u16> = (0..SHARDS)
            .filter(|&s| desired_owner(&live, s).unwrap().id == "game-0")
            .take(3)
            .collect();
        let theirs: Vec<u16> = (0..SHARDS)
            .filter(|&s| desired_owner(&live, s).unwrap().id == "game-1")
            .take(3)
            .collect();
        let now = 100_000;
        let leases = vec![
            // Mine by right and free, expired, held by the other.
            lease(mine[0], None, 0, 99_000),
            lease(mine[1], Some("game-9"), now - 1, 0),
            lease(mine[2], Some("game-1"), now + 2_000, 0),
            // The other's: held by me (hand over), free for long (take),
            // freshly released (leave to it).
            lease(theirs[0], Some("game-0"), now + 2_000, 0),
            lease(theirs[1], None, 0, now - 10_000),
            lease(theirs[2], None, 0, now - 100),
        ];
        let plan = plan(
            "game-0",
            &live,
            &snapshot(leases, now),
            &[(theirs[0], 4)],
            false,
            3_000,
        );
        assert_eq!(plan.release, vec![(theirs[0], 4)]);
        assert_eq!(plan.take, vec![mine[0], mine[1], theirs[1]]);
        assert!(plan.waiting);
    }

    #[test]
    fn a_restarted_replica_takes_back_what_it_held() {
        let live = replicas(1);
        let leases = vec![lease(5, Some("game-0"), 200_000, 0)];
        let later = plan(
            "game-0",
            &live,
            &snapshot(leases.clone(), 100_000),
            &[],
            false,
            3_000,
        );
        assert!(later.take.is_empty() && later.waiting);
        let first = plan(
            "game-0",
            &live,
            &snapshot(leases, 100_000),
            &[],
            true,
            3_000,
        );
        assert_eq!(first.take, vec![5]);
    }
}
