//! Games built straight from the model, for the tests of the store: those in
//! the crate (`src/store/tests.rs`) and those beside it (`leases.rs`) share
//! this file. The model's types come from the including module, as the two
//! reach them by different paths.

use super::{Game, GameSetup, Participant, RuleSet, TimeControl, Timestamp};

/// A guest called by their id.
pub(crate) fn guest(id: &str) -> Participant {
    Participant::Guest {
        id: chess_domain::PlayerId::trusted(id),
        name: id.to_owned(),
    }
}

/// A new untimed, unrated game between two guests, begun at the epoch.
pub(crate) fn new_game(id: &str) -> Game {
    let setup = GameSetup {
        white: guest("w"),
        black: guest("b"),
        time_control: TimeControl::Untimed,
        rules: RuleSet::Standard,
        rated: false,
        allow_hints: false,
        initial_fen: None,
    };
    Game::new(chess_domain::GameId::trusted(id), setup, Timestamp::EPOCH).unwrap()
}
