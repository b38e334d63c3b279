//! Elo as in the club rules: `Rn = Ro + K(W − We)` with K = 20 and `We` read
//! from the club's expectancy table rather than computed, so published club
//! ratings can be reproduced to the point.
//!
//! The table maps a rating difference (own rating minus the opponent's) to an
//! expected score in hundredths. A difference between two tabled values is
//! looked up away from zero: for a positive difference the smallest tabled
//! difference ≥ it, for a negative one the largest tabled difference ≤ it.
//! Beyond the table the expectation is 0.99 (ahead) or 0.01 (behind).

use std::sync::LazyLock;

use crate::Score;

/// A new player's rating.
pub const INITIAL: i32 = 1200;

/// The development coefficient.
pub const K: f64 = 20.0;

/// The expectancy table, `rating_difference,expected_score`, differences
/// ascending.
pub const TABLE_CSV: &str = include_str!("../data/elo-expectancy-table.csv");

/// Expectation of a player more than the table's largest difference ahead.
const BEYOND_AHEAD: f64 = 0.99;
/// Expectation of a player more than the table's largest difference behind.
const BEYOND_BEHIND: f64 = 0.01;

/// Why an expectancy table cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    #[error("line {line}: expected `difference,expected_score`")]
    Malformed { line: usize },
    #[error("line {line}: differences must ascend")]
    Unordered { line: usize },
    #[error("line {line}: expected score must lie in [0, 1]")]
    OutOfRange { line: usize },
    #[error("the table is empty")]
    Empty,
}

/// An expectancy table: differences ascending, each with its expected score.
#[derive(Clone, Debug, PartialEq)]
pub struct ExpectancyTable {
    rows: Vec<(i32, f64)>,
}

impl ExpectancyTable {
    /// Parses the CSV form (a header line, then `difference,expected_score`).
    pub fn parse(csv: &str) -> Result<Self, TableError> {
        let mut rows: Vec<(i32, f64)> = Vec::new();
        for (index, raw) in csv.lines().enumerate().skip(1) {
            let line = index + 1;
            let raw = raw.trim();
            if raw.is_empty() {
                continue;
            }
            let (difference, expected) = raw
                .split_once(',')
                .and_then(|(d, e)| Some((d.trim().parse().ok()?, e.trim().parse().ok()?)))
                .ok_or(TableError::Malformed { line })?;
            if !(0.0..=1.0).contains(&expected) {
                return Err(TableError::OutOfRange { line });
            }
            if rows.last().is_some_and(|&(last, _)| last >= difference) {
                return Err(TableError::Unordered { line });
            }
            rows.push((difference, expected));
        }
        if rows.is_empty() {
            return Err(TableError::Empty);
        }
        Ok(Self { rows })
    }

    /// The expected score of a player whose rating is `difference` points
    /// above the opponent's (negative when below).
    pub fn expected_score(&self, difference: i32) -> f64 {
        if difference >= 0 {
            let at = self.rows.partition_point(|&(d, _)| d < difference);
            self.rows.get(at).map_or(BEYOND_AHEAD, |&(_, e)| e)
        } else {
            let at = self.rows.partition_point(|&(d, _)| d <= difference);
            at.checked_sub(1)
                .and_then(|i| self.rows.get(i))
                .map_or(BEYOND_BEHIND, |&(_, e)| e)
        }
    }
}

/// The club's table, parsed once.
pub fn table() -> &'static ExpectancyTable {
    static TABLE: LazyLock<ExpectancyTable> = LazyLock::new(|| {
        ExpectancyTable::parse(TABLE_CSV)
            .expect("the embedded expectancy table is valid (checked by the crate's tests)")
    });
    &TABLE
}

/// The expected score `We` for a rating `difference` (own minus opponent's).
pub fn expected_score(difference: i32) -> f64 {
    table().expected_score(difference)
}

/// The new rating of a player rated `rating` after scoring `score` against
/// `opponent`, rounded to a whole point.
pub fn rate(rating: i32, opponent: i32, score: Score) -> i32 {
    let expected = expected_score(rating.saturating_sub(opponent));
    round(f64::from(rating) + K * (score.value() - expected))
}

/// Rounds to the nearest whole point; ratings stay far inside `i32`.
fn round(value: f64) -> i32 {
    value.round() as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_table_parses() {
        let table = ExpectancyTable::parse(TABLE_CSV).unwrap();
        assert_eq!(table.rows.first(), Some(&(-677, 0.01)));
        assert_eq!(table.rows.last(), Some(&(677, 0.99)));
    }

    #[test]
    fn bad_tables_are_refused() {
        assert_eq!(ExpectancyTable::parse("h\n"), Err(TableError::Empty));
        assert_eq!(
            ExpectancyTable::parse("h\n1,0.5\n1,0.6\n"),
            Err(TableError::Unordered { line: 3 })
        );
        assert_eq!(
            ExpectancyTable::parse("h\nx\n"),
            Err(TableError::Malformed { line: 2 })
        );
        assert_eq!(
            ExpectancyTable::parse("h\n0,1.5\n"),
            Err(TableError::OutOfRange { line: 2 })
        );
    }
}
