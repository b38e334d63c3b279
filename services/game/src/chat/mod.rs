//! A game's chat: its two rooms, what a line may say, and the live feed of
//! each game's lines.
//!
//! Lines are stored with the game (`store/chat.rs`) and numbered per game in
//! the order they are posted. Every change to a game's chat (a new line, a
//! line hidden) takes the game's next *revision*: a watcher that resumes
//! from the last revision it applied gets every change after it, hides of
//! older lines included. The rooms' readers are the caller's business (the
//! gateway's): this service stores and sends what it is asked for.

pub mod feed;

use chess_domain::{PlayerId, Timestamp};

pub use feed::ChatFeed;

/// Most characters (Unicode scalar values) in a line.
pub const MAX_CHARS: usize = 140;
/// Most bytes of an author's name as shown with a line.
pub const MAX_AUTHOR_NAME: usize = 32;
/// Most characters of a report's reason.
pub const MAX_REASON_CHARS: usize = 500;

/// A room of a game's chat.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Room {
    /// The two players.
    Players,
    /// Everyone watching.
    Spectators,
}

impl Room {
    /// How the room is stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Room::Players => "players",
            Room::Spectators => "spectators",
        }
    }

    /// The room stored as `name`.
    pub fn from_name(name: &str) -> Option<Room> {
        match name {
            "players" => Some(Room::Players),
            "spectators" => Some(Room::Spectators),
            _ => None,
        }
    }
}

/// A line of a game's chat.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    pub seq: u64,
    pub room: Room,
    pub author: PlayerId,
    pub author_name: String,
    /// Kept when hidden, for the record; never sent out again then.
    pub text: String,
    pub posted_at: Timestamp,
    pub hidden: bool,
    /// The game's chat revision of the line's last change.
    pub revision: u64,
}

/// A report of a line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    pub game_id: chess_domain::GameId,
    pub line: Line,
    pub reporter: PlayerId,
    pub reason: String,
    pub reported_at: Timestamp,
}

/// Why a line's text is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TextError {
    #[error("a chat message must not be empty")]
    Empty,
    #[error("a chat message must be at most {MAX_CHARS} characters (this one has {0})")]
    TooLong(usize),
    #[error("a chat message must not contain control characters")]
    Control,
}

/// The text of a line as stored: `raw` without the white space around it,
/// if what is left is 1 to [`MAX_CHARS`] characters with no control
/// characters (line breaks included: a line is one line).
pub fn line_text(raw: &str) -> Result<String, TextError> {
    let text = raw.trim();
    if text.is_empty() {
        return Err(TextError::Empty);
    }
    let chars = text.chars().count();
    if chars > MAX_CHARS {
        return Err(TextError::TooLong(chars));
    }
    if text.chars().any(char::is_control) {
        return Err(TextError::Control);
    }
    Ok(text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_trimmed_and_bounded_in_characters() {
        assert_eq!(line_text("  hello \t").unwrap(), "hello");
        assert_eq!(line_text(" \n "), Err(TextError::Empty));
        assert_eq!(line_text(""), Err(TextError::Empty));
        // 140 characters of four bytes each are fine; 141 are not.
        let wide = "🙂".repeat(MAX_CHARS);
        assert_eq!(line_text(&wide).unwrap(), wide);
        assert_eq!(
            line_text(&format!("{wide}a")),
            Err(TextError::TooLong(MAX_CHARS + 1))
        );
        assert_eq!(line_text("a\u{7}b"), Err(TextError::Control));
        assert_eq!(line_text("two\nlines"), Err(TextError::Control));
        assert_eq!(line_text("<b>x</b>").unwrap(), "<b>x</b>");
    }

    #[test]
    fn rooms_round_trip_their_stored_names() {
        for room in [Room::Players, Room::Spectators] {
            assert_eq!(Room::from_name(room.as_str()), Some(room));
        }
        assert_eq!(Room::from_name("lobby"), None);
    }
}
