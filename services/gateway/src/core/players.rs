//! The players of a game as the fronts show them.

use chess_proto::common::v1 as common;

/// The account id of `player`, if it is a registered player (not a guest
/// or the engine).
pub(crate) fn registered_id(player: Option<&common::Player>) -> Option<&str> {
    match player.and_then(|p| p.kind.as_ref()) {
        Some(common::player::Kind::Registered(r)) => Some(&r.player_id),
        _ => None,
    }
}

/// The name `player` is shown by, `?` when the game names nobody.
pub(crate) fn display_name(player: Option<&common::Player>) -> String {
    player.map_or_else(|| "?".to_owned(), chess_domain::player_name)
}
