//! Speed categories: ratings are kept per category.

use std::fmt;

use chess_proto::common::v1 as pb;

use crate::InvalidInput;

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
