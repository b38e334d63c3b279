//! Domain types shared by the chess services: each concept of the game has
//! its one home here, with its wire conversions (`TryFrom` from
//! `chess.common.v1`, done once at the edge) and, where services store it,
//! its stored spelling.
//!
//! - [`time_control`]: [`TimeControl`], the four kinds of clock, validated,
//!   with their speed category, wire and stored forms.
//! - [`speed`]: [`SpeedCategory`], the categories ratings are kept in.
//! - [`color`]: [`Color`] and its words, [`ColorChoice`] and how "either" is
//!   settled, the side to move in a FEN.
//! - [`result`]: who won, [`GameResult`], and its PGN text; [`ending`]: why
//!   and when a game ended, [`Termination`] and [`Ending`], with their
//!   stored names and words; [`status`]: whether it goes on, [`GameStatus`].
//! - [`rules`]: which rules end a game, [`RuleSet`].
//! - [`participant`]: who plays, [`Participant`] — names players see, the
//!   engine's levels, the wire `Player` of each kind.
//! - [`time`]: instants, [`Timestamp`], with their seconds, protobuf and
//!   stored forms; [`Millis`], a count of milliseconds.
//! - [`id`]: [`GameId`], [`PlayerId`], [`Username`] and their rules.
//! - `enums`: the stored names and wire conversions of its enums, each
//!   written once as a macro.
//! - [`InvalidInput`]: a wire value that makes no valid domain value;
//!   [`require`]: a field that must be given.

pub mod color;
pub mod ending;
mod enums;
mod error;
pub mod id;
pub mod participant;
pub mod result;
pub mod rules;
pub mod speed;
pub mod status;
pub mod time;
pub mod time_control;

pub use color::{
    Color, ColorChoice, color_from_name, color_from_pb, color_name, color_title, color_to_pb,
    side_to_move,
};
pub use ending::{Ending, Termination, ending_sentence};
pub use error::{InvalidInput, require};
pub use id::{GameId, PlayerId, Username};
pub use participant::{
    ENGINE_LEVELS, FULL_STRENGTH, Participant, UNNAMED_GUEST, engine_name, engine_player,
    guest_player, is_engine_level, player_name, registered_player,
};
pub use result::{GameResult, ResultReport};
pub use rules::RuleSet;
pub use speed::SpeedCategory;
pub use status::GameStatus;
pub use time::{Millis, Timestamp};
pub use time_control::{DAILY_DEFAULT_HOURS, DAILY_MAX_HOURS, DAILY_MIN_HOURS, TimeControl};
