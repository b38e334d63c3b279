//! Speed categories: ratings are kept per category.

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
}

crate::enums::wire_enum!(SpeedCategory <=> pb::SpeedCategory {
    Bullet => "bullet",
    Blitz => "blitz",
    Rapid => "rapid",
    Classical => "classical",
    Correspondence => "correspondence",
    Untimed => "untimed",
} else "speed category must be given");
