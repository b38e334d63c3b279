//! Colours on the wire and the colour a player asks for.

use chess_proto::common::v1 as pb;
pub use shakmaty::Color;

/// A colour's word, as stored and as the text protocols spell it: `white`
/// or `black` (shakmaty's `Display` of [`Color`]).
pub fn color_name(color: Color) -> &'static str {
    color.fold_wb("white", "black")
}

/// The colour named `name` (see [`color_name`]).
pub fn color_from_name(name: &str) -> Option<Color> {
    name.parse().ok()
}

/// A colour's word at the start of a sentence: `White` or `Black`.
pub fn color_title(color: Color) -> &'static str {
    color.fold_wb("White", "Black")
}

/// The colour a player asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ColorChoice {
    White,
    Black,
    Either,
}

impl ColorChoice {
    /// Whether two players' choices can face each other.
    pub fn compatible(self, other: Self) -> bool {
        !matches!(
            (self, other),
            (Self::White, Self::White) | (Self::Black, Self::Black)
        )
    }

    /// Every choice.
    pub const ALL: [Self; 3] = [Self::White, Self::Black, Self::Either];

    /// The stored name: `white`, `black` or `either`.
    pub fn as_str(self) -> &'static str {
        self.color().map_or("either", color_name)
    }

    /// The choice stored as `name` (see [`as_str`](Self::as_str)).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == name)
    }

    /// The colour this choice fixes, if any.
    pub fn color(self) -> Option<Color> {
        match self {
            Self::White => Some(Color::White),
            Self::Black => Some(Color::Black),
            Self::Either => None,
        }
    }

    /// The colour of a player who chose `self` against an opponent who takes
    /// what is left (a seek's poster, a challenger, a player of the engine):
    /// "either" is settled by a coin toss, `heads` being white.
    pub fn resolve(self, heads: bool) -> Color {
        self.color()
            .unwrap_or(if heads { Color::White } else { Color::Black })
    }

    /// The colours of two players who both chose, `waiting` first (the
    /// uqchess rule, and the waiting queue's): fixed choices are honoured,
    /// one "either" takes the other colour, and when both said "either" the
    /// one who was waiting plays white. `None` when both want the same
    /// colour.
    pub fn pair_waiting(waiting: Self, newcomer: Self) -> Option<(Color, Color)> {
        if !waiting.compatible(newcomer) {
            return None;
        }
        let first = match (waiting.color(), newcomer.color()) {
            (Some(c), _) => c,
            (None, Some(c)) => !c,
            (None, None) => Color::White,
        };
        Some((first, !first))
    }
}

/// The side to move in `fen` (its second field), if `fen` has one.
pub fn side_to_move(fen: &str) -> Option<Color> {
    match fen.split_whitespace().nth(1) {
        Some("w") => Some(Color::White),
        Some("b") => Some(Color::Black),
        _ => None,
    }
}

// The one rule for a choice on the wire: unset means "either" (a player who
// does not say has no preference), and only a value the protocol does not
// know is refused.
crate::enums::wire_enum!(ColorChoice <=> pb::ColorChoice {
    White,
    Black,
    Either | Unspecified,
} else "colour must be white, black or either");

/// A colour on the wire.
pub fn color_to_pb(color: Color) -> pb::Color {
    match color {
        Color::White => pb::Color::White,
        Color::Black => pb::Color::Black,
    }
}

/// A colour from the wire, if one is given.
pub fn color_from_pb(value: i32) -> Option<Color> {
    match pb::Color::try_from(value) {
        Ok(pb::Color::White) => Some(Color::White),
        Ok(pb::Color::Black) => Some(Color::Black),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_have_one_spelling() {
        for color in Color::ALL {
            assert_eq!(color_name(color), color.to_string());
            assert_eq!(color_from_name(color_name(color)), Some(color));
            assert_eq!(color_title(color).to_ascii_lowercase(), color_name(color));
        }
        for choice in ColorChoice::ALL {
            assert_eq!(ColorChoice::from_name(choice.as_str()), Some(choice));
        }
        assert_eq!(ColorChoice::Either.as_str(), "either");
        assert_eq!(color_from_name("White"), None);
    }

    #[test]
    fn an_unset_choice_is_either() {
        assert_eq!(ColorChoice::try_from(0), Ok(ColorChoice::Either));
        assert_eq!(
            ColorChoice::try_from(pb::ColorChoice::Black as i32),
            Ok(ColorChoice::Black)
        );
        assert!(ColorChoice::try_from(42).is_err());
        for choice in ColorChoice::ALL {
            assert_eq!(
                ColorChoice::try_from(pb::ColorChoice::from(choice) as i32),
                Ok(choice)
            );
        }
    }

    #[test]
    fn colour_choices_pair_up() {
        use ColorChoice::*;
        assert!(White.compatible(Black));
        assert!(White.compatible(Either));
        assert!(Either.compatible(Either));
        assert!(!White.compatible(White));
        assert!(!Black.compatible(Black));
    }

    #[test]
    fn either_is_settled_one_named_way_per_case() {
        use ColorChoice::*;
        assert_eq!(White.resolve(false), Color::White);
        assert_eq!(Black.resolve(true), Color::Black);
        assert_eq!(Either.resolve(true), Color::White);
        assert_eq!(Either.resolve(false), Color::Black);
        let pair = ColorChoice::pair_waiting;
        assert_eq!(pair(Either, Either), Some((Color::White, Color::Black)));
        assert_eq!(pair(Either, White), Some((Color::Black, Color::White)));
        assert_eq!(pair(Black, Either), Some((Color::Black, Color::White)));
        assert_eq!(pair(White, White), None);
    }

    #[test]
    fn the_side_to_move_is_read_from_the_fen() {
        assert_eq!(
            side_to_move("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"),
            Some(Color::Black)
        );
        assert_eq!(
            side_to_move("8/8/8/8/8/8/8/K6k w - - 0 1"),
            Some(Color::White)
        );
        assert_eq!(side_to_move("garbage"), None);
    }
}
