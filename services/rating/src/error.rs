//! Why a call failed; [`crate::convert`] maps each failure to its gRPC status.

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
    /// Wrong old password on a password change.
    #[error("the old password is wrong")]
    WrongPassword,
    /// Too many failed password checks for the account lately.
    #[error("too many failed logins for this account")]
    Throttled(std::time::Duration),
    /// Only a moderator may do this.
    #[error("only a moderator may do this")]
    NotModerator,
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
        Field::NostrKey => "the Nostr public key is linked to another player",
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
