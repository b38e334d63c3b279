//! Who plays a game, as players see it: names, the engine's levels, and the
//! `chess.common.v1.Player` of each kind of participant, built in one place.

use std::ops::RangeInclusive;

use chess_proto::common::v1 as pb;

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
}
