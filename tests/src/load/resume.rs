//! Active games written straight into a game database, the way the game
//! service stores them, so that the time it takes to resume them all after
//! a restart can be measured without first playing them through a front.

use std::path::Path;

use chess_domain::{PlayerId, RuleSet, TimeControl};
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
///
/// With `crash`, the second half of each game's moves is written the way
/// the service writes moves as they are played (a write of moves alone,
/// many games' together), and the file is left as a crash would leave it:
/// copied while the store is still open, so that the moves still in the
/// game service's log of moves are there to be recovered.
pub async fn seed(
    path: &Path,
    games: usize,
    plies: u32,
    crash: bool,
) -> Result<Vec<(String, u32)>, Error> {
    let seeding = if crash {
        path.with_extension("seeding")
    } else {
        path.to_owned()
    };
    let store = Store::open(&chess_storage::sqlite_url(&seeding)).await?;
    let mut rng = StdRng::seed_from_u64(games as u64);
    let now = chess_domain::Timestamp::now();
    let mut ops = Vec::new();
    let mut seeded = Vec::with_capacity(games);
    // Each game's moves left for the writes of moves alone.
    let mut played_late: Vec<Vec<WriteOp>> = Vec::with_capacity(games);
    for g in 0..games {
        let setup = GameSetup {
            white: Participant::Guest {
                id: PlayerId::trusted(format!("w{g}")),
                name: String::new(),
            },
            black: Participant::Guest {
                id: PlayerId::trusted(format!("b{g}")),
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
        let mut game = Game::new(chess_domain::GameId::trusted(game_id(&mut rng)), setup, now)?;
        ops.push(WriteOp::InsertGame(Box::new(new_game_row(&game, None))));
        let mut late = Vec::new();
        let mut position = Chess::default();
        for ply in 0..plies {
            let m = choose_move(&position, &mut rng);
            let side: Color = position.turn();
            let uci = m.to_uci(CastlingMode::Standard).to_string();
            position.play_unchecked(m);
            let events = game.play(side, &uci, now)?;
            let written = ops_for(&game, &events, now);
            if crash && ply >= plies / 2 {
                late.extend(written);
            } else {
                ops.extend(written);
            }
            if position.is_game_over() {
                break;
            }
        }
        seeded.push((game.id().to_string(), game.ply()));
        played_late.push(late);
        if (g + 1) % PER_WRITE == 0 || g + 1 == games {
            store.write(None, std::mem::take(&mut ops)).await?;
        }
    }
    if crash {
        // Move by move, a move of each of a hundred games a write.
        let mut late: Vec<std::vec::IntoIter<WriteOp>> =
            played_late.into_iter().map(Vec::into_iter).collect();
        loop {
            let mut wrote = false;
            for chunk in late.chunks_mut(PER_WRITE) {
                let moves: Vec<WriteOp> = chunk.iter_mut().filter_map(Iterator::next).collect();
                if !moves.is_empty() {
                    wrote = true;
                    store.write(None, moves).await?;
                }
            }
            if !wrote {
                break;
            }
        }
        let file = |p: &Path, suffix: &str| {
            let mut name = p.as_os_str().to_owned();
            name.push(suffix);
            std::path::PathBuf::from(name)
        };
        for suffix in ["", "-wal"] {
            std::fs::copy(file(&seeding, suffix), file(path, suffix))?;
        }
        store.close().await;
        std::fs::remove_file(&seeding)?;
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
