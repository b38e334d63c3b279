//! Active games written straight into a game database, the way the game
//! service stores them, so that the time it takes to resume them all after
//! a restart can be measured without first playing them through a front.

use std::path::Path;

use chess_domain::{RuleSet, TimeControl};
use chess_game::{
    model::{Game, GameSetup, Participant},
    store::{Store, WriteOp, new_game_row, ops_for},
};
use rand::{Rng as _, SeedableRng as _, rngs::StdRng};
use shakmaty::{CastlingMode, Chess, Color, Position as _};

use super::uqchess::choose_move;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// Games written per transaction.
const PER_WRITE: usize = 100;

/// Writes `games` active games of `plies` random moves each (between
/// guests, 30 minutes a side, so no clock runs out meanwhile) into the
/// game database at `path`, created with the service's own migrations.
/// Returns each game's id and the half-moves stored in it (fewer than
/// `plies` where a random move ended the game early).
pub async fn seed(path: &Path, games: usize, plies: u32) -> Result<Vec<(String, u32)>, Error> {
    let store = Store::open(&chess_storage::sqlite_url(path)).await?;
    let mut rng = StdRng::seed_from_u64(games as u64);
    let now = chess_domain::now_ms();
    let mut ops = Vec::new();
    let mut seeded = Vec::with_capacity(games);
    for g in 0..games {
        let setup = GameSetup {
            white: Participant::Guest {
                id: format!("w{g}"),
                name: String::new(),
            },
            black: Participant::Guest {
                id: format!("b{g}"),
                name: String::new(),
            },
            time_control: TimeControl::Incremental {
                initial_secs: 1800,
                increment_secs: 0,
            },
            rules: RuleSet::Standard,
            rated: false,
            allow_hints: false,
            initial_fen: None,
        };
        let mut game = Game::new(game_id(&mut rng), setup, now)?;
        ops.push(WriteOp::InsertGame(Box::new(new_game_row(&game, None))));
        let mut position = Chess::default();
        for _ in 0..plies {
            let m = choose_move(&position, &mut rng);
            let side: Color = position.turn();
            let uci = m.to_uci(CastlingMode::Standard).to_string();
            position.play_unchecked(m);
            let events = game.play(side, &uci, now)?;
            ops.extend(ops_for(&game, &events, now));
            if position.is_game_over() {
                break;
            }
        }
        seeded.push((game.id().to_owned(), game.ply()));
        if (g + 1) % PER_WRITE == 0 || g + 1 == games {
            store.write(None, std::mem::take(&mut ops)).await?;
        }
    }
    Ok(seeded)
}

/// An id shaped like the service's own: 12 letters and digits.
fn game_id(rng: &mut StdRng) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    (0..12)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}
