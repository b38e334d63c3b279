//! The board drawn as text, exactly as Stockfish's `d` command draws it
//! (from the blank line before the first rule to the blank line after the
//! file letters), which the uqchess protocol sends between `startboard` and
//! `endboard`.

use shakmaty::{Board, File, Rank, Square};

const RULE: &str = " +---+---+---+---+---+---+---+---+\n";

/// The drawing of `board`, white at the bottom, starting and ending with a
/// blank line.
pub fn draw(board: &Board) -> String {
    let mut out = String::with_capacity(700);
    out.push('\n');
    out.push_str(RULE);
    for rank in Rank::ALL.into_iter().rev() {
        for file in File::ALL {
            out.push_str(" | ");
            out.push(
                board
                    .piece_at(Square::from_coords(file, rank))
                    .map_or(' ', |p| p.char()),
            );
        }
        out.push_str(" | ");
        out.push(rank.char());
        out.push('\n');
        out.push_str(RULE);
    }
    out.push_str("   a   b   c   d   e   f   g   h\n\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::{Chess, Position as _};

    #[test]
    fn matches_the_protocol_example_after_e4() {
        // The protocol's example board, kept beside docs/uqchess.md.
        let expected = include_str!("../../../../docs/uqchess-board-after-e4.txt");
        let mut pos = Chess::default();
        let m = shakmaty::uci::UciMove::from_ascii(b"e2e4")
            .unwrap()
            .to_move(&pos)
            .unwrap();
        pos.play_unchecked(m);
        assert_eq!(draw(pos.board()), expected);
    }
}
