//! Whom a request acts for: the game and player ids it names, parsed once
//! into the domain's ids and checked against the caller's assertion, with
//! the answers a missing, foreign or unknown id gets.

use chess_domain::{GameId, PlayerId, require};
use chess_runtime::Claims;
use tonic::{Request, Status};

use super::Answer;
use crate::error::Error;

/// The game and the player, if both ids are given and `claims` act for
/// `player_id` in `game_id`.
pub(super) fn check_seat(
    claims: &Claims,
    game_id: &str,
    player_id: &str,
) -> Result<(GameId, PlayerId), Status> {
    require("game_id", game_id).map_err(Error::from)?;
    let player = PlayerId::parse(player_id).map_err(Error::from)?;
    claims.check_player_in(player_id, game_id)?;
    Ok((known_game(game_id)?, player))
}

/// The message of `request` and the player it names (`player_id`), if its
/// caller acts for them.
pub(super) fn players_own<R>(
    request: Request<R>,
    player_id: fn(&R) -> &str,
) -> Answer<(R, PlayerId)> {
    let claims = Claims::of(&request)?;
    let r = request.into_inner();
    let player = PlayerId::parse(player_id(&r)).map_err(Error::from)?;
    claims.check_player(player_id(&r))?;
    Ok((r, player))
}

/// The game a given (non-empty) `game_id` names. An id too long to be a
/// game's names none, and is answered as looking it up would be.
pub(super) fn known_game(game_id: &str) -> Result<GameId, Error> {
    GameId::parse(game_id).map_err(|_| Error::NotFound(game_id.to_owned()))
}
