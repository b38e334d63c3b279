//! The service's errors and their gRPC statuses.

use chess_runtime::Reason;
use tonic::{Code, Status};

use crate::{
    engine::EngineError,
    model::{GameError, SetupError},
    store::StoreError,
};

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("no game {0}")]
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
}

impl From<chess_domain::InvalidInput> for Error {
    fn from(e: chess_domain::InvalidInput) -> Self {
        Self::Invalid(e.0)
    }
}

impl From<Error> for Status {
    fn from(error: Error) -> Self {
        let message = error.to_string();
        match error {
            Error::NotFound(_) => Reason::NotFound.status(Code::NotFound, message),
            Error::Game(e) => {
                let (code, reason) = match e {
                    GameError::NotAPlayer => (Code::PermissionDenied, Reason::NotAPlayer),
                    GameError::NotYourTurn => (Code::FailedPrecondition, Reason::NotYourTurn),
                    GameError::GameOver => (Code::FailedPrecondition, Reason::GameOver),
                    GameError::Malformed(_) | GameError::UciOnly(_) => {
                        (Code::InvalidArgument, Reason::MalformedMove)
                    }
                    GameError::Illegal { .. } => (Code::FailedPrecondition, Reason::IllegalMove),
                    GameError::HintsNotAllowed => {
                        (Code::FailedPrecondition, Reason::HintsNotAllowed)
                    }
                    GameError::NoDrawsInRuleSet
                    | GameError::NoAbortInRuleSet
                    | GameError::NoDrawOffer
                    | GameError::NoRepetition
                    | GameError::TooLateToAbort => (Code::FailedPrecondition, Reason::NotAllowed),
                };
                reason.status(code, message)
            }
            Error::Setup(_) | Error::Invalid(_) => {
                Reason::InvalidRequest.status(Code::InvalidArgument, message)
            }
            Error::Engine(EngineError::Unavailable(_)) => {
                Reason::EngineUnavailable.status(Code::Unavailable, message)
            }
            Error::Engine(EngineError::Refused(_)) => {
                Reason::EngineUnavailable.status(Code::Internal, message)
            }
            Error::Store(StoreError::Corrupt { .. }) => Status::internal(message),
            Error::Store(_) | Error::Busy => Status::unavailable(message),
        }
    }
}
