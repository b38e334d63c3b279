//! Why a lobby call failed. Its gRPC status is in [`crate::convert`].

use crate::{clients::GameError, store::StoreError};

/// Why a lobby call failed.
#[derive(Debug, thiserror::Error)]
pub enum LobbyError {
    /// Bad input.
    #[error("{0}")]
    Invalid(String),
    /// No such seek, request or challenge (or it is no longer open).
    #[error("{0}")]
    NotFound(String),
    /// The thing exists but belongs to someone else.
    #[error("{0}")]
    NotYours(String),
    /// Not possible in the current state (rating out of range, already
    /// requested, too many seeks, …).
    #[error("{0}")]
    Refused(String),
    /// A service the lobby depends on could not answer.
    #[error("{0}")]
    Unavailable(String),
    /// The game service refused to create the game.
    #[error("the game could not be created: {}", .0.message())]
    Game(GameError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the lobby has stopped")]
    Stopped,
}

impl From<chess_domain::InvalidInput> for LobbyError {
    fn from(e: chess_domain::InvalidInput) -> Self {
        Self::Invalid(e.0)
    }
}
