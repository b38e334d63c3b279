//! Why a call to an internal service failed, in terms a front can act on.

use chess_runtime::Reason;
use tonic::{Code, Status};

/// How a call to an internal service failed, by what the front can do
/// about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// What was asked about does not exist, or the ask names it wrongly.
    NotFound,
    /// The service understood and would not do it.
    Refused,
    /// The service could not be reached or could not answer now.
    Unavailable,
}

/// A failed call: its kind, the service's reason when it gave one (the
/// machine-readable cause a front words in its own protocol), and the
/// service's message (bounded by the service, safe to show).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{kind:?}: {message}")]
pub struct PlayError {
    kind: FailureKind,
    reason: Option<Reason>,
    message: String,
}

impl PlayError {
    /// A refusal for `reason`, as the core itself decides one.
    pub fn refused(reason: Reason, message: impl Into<String>) -> Self {
        Self {
            kind: FailureKind::Refused,
            reason: Some(reason),
            message: message.into(),
        }
    }

    /// A failure to get an answer in time.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self {
            kind: FailureKind::Unavailable,
            reason: None,
            message: message.into(),
        }
    }

    pub fn kind(&self) -> FailureKind {
        self.kind
    }

    pub fn reason(&self) -> Option<Reason> {
        self.reason
    }

    pub fn message(&self) -> &str {
        &self.message
    }
}

impl From<Status> for PlayError {
    fn from(status: Status) -> Self {
        let kind = match status.code() {
            Code::NotFound | Code::InvalidArgument => FailureKind::NotFound,
            Code::FailedPrecondition
            | Code::PermissionDenied
            | Code::AlreadyExists
            | Code::OutOfRange
            | Code::Unauthenticated => FailureKind::Refused,
            _ => FailureKind::Unavailable,
        };
        Self {
            kind,
            reason: Reason::of(&status),
            message: status.message().to_owned(),
        }
    }
}
