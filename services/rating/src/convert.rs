//! Wire types in and out: requests become domain values with `TryFrom`,
//! stored values become `chess.common.v1` messages, page positions become
//! opaque tokens, failures become statuses.

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use chess_domain::{GameId, PlayerId, SpeedCategory, Timestamp};
use chess_proto::{
    common::v1 as pb,
    rating::v1::{self as rpc, get_player_request::Key},
};
use chess_ratings::{RatingSystem, System};
use chess_runtime::Reason;
use tonic::{Code, Status};

use crate::{
    accounts::NostrKey,
    core::{Page, PlayerKey, Profile},
    error::Error,
    model::{
        CategoryRating, Change, ChatStanding, DirectoryCursor, DirectoryOrder, DirectorySort,
        GameReport, GameResult, HistoryEntry, LeaderboardCursor, LeaderboardRow, SessionState,
    },
    store::{DirectoryRow, StoreError},
};

/// Page size when none is asked for.
pub const DEFAULT_PAGE_SIZE: u32 = 50;
/// Largest page.
pub const MAX_PAGE_SIZE: u32 = 200;
/// Longest session id accepted.
const MAX_SESSION_ID: usize = 64;
/// Most player ids one call may ask about.
const MAX_PLAYERS_PER_CALL: usize = 1000;

/// The page size for `requested` (0 means the default; too large is capped).
pub fn page_size(requested: u32) -> u32 {
    match requested {
        0 => DEFAULT_PAGE_SIZE,
        n => n.min(MAX_PAGE_SIZE),
    }
}

fn instant(ts: &prost_types::Timestamp) -> Result<Timestamp, Error> {
    Timestamp::from_proto(ts).ok_or_else(|| Error::Invalid("finished_at is out of range".into()))
}

/// The wire name of a rating system.
pub fn system_pb(kind: RatingSystem) -> pb::RatingSystem {
    match kind {
        RatingSystem::ClubElo => pb::RatingSystem::ClubElo,
        RatingSystem::LogisticElo => pb::RatingSystem::LogisticElo,
        RatingSystem::Glicko2 => pb::RatingSystem::Glicko2,
    }
}

/// A stored rating as shown at `now` (a Glicko-2 deviation grows while the
/// player is away).
pub fn rating_pb(system: &System, rating: &CategoryRating, now: Timestamp) -> pb::Rating {
    let current = system.current(&rating.standing, now);
    pb::Rating {
        category: pb::SpeedCategory::from(rating.category) as i32,
        rating: current.rating,
        deviation: current.deviation,
        volatility: current.volatility,
        games_played: rating.standing.games_played,
        wins: rating.wins,
        losses: rating.losses,
        draws: rating.draws,
        provisional: system.is_provisional(&rating.standing, now),
    }
}

/// A player's public profile with their ratings.
pub fn profile_pb(system: &System, profile: &Profile) -> pb::PlayerProfile {
    let player = &profile.player;
    pb::PlayerProfile {
        player_id: player.id.to_string(),
        username: player.username.to_string(),
        registered_at: Some(player.registered_at.to_proto()),
        rating_system: system_pb(system.kind()) as i32,
        ratings: profile
            .ratings
            .iter()
            .map(|r| rating_pb(system, r, profile.at))
            .collect(),
        nostr_public_key: player.nostr_public_key.clone().unwrap_or_default(),
    }
}

/// A profile as its system shows it: what the calls that answer with a
/// player's profile return.
#[derive(Debug)]
pub struct ShownProfile<'a> {
    pub system: &'a System,
    pub profile: Profile,
}

/// The answers that are a player's profile and, for the gateway's signed-in
/// player (`with email`), the email of their account.
macro_rules! profile_answers {
    (with email: $($with:ident),+; $($without:ident),+) => {
        $(impl From<ShownProfile<'_>> for rpc::$with {
            fn from(shown: ShownProfile<'_>) -> Self {
                Self {
                    profile: Some(profile_pb(shown.system, &shown.profile)),
                    email: shown.profile.player.email,
                }
            }
        })+
        $(impl From<ShownProfile<'_>> for rpc::$without {
            fn from(shown: ShownProfile<'_>) -> Self {
                Self {
                    profile: Some(profile_pb(shown.system, &shown.profile)),
                }
            }
        })+
    };
}

profile_answers!(
    with email: RegisterResponse, GetPlayerResponse;
    LinkNostrKeyResponse, UnlinkNostrKeyResponse
);

