//! Protobuf ↔ model conversions for [`crate::api`]: requests become checked
//! lobby values with [`TryFrom`], lobby values, lobby events and pairing
//! updates become their wire forms, and a [`LobbyError`] becomes its gRPC
//! status (with its `Reason`).

use chess_domain::{
    ColorChoice, Participant, PlayerId, SpeedCategory, TimeControl, Timestamp, Username,
    color_to_pb, require,
};
use chess_proto::{common::v1 as common, matchmaking::v1 as pb};
use chess_runtime::Reason;
use tonic::{Code, Status};

use crate::{
    lobby::{
        Act, NewChallenge, NewSeek, Settled, challenge_lifetime, check_terms,
        error::LobbyError,
        model::{
            AcceptMode, Challenge, ChallengeStatus, LobbyEvent, Member, RequestStatus, Seek,
            SeekRequest,
        },
    },
    pairing::{PairingError, PairingUpdate, Pool, Seeker, Updates},
    store::StoreError,
};

impl TryFrom<pb::CreateSeekRequest> for NewSeek {
    type Error = LobbyError;

    fn try_from(r: pb::CreateSeekRequest) -> Result<Self, LobbyError> {
        let poster = member(&r.player_id, &r.username)?;
        let time_control = TimeControl::try_from(r.time_control.as_ref())?;
        let color = color_choice(r.color)?;
        let (min_rating, max_rating) = rating_range(r.min_rating, r.max_rating)?;
        check_terms(time_control, r.rated, r.allow_hints)?;
        if !time_control.speed().is_rated() && (min_rating.is_some() || max_rating.is_some()) {
            return Err(LobbyError::Invalid(
                "untimed games are not rated, so an untimed seek cannot bound ratings".into(),
            ));
        }
        let accept = match common::AcceptMode::try_from(r.accept_mode) {
            Ok(common::AcceptMode::Automatic) => AcceptMode::Automatic,
            Ok(common::AcceptMode::Manual | common::AcceptMode::Unspecified) => AcceptMode::Manual,
            Err(_) => return Err(LobbyError::Invalid("unknown accept mode".into())),
        };
        Ok(Self {
            poster,
            time_control,
            color,
            rated: r.rated,
            min_rating,
            max_rating,
            show_name: r.show_name,
            accept,
            allow_hints: r.allow_hints,
        })
    }
}

impl TryFrom<pb::CreateChallengeRequest> for NewChallenge {
    type Error = LobbyError;

    fn try_from(r: pb::CreateChallengeRequest) -> Result<Self, LobbyError> {
        let challenger = member(&r.player_id, &r.username)?;
        require("opponent_username", &r.opponent_username)?;
        let time_control = TimeControl::try_from(r.time_control.as_ref())?;
        let color = color_choice(r.color)?;
        check_terms(time_control, r.rated, r.allow_hints)?;
        let lifetime_secs = challenge_lifetime(time_control, r.expires_in_seconds)?;
        Ok(Self {
            challenger,
            opponent_username: r.opponent_username,
            time_control,
            color,
            rated: r.rated,
            allow_hints: r.allow_hints,
            lifetime_secs,
        })
    }
}

/// The seeker a `JoinPairingQueue` request asks to seat, who hears on
/// `updates`. Refusals are plain INVALID_ARGUMENT statuses.
pub fn seeker(r: pb::JoinPairingQueueRequest, updates: Updates) -> Result<Seeker, Status> {
    let guest_id = PlayerId::parse(&r.guest_id)
        .map_err(|_| Status::invalid_argument("guest_id must be given"))?;
    let color = ColorChoice::try_from(r.color).map_err(|e| Status::invalid_argument(e.0))?;
    let connected_at = r
        .connected_at
        .map_or((i64::MAX, 0), |t| (t.seconds, t.nanos));
    let pool = match pb::PairingPool::try_from(r.pool) {
        Ok(pb::PairingPool::Unspecified) => Pool::Uqchess,
        Ok(pb::PairingPool::Nostr) => Pool::Nostr,
        Err(_) => return Err(Status::invalid_argument("unknown pairing pool")),
    };
    let player = match r.account {
        Some(account) if pool == Pool::Nostr => Participant::Registered {
            id: PlayerId::parse(&account.player_id)
                .map_err(|_| Status::invalid_argument("account.player_id must be given"))?,
            // The gateway found the account by the key it linked.
            username: Username::trusted(account.username),
        },
        Some(_) => {
            return Err(Status::invalid_argument(
                "only the Nostr pool seats an account",
            ));
        }
        None => Participant::Guest {
            id: guest_id.clone(),
            name: r.display_name,
        },
    };
    Ok(Seeker {
        guest_id,
        pool,
        player,
        color,
        connected_at,
        updates,
    })
}

