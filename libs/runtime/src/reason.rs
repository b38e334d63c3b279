//! Machine-readable reasons on gRPC errors.
//!
//! A status code says what kind of failure happened; callers that must react
//! to the exact cause (the uqchess front turns "not your turn" into
//! `error turn` and an illegal move into `error move`) read the reason the
//! service put in the `chess-reason` trailer, instead of parsing messages.
//! Public API clients see the same metadata.

use tonic::{Code, Status, metadata::MetadataValue};

/// The metadata key carrying the reason.
pub const REASON_KEY: &str = "chess-reason";

/// Reasons a call is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reason {
    /// The player is not a player of that game.
    NotAPlayer,
    /// It is the other side's turn.
    NotYourTurn,
    /// The game has ended.
    GameOver,
    /// The move is not written in an accepted notation.
    MalformedMove,
    /// The move is not legal in the position.
    IllegalMove,
    /// No such game (or other object).
    NotFound,
    /// The engine could not answer.
    EngineUnavailable,
    /// The request is invalid in some other way.
    InvalidRequest,
    /// The action is not possible in the current state.
    NotAllowed,
    /// The game does not allow engine hints (a rated game, or one whose
    /// players did not agree to them).
    HintsNotAllowed,
    /// Too many failed attempts (logins, registrations) from this account
    /// or address: wait as long as the message says.
    TooManyAttempts,
    /// A move was sent for a ply the game has moved past (or not reached):
    /// the sender should read the game again.
    StalePosition,
    /// The caller's signed assertion acts for another player or game, or
    /// comes from a service the call is not open to (internal services
    /// only; see [`crate::identity`]).
    CallerMismatch,
}

impl Reason {
    /// Every reason.
    pub const ALL: [Self; 13] = [
        Self::NotAPlayer,
        Self::NotYourTurn,
        Self::GameOver,
        Self::MalformedMove,
        Self::IllegalMove,
        Self::NotFound,
        Self::EngineUnavailable,
        Self::InvalidRequest,
        Self::NotAllowed,
        Self::HintsNotAllowed,
        Self::TooManyAttempts,
        Self::StalePosition,
        Self::CallerMismatch,
    ];

    /// The value sent on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotAPlayer => "not-a-player",
            Self::NotYourTurn => "not-your-turn",
            Self::GameOver => "game-over",
            Self::MalformedMove => "malformed-move",
            Self::IllegalMove => "illegal-move",
            Self::NotFound => "not-found",
            Self::EngineUnavailable => "engine-unavailable",
            Self::InvalidRequest => "invalid-request",
            Self::NotAllowed => "not-allowed",
            Self::HintsNotAllowed => "hints-not-allowed",
            Self::TooManyAttempts => "too-many-attempts",
            Self::StalePosition => "stale-position",
            Self::CallerMismatch => "caller-mismatch",
        }
    }

    /// A status with this reason attached.
    pub fn status(self, code: Code, message: impl Into<String>) -> Status {
        let mut status = Status::new(code, message);
        status
            .metadata_mut()
            .insert(REASON_KEY, MetadataValue::from_static(self.as_str()));
        status
    }

    /// The reason attached to `status`, if any.
    pub fn of(status: &Status) -> Option<Self> {
        let value = status.metadata().get(REASON_KEY)?.to_str().ok()?;
        Self::ALL.into_iter().find(|r| r.as_str() == value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_survive_a_status() {
        for reason in Reason::ALL {
            let status = reason.status(Code::FailedPrecondition, "x");
            assert_eq!(Reason::of(&status), Some(reason));
        }
        assert_eq!(Reason::of(&Status::internal("x")), None);
    }
}
