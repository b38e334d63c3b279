//! Search limits, strength levels, and the plan a search runs with.
//!
//! Levels 1–8 follow lichess's AI levels: movetime 50, 100, 150, 200, 300,
//! 400, 500 and 1000 ms; depth 5, 5, 5, 5, 5, 8, 13 and 22; Skill Level
//! rising to 20 at level 8. lichess gives the weakest levels a negative Skill
//! Level, which Debian's Stockfish 15.1 does not accept (0–20 only), and
//! `UCI_Elo`'s floor of 1350 is no weaker than Skill Level 0. The lever used
//! instead is the number of candidate moves: with a Skill Level below 20,
//! Stockfish picks its move among the `MultiPV` best lines (at least 4), and
//! at Skill Level 0 it barely prefers the better ones. So levels 1–3 all play
//! at Skill Level 0 and choose among 40, 6 and 4 candidates: the wider the
//! choice, the weaker the play.
//!
//! Each search states every strength option it needs ([`Strength`]), and a
//! process is re-set when its options differ, so a process that served a weak
//! level never plays a full-strength request weakly.

use std::time::Duration;

use crate::Error;

/// The longest movetime accepted, in milliseconds.
pub const MAX_MOVETIME_MS: u32 = 60_000;
/// The deepest depth accepted.
pub const MAX_DEPTH: u32 = 50;
/// The most principal variations an analysis may ask for.
pub const MAX_MULTIPV: u32 = 5;
/// A search with a depth but no movetime is stopped after this long.
pub const MAX_SEARCH_TIME: Duration = Duration::from_millis(MAX_MOVETIME_MS as u64);

/// Search limits at full strength; at least one is set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    movetime: Option<Duration>,
    depth: Option<u32>,
}

impl Limits {
    /// Limits from wire values, where 0 means "not set".
    pub fn new(movetime_ms: u32, depth: u32) -> Result<Self, Error> {
        if movetime_ms > MAX_MOVETIME_MS {
            return Err(Error::MovetimeTooLong(movetime_ms));
        }
        if depth > MAX_DEPTH {
            return Err(Error::DepthTooDeep(depth));
        }
        let limits = Self {
            movetime: (movetime_ms > 0).then(|| Duration::from_millis(u64::from(movetime_ms))),
            depth: (depth > 0).then_some(depth),
        };
        if limits.movetime.is_none() && limits.depth.is_none() {
            return Err(Error::MissingLimits);
        }
        Ok(limits)
    }

    pub fn movetime(&self) -> Option<Duration> {
        self.movetime
    }

    pub fn depth(&self) -> Option<u32> {
        self.depth
    }
}

/// The engine options that decide how strongly a process plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Strength {
    /// Stockfish's `Skill Level`, 0–20 (20 is full strength).
    pub skill_level: u8,
    /// Stockfish's `MultiPV`: lines searched (and, below Skill Level 20,
    /// candidates to pick from).
    pub multipv: u8,
}

impl Strength {
    /// Full strength, one line: what a fresh process is set to.
    pub const FULL: Self = Self {
        skill_level: 20,
        multipv: 1,
    };
}

/// A strength level, 1 (weakest) to 8 (strongest).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Level(u8);

/// Per level: movetime in ms, depth, Skill Level, MultiPV.
const LEVELS: [(u32, u32, u8, u8); 8] = [
    (50, 5, 0, 40),
    (100, 5, 0, 6),
    (150, 5, 0, 4),
    (200, 5, 3, 1),
    (300, 5, 7, 1),
    (400, 8, 11, 1),
    (500, 13, 16, 1),
    (1000, 22, 20, 1),
];

impl Level {
    pub const MIN: u32 = 1;
    pub const MAX: u32 = LEVELS.len() as u32;

    pub fn new(level: u32) -> Result<Self, Error> {
        match u8::try_from(level) {
            Ok(n) if (Self::MIN..=Self::MAX).contains(&level) => Ok(Self(n)),
            _ => Err(Error::InvalidLevel(level)),
        }
    }

