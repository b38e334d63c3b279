//! The service's domain values: players, their ratings, games as reported,
//! what recording one changed, history rows and leaderboard rows.

use chess_domain::{GameId, PlayerId, SpeedCategory, Timestamp, Username};
use chess_ratings::{Score, Standing};

/// A registered player.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Player {
    pub id: PlayerId,
    pub username: Username,
    pub email: String,
    pub registered_at: Timestamp,
    /// The linked Nostr public key (64 lowercase hexadecimal digits), if
    /// any.
    pub nostr_public_key: Option<String>,
}

/// What tells a player's live sessions from ended ones.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionState {
    /// Tokens of an older generation are refused.
    pub generation: i64,
    /// Sessions of this generation ended one by one, not yet expired.
    pub revoked: Vec<String>,
}

/// A player's rating in one category, as stored.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CategoryRating {
    pub category: SpeedCategory,
    pub standing: Standing,
    pub wins: u32,
    pub losses: u32,
    pub draws: u32,
}

/// Final result of a game (the stored spelling and the wire form are
/// chess-domain's).
pub use chess_domain::GameResult;

/// White's score in `result`.
pub(crate) fn white_score(result: GameResult) -> Score {
    match result {
        GameResult::WhiteWins => Score::Win,
        GameResult::BlackWins => Score::Loss,
        GameResult::Draw => Score::Draw,
    }
}

/// A finished game as reported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GameReport {
    pub game_id: GameId,
    pub white_id: PlayerId,
    pub black_id: PlayerId,
    pub result: GameResult,
    pub category: SpeedCategory,
    pub rated: bool,
    /// When it finished, if the reporter said.
    pub finished_at: Option<Timestamp>,
}

/// One player's rating change from one game.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    pub player_id: PlayerId,
    pub category: SpeedCategory,
    pub rating_before: f64,
    pub rating_after: f64,
    pub deviation_before: f64,
    pub deviation_after: f64,
}

/// What recording a game did.
#[derive(Clone, Debug, PartialEq)]
pub struct Recorded {
    /// False if the game had been recorded before.
    pub first_time: bool,
    /// None when the game changed no rating.
    pub white: Option<Change>,
    pub black: Option<Change>,
}

/// One row of a player's rating history.
#[derive(Clone, Debug, PartialEq)]
pub struct HistoryEntry {
    pub id: i64,
    pub game_id: GameId,
    pub category: SpeedCategory,
    pub opponent_id: PlayerId,
    pub score: f64,
    pub rating_before: f64,
    pub rating_after: f64,
    pub deviation_after: f64,
    pub recorded_at: Timestamp,
}

/// What one game did to one player's rating.
#[derive(Clone, Debug, PartialEq)]
pub struct GameRatingChange {
    pub game_id: GameId,
    pub player_id: PlayerId,
    pub category: SpeedCategory,
    pub rating_before: f64,
    pub rating_after: f64,
}

/// Where a leaderboard page starts: after this rating and username.
#[derive(Clone, Debug, PartialEq)]
pub struct LeaderboardCursor {
    pub rating: f64,
    pub username_key: String,
    /// Rank of that last row.
    pub rank: u32,
}

/// One leaderboard row.
#[derive(Clone, Debug, PartialEq)]
pub struct LeaderboardRow {
    pub rank: u32,
    pub player_id: PlayerId,
    pub username: Username,
    pub rating: CategoryRating,
}

/// What the players directory is sorted by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirectorySort {
    Name,
    Rating,
    Games,
}

/// The order of a directory listing: what by, in which category (for
/// ratings and games), which way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirectoryOrder {
    pub sort: DirectorySort,
    pub category: SpeedCategory,
    pub descending: bool,
}

/// Where a directory page starts: after this sort value (a rating or games
/// count; unused when sorted by name) and username key.
#[derive(Clone, Debug, PartialEq)]
pub struct DirectoryCursor {
    pub value: f64,
    pub username_key: String,
}

/// A player's standing in chat.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChatStanding {
    pub moderator: bool,
    /// Until when a moderator muted the player server-wide, if that is
    /// still to come.
    pub muted_until: Option<Timestamp>,
    /// The player switched chat off for themselves.
    pub chat_off: bool,
    /// Whom the player muted, by username.
    pub muted: Vec<(PlayerId, Username)>,
}
