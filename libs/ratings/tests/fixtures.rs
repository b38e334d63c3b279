//! Fixtures for the three rating systems: the club's check game and table
//! edges, the logistic K-factor tiers, and Glickman's worked example.

use chess_domain::Timestamp;
use chess_ratings::{
    Rating, Score, Standing, System, club_elo,
    glicko2::{self, Glicko2},
    logistic_elo,
};

/// The ratings after a game under an Elo `system` between players rated
/// `white` and `black`, each with `games_played` games before it.
fn elo_game(
    system: System,
    (white, black): (f64, f64),
    games_played: u32,
    score: Score,
) -> (f64, f64) {
    let standing = |rating| Standing {
        rating: Rating {
            rating,
            deviation: 0.0,
            volatility: 0.0,
        },
        games_played,
        last_played: None,
    };
    let (white, black) =
        system.rate_game(&standing(white), &standing(black), score, Timestamp::EPOCH);
    (white.rating, black.rating)
}

#[test]
fn club_elo_1500_beats_1600() {
    assert_eq!(club_elo::rate(1500, 1600, Score::Win), 1513);
    assert_eq!(club_elo::rate(1600, 1500, Score::Loss), 1587);

    assert_eq!(
        elo_game(System::ClubElo, (1500.0, 1600.0), 5, Score::Win),
        (1513.0, 1587.0)
    );
}

#[test]
fn club_elo_table_edges() {
    let cases = [
        (0, 0.50),
        (1, 0.51),
        (-1, 0.49),
        (3, 0.51),
        (-3, 0.49),
        (7, 0.51),
        (-7, 0.49),
        (8, 0.52),
        (-8, 0.48),
        (100, 0.64),
        (-100, 0.36),
        (600, 0.99),
        (-600, 0.01),
        (677, 0.99),
        (-677, 0.01),
        (678, 0.99),
        (-678, 0.01),
        (800, 0.99),
        (-800, 0.01),
        (i32::MAX, 0.99),
        (i32::MIN, 0.01),
    ];
    for (difference, expected) in cases {
        assert_eq!(
            club_elo::expected_score(difference),
            expected,
            "difference {difference}"
        );
    }
}

#[test]
fn club_elo_draws_and_rounding() {
    // Equal ratings: a draw changes nothing, a win is worth K/2.
    assert_eq!(club_elo::rate(1200, 1200, Score::Draw), 1200);
    assert_eq!(club_elo::rate(1200, 1200, Score::Win), 1210);
    assert_eq!(club_elo::rate(1200, 1200, Score::Loss), 1190);
    // 3 points ahead counts as 7: We = 0.51, a draw costs 0.2 → 0.
    assert_eq!(club_elo::rate(1203, 1200, Score::Draw), 1203);
    // 800 ahead: We = 0.99; a loss costs 19.8 → 20.
    assert_eq!(club_elo::rate(2000, 1200, Score::Loss), 1980);
    assert_eq!(club_elo::rate(1200, 2000, Score::Win), 1220);
    assert_eq!(club_elo::rate(2000, 1200, Score::Win), 2000);
}

#[test]
fn logistic_k_tiers() {
    // The tenth game still counts as a newcomer's, the eleventh does not.
    assert_eq!(logistic_elo::k_factor(1000, 0), 30.0);
    assert_eq!(logistic_elo::k_factor(1000, 9), 30.0);
    assert_eq!(logistic_elo::k_factor(1000, 10), 20.0);
    // Above 2000 (not at it) after the newcomer's games.
    assert_eq!(logistic_elo::k_factor(2000, 10), 20.0);
    assert_eq!(logistic_elo::k_factor(2001, 10), 15.0);
    assert_eq!(logistic_elo::k_factor(2400, 9), 30.0);

    // Equal ratings: the change is K/2.
    assert_eq!(logistic_elo::rate(1000, 1000, 9, Score::Win), 1015);
    assert_eq!(logistic_elo::rate(1000, 1000, 10, Score::Win), 1010);
    assert_eq!(logistic_elo::rate(2000, 2000, 10, Score::Loss), 1990);
    assert_eq!(logistic_elo::rate(2001, 2001, 10, Score::Loss), 1994); // 2001 − 7.5, halves away from zero
    assert_eq!(logistic_elo::rate(2100, 2100, 50, Score::Win), 2108); // 2100 + 7.5

    // 400 points below: expected 1/11.
    assert_eq!(logistic_elo::rate(1600, 2000, 20, Score::Win), 1618); // + 18.18
    assert_eq!(logistic_elo::rate(2000, 1600, 20, Score::Loss), 1982); // − 18.18
}