    pub fn get(self) -> u32 {
        u32::from(self.0)
    }

    /// How a search at this level runs.
    pub fn plan(self) -> SearchPlan {
        let (movetime_ms, depth, skill_level, multipv) = LEVELS[usize::from(self.0) - 1];
        SearchPlan {
            go: chess_uci::Go {
                movetime: Some(Duration::from_millis(u64::from(movetime_ms))),
                depth: Some(depth),
                nodes: None,
            },
            strength: Strength {
                skill_level,
                multipv,
            },
        }
    }
}

/// What a search sends: its limits, and the options the process must have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SearchPlan {
    pub go: chess_uci::Go,
    pub strength: Strength,
}

impl SearchPlan {
    /// A full-strength search within `limits`, with `multipv` lines.
    pub fn full_strength(limits: Limits, multipv: u8) -> Self {
        Self {
            go: chess_uci::Go {
                movetime: limits.movetime,
                depth: limits.depth,
                nodes: None,
            },
            strength: Strength {
                skill_level: 20,
                multipv,
            },
        }
    }
}

/// The number of lines an analysis asks for: 0 means 1.
pub fn multipv(requested: u32) -> Result<u8, Error> {
    match requested {
        0 => Ok(1),
        n if n <= MAX_MULTIPV => u8::try_from(n).map_err(|_| Error::InvalidMultipv(n)),
        n => Err(Error::InvalidMultipv(n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_bounded_and_required() {
        assert!(matches!(Limits::new(0, 0), Err(Error::MissingLimits)));
        assert!(matches!(
            Limits::new(60_001, 0),
            Err(Error::MovetimeTooLong(60_001))
        ));
        assert!(matches!(Limits::new(0, 51), Err(Error::DepthTooDeep(51))));
        let limits = Limits::new(500, 15).unwrap();
        assert_eq!(limits.movetime(), Some(Duration::from_millis(500)));
        assert_eq!(limits.depth(), Some(15));
        assert_eq!(Limits::new(60_000, 0).unwrap().depth(), None);
        assert_eq!(Limits::new(0, 50).unwrap().movetime(), None);
        let plan = SearchPlan::full_strength(limits, 1);
        assert_eq!(plan.go.to_string(), "go depth 15 movetime 500");
        assert_eq!(plan.strength, Strength::FULL);
    }

    #[test]
    fn levels_follow_the_table() {
        assert!(Level::new(0).is_err());
        assert!(Level::new(9).is_err());
        assert!(Level::new(u32::MAX).is_err());
        let movetimes: Vec<u128> = (1..=8)
            .map(|n| {
                Level::new(n)
                    .unwrap()
                    .plan()
                    .go
                    .movetime
                    .unwrap()
                    .as_millis()
            })
            .collect();
        assert_eq!(movetimes, [50, 100, 150, 200, 300, 400, 500, 1000]);
        let depths: Vec<u32> = (1..=8)
            .map(|n| Level::new(n).unwrap().plan().go.depth.unwrap())
            .collect();
        assert_eq!(depths, [5, 5, 5, 5, 5, 8, 13, 22]);
        assert_eq!(Level::new(8).unwrap().plan().strength, Strength::FULL);
        // Strength never decreases with the level.
        let strengths: Vec<(u8, std::cmp::Reverse<u8>)> = (1..=8)
            .map(|n| {
                let s = Level::new(n).unwrap().plan().strength;
                (s.skill_level, std::cmp::Reverse(s.multipv))
            })
            .collect();
        assert!(strengths.windows(2).all(|w| w[0] < w[1]), "{strengths:?}");
        // Every option value is one Stockfish 15.1 accepts.
        for n in 1..=8 {
            let s = Level::new(n).unwrap().plan().strength;
            assert!(s.skill_level <= 20 && s.multipv >= 1);
        }
    }

    #[test]
    fn multipv_is_one_to_five() {
        assert_eq!(multipv(0).unwrap(), 1);
        assert_eq!(multipv(5).unwrap(), 5);
        assert!(matches!(multipv(6), Err(Error::InvalidMultipv(6))));
    }
}
