//! The rating system a deployment uses, applied to whole games.

use chess_domain::Timestamp;

use crate::{
    Score, club_elo,
    glicko2::{self, Glicko2},
    logistic_elo,
};

/// Which rating system, without its settings: what a deployment chooses
/// (`--rating-system`), stores and reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum RatingSystem {
    /// Club rules: start 1200, K = 20, expectancy from the club table.
    ClubElo,
    /// Web-site rules: start 1000, logistic expectancy, K 30/20/15.
    LogisticElo,
    /// Glicko-2: rating, deviation and volatility.
    Glicko2,
}

impl RatingSystem {
    /// Every system.
    pub const ALL: [Self; 3] = [Self::ClubElo, Self::LogisticElo, Self::Glicko2];
}

// The names of flags and storage.
chess_domain::named_enum!(RatingSystem {
    ClubElo => "club-elo",
    LogisticElo => "logistic-elo",
    Glicko2 => "glicko2",
});

/// A rating system with its settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum System {
    ClubElo,
    LogisticElo,
    Glicko2(glicko2::Config),
}

/// A rating in one category. The Elo systems use whole numbers and leave
/// deviation and volatility at 0.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rating {
    pub rating: f64,
    pub deviation: f64,
    pub volatility: f64,
}

impl Rating {
    fn elo(rating: i32) -> Self {
        Self {
            rating: f64::from(rating),
            deviation: 0.0,
            volatility: 0.0,
        }
    }

    /// The Elo rating as a whole number (stored ones already are).
    fn whole(self) -> i32 {
        self.rating.round() as i32
    }

    fn glicko2(self) -> Glicko2 {
        Glicko2 {
            rating: self.rating,
            deviation: self.deviation,
            volatility: self.volatility,
        }
    }

    fn from_glicko2(g: Glicko2) -> Self {
        Self {
            rating: g.rating,
            deviation: g.deviation,
            volatility: g.volatility,
        }
    }
}

/// Where a player stands in one category before a game.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Standing {
    /// The rating as stored after the player's last game.
    pub rating: Rating,
    /// Rated games finished so far.
    pub games_played: u32,
    /// When the last rated game was applied.
    pub last_played: Option<Timestamp>,
}

impl System {
    /// Which system this is.
    pub fn kind(&self) -> RatingSystem {
        match self {
            Self::ClubElo => RatingSystem::ClubElo,
            Self::LogisticElo => RatingSystem::LogisticElo,
            Self::Glicko2(_) => RatingSystem::Glicko2,
        }
    }

    /// A new player's rating.
    pub fn initial(&self) -> Rating {
        match self {
            Self::ClubElo => Rating::elo(club_elo::INITIAL),
            Self::LogisticElo => Rating::elo(logistic_elo::INITIAL),
            Self::Glicko2(config) => Rating::from_glicko2(config.initial()),
        }
    }

    /// A new player's standing.
    pub fn newcomer(&self) -> Standing {
        Standing {
            rating: self.initial(),
            games_played: 0,
            last_played: None,
        }
    }

    /// The rating of `standing` as of `now`: for Glicko-2 the deviation has
    /// grown with the time since the last game; the Elo systems do not change
    /// between games.
    pub fn current(&self, standing: &Standing, now: Timestamp) -> Rating {
        match self {
            Self::ClubElo | Self::LogisticElo => standing.rating,
            Self::Glicko2(config) => Rating::from_glicko2(glicko2::idle(
                standing.rating.glicko2(),
                periods_since(config, standing.last_played, now),
                config.initial_deviation,
            )),
        }
    }

    /// Whether the rating is not yet established as of `now`: Glicko-2
    /// while the deviation is above the threshold, logistic Elo during the
    /// newcomer's games; club Elo ratings always count.
    pub fn is_provisional(&self, standing: &Standing, now: Timestamp) -> bool {
        match self {
            Self::ClubElo => false,
            Self::LogisticElo => standing.games_played < logistic_elo::NEWCOMER_GAMES,
            Self::Glicko2(config) => config.is_provisional(self.current(standing, now).deviation),
        }
    }

    /// The new ratings of both players of a game finished at `now` in
    /// which white scored `white_score`. Both are computed from the ratings
    /// before the game.
    pub fn rate_game(
        &self,
        white: &Standing,
        black: &Standing,
        white_score: Score,
        now: Timestamp,
    ) -> (Rating, Rating) {
        let black_score = white_score.opposite();
        match self {
            Self::ClubElo => {
                let (w, b) = (white.rating.whole(), black.rating.whole());
                (
                    Rating::elo(club_elo::rate(w, b, white_score)),
                    Rating::elo(club_elo::rate(b, w, black_score)),
                )
            }
            Self::LogisticElo => {
                let (w, b) = (white.rating.whole(), black.rating.whole());
                (
                    Rating::elo(logistic_elo::rate(w, b, white.games_played, white_score)),
                    Rating::elo(logistic_elo::rate(b, w, black.games_played, black_score)),
                )
            }
            Self::Glicko2(config) => {
                let one = |player: &Standing, opponent: &Standing, score| {
                    let game = glicko2::Game {
                        opponent: self.current(opponent, now).glicko2(),
                        score,
                    };
                    Rating::from_glicko2(glicko2::rate(
                        player.rating.glicko2(),
                        &[game],
                        periods_since(config, player.last_played, now),
                        config,
                    ))
                };
                (
                    one(white, black, white_score),
                    one(black, white, black_score),
                )
            }
        }
    }
}

/// Rating periods between `last` and `now`; none for a player who has not
/// played (their deviation is the initial one already).
fn periods_since(config: &glicko2::Config, last: Option<Timestamp>, now: Timestamp) -> f64 {
    match last {
        Some(last) => (now.millis_since(last).max(0) as f64 / 1000.0) / config.period_secs,
        None => 0.0,
    }
}
