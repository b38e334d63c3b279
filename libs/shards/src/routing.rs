//! How a replica of the game service tells a caller where a game is served.
//!
//! Games are sharded by id ([`crate::shard_of`]) over the replicas.
//! A replica asked about a game of a shard it does not serve refuses the
//! call before doing anything, in one of two ways a caller can act on:
//!
//! - **Not the owner** ([`not_owner`]): FAILED_PRECONDITION with the
//!   `chess-game-owner` metadata naming the address of the replica that
//!   serves the shard now (empty when this replica does not know it). The
//!   caller sends the same call there.
//! - **Shard moving** ([`shard_moving`]): UNAVAILABLE with the
//!   `chess-shard-moving` metadata giving the shard: no replica serves it at
//!   this moment (its owner died and the lease has not expired yet, or it is
//!   being handed over). The caller tries again shortly. A replica asked to
//!   create a game while it serves no shard refuses the same way
//!   ([`no_shards`]): another replica may take the call.
//!
//! Neither carries a `chess_runtime::Reason`: they are not answers about the game,
//! and a caller that treats any reason as final must not stop on them.

use tonic::{Code, Status, metadata::MetadataValue};

/// The metadata naming the address of the replica that serves a game.
pub const OWNER_KEY: &str = "chess-game-owner";
/// The metadata marking a refusal while a shard has no serving replica.
pub const MOVING_KEY: &str = "chess-shard-moving";

/// The refusal of a replica that does not serve `shard`, which `owner`
/// (an address, when known) does.
pub fn not_owner(game: &str, shard: u16, owner: Option<&str>) -> Status {
    let message = match owner {
        Some(owner) => {
            format!("game {game} is in shard {shard}, which the game replica at {owner} serves")
        }
        None => format!("game {game} is in shard {shard}, which this game replica does not serve"),
    };
    let mut status = Status::new(Code::FailedPrecondition, message);
    let value = owner
        .and_then(|o| MetadataValue::try_from(o).ok())
        .unwrap_or_else(|| MetadataValue::from_static(""));
    status.metadata_mut().insert(OWNER_KEY, value);
    status
}

/// The refusal while no replica serves `shard`.
pub fn shard_moving(shard: u16) -> Status {
    let mut status = Status::new(
        Code::Unavailable,
        format!("shard {shard} of the games is moving between game replicas; try again shortly"),
    );
    status
        .metadata_mut()
        .insert(MOVING_KEY, MetadataValue::from(u32::from(shard)));
    status
}

/// The refusal of a call that any replica could answer (creating a game)
/// by a replica that serves no shard at the moment: another may.
pub fn no_shards() -> Status {
    let mut status = Status::new(
        Code::Unavailable,
        "this game replica serves no shard of the games at the moment; ask another",
    );
    status
        .metadata_mut()
        .insert(MOVING_KEY, MetadataValue::from_static(""));
    status
}

/// What a refusal says about where to go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Redirect {
    /// Call the replica at this address (`None`: ask for the shard map).
    Owner(Option<String>),
    /// No replica serves the shard now: try again shortly.
    Moving,
}

/// Reads a refusal from its code and metadata, as a status or as the
/// headers of a trailers-only response.
pub fn redirect(code: Code, metadata: &tonic::metadata::MetadataMap) -> Option<Redirect> {
    match code {
        Code::FailedPrecondition => {
            let owner = metadata.get(OWNER_KEY)?.to_str().ok()?;
            Some(Redirect::Owner(
                Some(owner.to_owned()).filter(|o| !o.is_empty()),
            ))
        }
        Code::Unavailable if metadata.contains_key(MOVING_KEY) => Some(Redirect::Moving),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_say_where_to_go() {
        let status = not_owner("g1", 7, Some("10.0.0.2:50053"));
        assert_eq!(status.code(), Code::FailedPrecondition);
        assert_eq!(
            redirect(status.code(), status.metadata()),
            Some(Redirect::Owner(Some("10.0.0.2:50053".to_owned())))
        );
        let status = not_owner("g1", 7, None);
        assert_eq!(
            redirect(status.code(), status.metadata()),
            Some(Redirect::Owner(None))
        );
        for status in [shard_moving(7), no_shards()] {
            assert_eq!(
                redirect(status.code(), status.metadata()),
                Some(Redirect::Moving)
            );
        }
        let status = shard_moving(7);
        assert_eq!(chess_runtime::Reason::of(&status), None);
        let other = Status::failed_precondition("not your turn");
        assert_eq!(redirect(other.code(), other.metadata()), None);
        let other = Status::unavailable("down");
        assert_eq!(redirect(other.code(), other.metadata()), None);
    }
}