/// A leaderboard page as shown at `now`.
pub fn leaderboard_pb(
    system: &System,
    page: Page<LeaderboardRow, LeaderboardCursor>,
    now: Timestamp,
) -> rpc::LeaderboardResponse {
    rpc::LeaderboardResponse {
        rating_system: system_pb(system.kind()) as i32,
        entries: page
            .rows
            .into_iter()
            .map(|row| pb::LeaderboardEntry {
                rank: row.rank,
                player_id: row.player_id.into(),
                username: row.username.into(),
                rating: Some(rating_pb(system, &row.rating, now)),
            })
            .collect(),
        next_page_token: page
            .next
            .as_ref()
            .map(leaderboard_token)
            .unwrap_or_default(),
    }
}

/// The player a request names by id. An empty id names nobody, so it is
/// answered as an unknown one is: NOT_FOUND.
pub fn player_to_find(id: &str) -> Result<PlayerId, Error> {
    PlayerId::parse(id).map_err(|_| Error::NotFound(id.to_owned()))
}

/// The players a request asks about, at most [`MAX_PLAYERS_PER_CALL`];
/// those it names by an empty id are nobody, left out as unknown ones are.
pub fn players_to_find(ids: &[String]) -> Result<Vec<PlayerId>, Error> {
    if ids.len() > MAX_PLAYERS_PER_CALL {
        return Err(Error::Invalid(format!(
            "at most {MAX_PLAYERS_PER_CALL} players per call"
        )));
    }
    Ok(ids
        .iter()
        .filter_map(|id| PlayerId::parse(id).ok())
        .collect())
}

/// How a `GetPlayer` request names its player.
pub fn player_key(key: Option<Key>) -> Result<PlayerKey, Error> {
    match key {
        Some(Key::PlayerId(id)) => Ok(PlayerKey::Id(player_to_find(&id)?)),
        Some(Key::Username(name)) => Ok(PlayerKey::Username(name)),
        Some(Key::NostrPublicKey(key)) => Ok(PlayerKey::NostrKey(NostrKey::parse(&key)?)),
        None => Err(Error::Invalid(
            "a player id, username or Nostr public key must be given".into(),
        )),
    }
}

/// The session a `RevokeSession` request ends, and when it would have
/// expired (Unix seconds).
pub fn session_to_revoke(request: &rpc::RevokeSessionRequest) -> Result<(&str, i64), Error> {
    if request.session_id.is_empty() || request.session_id.len() > MAX_SESSION_ID {
        return Err(Error::Invalid(format!(
            "a session id is 1 to {MAX_SESSION_ID} characters"
        )));
    }
    let expires_at_s = request
        .expires_at
        .as_ref()
        .ok_or_else(|| Error::Invalid("expires_at must be given".into()))?
        .seconds;
    Ok((&request.session_id, expires_at_s))
}

pub fn change_pb(change: Change) -> pb::RatingChange {
    pb::RatingChange {
        player_id: change.player_id.into(),
        category: pb::SpeedCategory::from(change.category) as i32,
        rating_before: change.rating_before,
        rating_after: change.rating_after,
        deviation_before: change.deviation_before,
        deviation_after: change.deviation_after,
    }
}

pub fn history_pb(entry: HistoryEntry) -> pb::RatingHistoryEntry {
    pb::RatingHistoryEntry {
        game_id: entry.game_id.into(),
        category: pb::SpeedCategory::from(entry.category) as i32,
        opponent_id: entry.opponent_id.into(),
        score: entry.score,
        rating_before: entry.rating_before,
        rating_after: entry.rating_after,
        deviation_after: entry.deviation_after,
        recorded_at: Some(entry.recorded_at.to_proto()),
    }
}

/// A rated category that may be left unspecified (meaning every category).
pub fn optional_category(value: i32) -> Result<Option<SpeedCategory>, Error> {
    if value == pb::SpeedCategory::Unspecified as i32 {
        Ok(None)
    } else {
        SpeedCategory::try_from(value)
            .and_then(SpeedCategory::rated)
            .map(Some)
            .map_err(Error::from)
    }
}

impl TryFrom<rpc::RecordResultRequest> for GameReport {
    type Error = Error;

    fn try_from(request: rpc::RecordResultRequest) -> Result<Self, Error> {
        let game_id = GameId::parse(&request.game_id)?;
        // The game service reports only games between two accounts.
        let player = |id: &str| {
            PlayerId::parse(id)
                .map_err(|_| Error::Invalid("both players' ids must be given".into()))
        };
        let (white_id, black_id) = (player(&request.white_id)?, player(&request.black_id)?);
        let result = GameResult::try_from(request.result)
            .map_err(|_| Error::Invalid("a result must be given".into()))?;
        let category = SpeedCategory::try_from(request.category)?;
        if request.rated {
            // Recorded unrated, an untimed game is kept like any other.
            category.rated()?;
        }
        Ok(Self {
            game_id,
            white_id,
            black_id,
            result,
            category,
            rated: request.rated,
            finished_at: request.finished_at.as_ref().map(instant).transpose()?,
        })
    }
}

