//! Why a call failed; [`crate::convert`] maps each failure to its gRPC status.

use chess_domain::GameId;

use crate::{
    clients::EngineError,
    model::{GameError, SetupError},
    shards::NotServed,
    store::StoreError,
};

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No game has the id asked for (as asked: it may not be a game id).
    #[error("there is no game {0}")]
    NotFound(String),
    #[error(transparent)]
    Game(#[from] GameError),
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the game is being reloaded; try again")]
    Busy,
    /// The game's shard is not served by this replica.
    #[error("game {game} is in shard {shard}, not served by this replica")]
    NotServed {
        game: GameId,
        shard: u16,
        elsewhere: NotServed,
    },
    /// A new game needs a shard served here, and none is.
    #[error("this replica serves no shard of the games at the moment")]
    NoShards,
}

impl From<chess_domain::InvalidInput> for Error {
    fn from(e: chess_domain::InvalidInput) -> Self {
        Self::Invalid(e.0)
    }
}