/// A call on the seek, request or challenge `id` (the request's `field`)
/// by `player_id`, both of which must be given.
pub fn act(field: &str, id: String, player_id: &str) -> Result<Act, LobbyError> {
    require(field, &id)?;
    let player_id = PlayerId::parse(player_id)?;
    Ok(Act { id, player_id })
}

/// A registered player named in a request. The gateway copies both from
/// the caller's session, so the username is the account's as the rating
/// service gave it.
pub fn member(player_id: &str, username: &str) -> Result<Member, LobbyError> {
    let id = PlayerId::parse(player_id)?;
    require("username", username)?;
    Ok(Member {
        id,
        username: Username::trusted(username),
    })
}

/// A colour choice (unset is either: the domain's rule).
fn color_choice(value: i32) -> Result<ColorChoice, LobbyError> {
    Ok(ColorChoice::try_from(value)?)
}

/// Bounds on requesters' ratings; 0 means none.
fn rating_range(min: i32, max: i32) -> Result<(Option<i32>, Option<i32>), LobbyError> {
    if min < 0 || max < 0 {
        return Err(LobbyError::Invalid(
            "rating bounds cannot be negative".into(),
        ));
    }
    let min = (min > 0).then_some(min);
    let max = (max > 0).then_some(max);
    if let (Some(lo), Some(hi)) = (min, max)
        && lo > hi
    {
        return Err(LobbyError::Invalid(
            "the minimum rating is above the maximum".into(),
        ));
    }
    Ok((min, max))
}

/// A speed filter; unspecified means any.
pub fn speed_filter(value: i32) -> Result<Option<SpeedCategory>, LobbyError> {
    match common::SpeedCategory::try_from(value) {
        Ok(common::SpeedCategory::Unspecified) => Ok(None),
        _ => Ok(Some(SpeedCategory::try_from(value)?)),
    }
}

/// A page token: `<created_at ms>:<seek id>` of the last seek seen.
pub fn parse_cursor(token: &str) -> Result<(Timestamp, String), LobbyError> {
    token
        .split_once(':')
        .and_then(|(at, id)| Some((Timestamp::from_millis(at.parse().ok()?), id.to_owned())))
        .ok_or_else(|| LobbyError::Invalid("invalid page token".into()))
}

/// The page token of a cursor.
pub fn cursor_token((at, id): &(Timestamp, String)) -> String {
    format!("{}:{id}", at.millis())
}

impl From<AcceptMode> for common::AcceptMode {
    fn from(mode: AcceptMode) -> Self {
        match mode {
            AcceptMode::Manual => Self::Manual,
            AcceptMode::Automatic => Self::Automatic,
        }
    }
}

impl From<RequestStatus> for common::SeekRequestStatus {
    fn from(status: RequestStatus) -> Self {
        match status {
            RequestStatus::Pending => Self::Pending,
            RequestStatus::Accepted => Self::Accepted,
            RequestStatus::Rejected => Self::Rejected,
            RequestStatus::Cancelled => Self::Cancelled,
        }
    }
}

impl From<ChallengeStatus> for common::ChallengeStatus {
    fn from(status: ChallengeStatus) -> Self {
        match status {
            ChallengeStatus::Pending => Self::Pending,
            ChallengeStatus::Accepted => Self::Accepted,
            ChallengeStatus::Declined => Self::Declined,
            ChallengeStatus::Cancelled => Self::Cancelled,
            ChallengeStatus::Expired => Self::Expired,
        }
    }
}

impl Seek {
    /// The seek as `viewer` may see it: the name only if the poster shows it
    /// (or is the viewer), the id only to the poster.
    pub fn to_pb(&self, viewer: Option<&PlayerId>) -> common::Seek {
        let own = viewer == Some(&self.poster.id);
        common::Seek {
            seek_id: self.id.clone(),
            time_control: Some(self.time_control.into()),
            speed: common::SpeedCategory::from(self.speed()) as i32,
            color: common::ColorChoice::from(self.color) as i32,
            rated: self.rated,
            min_rating: self.min_rating.unwrap_or(0),
            max_rating: self.max_rating.unwrap_or(0),
            show_name: self.show_name,
            accept_mode: common::AcceptMode::from(self.accept) as i32,
            poster_username: if self.show_name || own {
                self.poster.username.to_string()
            } else {
                String::new()
            },
            poster_id: if own {
                self.poster.id.to_string()
            } else {
                String::new()
            },
            poster_rating: self.poster_rating.rating,
            poster_provisional: self.poster_rating.provisional,
            created_at: Some(self.created_at.to_proto()),
            allow_hints: self.allow_hints,
        }
    }
}

