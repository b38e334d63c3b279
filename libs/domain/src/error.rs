//! The error of a wire value that makes no valid domain value.

/// A wire value that does not make a valid domain value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidInput(pub String);

impl InvalidInput {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}
