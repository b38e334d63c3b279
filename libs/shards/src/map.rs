//! The shard map: the replicas of the game service and which one serves
//! each shard of games, as `GetShardMap` tells it, checked once on arrival
//! so that looking a shard up is an index.

use crate::SHARDS;
use chess_proto::game::v1 as pb;

/// A replica of the game service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replica {
    pub id: String,
    /// `host:port`; empty when the replica knows no address others can use
    /// (then it is reached at the address the caller was given).
    pub address: String,
}

/// Which replica serves each shard.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardMap {
    replicas: Vec<Replica>,
    /// Per shard, the index in `replicas` of its owner.
    owners: Vec<Option<u16>>,
    /// Indexes of the replicas serving at least one shard, in order.
    serving: Vec<usize>,
    /// The index of the replica that answered, if it is listed.
    answered_by: Option<usize>,
}

/// Why a map cannot be used.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum MapError {
    #[error("the map spreads games over {0} shards, not {SHARDS}")]
    ShardCount(u32),
    #[error("the map names {0} owners for {SHARDS} shards")]
    Owners(usize),
    #[error("the map names no replica")]
    NoReplica,
    #[error("the map names replica {0:?} twice")]
    Duplicate(String),
}

impl ShardMap {
    /// The map in a `GetShardMap` answer. An owner the map does not list
    /// among its replicas counts as none.
    pub fn parse(response: pb::GetShardMapResponse) -> Result<Self, MapError> {
        if response.shard_count != u32::from(SHARDS) {
            return Err(MapError::ShardCount(response.shard_count));
        }
        if response.owners.len() != usize::from(SHARDS) {
            return Err(MapError::Owners(response.owners.len()));
        }
        if response.replicas.is_empty() {
            return Err(MapError::NoReplica);
        }
        let mut replicas: Vec<Replica> = Vec::with_capacity(response.replicas.len());
        for r in response.replicas {
            if replicas.iter().any(|known| known.id == r.id) {
                return Err(MapError::Duplicate(r.id));
            }
            replicas.push(Replica {
                id: r.id,
                address: r.address,
            });
        }
        let index = |id: &str| -> Option<u16> {
            if id.is_empty() {
                return None;
            }
            let i = replicas.iter().position(|r| r.id == id)?;
            u16::try_from(i).ok()
        };
        let owners: Vec<Option<u16>> = response.owners.iter().map(|id| index(id)).collect();
        let serving = (0..replicas.len())
            .filter(|&i| owners.iter().any(|o| o.map(usize::from) == Some(i)))
            .collect();
        let answered_by = replicas.iter().position(|r| r.id == response.replica_id);
        Ok(Self {
            replicas,
            owners,
            serving,
            answered_by,
        })
    }

    /// The map of a game service that predates shards: the one replica
    /// asked serves them all.
    pub fn single() -> Self {
        Self {
            replicas: vec![Replica {
                id: String::new(),
                address: String::new(),
            }],
            owners: vec![Some(0); usize::from(SHARDS)],
            serving: vec![0],
            answered_by: Some(0),
        }
    }

    pub fn replicas(&self) -> &[Replica] {
        &self.replicas
    }

    /// The index of the replica serving `shard`, if one does.
    pub fn owner(&self, shard: u16) -> Option<usize> {
        self.owners
            .get(usize::from(shard))
            .copied()
            .flatten()
            .map(usize::from)
    }

    /// The indexes of the replicas serving at least one shard.
    pub fn serving(&self) -> &[usize] {
        &self.serving
    }

    /// How many shards have an owner.
    pub fn served(&self) -> usize {
        self.owners.iter().filter(|o| o.is_some()).count()
    }

    /// Whether every shard has an owner.
    pub fn complete(&self) -> bool {
        self.served() == self.owners.len()
    }

    /// The index of the replica that sent the map.
    pub fn answered_by(&self) -> Option<usize> {
        self.answered_by
    }

    /// The index of replica `id`.
    pub fn position(&self, id: &str) -> Option<usize> {
        self.replicas.iter().position(|r| r.id == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replica(id: &str, address: &str) -> pb::GameReplica {
        pb::GameReplica {
            id: id.to_owned(),
            address: address.to_owned(),
        }
    }

    /// Shards spread over `ids` in turn; `""` leaves a shard without owner.
    fn response(replicas: Vec<pb::GameReplica>, owners: &[&str]) -> pb::GetShardMapResponse {
        pb::GetShardMapResponse {
            shard_count: u32::from(SHARDS),
            replicas,
            owners: (0..usize::from(SHARDS))
                .map(|s| owners[s % owners.len()].to_owned())
                .collect(),
            replica_id: "b".to_owned(),
        }
    }

    #[test]
    fn one_replica_serves_every_shard() {
        let map = ShardMap::parse(response(vec![replica("game", "")], &["game"])).unwrap();
        assert!(map.complete());
        assert_eq!(map.served(), usize::from(SHARDS));
        assert_eq!(map.owner(0), Some(0));
        assert_eq!(map.owner(SHARDS - 1), Some(0));
        assert_eq!(map.owner(SHARDS), None);
        assert_eq!(map.serving(), &[0]);
        assert_eq!(map.replicas()[0].address, "");
        // Not listed: answered by "b".
        assert_eq!(map.answered_by(), None);
        assert_eq!(ShardMap::single().owner(7), Some(0));
        assert!(ShardMap::single().complete());
    }

    #[test]
    fn shards_are_looked_up_by_owner() {
        let map = ShardMap::parse(response(
            vec![
                replica("a", "10.0.0.1:50053"),
                replica("b", "10.0.0.2:50053"),
                replica("c", "10.0.0.3:50053"),
            ],
            &["a", "b", "", "ghost"],
        ))
        .unwrap();
        assert_eq!(map.owner(0), Some(0));
        assert_eq!(map.owner(1), Some(1));
        // Nobody, and a replica the map does not list.
        assert_eq!(map.owner(2), None);
        assert_eq!(map.owner(3), None);
        assert_eq!(map.owner(4), Some(0));
        assert!(!map.complete());
        assert_eq!(map.served(), usize::from(SHARDS) / 2);
        // c serves nothing.
        assert_eq!(map.serving(), &[0, 1]);
        assert_eq!(map.answered_by(), Some(1));
        assert_eq!(map.position("c"), Some(2));
        assert_eq!(map.position("ghost"), None);
    }

    #[test]
    fn maps_that_cannot_be_used_are_refused() {
        let good = response(vec![replica("a", "")], &["a"]);
        let other_count = pb::GetShardMapResponse {
            shard_count: 16,
            ..good.clone()
        };
        assert_eq!(ShardMap::parse(other_count), Err(MapError::ShardCount(16)));
        let short = pb::GetShardMapResponse {
            owners: vec!["a".to_owned(); 3],
            ..good.clone()
        };
        assert_eq!(ShardMap::parse(short), Err(MapError::Owners(3)));
        let nobody = pb::GetShardMapResponse {
            replicas: Vec::new(),
            ..good.clone()
        };
        assert_eq!(ShardMap::parse(nobody), Err(MapError::NoReplica));
        let twice = pb::GetShardMapResponse {
            replicas: vec![replica("a", "x:1"), replica("a", "y:1")],
            ..good
        };
        assert_eq!(
            ShardMap::parse(twice),
            Err(MapError::Duplicate("a".to_owned()))
        );
    }
}
