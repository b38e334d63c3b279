//! Rating formulas for the chess server, free of I/O.
//!
//! - [`club_elo`]: the club rules — start 1200, K = 20, the expected score
//!   read from the club's expectancy table (`data/elo-expectancy-table.csv`),
//!   whole points.
//! - [`logistic_elo`]: the web-site rules — start 1000, the logistic expected
//!   score, K 30 / 20 / 15, draws change nothing.
//! - [`glicko2`]: Glickman's Glicko-2 with rating, deviation and volatility,
//!   the deviation growing with inactivity.
//! - [`RatingSystem`]: which of the three a deployment chooses (with the
//!   `clap` feature, a `--rating-system` value); [`System`]: the chosen one
//!   with its settings, applied to a finished game between two
//!   [`Standing`]s.
//!
//! Ratings are plain numbers here; the rating service stores them and decides
//! which games count.

pub mod club_elo;
pub mod glicko2;
pub mod logistic_elo;
mod system;

pub use system::{Rating, RatingSystem, Standing, System};

/// A player's result in one game.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Score {
    Loss,
    Draw,
    Win,
}

impl Score {
    /// 0, ½ or 1.
    pub fn value(self) -> f64 {
        match self {
            Self::Loss => 0.0,
            Self::Draw => 0.5,
            Self::Win => 1.0,
        }
    }

    /// The opponent's result in the same game.
    pub fn opposite(self) -> Self {
        match self {
            Self::Loss => Self::Win,
            Self::Draw => Self::Draw,
            Self::Win => Self::Loss,
        }
    }
}
