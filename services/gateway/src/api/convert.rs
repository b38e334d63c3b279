//! The public API's wire values read into domain values, and back: what a
//! handler needs besides copying fields across.

use chess_domain::{ColorChoice, GameId, InvalidInput, TimeControl, Timestamp};
use chess_proto::{common::v1 as common, game::v1 as game, gateway::v1 as pb};
use chess_runtime::Reason;
use tonic::{Code, Status};

/// A session's expiry (Unix seconds, as its token carries it) as a protobuf
/// timestamp.
pub(super) fn expiry(seconds: i64) -> prost_types::Timestamp {
    Timestamp::from_secs(seconds).to_proto()
}

/// A field that must be given, refused as INVALID_ARGUMENT when empty.
pub(super) fn require(field: &str, value: &str) -> Result<(), Status> {
    chess_domain::require(field, value).map_err(invalid)
}

/// The game a request names, refused as INVALID_ARGUMENT when empty (its
/// length the bounds layer has already capped).
pub(super) fn game_id(id: &str) -> Result<GameId, Status> {
    require("game_id", id)?;
    GameId::parse(id).map_err(invalid)
}

/// A wire value that makes no domain value, as the public API refuses it.
pub(super) fn invalid(error: InvalidInput) -> Status {
    Status::invalid_argument(error.0)
}

/// Which of a player's games a list asks for; unset or unknown is all.
pub(super) fn game_filter(filter: i32) -> game::GameFilter {
    match pb::GameFilter::try_from(filter) {
        Ok(pb::GameFilter::Active) => game::GameFilter::Active,
        Ok(pb::GameFilter::Finished) => game::GameFilter::Finished,
        _ => game::GameFilter::All,
    }
}

/// The engine's level a game against it asks for. Level 0 is the engine
/// at full strength, asked for by name so that a request without a level
/// is not taken for it.
pub(super) fn engine_level(full_strength: bool, level: u32) -> Result<u32, Status> {
    match (full_strength, level) {
        (true, 0) => Ok(chess_domain::FULL_STRENGTH),
        (false, level) if chess_domain::ENGINE_LEVELS.contains(&level) => Ok(level),
        (true, _) => Err(Status::invalid_argument(
            "full_strength takes no level: leave level at 0",
        )),
        (false, _) => Err(Status::invalid_argument(
            "engine levels are 1 to 8; for full strength set full_strength",
        )),
    }
}

/// The colour asked for; unset is either, as for a seek.
pub(super) fn color_choice(color: i32) -> Result<ColorChoice, Status> {
    match common::ColorChoice::try_from(color) {
        Ok(common::ColorChoice::Unspecified) => Ok(ColorChoice::Either),
        _ => ColorChoice::try_from(color).map_err(|_| Status::invalid_argument("unknown colour")),
    }
}

/// The time control asked for; unset is untimed.
pub(super) fn time_control(
    time_control: Option<&common::TimeControl>,
) -> Result<TimeControl, Status> {
    match time_control {
        None => Ok(TimeControl::Untimed),
        Some(tc) => TimeControl::try_from(tc)
            .map_err(|e| Reason::InvalidRequest.status(Code::InvalidArgument, e.0)),
    }
}
