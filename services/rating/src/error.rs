//! The service's errors and their gRPC statuses.

use chess_runtime::Reason;
use tonic::{Code, Status};

use crate::{
    accounts::{HashError, RuleError},
    store::{Field, StoreError},
};

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Rule(#[from] RuleError),
    #[error("{0}")]
    Invalid(String),
    #[error("{}", taken_message(*.0))]
    Taken(Field),
    /// Deliberately vague: neither the name nor the password is singled out.
    #[error("wrong login or password")]
    Unauthenticated,
    #[error("no player {0}")]
    NotFound(String),
    #[error(transparent)]
    Store(StoreError),
    #[error(transparent)]
    Hash(#[from] HashError),
}

fn taken_message(field: Field) -> &'static str {
    match field {
        Field::Username => "username is already taken",
        Field::Email => "email is already registered",
    }
}

impl From<StoreError> for Error {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Taken(field) => Self::Taken(field),
            other => Self::Store(other),
        }
    }
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
            Error::Rule(_) | Error::Invalid(_) => {
                Reason::InvalidRequest.status(Code::InvalidArgument, message)
            }
            Error::Taken(_) => Status::already_exists(message),
            Error::Unauthenticated => Status::unauthenticated(message),
            Error::NotFound(_) => Reason::NotFound.status(Code::NotFound, message),
            Error::Store(StoreError::Corrupt(_)) | Error::Hash(_) => Status::internal(message),
            Error::Store(_) => Status::unavailable(message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses() {
        let status = Status::from(Error::from(StoreError::Taken(Field::Email)));
        assert_eq!(status.code(), Code::AlreadyExists);
        assert!(status.message().contains("email"), "{}", status.message());
        let status = Status::from(Error::from(StoreError::Taken(Field::Username)));
        assert!(
            status.message().contains("username"),
            "{}",
            status.message()
        );
        let status = Status::from(Error::Rule(RuleError::Username));
        assert_eq!(status.code(), Code::InvalidArgument);
        assert_eq!(Reason::of(&status), Some(Reason::InvalidRequest));
        assert_eq!(
            Status::from(Error::Unauthenticated).code(),
            Code::Unauthenticated
        );
        assert_eq!(
            Status::from(Error::Store(StoreError::Corrupt("x".into()))).code(),
            Code::Internal
        );
    }
}
