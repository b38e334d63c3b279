//! Domain types shared by the chess services.
//!
//! - [`TimeControl`]: the four kinds of clock, validated, with the speed
//!   category ratings are kept in.
//! - [`SpeedCategory`], [`ColorChoice`] and [`RuleSet`].
//! - Conversions from and to the `chess.common.v1` wire types, done once at
//!   the edge: services convert with `TryFrom` and work with these types.

use std::fmt;

use chess_proto::common::v1 as pb;
pub use shakmaty::Color;

/// A wire value that does not make a valid domain value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidInput(pub String);

impl InvalidInput {
    fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

/// What a guest who gave no name is called.
pub const UNNAMED_GUEST: &str = "Guest";

/// How the engine playing at `level` is named to players: plain
/// "Stockfish" at full strength (level 0), "Stockfish level N" otherwise.
pub fn engine_name(level: u32) -> String {
    match level {
        0 => "Stockfish".to_owned(),
        level => format!("Stockfish level {level}"),
    }
}

/// The name players see for `player` (the unnamed guest and the engine
/// named as above).
pub fn player_name(player: &pb::Player) -> String {
    match &player.kind {
        Some(pb::player::Kind::Registered(r)) => r.username.clone(),
        Some(pb::player::Kind::Guest(g)) if !g.display_name.is_empty() => g.display_name.clone(),
        Some(pb::player::Kind::Guest(_)) => UNNAMED_GUEST.to_owned(),
        Some(pb::player::Kind::Engine(e)) => engine_name(e.level),
        None => "?".to_owned(),
    }
}

/// Speed category of a time control; ratings are kept per category, except
/// for untimed games, which are never rated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SpeedCategory {
    Bullet,
    Blitz,
    Rapid,
    Classical,
    Correspondence,
    /// No clock: casual games against the engine, uqchess games.
    Untimed,
}

impl SpeedCategory {
    /// Every category, fastest first, untimed last.
    pub const ALL: [Self; 6] = [
        Self::Bullet,
        Self::Blitz,
        Self::Rapid,
        Self::Classical,
        Self::Correspondence,
        Self::Untimed,
    ];

    /// The categories ratings are kept in: every one but untimed.
    pub const RATED: [Self; 5] = [
        Self::Bullet,
        Self::Blitz,
        Self::Rapid,
        Self::Classical,
        Self::Correspondence,
    ];

    /// Whether games of this category can be rated. Without a clock a game
    /// cannot be rated: nothing stops a player from consulting an engine or
    /// simply never moving.
    pub fn is_rated(self) -> bool {
        !matches!(self, Self::Untimed)
    }

    /// `self` if games of it can be rated, else why not.
    pub fn rated(self) -> Result<Self, InvalidInput> {
        if self.is_rated() {
            Ok(self)
        } else {
            Err(InvalidInput::new(
                "untimed games are not rated: there is no untimed rating",
            ))
        }
    }

    /// The category of a game expected to last `seconds` per player: under 3
    /// minutes bullet, under 8 blitz, under 25 rapid, else classical.
    pub fn for_estimated_seconds(seconds: u64) -> Self {
        match seconds {
            0..180 => Self::Bullet,
            180..480 => Self::Blitz,
            480..1500 => Self::Rapid,
            _ => Self::Classical,
        }
    }

    /// Lower-case name, as stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Bullet => "bullet",
            Self::Blitz => "blitz",
            Self::Rapid => "rapid",
            Self::Classical => "classical",
            Self::Correspondence => "correspondence",
            Self::Untimed => "untimed",
        }
    }

    /// The category named `name` (as by [`as_str`](Self::as_str)).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == name)
    }
}

impl fmt::Display for SpeedCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl TryFrom<i32> for SpeedCategory {
    type Error = InvalidInput;

