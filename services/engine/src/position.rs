//! Positions checked by shakmaty before Stockfish sees them.
//!
//! Stockfish trusts its input: an impossible position (a missing king, the
//! side not to move in check, …) or an illegal move can make it crash or
//! silently ignore the rest of a move list. So every FEN and every move is
//! checked here, and what is sent is shakmaty's normalised form: the FEN
//! re-written from the parsed position (an en passant square only when the
//! capture is legal), castling as the king's two-square move and promotions
//! in lower case.

use shakmaty::{CastlingMode, Chess, EnPassantMode, Position as _, fen::Fen, uci::UciMove};

use crate::Error;

/// The longest move list accepted. No game under the 75-move rule lasts this
/// long; the bound keeps a single request from making a huge command.
pub const MAX_MOVES: usize = 12_000;

/// A legal position: a starting point and legal moves from it.
#[derive(Clone, Debug)]
pub struct GamePosition {
    start: Option<Fen>,
    moves: Vec<UciMove>,
    current: Chess,
}

impl GamePosition {
    /// Checks `fen` (empty for the standard start) and `moves` (UCI, either
    /// case for the promotion letter).
    pub fn new<S: AsRef<str>>(fen: &str, moves: &[S]) -> Result<Self, Error> {
        if moves.len() > MAX_MOVES {
            return Err(Error::TooManyMoves(moves.len()));
        }
        let (start, mut current) = if fen.trim().is_empty() {
            (None, Chess::default())
        } else {
            let parsed: Fen = fen
                .trim()
                .parse()
                .map_err(|e: shakmaty::fen::ParseFenError| Error::InvalidFen(e.to_string()))?;
            let position: Chess = parsed
                .into_position(CastlingMode::Standard)
                .map_err(|e| Error::InvalidFen(e.to_string()))?;
            (
                Some(Fen::from_position(&position, EnPassantMode::Legal)),
                position,
            )
        };
        let mut normalised = Vec::with_capacity(moves.len());
        for (index, text) in moves.iter().enumerate() {
            let text = text.as_ref();
            let uci: UciMove = text.parse().map_err(|_| Error::MalformedMove {
                index,
                text: text.to_owned(),
            })?;
            let m = uci.to_move(&current).map_err(|_| Error::IllegalMove {
                index,
                text: text.to_owned(),
            })?;
            normalised.push(m.to_uci(CastlingMode::Standard));
            current.play_unchecked(m);
        }
        Ok(Self {
            start,
            moves: normalised,
            current,
        })
    }

    /// The starting FEN to send, `None` for the standard start.
    pub fn start(&self) -> Option<&Fen> {
        self.start.as_ref()
    }

    /// The moves to send, normalised.
    pub fn moves(&self) -> &[UciMove] {
        &self.moves
    }

    /// The position after the moves.
    pub fn current(&self) -> &Chess {
        &self.current
    }

    /// Whether the side to move has a legal move.
    pub fn has_legal_moves(&self) -> bool {
        !self.current.legal_moves().is_empty()
    }

    /// `m` as a legal move in the current position.
    pub fn legal(&self, m: UciMove) -> Option<shakmaty::Move> {
        m.to_move(&self.current).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(fen: &str, moves: &[&str]) -> Result<GamePosition, Error> {
        GamePosition::new(fen, moves)
    }

    #[test]
    fn the_standard_start_by_default() {
        let position = check("", &["e2e4", "e7e5", "g1f3"]).unwrap();
        assert!(position.start().is_none());
        assert_eq!(position.moves().len(), 3);
        assert_eq!(
            Fen::from_position(position.current(), EnPassantMode::Legal).to_string(),
            "rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2"
        );
    }

    #[test]
    fn invalid_fens_are_refused() {
        for fen in [
            "nonsense",
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP w KQkq - 0 1",
            // No white king.
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQ1BNR w kq - 0 1",
            // The side not to move is in check.
            "4k3/8/8/8/8/8/4R3/4K3 w - - 0 1",
            // Pawns on the back rank.
            "P3k3/8/8/8/8/8/8/4K3 w - - 0 1",
            // Castling rights without the rook.
            "4k3/8/8/8/8/8/8/4K3 w K - 0 1",
        ] {
            assert!(
                matches!(check(fen, &[]), Err(Error::InvalidFen(_))),
                "{fen} accepted"
            );
        }
    }

    #[test]
    fn en_passant_squares_are_kept_only_when_legal() {
        let with_capture = "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq d6 0 3";
        let position = check(with_capture, &["e5d6"]).unwrap();
        assert_eq!(position.start().unwrap().to_string(), with_capture);
        let without = "rnbqkbnr/ppp1pppp/8/3p4/8/8/PPPPPPPP/RNBQKBNR w KQkq d6 0 2";
        assert_eq!(
            check(without, &[]).unwrap().start().unwrap().to_string(),
            "rnbqkbnr/ppp1pppp/8/3p4/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 2"
        );
    }

    #[test]
    fn moves_are_checked_and_normalised() {
        assert!(matches!(
            check("", &["e2e4", "e7e5", "e1e3"]),
            Err(Error::IllegalMove { index: 2, .. })
        ));
        assert!(matches!(
            check("", &["e2e4", "xx"]),
            Err(Error::MalformedMove { index: 1, .. })
        ));
        assert!(matches!(
            check("", &["0000"]),
            Err(Error::IllegalMove { index: 0, .. })
        ));
        // Promotion letters in either case; sent in lower case.
        let position = check("4k3/1P6/8/8/8/8/8/4K3 w - - 0 1", &["b7b8Q"]).unwrap();
        assert_eq!(position.moves()[0].to_string(), "b7b8q");
        // A pawn reaching the last rank must promote.
        assert!(check("4k3/1P6/8/8/8/8/8/4K3 w - - 0 1", &["b7b8"]).is_err());
        // Castling written as king-takes-rook is sent as the king's move.
        let fen = "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1";
        let position = check(fen, &["e1h1"]).unwrap();
        assert_eq!(position.moves()[0].to_string(), "e1g1");
    }

    #[test]
    fn game_over_positions_have_no_legal_move() {
        let mated = check("", &["f2f3", "e7e5", "g2g4", "d8h4"]).unwrap();
        assert!(!mated.has_legal_moves());
        let stalemate = check("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1", &[]).unwrap();
        assert!(!stalemate.has_legal_moves());
    }

    #[test]
    fn overlong_move_lists_are_refused() {
        let moves = vec!["g1f3"; MAX_MOVES + 1];
        assert!(matches!(check("", &moves), Err(Error::TooManyMoves(_))));
    }
}