const LEADERBOARD_TOKEN: &str = "lb1";
const HISTORY_TOKEN: &str = "h1";

fn bad_token() -> Error {
    Error::Invalid("invalid page token".into())
}

/// The token for the leaderboard page after `cursor`.
pub fn leaderboard_token(cursor: &LeaderboardCursor) -> String {
    // `{}` of an f64 is the shortest text that parses back to the same value.
    URL_SAFE_NO_PAD.encode(format!(
        "{LEADERBOARD_TOKEN}\n{}\n{}\n{}",
        cursor.rating, cursor.rank, cursor.username_key
    ))
}

/// The position `token` names; an empty token is the first page.
pub fn leaderboard_cursor(token: &str) -> Result<Option<LeaderboardCursor>, Error> {
    if token.is_empty() {
        return Ok(None);
    }
    let text = decode(token)?;
    let mut parts = text.splitn(4, '\n');
    let (Some(LEADERBOARD_TOKEN), Some(rating), Some(rank), Some(username_key)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad_token());
    };
    let rating: f64 = rating.parse().map_err(|_| bad_token())?;
    if !rating.is_finite() {
        return Err(bad_token());
    }
    Ok(Some(LeaderboardCursor {
        rating,
        rank: rank.parse().map_err(|_| bad_token())?,
        username_key: username_key.to_owned(),
    }))
}

/// The token for the history page after row `id`.
pub fn history_token(id: i64) -> String {
    URL_SAFE_NO_PAD.encode(format!("{HISTORY_TOKEN}\n{id}"))
}

/// The row `token` names; an empty token is the first page.
pub fn history_cursor(token: &str) -> Result<Option<i64>, Error> {
    if token.is_empty() {
        return Ok(None);
    }
    let text = decode(token)?;
    match text.split_once('\n') {
        Some((HISTORY_TOKEN, id)) => id.parse().map(Some).map_err(|_| bad_token()),
        _ => Err(bad_token()),
    }
}

fn decode(token: &str) -> Result<String, Error> {
    URL_SAFE_NO_PAD
        .decode(token)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or_else(bad_token)
}

const DIRECTORY_TOKEN: &str = "pl1";

/// The order a ListPlayers request asks for.
pub fn directory_order(request: &rpc::ListPlayersRequest) -> Result<DirectoryOrder, Error> {
    let sort = match rpc::PlayerSort::try_from(request.sort) {
        Ok(rpc::PlayerSort::Unspecified | rpc::PlayerSort::Name) => DirectorySort::Name,
        Ok(rpc::PlayerSort::Rating) => DirectorySort::Rating,
        Ok(rpc::PlayerSort::Games) => DirectorySort::Games,
        Err(_) => return Err(Error::Invalid("unknown player sort".into())),
    };
    let category = match optional_category(request.category)? {
        Some(category) => category,
        None => SpeedCategory::Blitz,
    };
    Ok(DirectoryOrder {
        sort,
        category,
        descending: request.descending,
    })
}

/// The token for the directory page after `cursor`.
pub fn directory_token(cursor: &DirectoryCursor) -> String {
    URL_SAFE_NO_PAD.encode(format!(
        "{DIRECTORY_TOKEN}\n{}\n{}",
        cursor.value, cursor.username_key
    ))
}

/// The position `token` names; an empty token is the first page.
pub fn directory_cursor(token: &str) -> Result<Option<DirectoryCursor>, Error> {
    if token.is_empty() {
        return Ok(None);
    }
    let text = decode(token)?;
    let mut parts = text.splitn(3, '\n');
    let (Some(DIRECTORY_TOKEN), Some(value), Some(username_key)) =
        (parts.next(), parts.next(), parts.next())
    else {
        return Err(bad_token());
    };
    let value: f64 = value.parse().map_err(|_| bad_token())?;
    if !value.is_finite() {
        return Err(bad_token());
    }
    Ok(Some(DirectoryCursor {
        value,
        username_key: username_key.to_owned(),
    }))
}

/// A directory page as shown at `now`.
pub fn directory_pb(
    system: &System,
    page: Page<DirectoryRow, DirectoryCursor>,
    now: Timestamp,
) -> rpc::ListPlayersResponse {
    rpc::ListPlayersResponse {
        rating_system: system_pb(system.kind()) as i32,
        next_page_token: page.next.as_ref().map(directory_token).unwrap_or_default(),
        players: page
            .rows
            .into_iter()
            .map(|row| {
                profile_pb(
                    system,
                    &Profile {
                        player: row.player,
                        ratings: row.ratings,
                        at: now,
                    },
                )
            })
            .collect(),
    }
}

