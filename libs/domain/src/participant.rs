//! Who plays a game: [`Participant`], with its wire and stored forms; the
//! names players see, the engine's levels, and the `chess.common.v1.Player`
//! of each kind of participant, built in one place.

use std::ops::RangeInclusive;

use chess_proto::common::v1 as pb;

use crate::{InvalidInput, PlayerId, Username};

/// Who plays a side.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Participant {
    /// A player with an account.
    Registered { id: PlayerId, username: Username },
    /// An anonymous player.
    Guest { id: PlayerId, name: String },
    /// Stockfish; level 0 is full strength (the uqchess search), 1–8 graded.
    Engine { level: u8 },
}

/// `id`, or the refusal `missing` if it is empty.
fn given_id(id: &str, missing: &str) -> Result<PlayerId, InvalidInput> {
    PlayerId::parse(id).map_err(|_| InvalidInput::new(missing))
}

impl Participant {
    /// The id a human acts with; none for the engine.
    pub fn actor_id(&self) -> Option<&PlayerId> {
        match self {
            Self::Registered { id, .. } | Self::Guest { id, .. } => Some(id),
            Self::Engine { .. } => None,
        }
    }

    /// A name to show (the unnamed guest and the engine named as players
    /// see them).
    pub fn display_name(&self) -> String {
        match self {
            Self::Registered { username, .. } => username.to_string(),
            Self::Guest { name, .. } if !name.is_empty() => name.clone(),
            Self::Guest { .. } => UNNAMED_GUEST.to_owned(),
            Self::Engine { level } => engine_name(u32::from(*level)),
        }
    }

    /// Whether this is the engine.
    pub fn is_engine(&self) -> bool {
        matches!(self, Self::Engine { .. })
    }

    /// Whether this is a registered player.
    pub fn is_registered(&self) -> bool {
        matches!(self, Self::Registered { .. })
    }

    /// The participant on the wire.
    pub fn to_pb(&self) -> pb::Player {
        match self {
            Self::Registered { id, username } => registered_player(id.as_str(), username.as_str()),
            Self::Guest { id, name } => guest_player(id.as_str(), name),
            Self::Engine { level } => engine_player(u32::from(*level)),
        }
    }

    /// A participant from the wire: humans need an id, the engine one of
    /// its levels.
    pub fn from_pb(player: Option<&pb::Player>) -> Result<Self, InvalidInput> {
        use pb::player::Kind;
        match player.and_then(|p| p.kind.as_ref()) {
            None => Err(InvalidInput::new("both players must be given")),
            Some(Kind::Registered(r)) => Ok(Self::Registered {
                id: given_id(&r.player_id, "a registered player needs an id")?,
                // Usernames reach the game service from our own
                // matchmaking, which took them from the accounts.
                username: Username::trusted(r.username.clone()),
            }),
            Some(Kind::Guest(g)) => Ok(Self::Guest {
                id: given_id(&g.guest_id, "a guest needs an id")?,
                name: g.display_name.clone(),
            }),
            Some(Kind::Engine(e)) => match u8::try_from(e.level) {
                Ok(level) if is_engine_level(u32::from(level)) => Ok(Self::Engine { level }),
                _ => Err(InvalidInput::new(
                    "engine levels are 1 to 8 (0 for full strength)",
                )),
            },
        }
    }

    /// The stored form: kind (`registered`, `guest` or `engine`), id, name
    /// and engine level (0 for humans; the engine has no id or name).
    pub fn to_stored(&self) -> (&'static str, String, String, i32) {
        match self {
            Self::Registered { id, username } => {
                ("registered", id.to_string(), username.to_string(), 0)
            }
            Self::Guest { id, name } => ("guest", id.to_string(), name.clone(), 0),
            Self::Engine { level } => ("engine", String::new(), String::new(), i32::from(*level)),
        }
    }

    /// The participant stored as [`to_stored`](Self::to_stored) makes it.
    pub fn from_stored(kind: &str, id: String, name: String, level: i32) -> Option<Self> {
        match kind {
            "registered" => Some(Self::Registered {
                id: PlayerId::trusted(id),
                username: Username::trusted(name),
            }),
            "guest" => Some(Self::Guest {
                id: PlayerId::trusted(id),
                name,
            }),
            "engine" => u8::try_from(level).ok().map(|level| Self::Engine { level }),
            _ => None,
        }
    }
}

/// The engine's graded levels, weakest first.
pub const ENGINE_LEVELS: RangeInclusive<u32> = 1..=8;

/// The level of the engine at full strength (no grading).
pub const FULL_STRENGTH: u32 = 0;

/// Whether `level` is one the engine plays at: a graded level or full
/// strength.
pub fn is_engine_level(level: u32) -> bool {
    level == FULL_STRENGTH || ENGINE_LEVELS.contains(&level)
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

/// A registered player on the wire.
pub fn registered_player(player_id: &str, username: &str) -> pb::Player {
    pb::Player {
        kind: Some(pb::player::Kind::Registered(pb::RegisteredPlayer {
            player_id: player_id.to_owned(),
            username: username.to_owned(),
        })),
    }
}

/// A guest on the wire (`display_name` may be empty: [`UNNAMED_GUEST`]).
pub fn guest_player(guest_id: &str, display_name: &str) -> pb::Player {
    pb::Player {
        kind: Some(pb::player::Kind::Guest(pb::GuestPlayer {
            guest_id: guest_id.to_owned(),
            display_name: display_name.to_owned(),
        })),
    }
}

/// The engine at `level` on the wire ([`FULL_STRENGTH`] or one of
/// [`ENGINE_LEVELS`]).
pub fn engine_player(level: u32) -> pb::Player {
    pb::Player {
        kind: Some(pb::player::Kind::Engine(pb::EnginePlayer { level })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn players_are_named_as_players_see_them() {
        assert_eq!(player_name(&registered_player("p1", "alice")), "alice");
        assert_eq!(player_name(&guest_player("g1", "")), UNNAMED_GUEST);
        assert_eq!(player_name(&guest_player("g1", "zed")), "zed");
        assert_eq!(player_name(&engine_player(FULL_STRENGTH)), "Stockfish");
        assert_eq!(player_name(&engine_player(3)), "Stockfish level 3");
        assert_eq!(player_name(&pb::Player { kind: None }), "?");
        assert!(is_engine_level(0) && is_engine_level(1) && is_engine_level(8));
        assert!(!is_engine_level(9));
    }

    #[test]
    fn participants_round_trip() {
        for p in [
            Participant::Registered {
                id: PlayerId::trusted("p1"),
                username: Username::trusted("alice"),
            },
            Participant::Guest {
                id: PlayerId::trusted("g1"),
                name: String::new(),
            },
            Participant::Engine { level: 3 },
        ] {
            assert_eq!(Participant::from_pb(Some(&p.to_pb())), Ok(p.clone()));
            let (kind, id, name, level) = p.to_stored();
            assert_eq!(
                Participant::from_stored(kind, id, name, level),
                Some(p.clone())
            );
            assert_eq!(p.display_name(), player_name(&p.to_pb()));
        }
        assert!(Participant::from_pb(None).is_err());
        assert!(Participant::from_pb(Some(&guest_player("", "x"))).is_err());
        assert!(Participant::from_pb(Some(&engine_player(9))).is_err());
        assert_eq!(
            Participant::from_stored("robot", String::new(), String::new(), 0),
            None
        );
    }
}
