//! Which shards of the games this replica serves.
//!
//! Games are spread over [`chess_shards::SHARDS`] shards by id. A lone
//! replica (the embedded default, on SQLite) serves every shard for good
//! ([`Shards::lone`], with its heartbeat in `registry::lone`). Replicas
//! sharing a PostgreSQL database each serve the shards whose lease they
//! hold ([`Shards::leased`]); `registry::manager` takes, renews, hands over
//! and gives up those leases, and [`leases`] is their SQL.
//!
//! [`Shards`] is what every call consults: whether this replica serves a
//! shard now (and under which lease, for fencing its writes), and if not,
//! which replica does, for the refusal that redirects the caller. It is
//! read on every call, so it takes only uncontended read locks.

pub mod leases;

use std::{
    sync::{
        Arc, RwLock,
        atomic::{AtomicU64, Ordering},
    },
    time::Instant,
};

use chess_shards::SHARDS;
use tokio_util::{sync::CancellationToken, task::TaskTracker};

use crate::store::Fence;

/// A replica of the service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replica {
    pub id: String,
    /// Where callers reach it; empty when unknown.
    pub address: String,
}

/// A shard this replica serves: the lease its writes are fenced by, and
/// what stops its games' actors when the shard goes.
#[derive(Debug)]
pub struct Serving {
    /// `None` for a lone replica, whose writes are not fenced.
    pub fence: Option<Fence>,
    /// Cancelled when the shard stops being served here.
    pub stop: CancellationToken,
    /// The actors of the shard's games, so that stopping waits for them.
    pub tasks: TaskTracker,
}

/// Why a replica does not serve a shard.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotServed {
    /// Another replica does (its address, when known).
    Elsewhere(Option<String>),
    /// No replica does at the moment.
    Moving,
}

/// The replicas and which one serves each shard, as last read.
#[derive(Clone, Debug, Default)]
pub struct View {
    pub replicas: Vec<Replica>,
    /// Per shard, an index into `replicas`.
    pub owners: Vec<Option<usize>>,
}

/// The shards this replica serves, and where the others are.
#[derive(Debug)]
pub struct Shards {
    me: Replica,
    slots: Vec<RwLock<Option<Arc<Serving>>>>,
    /// Leased replicas: the instant, in milliseconds after `base`, until
    /// which the leases held are certainly still theirs (the start of the
    /// last successful renewal plus the lease's length). Past it (the
    /// database was unreachable, or the process was paused), the replica
    /// serves nothing until a renewal tells it what it still holds.
    valid_until: Option<AtomicU64>,
    base: Instant,
    view: RwLock<View>,
}

impl Shards {
    /// A lone replica: it serves every shard, unfenced, for good.
    pub fn lone(me: Replica) -> Arc<Self> {
        let view = View {
            replicas: vec![me.clone()],
            owners: vec![Some(0); usize::from(SHARDS)],
        };
        Arc::new(Self {
            me,
            slots: (0..SHARDS)
                .map(|_| {
                    RwLock::new(Some(Arc::new(Serving {
                        fence: None,
                        stop: CancellationToken::new(),
                        tasks: TaskTracker::new(),
                    })))
                })
                .collect(),
            valid_until: None,
            base: Instant::now(),
            view: RwLock::new(view),
        })
    }

    /// A replica among several: it serves nothing until the manager takes
    /// leases.
    pub fn leased(me: Replica) -> Arc<Self> {
        Arc::new(Self {
            me,
            slots: (0..SHARDS).map(|_| RwLock::new(None)).collect(),
            valid_until: Some(AtomicU64::new(0)),
            base: Instant::now(),
            view: RwLock::new(View {
                replicas: Vec::new(),
                owners: vec![None; usize::from(SHARDS)],
            }),
        })
    }

    pub fn me(&self) -> &Replica {
        &self.me
    }

    fn slot(&self, shard: u16) -> Option<&RwLock<Option<Arc<Serving>>>> {
        self.slots.get(usize::from(shard))
    }