impl SeekRequest {
    pub fn to_pb(&self) -> common::SeekRequest {
        common::SeekRequest {
            request_id: self.id.clone(),
            seek_id: self.seek_id.clone(),
            requester_id: self.requester.id.to_string(),
            requester_username: self.requester.username.to_string(),
            requester_rating: self.requester_rating,
            status: common::SeekRequestStatus::from(self.status) as i32,
            game_id: self.game_id.clone().map(String::from).unwrap_or_default(),
            created_at: Some(self.created_at.to_proto()),
        }
    }
}

impl Challenge {
    pub fn to_pb(&self) -> common::Challenge {
        common::Challenge {
            challenge_id: self.id.clone(),
            challenger_id: self.challenger.id.to_string(),
            challenger_username: self.challenger.username.to_string(),
            challenged_id: self.challenged.id.to_string(),
            challenged_username: self.challenged.username.to_string(),
            time_control: Some(self.time_control.into()),
            speed: common::SpeedCategory::from(self.time_control.speed()) as i32,
            color: common::ColorChoice::from(self.color) as i32,
            rated: self.rated,
            status: common::ChallengeStatus::from(self.status) as i32,
            decline_reason: self.decline_reason.clone(),
            game_id: self.game_id.clone().map(String::from).unwrap_or_default(),
            created_at: Some(self.created_at.to_proto()),
            expires_at: Some(self.expires_at.to_proto()),
            allow_hints: self.allow_hints,
        }
    }
}

/// A lobby answer as the message shown to `viewer`, the player the call
/// acts for.
pub trait Reply<T> {
    fn reply(&self, viewer: &PlayerId) -> Result<T, Status>;
}

impl Reply<common::Seek> for Seek {
    fn reply(&self, viewer: &PlayerId) -> Result<common::Seek, Status> {
        Ok(self.to_pb(Some(viewer)))
    }
}

impl Reply<common::SeekRequest> for SeekRequest {
    fn reply(&self, _: &PlayerId) -> Result<common::SeekRequest, Status> {
        Ok(self.to_pb())
    }
}

impl Reply<common::Challenge> for Challenge {
    fn reply(&self, _: &PlayerId) -> Result<common::Challenge, Status> {
        Ok(self.to_pb())
    }
}

/// The request a seek settled as (a seek never settles as a challenge).
impl Reply<common::SeekRequest> for Settled {
    fn reply(&self, _: &PlayerId) -> Result<common::SeekRequest, Status> {
        match self {
            Settled::Request(request) => Ok(request.to_pb()),
            Settled::Challenge(_) => Err(Status::internal("a seek settled as a challenge")),
        }
    }
}

/// The challenge a challenge settled as.
impl Reply<common::Challenge> for Settled {
    fn reply(&self, _: &PlayerId) -> Result<common::Challenge, Status> {
        match self {
            Settled::Challenge(challenge) => Ok(challenge.to_pb()),
            Settled::Request(_) => Err(Status::internal("a challenge settled as a seek")),
        }
    }
}

/// A list of lobby answers as shown to `viewer`.
pub fn replies<A: Reply<T>, T>(answers: &[A], viewer: &PlayerId) -> Result<Vec<T>, Status> {
    answers.iter().map(|a| a.reply(viewer)).collect()
}

impl From<LobbyEvent> for pb::WatchPlayerResponse {
    fn from(event: LobbyEvent) -> Self {
        use common::lobby_event::Kind;
        let kind = match event {
            LobbyEvent::SeekRequestReceived(r) => Kind::SeekRequestReceived(r.to_pb()),
            LobbyEvent::SeekRequestAccepted(r) => Kind::SeekRequestAccepted(r.to_pb()),
            LobbyEvent::SeekRequestRejected(r) => Kind::SeekRequestRejected(r.to_pb()),
            LobbyEvent::SeekRequestCancelled(r) => Kind::SeekRequestCancelled(r.to_pb()),
            // Its poster hears of it, so sees it as their own.
            LobbyEvent::SeekRemoved(s) => Kind::SeekRemoved(s.to_pb(Some(&s.poster.id))),
            LobbyEvent::ChallengeReceived(c) => Kind::ChallengeReceived(c.to_pb()),
            LobbyEvent::ChallengeAccepted(c) => Kind::ChallengeAccepted(c.to_pb()),
            LobbyEvent::ChallengeDeclined(c) => Kind::ChallengeDeclined(c.to_pb()),
            LobbyEvent::ChallengeCancelled(c) => Kind::ChallengeCancelled(c.to_pb()),
            LobbyEvent::ChallengeExpired(c) => Kind::ChallengeExpired(c.to_pb()),
        };
        Self {
            event: Some(common::LobbyEvent { kind: Some(kind) }),
        }
    }
}

