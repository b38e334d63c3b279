//! Whether a game is still being played.

use chess_proto::common::v1 as pb;

/// A game is active until it ends, then finished for good.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GameStatus {
    Active,
    Finished,
}

impl GameStatus {
    /// The stored form: `active` or `finished`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Finished => "finished",
        }
    }

    /// The status stored as `s`.
    pub fn from_name(s: &str) -> Option<Self> {
        [Self::Active, Self::Finished]
            .into_iter()
            .find(|status| status.as_str() == s)
    }
}

impl From<GameStatus> for pb::GameStatus {
    fn from(value: GameStatus) -> Self {
        match value {
            GameStatus::Active => Self::Active,
            GameStatus::Finished => Self::Finished,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_round_trip() {
        for s in [GameStatus::Active, GameStatus::Finished] {
            assert_eq!(GameStatus::from_name(s.as_str()), Some(s));
        }
        assert_eq!(GameStatus::from_name("over"), None);
    }
}
