//! The lobby's domain: seeks, requests to play them, challenges and the
//! events players hear about them. Checked values only; their wire forms are
//! in [`crate::convert`].

use chess_domain::{
    ColorChoice, GameId, Participant, PlayerId, SpeedCategory, TimeControl, Username,
};

pub use chess_domain::Timestamp;

/// A registered player as the lobby knows them: the gateway vouches for both.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub id: PlayerId,
    pub username: Username,
}

impl Member {
    /// The member as a side of a game.
    pub fn participant(&self) -> Participant {
        Participant::Registered {
            id: self.id.clone(),
            username: self.username.clone(),
        }
    }
}

/// A rating as shown beside a seek or request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Shown {
    pub rating: i32,
    pub provisional: bool,
}

/// Whether a seek waits for its poster or starts on the first fitting request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AcceptMode {
    Manual,
    Automatic,
}

impl AcceptMode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Manual => "manual",
            Self::Automatic => "automatic",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        [Self::Manual, Self::Automatic]
            .into_iter()
            .find(|m| m.as_str() == name)
    }
}

/// An open seek, or a correspondence table when its time control is daily.
#[derive(Clone, Debug, PartialEq)]
pub struct Seek {
    pub id: String,
    pub poster: Member,
    pub time_control: TimeControl,
    /// The colour the poster plays.
    pub color: ColorChoice,
    pub rated: bool,
    pub min_rating: Option<i32>,
    pub max_rating: Option<i32>,
    pub show_name: bool,
    pub accept: AcceptMode,
    /// Both players may ask for engine hints (never in a rated game).
    pub allow_hints: bool,
    /// The poster's rating in the seek's category, as last read (none for
    /// untimed seeks).
    pub poster_rating: Shown,
    pub created_at: Timestamp,
}

impl Seek {
    /// Whether the seek lapses when its poster is gone: a real-time seek
    /// lasts only while its poster is connected (after a grace), a
    /// correspondence table until it is taken or cancelled. Both are stored,
    /// so both survive a restart of the service.
    pub fn lapses_with_poster(&self) -> bool {
        !self.time_control.is_daily()
    }

    pub fn speed(&self) -> SpeedCategory {
        self.time_control.speed()
    }

    /// Whether a player rated `rating` may play this seek.
    pub fn admits(&self, rating: i32) -> bool {
        self.min_rating.is_none_or(|min| rating >= min)
            && self.max_rating.is_none_or(|max| rating <= max)
    }

    pub fn has_range(&self) -> bool {
        self.min_rating.is_some() || self.max_rating.is_some()
    }
}

/// State of a request to play a seek.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestStatus {
    Pending,
    Accepted,
    Rejected,
    Cancelled,
}

impl RequestStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Accepted => "accepted",
            Self::Rejected => "rejected",
            Self::Cancelled => "cancelled",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        [
            Self::Pending,
            Self::Accepted,
            Self::Rejected,
            Self::Cancelled,
        ]
        .into_iter()
        .find(|s| s.as_str() == name)
    }
}

/// A player's request to play someone's seek.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeekRequest {
    pub id: String,
    pub seek_id: String,
    pub requester: Member,
    pub requester_rating: i32,
    pub status: RequestStatus,
    pub game_id: Option<GameId>,
    pub created_at: Timestamp,
}

/// State of a direct challenge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChallengeStatus {
    Pending,
    Accepted,
    Declined,
    Cancelled,
    Expired,
}

impl ChallengeStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Accepted => "accepted",
            Self::Declined => "declined",
            Self::Cancelled => "cancelled",
            Self::Expired => "expired",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        [
            Self::Pending,
            Self::Accepted,
            Self::Declined,
            Self::Cancelled,
            Self::Expired,
        ]
        .into_iter()
        .find(|s| s.as_str() == name)
    }
}