impl From<PairingUpdate> for pb::JoinPairingQueueResponse {
    fn from(update: PairingUpdate) -> Self {
        use pb::join_pairing_queue_response::Update;
        let update = match update {
            PairingUpdate::Queued { waiting } => Update::Queued(pb::Queued { waiting }),
            PairingUpdate::Paired {
                game_id,
                color,
                opponent_id,
            } => Update::Paired(pb::Paired {
                game_id: game_id.into(),
                color: color_to_pb(color) as i32,
                opponent_id: opponent_id.into(),
            }),
        };
        Self {
            update: Some(update),
        }
    }
}

impl From<LobbyError> for Status {
    fn from(error: LobbyError) -> Self {
        let (code, reason) = match &error {
            LobbyError::Invalid(_) => (Code::InvalidArgument, Some(Reason::InvalidRequest)),
            LobbyError::NotFound(_) => (Code::NotFound, Some(Reason::NotFound)),
            LobbyError::NotYours(_) => (Code::PermissionDenied, Some(Reason::NotAllowed)),
            LobbyError::Refused(_) => (Code::FailedPrecondition, Some(Reason::NotAllowed)),
            LobbyError::Game(game) => match game.code() {
                Code::InvalidArgument => (Code::InvalidArgument, Some(Reason::InvalidRequest)),
                Code::Unavailable | Code::DeadlineExceeded | Code::Unknown => {
                    (Code::Unavailable, None)
                }
                _ => (Code::Internal, None),
            },
            LobbyError::Store(StoreError::Corrupt { .. }) => (Code::Internal, None),
            LobbyError::Unavailable(_) | LobbyError::Store(_) | LobbyError::Stopped => {
                (Code::Unavailable, None)
            }
        };
        let message = error.to_string();
        match reason {
            Some(reason) => reason.status(code, message),
            None => Status::new(code, message),
        }
    }
}

impl From<PairingError> for Status {
    fn from(error: PairingError) -> Self {
        match error {
            PairingError::Game(game) => game.into_status(),
            PairingError::Incompatible => Status::internal(error.to_string()),
            PairingError::Stopped => Status::unavailable(error.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{clients::GameError, lobby::model::tests::seek};

    #[test]
    fn names_show_only_when_allowed() {
        let hidden = seek(false);
        assert_eq!(hidden.to_pb(None).poster_username, "");
        let (q, p) = (PlayerId::trusted("q"), PlayerId::trusted("p"));
        assert_eq!(hidden.to_pb(Some(&q)).poster_username, "");
        assert_eq!(hidden.to_pb(Some(&q)).poster_id, "");
        let own = hidden.to_pb(Some(&p));
        assert_eq!(
            (own.poster_username.as_str(), own.poster_id.as_str()),
            ("Alice", "p")
        );
        let shown = seek(true).to_pb(None);
        assert_eq!(shown.poster_username, "Alice");
        assert_eq!(shown.poster_id, "");
        assert_eq!(shown.poster_rating, 1200);
        assert_eq!(shown.speed, common::SpeedCategory::Correspondence as i32);
        assert!(!shown.allow_hints);
        let casual = Seek {
            rated: false,
            allow_hints: true,
            ..seek(true)
        };
        assert!(casual.to_pb(None).allow_hints);
        assert_eq!(shown.created_at.unwrap().nanos, 500_000_000);
    }

    #[test]
    fn rating_ranges() {
        assert_eq!(rating_range(0, 0).unwrap(), (None, None));
        assert_eq!(rating_range(1000, 0).unwrap(), (Some(1000), None));
        assert_eq!(rating_range(1000, 1400).unwrap(), (Some(1000), Some(1400)));
        assert!(rating_range(1500, 1400).is_err());
        assert!(rating_range(-1, 0).is_err());
    }

    #[test]
    fn cursors_and_colours() {
        assert_eq!(
            parse_cursor("12:abc").unwrap(),
            (Timestamp::from_millis(12), "abc".to_owned())
        );
        assert!(parse_cursor("x:abc").is_err());
        assert!(parse_cursor("abc").is_err());
        assert_eq!(color_choice(0).unwrap(), ColorChoice::Either);
        assert_eq!(
            color_choice(common::ColorChoice::Black as i32).unwrap(),
            ColorChoice::Black
        );
        assert!(color_choice(42).is_err());
    }

    #[test]
    fn statuses() {
        let s = Status::from(LobbyError::NotYours("not your seek".into()));
        assert_eq!(s.code(), Code::PermissionDenied);
        let s = Status::from(LobbyError::Refused("out of range".into()));
        assert_eq!(s.code(), Code::FailedPrecondition);
        assert_eq!(Reason::of(&s), Some(Reason::NotAllowed));
        let s = Status::from(LobbyError::Game(GameError(Status::unavailable("down"))));
        assert_eq!(s.code(), Code::Unavailable);
        assert!(s.message().contains("down"));
        assert_eq!(
            Status::from(LobbyError::NotFound("x".into())).code(),
            Code::NotFound
        );
    }
}
