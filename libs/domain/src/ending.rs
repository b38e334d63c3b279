//! How a game ended: why ([`Termination`]), with what result and when
//! ([`Ending`]), in each form a service or a front needs — stored names,
//! the wire, PGN and the words players read.

use chess_proto::common::v1 as pb;

use crate::{GameResult, Timestamp, color::color_title};

/// Why a game ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Termination {
    Checkmate,
    Stalemate,
    Resignation,
    Timeout,
    TimeoutVsInsufficientMaterial,
    DrawAgreement,
    ThreefoldRepetition,
    FiftyMoveRule,
    InsufficientMaterial,
    Aborted,
}

impl Termination {
    /// Every termination, for storage round trips.
    pub const ALL: [Self; 10] = [
        Self::Checkmate,
        Self::Stalemate,
        Self::Resignation,
        Self::Timeout,
        Self::TimeoutVsInsufficientMaterial,
        Self::DrawAgreement,
        Self::ThreefoldRepetition,
        Self::FiftyMoveRule,
        Self::InsufficientMaterial,
        Self::Aborted,
    ];

    /// The termination in plain words, as logs and Nostr events say it:
    /// the stored name with spaces (`threefold repetition`).
    pub fn words(self) -> &'static str {
        match self {
            Self::Checkmate => "checkmate",
            Self::Stalemate => "stalemate",
            Self::Resignation => "resignation",
            Self::Timeout => "timeout",
            Self::TimeoutVsInsufficientMaterial => "timeout vs insufficient material",
            Self::DrawAgreement => "draw agreement",
            Self::ThreefoldRepetition => "threefold repetition",
            Self::FiftyMoveRule => "fifty move rule",
            Self::InsufficientMaterial => "insufficient material",
            Self::Aborted => "aborted",
        }
    }

    /// The PGN `Termination` tag of a game that ended this way.
    pub fn pgn_tag(self) -> &'static str {
        match self {
            Self::Timeout | Self::TimeoutVsInsufficientMaterial => "Time forfeit",
            Self::Aborted => "Abandoned",
            _ => "Normal",
        }
    }

    /// The PGN `Termination` tag of a game that ended as `termination`, or
    /// has not (`Unterminated`).
    pub fn pgn_tag_of(termination: Option<Self>) -> &'static str {
        termination.map_or("Unterminated", Self::pgn_tag)
    }

    /// How a decisive game was won, after "White wins": ` by checkmate`,
    /// ` on time`; empty where no more needs saying.
    fn how_won(self) -> &'static str {
        match self {
            Self::Checkmate => " by checkmate",
            Self::Resignation => " by resignation",
            Self::Timeout => " on time",
            _ => "",
        }
    }

    /// How a drawn game was drawn, after "Draw".
    fn how_drawn(self) -> &'static str {
        match self {
            Self::Stalemate => " by stalemate",
            Self::DrawAgreement => " by agreement",
            Self::ThreefoldRepetition => " by threefold repetition",
            Self::FiftyMoveRule => " by the fifty-move rule",
            Self::InsufficientMaterial => " by insufficient material",
            Self::TimeoutVsInsufficientMaterial => {
                ": time ran out, but the opponent could not have mated"
            }
            _ => "",
        }
    }
}

crate::enums::wire_enum!(Termination <=> pb::Termination {
    Checkmate => "checkmate",
    Stalemate => "stalemate",
    Resignation => "resignation",
    Timeout => "timeout",
    TimeoutVsInsufficientMaterial => "timeout_vs_insufficient_material",
    DrawAgreement => "draw_agreement",
    ThreefoldRepetition => "threefold_repetition",
    FiftyMoveRule => "fifty_move_rule",
    InsufficientMaterial => "insufficient_material",
    Aborted => "aborted",
} else "unknown termination");

/// How and when a game ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ending {
    /// None for an aborted game.
    pub result: Option<GameResult>,
    pub termination: Termination,
    pub at: Timestamp,
}

impl Ending {
    /// The PGN result: `1-0`, `0-1`, `1/2-1/2`, or `*` for an aborted game.
    pub fn pgn_result(&self) -> &'static str {
        GameResult::pgn_of(self.result)
    }

    /// The ending as the wire's `GameEnded`.
    pub fn to_pb(&self) -> pb::GameEnded {
        pb::GameEnded {
            result: GameResult::to_pb(self.result) as i32,
            termination: pb::Termination::from(self.termination) as i32,
            winner: self
                .result
                .and_then(GameResult::winner)
                .map_or(pb::Color::Unspecified, crate::color_to_pb) as i32,
        }
    }
}

/// The sentence a player reads under a finished game: `1-0 · White wins by
/// checkmate.`, `½-½ · Draw by agreement.`. `result` and `termination` are
/// as the wire carries them (either may be unknown).
pub fn ending_sentence(result: Option<GameResult>, termination: Option<Termination>) -> String {
    if termination == Some(Termination::Aborted) {
        return "Aborted before both sides had moved: no result.".to_owned();
    }
    match result {
        Some(GameResult::Draw) => {
            let how = termination.map_or("", Termination::how_drawn);
            format!("½-½ · Draw{how}.")
        }
        Some(result) => {
            let winner = result.winner().map_or("", color_title);
            let how = termination.map_or("", Termination::how_won);
            format!("{} · {winner} wins{how}.", result.pgn())
        }
        None => "The game is over.".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_round_trips() {
        for t in Termination::ALL {
            assert_eq!(Termination::from_name(t.as_str()), Some(t));
            assert_eq!(
                Termination::try_from(pb::Termination::from(t) as i32),
                Ok(t)
            );
            assert_eq!(t.words(), t.as_str().replace('_', " "));
            let wire = pb::Termination::from(t).as_str_name();
            assert_eq!(
                wire.strip_prefix("TERMINATION_"),
                Some(&*t.as_str().to_ascii_uppercase())
            );
        }
        assert_eq!(Termination::from_name("mate"), None);
        assert!(Termination::try_from(0).is_err());
        assert!(Termination::try_from(99).is_err());
    }

    #[test]
    fn endings_are_told_in_pgn_and_in_words() {
        assert_eq!(Termination::pgn_tag_of(None), "Unterminated");
        assert_eq!(Termination::Timeout.pgn_tag(), "Time forfeit");
        assert_eq!(Termination::Aborted.pgn_tag(), "Abandoned");
        assert_eq!(Termination::Stalemate.pgn_tag(), "Normal");
        let ending = Ending {
            result: None,
            termination: Termination::Aborted,
            at: Timestamp::EPOCH,
        };
        assert_eq!(ending.pgn_result(), "*");
        let sentence = |r, t| ending_sentence(r, t);
        assert_eq!(
            sentence(Some(GameResult::WhiteWins), Some(Termination::Checkmate)),
            "1-0 · White wins by checkmate."
        );
        assert_eq!(
            sentence(Some(GameResult::BlackWins), Some(Termination::Timeout)),
            "0-1 · Black wins on time."
        );
        assert_eq!(
            sentence(Some(GameResult::Draw), Some(Termination::FiftyMoveRule)),
            "½-½ · Draw by the fifty-move rule."
        );
        assert_eq!(
            sentence(None, Some(Termination::Aborted)),
            "Aborted before both sides had moved: no result."
        );
        assert_eq!(sentence(Some(GameResult::Draw), None), "½-½ · Draw.");
        assert_eq!(sentence(None, None), "The game is over.");
    }
}