/// A chat standing on the wire.
pub fn standing_pb(standing: ChatStanding) -> rpc::ChatStanding {
    rpc::ChatStanding {
        moderator: standing.moderator,
        muted_until: standing.muted_until.map(Timestamp::to_proto),
        chat_off: standing.chat_off,
        muted: standing
            .muted
            .into_iter()
            .map(|(player_id, username)| rpc::MutedPlayer {
                player_id: player_id.into(),
                username: username.into(),
            })
            .collect(),
    }
}

/// A player's session state on the wire.
pub fn session_state_pb(state: SessionState) -> rpc::SessionState {
    rpc::SessionState {
        generation: state.generation,
        revoked_session_ids: state.revoked,
    }
}

/// The answers that are a player's session state and nothing else.
macro_rules! session_state_answers {
    ($($response:ident),+) => {$(
        impl From<SessionState> for rpc::$response {
            fn from(state: SessionState) -> Self {
                Self {
                    state: Some(session_state_pb(state)),
                }
            }
        }
    )+};
}

session_state_answers!(
    GetSessionStateResponse,
    RevokeSessionResponse,
    RevokeAllSessionsResponse
);

impl From<Error> for Status {
    fn from(error: Error) -> Self {
        let message = error.to_string();
        match error {
            Error::Rule(_) | Error::Invalid(_) => {
                Reason::InvalidRequest.status(Code::InvalidArgument, message)
            }
            Error::Taken(_) => Status::already_exists(message),
            Error::Unauthenticated => Status::unauthenticated(message),
            Error::WrongPassword | Error::NotModerator => Status::permission_denied(message),
            Error::Throttled(wait) => {
                chess_runtime::throttle::status("failed logins for this account", wait)
            }
            Error::NotFound(_) => Reason::NotFound.status(Code::NotFound, message),
            Error::Store(StoreError::Corrupt(_)) | Error::Hash(_) => Status::internal(message),
            Error::Store(_) => Status::unavailable(message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_garbage_is_refused() {
        let cursor = LeaderboardCursor {
            rating: 1_513.123_456_789_012_3,
            username_key: "some_name-1".into(),
            rank: 77,
        };
        let token = leaderboard_token(&cursor);
        assert_eq!(leaderboard_cursor(&token).unwrap(), Some(cursor));
        assert_eq!(leaderboard_cursor("").unwrap(), None);
        assert!(leaderboard_cursor("!!").is_err());
        assert!(leaderboard_cursor(&history_token(5)).is_err());
        assert_eq!(history_cursor(&history_token(5)).unwrap(), Some(5));
        assert!(history_cursor(&token).is_err());
    }

    #[test]
    fn empty_player_ids_name_nobody() {
        assert_eq!(player_to_find("p1").unwrap(), PlayerId::trusted("p1"));
        let missing = player_to_find("").unwrap_err();
        assert!(matches!(&missing, Error::NotFound(id) if id.is_empty()));
        assert_eq!(
            players_to_find(&["p1".into(), String::new(), "p1".into()]).unwrap(),
            [PlayerId::trusted("p1"), PlayerId::trusted("p1")]
        );
        let many = vec!["p".to_owned(); MAX_PLAYERS_PER_CALL + 1];
        assert!(matches!(players_to_find(&many), Err(Error::Invalid(_))));
    }

    #[test]
    fn timestamps_and_page_sizes() {
        let at = Timestamp::from_millis(1_700_000_000_123);
        assert_eq!(instant(&at.to_proto()).unwrap(), at);
        let far = prost_types::Timestamp {
            seconds: i64::MAX,
            nanos: 0,
        };
        assert!(instant(&far).is_err());
        assert_eq!(page_size(0), 50);
        assert_eq!(page_size(7), 7);
        assert_eq!(page_size(5000), 200);
    }
}

#[cfg(test)]
mod status_tests {
    use super::*;
    use crate::{accounts::RuleError, store::Field};

    #[test]
    fn statuses() {
        let status = Status::from(Error::from(StoreError::Taken(Field::Email)));
        assert_eq!(status.code(), Code::AlreadyExists);
        assert!(status.message().contains("email"), "{}", status.message());
        let status = Status::from(Error::from(StoreError::Taken(Field::Username)));
        assert!(
            status.message().contains("username"),
            "{}",
            status.message()
        );
        let status = Status::from(Error::Rule(RuleError::Email));
        assert_eq!(status.code(), Code::InvalidArgument);
        assert_eq!(Reason::of(&status), Some(Reason::InvalidRequest));
        assert_eq!(
            Status::from(Error::Unauthenticated).code(),
            Code::Unauthenticated
        );
        assert_eq!(
            Status::from(Error::Store(StoreError::Corrupt("x".into()))).code(),
            Code::Internal
        );
    }
}
