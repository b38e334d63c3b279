//! Time controls: the four kinds of clock, validated, their speed category,
//! their wire form and their stored form.

use std::fmt;

use chess_proto::common::v1 as pb;

use crate::{InvalidInput, SpeedCategory};

/// Most hours a daily game allows per move.
pub const DAILY_MAX_HOURS: u32 = 120;
/// Fewest hours a daily game allows per move.
pub const DAILY_MIN_HOURS: u32 = 24;
/// The turn limit of a daily game when none is given.
pub const DAILY_DEFAULT_HOURS: u32 = 24;

/// A time control.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimeControl {
    /// No clock.
    Untimed,
    /// "Game/k": `initial_secs` for the whole game, plus `increment_secs`
    /// after each move.
    Incremental {
        initial_secs: u32,
        increment_secs: u32,
    },
    /// "n/k": `moves` moves in every period of `period_secs`; unused time
    /// carries over.
    MovesInPeriod { moves: u32, period_secs: u32 },
    /// Correspondence: each move within `turn_hours` of the opponent's.
    Daily { turn_hours: u32 },
}

impl TimeControl {
    /// Checks the limits: a clock of 1 second to 24 hours, an increment of at
    /// most 3 minutes, 1 to 200 moves in a period of 1 minute to 24 hours, a
    /// daily turn limit of 24 to 120 hours.
    pub fn validate(self) -> Result<Self, InvalidInput> {
        match self {
            Self::Untimed => Ok(self),
            Self::Incremental {
                initial_secs,
                increment_secs,
            } => {
                if !(1..=86_400).contains(&initial_secs) {
                    return Err(InvalidInput::new(
                        "initial time must be 1 second to 24 hours",
                    ));
                }
                if increment_secs > 180 {
                    return Err(InvalidInput::new("increment must be at most 180 seconds"));
                }
                Ok(self)
            }
            Self::MovesInPeriod { moves, period_secs } => {
                if !(1..=200).contains(&moves) {
                    return Err(InvalidInput::new("moves per period must be 1 to 200"));
                }
                if !(60..=86_400).contains(&period_secs) {
                    return Err(InvalidInput::new("a period must be 1 minute to 24 hours"));
                }
                Ok(self)
            }
            Self::Daily { turn_hours } => {
                if !(DAILY_MIN_HOURS..=DAILY_MAX_HOURS).contains(&turn_hours) {
                    return Err(InvalidInput::new(format!(
                        "a daily turn limit must be {DAILY_MIN_HOURS} to {DAILY_MAX_HOURS} hours"
                    )));
                }
                Ok(self)
            }
        }
    }

    /// The speed category, from the usual estimate of a game's length per
    /// player: initial time plus 40 increments; for n/k and daily games, 40
    /// moves at their time per move. Daily games are correspondence; untimed
    /// games have their own category.
    pub fn speed(self) -> SpeedCategory {
        match self {
            Self::Untimed => SpeedCategory::Untimed,
            Self::Daily { .. } => SpeedCategory::Correspondence,
            Self::Incremental {
                initial_secs,
                increment_secs,
            } => SpeedCategory::for_estimated_seconds(
                u64::from(initial_secs) + 40 * u64::from(increment_secs),
            ),
            Self::MovesInPeriod { moves, period_secs } => {
                let per_move = f64::from(period_secs) / f64::from(moves.max(1));
                // Float to integer rounds toward zero; estimates are whole
                // seconds.
                SpeedCategory::for_estimated_seconds((per_move * 40.0) as u64)
            }
        }
    }

    /// Whether the server runs a clock.
    pub fn is_timed(self) -> bool {
        !matches!(self, Self::Untimed)
    }

    /// The conventional short form: `-`, `5+3`, `40/7200`, `1/86400` (daily,
    /// as PGN writes it).
    pub fn pgn_tag(self) -> String {
        match self {
            Self::Untimed => "-".to_owned(),
            Self::Incremental {
                initial_secs,
                increment_secs,
            } => {
                format!("{initial_secs}+{increment_secs}")
            }
            Self::MovesInPeriod { moves, period_secs } => format!("{moves}/{period_secs}"),
            Self::Daily { turn_hours } => format!("1/{}", u64::from(turn_hours) * 3600),
        }
    }
}

impl TimeControl {
    /// Whether this is a correspondence (daily) time control.
    pub fn is_daily(self) -> bool {
        matches!(self, Self::Daily { .. })
    }