    fn millis_since_base(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.base).as_millis()).unwrap_or(u64::MAX)
    }

    /// Whether the leases held are certainly still this replica's now.
    fn leases_valid(&self) -> bool {
        self.valid_until.as_ref().is_none_or(|until| {
            self.millis_since_base(Instant::now()) < until.load(Ordering::Acquire)
        })
    }

    /// Records a renewal that began at `started`: the leases held are this
    /// replica's until `started + ttl`.
    pub fn renewed(&self, started: Instant, ttl: std::time::Duration) {
        if let Some(until) = &self.valid_until {
            until.store(self.millis_since_base(started + ttl), Ordering::Release);
        }
    }

    /// The shard's serving state, if this replica serves it now; else where
    /// to go.
    pub fn serving(&self, shard: u16) -> Result<Arc<Serving>, NotServed> {
        let serving = self
            .slot(shard)
            .and_then(|slot| slot.read().unwrap_or_else(|p| p.into_inner()).clone());
        match serving {
            Some(serving) if self.leases_valid() => Ok(serving),
            Some(_) => Err(NotServed::Moving),
            None => Err(self.owner_of(shard)),
        }
    }

    /// Where shard `shard` is served, as last read.
    fn owner_of(&self, shard: u16) -> NotServed {
        let view = self.view.read().unwrap_or_else(|p| p.into_inner());
        match view.owners.get(usize::from(shard)).copied().flatten() {
            Some(i) if view.replicas.get(i).is_some_and(|r| r.id != self.me.id) => {
                NotServed::Elsewhere(
                    Some(view.replicas[i].address.clone()).filter(|a| !a.is_empty()),
                )
            }
            // Recorded as ours but not served here: being taken or given up.
            _ => NotServed::Moving,
        }
    }

    /// Whether this replica serves `shard` now.
    pub fn serves(&self, shard: u16) -> bool {
        self.serving(shard).is_ok()
    }

    /// The shards this replica serves, with their leases.
    pub fn served(&self) -> Vec<(u16, Arc<Serving>)> {
        (0..SHARDS)
            .filter_map(|shard| {
                let slot = self.slot(shard)?;
                let serving = slot.read().unwrap_or_else(|p| p.into_inner()).clone()?;
                Some((shard, serving))
            })
            .collect()
    }

    /// Starts serving `shard` under `serving`.
    pub fn start(&self, shard: u16, serving: Arc<Serving>) {
        if let Some(slot) = self.slot(shard) {
            *slot.write().unwrap_or_else(|p| p.into_inner()) = Some(serving);
        }
    }

    /// Stops serving `shard` (if it is still served under the lease of
    /// `epoch`, when given) and returns what served it.
    pub fn stop(&self, shard: u16, epoch: Option<i64>) -> Option<Arc<Serving>> {
        let slot = self.slot(shard)?;
        let mut slot = slot.write().unwrap_or_else(|p| p.into_inner());
        let matches = match (epoch, slot.as_ref().and_then(|s| s.fence)) {
            (Some(epoch), Some(fence)) => fence.epoch == epoch,
            _ => true,
        };
        if !matches {
            return None;
        }
        let serving = slot.take()?;
        serving.stop.cancel();
        Some(serving)
    }

    /// The replicas and owners as last read.
    pub fn view(&self) -> View {
        self.view.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Records the replicas and owners just read.
    pub fn set_view(&self, view: View) {
        *self.view.write().unwrap_or_else(|p| p.into_inner()) = view;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me() -> Replica {
        Replica {
            id: "game-0".into(),
            address: "10.0.0.1:50053".into(),
        }
    }

    #[test]
    fn a_lone_replica_serves_everything_unfenced() {
        let shards = Shards::lone(me());
        for shard in 0..SHARDS {
            assert!(shards.serving(shard).unwrap().fence.is_none());
        }
        assert_eq!(shards.view().owners, vec![Some(0); usize::from(SHARDS)]);
    }

    #[test]
    fn a_leased_replica_serves_only_while_its_leases_are_valid() {
        let shards = Shards::leased(me());
        assert_eq!(shards.serving(3).unwrap_err(), NotServed::Moving);
        shards.set_view(View {
            replicas: vec![
                me(),
                Replica {
                    id: "game-1".into(),
                    address: "10.0.0.2:50053".into(),
                },
            ],
            owners: (0..SHARDS).map(|s| Some(usize::from(s % 2))).collect(),
        });
        assert_eq!(
            shards.serving(3).unwrap_err(),
            NotServed::Elsewhere(Some("10.0.0.2:50053".into()))
        );
        // Ours in the view, but not served yet: moving.
        assert_eq!(shards.serving(2).unwrap_err(), NotServed::Moving);
        let serving = Arc::new(Serving {
            fence: Some(Fence { shard: 2, epoch: 5 }),
            stop: CancellationToken::new(),
            tasks: TaskTracker::new(),
        });
        shards.start(2, Arc::clone(&serving));
        // Never renewed: not valid.
        assert_eq!(shards.serving(2).unwrap_err(), NotServed::Moving);
        shards.renewed(Instant::now(), std::time::Duration::from_secs(60));
        assert_eq!(shards.serving(2).unwrap().fence, serving.fence);
        // A renewal long ago has lapsed.
        shards.renewed(shards.base, std::time::Duration::ZERO);
        assert_eq!(shards.serving(2).unwrap_err(), NotServed::Moving);
        shards.renewed(Instant::now(), std::time::Duration::from_secs(60));
        // Stopping under another lease's epoch does nothing.
        assert!(shards.stop(2, Some(4)).is_none());
        assert!(shards.stop(2, Some(5)).is_some());
        assert!(serving.stop.is_cancelled());
        assert!(!shards.serves(2));
    }
}