/// A direct challenge from one player to a named other.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Challenge {
    pub id: String,
    pub challenger: Member,
    pub challenged: Member,
    pub time_control: TimeControl,
    /// The colour the challenger plays.
    pub color: ColorChoice,
    pub rated: bool,
    /// Both players may ask for engine hints (never in a rated game).
    pub allow_hints: bool,
    pub status: ChallengeStatus,
    pub decline_reason: String,
    pub game_id: Option<GameId>,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
}

/// Something that happened in the lobby that concerns one player.
#[derive(Clone, Debug)]
pub enum LobbyEvent {
    /// Someone asked to play one of the player's seeks.
    SeekRequestReceived(SeekRequest),
    /// A request was accepted; the game is in its `game_id`.
    SeekRequestAccepted(SeekRequest),
    SeekRequestRejected(SeekRequest),
    /// A request to play the player's seek was withdrawn (or the player's
    /// request lapsed with its seek).
    SeekRequestCancelled(SeekRequest),
    /// One of the player's seeks was removed (taken, cancelled, or its
    /// poster left); they see it as its poster.
    SeekRemoved(Seek),
    ChallengeReceived(Challenge),
    ChallengeAccepted(Challenge),
    ChallengeDeclined(Challenge),
    ChallengeCancelled(Challenge),
    ChallengeExpired(Challenge),
}

/// A game the lobby is about to create: who plays which side of what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GamePlan {
    pub origin: Origin,
    pub white: Member,
    pub black: Member,
    pub time_control: TimeControl,
    pub rated: bool,
    pub allow_hints: bool,
}

/// What a planned game comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    Seek { seek_id: String, request_id: String },
    Challenge { challenge_id: String },
}

impl GamePlan {
    /// The key the game service remembers the game by, so that a retried
    /// creation (after a restart, say) returns the same game.
    pub fn idempotency_key(&self) -> String {
        match &self.origin {
            Origin::Seek { request_id, .. } => format!("matchmaking:request:{request_id}"),
            Origin::Challenge { challenge_id } => format!("matchmaking:challenge:{challenge_id}"),
        }
    }
}

/// The colours of a poster (or challenger) choosing `choice` and their
/// opponent: `(poster, opponent)`. Either colour is settled by `coin`.
pub fn sides(choice: ColorChoice, coin: bool) -> (chess_domain::Color, chess_domain::Color) {
    let poster = choice.resolve(coin);
    (poster, !poster)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A correspondence seek of Alice's (id `p`), shown by name or not.
    pub(crate) fn seek(show_name: bool) -> Seek {
        Seek {
            id: "s".into(),
            poster: Member {
                id: PlayerId::trusted("p"),
                username: Username::trusted("Alice"),
            },
            time_control: TimeControl::Daily { turn_hours: 48 },
            color: ColorChoice::White,
            rated: true,
            min_rating: Some(1000),
            max_rating: None,
            show_name,
            accept: AcceptMode::Manual,
            allow_hints: false,
            poster_rating: Shown {
                rating: 1200,
                provisional: false,
            },
            created_at: Timestamp::from_millis(1_500),
        }
    }

    #[test]
    fn ranges_are_inclusive() {
        let s = seek(true);
        assert!(s.admits(1000));
        assert!(!s.admits(999));
        assert!(s.admits(3000));
        assert!(!s.lapses_with_poster());
    }

    #[test]
    fn stored_forms_round_trip() {
        for s in [
            RequestStatus::Pending,
            RequestStatus::Accepted,
            RequestStatus::Rejected,
            RequestStatus::Cancelled,
        ] {
            assert_eq!(RequestStatus::from_name(s.as_str()), Some(s));
        }
    }

    #[test]
    fn either_colour_follows_the_coin() {
        use chess_domain::Color;
        assert_eq!(
            sides(ColorChoice::Black, true),
            (Color::Black, Color::White)
        );
        assert_eq!(
            sides(ColorChoice::Either, true),
            (Color::White, Color::Black)
        );
        assert_eq!(
            sides(ColorChoice::Either, false),
            (Color::Black, Color::White)
        );
    }
}
