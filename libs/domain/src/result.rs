//! The result of a finished game: one type for the model, the store and the
//! wire.

use chess_proto::common::v1 as pb;
use shakmaty::{KnownOutcome, Outcome};

use crate::Color;

/// How a finished game came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GameResult {
    WhiteWins,
    BlackWins,
    Draw,
}

impl GameResult {
    /// The side that won `winner`.
    pub fn win_for(winner: Color) -> Self {
        match winner {
            Color::White => Self::WhiteWins,
            Color::Black => Self::BlackWins,
        }
    }

    /// The winner, if not a draw.
    pub fn winner(self) -> Option<Color> {
        match self {
            Self::WhiteWins => Some(Color::White),
            Self::BlackWins => Some(Color::Black),
            Self::Draw => None,
        }
    }

    /// The PGN result tag: `1-0`, `0-1`, `1/2-1/2` (shakmaty's spelling).
    pub fn pgn(self) -> &'static str {
        KnownOutcome::from(self).as_str()
    }

    /// The PGN result tag of a game that may have none (aborted, or going
    /// on): `*` then.
    pub fn pgn_of(result: Option<Self>) -> &'static str {
        Outcome::from_known(result.map(KnownOutcome::from)).as_str()
    }

    /// A result on the wire, unspecified while there is none.
    pub fn to_pb(result: Option<Self>) -> pb::GameResult {
        result.map_or(pb::GameResult::Unspecified, pb::GameResult::from)
    }
}

impl From<GameResult> for KnownOutcome {
    fn from(value: GameResult) -> Self {
        Self::from_winner(value.winner())
    }
}

// Stored by the winner's colour.
crate::enums::wire_enum!(GameResult <=> pb::GameResult {
    WhiteWins => "white",
    BlackWins => "black",
    Draw => "draw",
} else "the result must be white wins, black wins or draw");

/// A finished game between registered players, as the game service reports
/// it for the ratings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResultReport {
    pub game_id: crate::GameId,
    pub white_id: crate::PlayerId,
    pub black_id: crate::PlayerId,
    pub result: GameResult,
    pub speed: crate::SpeedCategory,
    /// Whether the game was played rated; untimed games never change
    /// ratings, whatever this says.
    pub rated: bool,
    pub finished_at: crate::Timestamp,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_round_trips() {
        for r in [
            GameResult::WhiteWins,
            GameResult::BlackWins,
            GameResult::Draw,
        ] {
            assert_eq!(GameResult::from_name(r.as_str()), Some(r));
            assert_eq!(GameResult::try_from(pb::GameResult::from(r) as i32), Ok(r));
            if let Some(winner) = r.winner() {
                assert_eq!(GameResult::win_for(winner), r);
            }
        }
        assert_eq!(GameResult::from_name("1-0"), None);
        assert!(GameResult::try_from(0).is_err());
        assert_eq!(GameResult::Draw.pgn(), "1/2-1/2");
        assert_eq!(GameResult::WhiteWins.pgn(), "1-0");
        assert_eq!(GameResult::BlackWins.pgn(), "0-1");
        assert_eq!(GameResult::pgn_of(None), "*");
    }
}