    fn try_from(value: i32) -> Result<Self, Self::Error> {
        match pb::SpeedCategory::try_from(value) {
            Ok(pb::SpeedCategory::Bullet) => Ok(Self::Bullet),
            Ok(pb::SpeedCategory::Blitz) => Ok(Self::Blitz),
            Ok(pb::SpeedCategory::Rapid) => Ok(Self::Rapid),
            Ok(pb::SpeedCategory::Classical) => Ok(Self::Classical),
            Ok(pb::SpeedCategory::Correspondence) => Ok(Self::Correspondence),
            Ok(pb::SpeedCategory::Untimed) => Ok(Self::Untimed),
            Ok(pb::SpeedCategory::Unspecified) | Err(_) => {
                Err(InvalidInput::new("speed category must be given"))
            }
        }
    }
}

impl From<SpeedCategory> for pb::SpeedCategory {
    fn from(value: SpeedCategory) -> Self {
        match value {
            SpeedCategory::Bullet => Self::Bullet,
            SpeedCategory::Blitz => Self::Blitz,
            SpeedCategory::Rapid => Self::Rapid,
            SpeedCategory::Classical => Self::Classical,
            SpeedCategory::Correspondence => Self::Correspondence,
            SpeedCategory::Untimed => Self::Untimed,
        }
    }
}

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

/// The colour a player asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ColorChoice {
    White,
    Black,
    Either,
}

impl ColorChoice {
    /// Whether two players' choices can face each other.
    pub fn compatible(self, other: Self) -> bool {
        !matches!(
            (self, other),
            (Self::White, Self::White) | (Self::Black, Self::Black)
        )
    }

    /// The colour this choice fixes, if any.
    pub fn color(self) -> Option<Color> {
        match self {
            Self::White => Some(Color::White),
            Self::Black => Some(Color::Black),
            Self::Either => None,
        }
    }
}

impl TryFrom<i32> for ColorChoice {
    type Error = InvalidInput;

    fn try_from(value: i32) -> Result<Self, Self::Error> {
        match pb::ColorChoice::try_from(value) {
            Ok(pb::ColorChoice::White) => Ok(Self::White),
            Ok(pb::ColorChoice::Black) => Ok(Self::Black),
            Ok(pb::ColorChoice::Either) => Ok(Self::Either),
            Ok(pb::ColorChoice::Unspecified) | Err(_) => {
                Err(InvalidInput::new("colour must be white, black or either"))
            }
        }
    }
}

impl From<ColorChoice> for pb::ColorChoice {
    fn from(value: ColorChoice) -> Self {
        match value {
            ColorChoice::White => Self::White,
            ColorChoice::Black => Self::Black,
            ColorChoice::Either => Self::Either,
        }
    }
}

/// A colour on the wire.
pub fn color_to_pb(color: Color) -> pb::Color {
    match color {
        Color::White => pb::Color::White,
        Color::Black => pb::Color::Black,
    }
}

/// A colour from the wire, if one is given.
pub fn color_from_pb(value: i32) -> Option<Color> {
    match pb::Color::try_from(value) {
        Ok(pb::Color::White) => Some(Color::White),
        Ok(pb::Color::Black) => Some(Color::Black),
        _ => None,
    }
}

/// Which rules end a game.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RuleSet {
    /// Every rule of chess.
    Standard,
    /// Only checkmate, stalemate and resignation end the game.
    Uqchess,
}

impl TryFrom<i32> for RuleSet {
    type Error = InvalidInput;

    fn try_from(value: i32) -> Result<Self, Self::Error> {
        match pb::RuleSet::try_from(value) {
            // Unspecified means the usual rules.
            Ok(pb::RuleSet::Standard | pb::RuleSet::Unspecified) => Ok(Self::Standard),
            Ok(pb::RuleSet::Uqchess) => Ok(Self::Uqchess),
            Err(_) => Err(InvalidInput::new("unknown rule set")),
        }
    }
}

impl From<RuleSet> for pb::RuleSet {
    fn from(value: RuleSet) -> Self {
        match value {
            RuleSet::Standard => Self::Standard,
            RuleSet::Uqchess => Self::Uqchess,
        }
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
    fn colour_choices_pair_up() {
        use ColorChoice::*;
        assert!(White.compatible(Black));
        assert!(White.compatible(Either));
        assert!(Either.compatible(Either));
        assert!(!White.compatible(White));
        assert!(!Black.compatible(Black));
    }
}
