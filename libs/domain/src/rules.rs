//! Which rules end a game.

use chess_proto::common::v1 as pb;

use crate::InvalidInput;

/// Which rules end a game.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RuleSet {
    /// Every rule of chess.
    Standard,
    /// Only checkmate, stalemate and resignation end the game.
    Uqchess,
}

impl TryFrom<i32> for RuleSet {
    type Error = InvalidInput;

    fn try_from(value: i32) -> Result<Self, Self::Error> {
        match pb::RuleSet::try_from(value) {
            // Unspecified means the usual rules.
            Ok(pb::RuleSet::Standard | pb::RuleSet::Unspecified) => Ok(Self::Standard),
            Ok(pb::RuleSet::Uqchess) => Ok(Self::Uqchess),
            Err(_) => Err(InvalidInput::new("unknown rule set")),
        }
    }
}

impl From<RuleSet> for pb::RuleSet {
    fn from(value: RuleSet) -> Self {
        match value {
            RuleSet::Standard => Self::Standard,
            RuleSet::Uqchess => Self::Uqchess,
        }
    }
}