    /// The stored form: `untimed`, `incremental:<s>:<s>`, `moves:<n>:<s>`,
    /// `daily:<h>` (the column every service stores time controls in).
    pub fn storage_name(self) -> String {
        match self {
            Self::Untimed => "untimed".to_owned(),
            Self::Incremental {
                initial_secs,
                increment_secs,
            } => format!("incremental:{initial_secs}:{increment_secs}"),
            Self::MovesInPeriod { moves, period_secs } => format!("moves:{moves}:{period_secs}"),
            Self::Daily { turn_hours } => format!("daily:{turn_hours}"),
        }
    }

    /// The time control stored as `s` (see [`storage_name`](Self::storage_name)).
    pub fn from_storage(s: &str) -> Option<Self> {
        let mut parts = s.split(':');
        let kind = parts.next()?;
        let mut num = || parts.next().and_then(|p| p.parse::<u32>().ok());
        let tc = match kind {
            "untimed" => Self::Untimed,
            "incremental" => Self::Incremental {
                initial_secs: num()?,
                increment_secs: num()?,
            },
            "moves" => Self::MovesInPeriod {
                moves: num()?,
                period_secs: num()?,
            },
            "daily" => Self::Daily { turn_hours: num()? },
            _ => return None,
        };
        parts.next().is_none().then_some(tc)
    }
}

impl fmt::Display for TimeControl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Untimed => f.write_str("untimed"),
            Self::Incremental {
                initial_secs,
                increment_secs,
            } => {
                if initial_secs % 60 == 0 {
                    write!(f, "{}+{increment_secs}", initial_secs / 60)
                } else {
                    write!(f, "{initial_secs}s+{increment_secs}")
                }
            }
            Self::MovesInPeriod { moves, period_secs } => {
                if period_secs % 3600 == 0 {
                    write!(f, "{moves} moves in {} h", period_secs / 3600)
                } else {
                    write!(f, "{moves} moves in {} min", period_secs / 60)
                }
            }
            Self::Daily { turn_hours } => write!(f, "{turn_hours} h per move"),
        }
    }
}

impl TryFrom<&pb::TimeControl> for TimeControl {
    type Error = InvalidInput;

    fn try_from(value: &pb::TimeControl) -> Result<Self, Self::Error> {
        use pb::time_control::Kind;
        let tc = match &value.kind {
            None => return Err(InvalidInput::new("time control must be given")),
            Some(Kind::Untimed(_)) => Self::Untimed,
            Some(Kind::Incremental(i)) => Self::Incremental {
                initial_secs: i.initial_seconds,
                increment_secs: i.increment_seconds,
            },
            Some(Kind::MovesInPeriod(m)) => Self::MovesInPeriod {
                moves: m.moves,
                period_secs: m.period_seconds,
            },
            Some(Kind::Daily(d)) => Self::Daily {
                turn_hours: if d.turn_hours == 0 {
                    DAILY_DEFAULT_HOURS
                } else {
                    d.turn_hours
                },
            },
        };
        tc.validate()
    }
}

impl TryFrom<Option<&pb::TimeControl>> for TimeControl {
    type Error = InvalidInput;

    fn try_from(value: Option<&pb::TimeControl>) -> Result<Self, Self::Error> {
        value
            .ok_or_else(|| InvalidInput::new("time control must be given"))?
            .try_into()
    }
}

