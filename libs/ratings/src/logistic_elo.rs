//! Elo as in the web-site rules: the logistic expected score
//! `1 / (1 + 10^((Ropp − R)/400))`, a K-factor that settles as a player gets
//! established, and draws that leave both ratings as they were.

use crate::Score;

/// A new player's rating.
pub const INITIAL: i32 = 1000;

/// Games a player plays with the newcomer's K-factor.
pub const NEWCOMER_GAMES: u32 = 10;

/// Ratings above this use the masters' K-factor.
pub const MASTER_RATING: i32 = 2000;

/// The expected score of a player rated `rating` against `opponent`.
pub fn expected_score(rating: i32, opponent: i32) -> f64 {
    let exponent = (f64::from(opponent) - f64::from(rating)) / 400.0;
    1.0 / (1.0 + 10f64.powf(exponent))
}

/// The K-factor of a player rated `rating` who has finished `games_played`
/// rated games before this one: 30 for the first ten, then 15 above 2000 and
/// 20 otherwise.
pub fn k_factor(rating: i32, games_played: u32) -> f64 {
    if games_played < NEWCOMER_GAMES {
        30.0
    } else if rating > MASTER_RATING {
        15.0
    } else {
        20.0
    }
}

/// The new rating of a player rated `rating`, with `games_played` rated games
/// before this one, after scoring `score` against `opponent`; rounded to a
/// whole point. A draw changes nothing.
pub fn rate(rating: i32, opponent: i32, games_played: u32, score: Score) -> i32 {
    if score == Score::Draw {
        return rating;
    }
    let change =
        k_factor(rating, games_played) * (score.value() - expected_score(rating, opponent));
    // Ratings stay far inside `i32`.
    (f64::from(rating) + change).round() as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_ratings_expect_half() {
        assert!((expected_score(1500, 1500) - 0.5).abs() < 1e-12);
        assert!((expected_score(1900, 1500) - 10.0 / 11.0).abs() < 1e-12);
    }
}