#[test]
fn logistic_draws_change_nothing() {
    assert_eq!(logistic_elo::rate(1000, 1800, 0, Score::Draw), 1000);
    assert_eq!(logistic_elo::rate(1800, 1000, 30, Score::Draw), 1800);
    assert_eq!(
        elo_game(System::LogisticElo, (1000.0, 1400.0), 0, Score::Draw),
        (1000.0, 1400.0)
    );
}

fn opponent(rating: f64, deviation: f64) -> Glicko2 {
    Glicko2 {
        rating,
        deviation,
        volatility: 0.06,
    }
}

#[test]
fn glicko2_worked_example() {
    let player = Glicko2 {
        rating: 1500.0,
        deviation: 200.0,
        volatility: 0.06,
    };
    let games = [
        glicko2::Game {
            opponent: opponent(1400.0, 30.0),
            score: Score::Win,
        },
        glicko2::Game {
            opponent: opponent(1550.0, 100.0),
            score: Score::Loss,
        },
        glicko2::Game {
            opponent: opponent(1700.0, 300.0),
            score: Score::Loss,
        },
    ];
    let config = glicko2::Config {
        tau: 0.5,
        ..glicko2::Config::default()
    };
    let rated = glicko2::rate(player, &games, 1.0, &config);
    // The paper rounds its intermediate values (μ' = −0.2069), so its figures
    // are matched to their last printed digit: exactly, r' = 1464.0507,
    // RD' = 151.5165, σ' = 0.0599960.
    assert!(
        (rated.rating - 1464.06).abs() < 0.01,
        "rating {}",
        rated.rating
    );
    assert!(
        (rated.deviation - 151.52).abs() < 0.01,
        "deviation {}",
        rated.deviation
    );
    assert!(
        (rated.volatility - 0.05999).abs() < 0.000_01,
        "volatility {}",
        rated.volatility
    );
}

#[test]
fn glicko2_inactivity_and_provisional() {
    let config = glicko2::Config::default();
    let system = System::Glicko2(config);
    let newcomer = system.newcomer();
    assert!(system.is_provisional(&newcomer, Timestamp::EPOCH));
    assert_eq!(
        system
            .current(&newcomer, Timestamp::from_millis(i64::MAX))
            .deviation,
        350.0
    );

    let established = Standing {
        rating: Rating {
            rating: 1800.0,
            deviation: 60.0,
            volatility: 0.06,
        },
        games_played: 100,
        last_played: Some(Timestamp::EPOCH),
    };
    assert!(!system.is_provisional(&established, Timestamp::EPOCH));
    let days = |n: i64| Timestamp::from_millis(n * 86_400_000);
    let after_a_day = system.current(&established, days(1)).deviation;
    let expected = ((60.0 / glicko2::SCALE).powi(2) + 0.06f64.powi(2)).sqrt() * glicko2::SCALE;
    assert!((after_a_day - expected).abs() < 1e-9, "{after_a_day}");
    // A long absence makes the rating provisional again; the rating stays.
    let later = system.current(&established, days(400));
    assert!(later.deviation > 110.0, "{}", later.deviation);
    assert_eq!(later.rating, 1800.0);
    assert!(system.is_provisional(&established, days(400)));
}

#[test]
fn glicko2_games_move_ratings_and_shrink_deviations() {
    let system = System::Glicko2(glicko2::Config::default());
    let a = system.newcomer();
    let b = system.newcomer();
    let (white, black) = system.rate_game(&a, &b, Score::Win, Timestamp::EPOCH);
    assert!(white.rating > 1500.0 && black.rating < 1500.0);
    assert!((white.rating - 1500.0 + black.rating - 1500.0).abs() < 1e-9);
    assert!(white.deviation < 350.0 && black.deviation < 350.0);
    let (white, black) = system.rate_game(&a, &b, Score::Draw, Timestamp::EPOCH);
    assert!((white.rating - 1500.0).abs() < 1e-9 && (black.rating - 1500.0).abs() < 1e-9);
}
