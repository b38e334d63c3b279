//! The error of a wire value that makes no valid domain value, and the
//! check every service makes of a field that must be given.

/// A wire value that does not make a valid domain value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidInput(pub String);

impl InvalidInput {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

/// `Ok` if `value`, the request's field `field`, is given (not empty).
pub fn require(field: &str, value: &str) -> Result<(), InvalidInput> {
    if value.is_empty() {
        return Err(InvalidInput(format!("{field} must be given")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_field_is_missing() {
        assert_eq!(require("game_id", "g1"), Ok(()));
        assert_eq!(
            require("game_id", "").unwrap_err().to_string(),
            "game_id must be given"
        );
    }
}
