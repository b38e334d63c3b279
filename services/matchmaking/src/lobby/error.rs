//! Why a lobby call failed, and its gRPC status.

use chess_runtime::Reason;
use tonic::{Code, Status};

use crate::store::StoreError;

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
    Game(Status),
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

impl From<LobbyError> for Status {
    fn from(error: LobbyError) -> Self {
        let message = error.to_string();
        match error {
            LobbyError::Invalid(_) => Reason::InvalidRequest.status(Code::InvalidArgument, message),
            LobbyError::NotFound(_) => Reason::NotFound.status(Code::NotFound, message),
            LobbyError::NotYours(_) => Reason::NotAllowed.status(Code::PermissionDenied, message),
            LobbyError::Refused(_) => Reason::NotAllowed.status(Code::FailedPrecondition, message),
            LobbyError::Game(status) => match status.code() {
                Code::InvalidArgument => {
                    Reason::InvalidRequest.status(Code::InvalidArgument, message)
                }
                Code::Unavailable | Code::DeadlineExceeded | Code::Unknown => {
                    Status::unavailable(message)
                }
                _ => Status::internal(message),
            },
            LobbyError::Store(StoreError::Corrupt { .. }) => Status::internal(message),
            LobbyError::Unavailable(_) | LobbyError::Store(_) | LobbyError::Stopped => {
                Status::unavailable(message)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses() {
        let s = Status::from(LobbyError::NotYours("not your seek".into()));
        assert_eq!(s.code(), Code::PermissionDenied);
        let s = Status::from(LobbyError::Refused("out of range".into()));
        assert_eq!(s.code(), Code::FailedPrecondition);
        assert_eq!(Reason::of(&s), Some(Reason::NotAllowed));
        let s = Status::from(LobbyError::Game(Status::unavailable("down")));
        assert_eq!(s.code(), Code::Unavailable);
        assert!(s.message().contains("down"));
        assert_eq!(
            Status::from(LobbyError::NotFound("x".into())).code(),
            Code::NotFound
        );
    }
}
