//! Sharding, in one place: games are spread over the game service's
//! replicas by shard, and every party to that agrees through this crate.
//!
//! - [`shard_of`] and [`SHARDS`]: which shard a game lives in.
//! - [`map`]: the shard map a replica hands out (`GetShardMap`), read by the
//!   callers so that finding a shard's owner is an index.
//! - [`routing`]: how a replica refuses a call for a shard it does not
//!   serve, and how a caller reads where to go instead.
//!
//! Games are spread over [`SHARDS`] shards by id, and each shard is served
//! by one replica of the game service at a time. Callers and replicas must
//! agree on a game's shard forever (it is stored beside the game), so the
//! hash is spelled out here rather than taken from the standard library,
//! whose hashers may change between releases or be seeded per process.

pub mod map;
pub mod routing;

pub use map::{MapError, Replica, ShardMap};

/// How many shards games are spread over. Fixed: a game's shard is stored
/// with it, and changing this would move every game.
pub const SHARDS: u16 = 256;

/// The shard of game `game_id`: 32-bit FNV-1a of its bytes, modulo
/// [`SHARDS`]. Game ids are random, so games spread evenly. Callers pass a
/// `chess_domain::GameId` or, routing a call before it is parsed, the
/// wire's text: the shard is the same.
pub fn shard_of(game_id: impl AsRef<str>) -> u16 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in game_id.as_ref().bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    // SHARDS divides 2^32, so every shard is equally likely.
    (hash % u32::from(SHARDS)) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_fnv1a() {
        // Published FNV-1a 32-bit values.
        assert_eq!(shard_of(""), (0x811c_9dc5_u32 % 256) as u16);
        assert_eq!(shard_of("a"), (0xe40c_292c_u32 % 256) as u16);
        assert_eq!(shard_of("foobar"), (0xbf9c_f968_u32 % 256) as u16);
    }

    #[test]
    fn random_ids_spread_over_every_shard() {
        let mut counts = vec![0u32; usize::from(SHARDS)];
        for i in 0..256_000u32 {
            counts[usize::from(shard_of(format!("game{i:08}")))] += 1;
        }
        assert!(
            counts.iter().all(|&c| (700..1300).contains(&c)),
            "{counts:?}"
        );
    }
}
