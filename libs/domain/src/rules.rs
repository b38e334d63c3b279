//! Which rules end a game.

use chess_proto::common::v1 as pb;

/// Which rules end a game.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RuleSet {
    /// Every rule of chess.
    Standard,
    /// Only checkmate, stalemate and resignation end the game.
    Uqchess,
}

// Unspecified means the usual rules.
crate::enums::wire_enum!(RuleSet <=> pb::RuleSet {
    Standard | Unspecified,
    Uqchess,
} else "unknown rule set");