impl From<TimeControl> for pb::TimeControl {
    fn from(value: TimeControl) -> Self {
        use pb::time_control::Kind;
        let kind = match value {
            TimeControl::Untimed => Kind::Untimed(pb::Untimed {}),
            TimeControl::Incremental {
                initial_secs,
                increment_secs,
            } => Kind::Incremental(pb::Incremental {
                initial_seconds: initial_secs,
                increment_seconds: increment_secs,
            }),
            TimeControl::MovesInPeriod { moves, period_secs } => {
                Kind::MovesInPeriod(pb::MovesInPeriod {
                    moves,
                    period_seconds: period_secs,
                })
            }
            TimeControl::Daily { turn_hours } => Kind::Daily(pb::Daily { turn_hours }),
        };
        Self { kind: Some(kind) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speed_categories_follow_the_usual_estimate() {
        let inc = |initial_secs, increment_secs| TimeControl::Incremental {
            initial_secs,
            increment_secs,
        };
        assert_eq!(inc(60, 0).speed(), SpeedCategory::Bullet);
        assert_eq!(inc(120, 1).speed(), SpeedCategory::Bullet); // 160 s
        assert_eq!(inc(180, 0).speed(), SpeedCategory::Blitz);
        assert_eq!(inc(180, 2).speed(), SpeedCategory::Blitz); // 260 s
        assert_eq!(inc(300, 3).speed(), SpeedCategory::Blitz); // 420 s
        assert_eq!(inc(480, 0).speed(), SpeedCategory::Rapid);
        assert_eq!(inc(600, 5).speed(), SpeedCategory::Rapid); // 800 s
        assert_eq!(inc(1500, 0).speed(), SpeedCategory::Classical);
        assert_eq!(inc(1800, 20).speed(), SpeedCategory::Classical);
        // 40 moves in 2 hours: 3 minutes a move, 7200 s estimated.
        assert_eq!(
            TimeControl::MovesInPeriod {
                moves: 40,
                period_secs: 7200
            }
            .speed(),
            SpeedCategory::Classical
        );
        // 40 moves in 5 minutes: 7.5 s a move, 300 s estimated.
        assert_eq!(
            TimeControl::MovesInPeriod {
                moves: 40,
                period_secs: 300
            }
            .speed(),
            SpeedCategory::Blitz
        );
        assert_eq!(
            TimeControl::Daily { turn_hours: 48 }.speed(),
            SpeedCategory::Correspondence
        );
        assert_eq!(TimeControl::Untimed.speed(), SpeedCategory::Untimed);
    }

    #[test]
    fn limits_are_checked() {
        assert!(TimeControl::Daily { turn_hours: 23 }.validate().is_err());
        assert!(TimeControl::Daily { turn_hours: 121 }.validate().is_err());
        assert!(TimeControl::Daily { turn_hours: 120 }.validate().is_ok());
        assert!(
            TimeControl::Incremental {
                initial_secs: 0,
                increment_secs: 0
            }
            .validate()
            .is_err()
        );
        assert!(
            TimeControl::MovesInPeriod {
                moves: 0,
                period_secs: 3600
            }
            .validate()
            .is_err()
        );
    }

    #[test]
    fn wire_round_trip() {
        for tc in [
            TimeControl::Untimed,
            TimeControl::Incremental {
                initial_secs: 300,
                increment_secs: 2,
            },
            TimeControl::MovesInPeriod {
                moves: 40,
                period_secs: 7200,
            },
            TimeControl::Daily { turn_hours: 72 },
        ] {
            let wire = pb::TimeControl::from(tc);
            assert_eq!(TimeControl::try_from(&wire).unwrap(), tc);
        }
        let daily_default = pb::TimeControl {
            kind: Some(pb::time_control::Kind::Daily(pb::Daily { turn_hours: 0 })),
        };
        assert_eq!(
            TimeControl::try_from(&daily_default).unwrap(),
            TimeControl::Daily { turn_hours: 24 }
        );
        assert!(TimeControl::try_from(&pb::TimeControl { kind: None }).is_err());
        for c in SpeedCategory::ALL {
            assert_eq!(
                SpeedCategory::try_from(pb::SpeedCategory::from(c) as i32).unwrap(),
                c
            );
            assert_eq!(SpeedCategory::from_name(c.as_str()), Some(c));
        }
        assert_eq!(
            SpeedCategory::from_name("untimed"),
            Some(SpeedCategory::Untimed)
        );
    }

    #[test]
    fn untimed_games_are_never_rated() {
        assert!(!SpeedCategory::Untimed.is_rated());
        assert!(SpeedCategory::Untimed.rated().is_err());
        assert!(!SpeedCategory::RATED.contains(&SpeedCategory::Untimed));
        for c in SpeedCategory::RATED {
            assert!(c.is_rated());
            assert_eq!(c.rated(), Ok(c));
        }
        assert!(
            SpeedCategory::ALL
                .iter()
                .all(|c| c.is_rated() == SpeedCategory::RATED.contains(c))
        );
    }

    #[test]
    fn the_stored_form_round_trips_and_refuses_anything_else() {
        for (tc, stored) in [
            (TimeControl::Untimed, "untimed"),
            (
                TimeControl::Incremental {
                    initial_secs: 300,
                    increment_secs: 2,
                },
                "incremental:300:2",
            ),
            (
                TimeControl::MovesInPeriod {
                    moves: 40,
                    period_secs: 7200,
                },
                "moves:40:7200",
            ),
            (TimeControl::Daily { turn_hours: 72 }, "daily:72"),
        ] {
            assert_eq!(tc.storage_name(), stored);
            assert_eq!(TimeControl::from_storage(stored), Some(tc));
            assert_eq!(tc.is_daily(), stored.starts_with("daily"));
        }
        for bad in [
            "",
            "daily",
            "daily:x",
            "incremental:1",
            "blitz:3:2",
            "daily:24:1",
        ] {
            assert_eq!(TimeControl::from_storage(bad), None, "{bad}");
        }
    }
}
