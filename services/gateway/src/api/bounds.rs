//! The longest value each string field of a public request may hold.
//!
//! Checked by the gate ([`super::edge`]) before a handler runs, beside each
//! method's access rule: an oversized field is INVALID_ARGUMENT at once,
//! with a message that names the field and its limit but never quotes the
//! value. The
//! limits are generous (the services apply the real rules, such as what
//! makes a username) and only stop what no valid request needs.

use chess_proto::gateway::v1 as pb;
use chess_runtime::Reason;
use tonic::{Code, Status};

/// Usernames (at most 20 characters by the account rules).
const NAME: usize = 64;
/// A login: a username or an email address (at most 254 bytes by RFC 5321).
const LOGIN: usize = 254;
/// Passwords (the account rules allow 1,024 characters).
const PASSWORD: usize = 4 * 1024;
/// Ids of games, seeks, requests and challenges.
const ID: usize = 64;
/// A move in UCI or SAN.
const MOVE: usize = 32;
/// A reason for declining a challenge (200 characters by the lobby's rule).
const REASON: usize = 4 * 200;
/// Page tokens handed out by list calls.
const PAGE_TOKEN: usize = 256;
/// A signed Nostr event given as proof of owning its key.
const NOSTR_EVENT: usize = 4 * 1024;
/// A chat line: 140 characters of up to 4 bytes each (the game service
/// applies the rule in characters).
const CHAT_TEXT: usize = 4 * 140;
/// A chat report's reason: 500 characters.
const CHAT_REASON: usize = 4 * 500;
/// Games a resumed event stream may name.
const CURSORS: usize = 1000;

/// A public request whose string fields have limits.
pub(super) trait Bounded {
    /// INVALID_ARGUMENT naming the first field over its limit.
    fn check(&self) -> Result<(), Status>;
}

/// Who may call a method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Access {
    /// Anyone: a token sent along is not even read.
    Anyone,
    /// A signed-in player only.
    SignedIn,
    /// Anyone, but a signed-in caller is told apart (and an invalid token
    /// is refused, so a client learns it expired).
    MaybeSignedIn,
}

/// What the gate makes of a call's first message.
#[derive(Debug)]
pub(super) enum Admission {
    /// Within its limits; the method's access rule.
    Checked(Access),
    /// A field over its limit.
    Refused(Status),
    /// Not a request this table knows, or not one that decodes: tonic
    /// answers it as before, without a handler.
    Unread,
}

/// The request of `method` decoded from `message` and checked against its
/// limits.
fn check<T: prost::Message + Default + Bounded>(message: &[u8], access: Access) -> Admission {
    match T::decode(message) {
        Ok(request) => match request.check() {
            Ok(()) => Admission::Checked(access),
            Err(status) => Admission::Refused(status),
        },
        Err(_) => Admission::Unread,
    }
}

fn within(field: &str, value: &str, max: usize) -> Result<(), Status> {
    if value.len() > max {
        return Err(Reason::InvalidRequest.status(
            Code::InvalidArgument,
            format!("{field} is too long: at most {max} bytes"),
        ));
    }
    Ok(())
}

/// Each access rule with its requests' limits, and the requests it holds
/// for (`custom` when their [`Bounded`] is written out below). A method is
/// known by its request: `Resign` takes a `ResignRequest`.
macro_rules! methods {
    ($($access:ident $fields:tt: $($request:ident),+;)*) => {
        $($(methods!(@bounded $request $fields);)+)*

        /// The admission of a call of `method` whose first message is
        /// `message`.
        pub(super) fn admit(method: &str, message: &[u8]) -> Admission {
            $($(
                if stringify!($request).strip_suffix("Request") == Some(method) {
                    return check::<pb::$request>(message, Access::$access);
                }
            )+)*
            Admission::Unread
        }
    };
    (@bounded $request:ident custom) => {};
    (@bounded $request:ident { $($field:ident: $max:expr),* $(,)? }) => {
        impl Bounded for pb::$request {
            fn check(&self) -> Result<(), Status> {
                $(within(stringify!($field).trim_start_matches("r#"), &self.$field, $max)?;)*
                Ok(())
            }
        }
    };
}

methods! {
    Anyone {}: GetNostrInfoRequest;
    Anyone { username: NAME, email: LOGIN, password: PASSWORD }: RegisterRequest;
    Anyone { login: LOGIN, password: PASSWORD }: LoginRequest;
    Anyone { username: NAME }: GetProfileRequest;
    Anyone { username: NAME, page_token: PAGE_TOKEN }: GetRatingHistoryRequest;
    Anyone { page_token: PAGE_TOKEN }: LeaderboardRequest;
    Anyone { username_prefix: NAME, page_token: PAGE_TOKEN }: ListPlayersRequest;
    SignedIn { username: NAME }: MutePlayerRequest, UnmutePlayerRequest, MuteAccountRequest;
    SignedIn {}: ListMutedPlayersRequest, SetChatOffRequest;
    Anyone { game_id: ID }: LegalMovesRequest, BoardRequest, GetGameRequest, ExportPgnRequest;
    MaybeSignedIn { game_id: ID }: WatchGameRequest, ListChatRequest;
    Anyone { page_token: PAGE_TOKEN }: ListLiveGamesRequest;
    Anyone {}: WatchLiveGamesRequest;
    MaybeSignedIn { page_token: PAGE_TOKEN }: ListSeeksRequest;
    SignedIn {}: LogoutRequest, LogoutEverywhereRequest, MeRequest, CreateSeekRequest,
        ListSeekRequestsRequest, ListChallengesRequest, PlayEngineRequest, UnlinkNostrKeyRequest;
    SignedIn { old_password: PASSWORD, new_password: PASSWORD }: ChangePasswordRequest;
    SignedIn { seek_id: ID }: CancelSeekRequest, RequestSeekRequest;
    SignedIn { request_id: ID }: AcceptSeekRequestRequest, RejectSeekRequestRequest,
        WithdrawSeekRequestRequest;
    SignedIn { opponent_username: NAME }: CreateChallengeRequest;
    SignedIn { challenge_id: ID }: AcceptChallengeRequest, CancelChallengeRequest;
    SignedIn { challenge_id: ID, reason: REASON }: DeclineChallengeRequest;
    SignedIn { game_id: ID, r#move: MOVE }: MakeMoveRequest;
    SignedIn { game_id: ID }: ResignRequest, OfferDrawRequest, AcceptDrawRequest, DeclineDrawRequest,
        ClaimDrawRequest, AbortRequest, HintRequest, ProposeTakebackRequest, AcceptTakebackRequest,
        DeclineTakebackRequest, CancelTakebackRequest;
    SignedIn { page_token: PAGE_TOKEN }: ListMyGamesRequest;
    SignedIn { event: NOSTR_EVENT }: LinkNostrKeyRequest;
    SignedIn custom: StreamEventsRequest;
    Anyone custom: ListPlayerGamesRequest, ExportPlayerGamesRequest;
    Anyone { game_id: ID }: GetRatingChangesRequest;
    SignedIn { game_id: ID, text: CHAT_TEXT }: SendChatRequest;
    SignedIn { game_id: ID, reason: CHAT_REASON }: ReportChatRequest;
    SignedIn { game_id: ID }: HideChatRequest;
    SignedIn {}: ListChatReportsRequest;
}

/// The filters of a player's game history.
fn history_filter(filter: Option<&pb::PlayerGamesFilter>) -> Result<(), Status> {
    filter.map_or(Ok(()), |f| {
        within("opponent_username", &f.opponent_username, NAME)
    })
}

impl Bounded for pb::ListPlayerGamesRequest {
    fn check(&self) -> Result<(), Status> {
        within("username", &self.username, NAME)?;
        within("page_token", &self.page_token, PAGE_TOKEN)?;
        history_filter(self.filter.as_ref())
    }
}

impl Bounded for pb::ExportPlayerGamesRequest {
    fn check(&self) -> Result<(), Status> {
        within("username", &self.username, NAME)?;
        history_filter(self.filter.as_ref())
    }
}

impl Bounded for pb::StreamEventsRequest {
    fn check(&self) -> Result<(), Status> {
        if self.games.len() > CURSORS {
            return Err(Reason::InvalidRequest.status(
                Code::InvalidArgument,
                format!("games: at most {CURSORS} may be resumed"),
            ));
        }
        for cursor in &self.games {
            within("game_id", &cursor.game_id, ID)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_oversized_field_is_named_but_not_quoted() {
        let request = pb::GetGameRequest {
            game_id: "g".repeat(100_000),
        };
        let status = request.check().unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument);
        assert_eq!(Reason::of(&status), Some(Reason::InvalidRequest));
        assert_eq!(status.message(), "game_id is too long: at most 64 bytes");
    }

    #[test]
    fn methods_are_told_by_name_with_their_access() {
        use prost::Message as _;
        let seeks = pb::ListSeeksRequest::default().encode_to_vec();
        assert!(matches!(
            admit("ListSeeks", &seeks),
            Admission::Checked(Access::MaybeSignedIn)
        ));
        let game = pb::ResignRequest {
            game_id: "g".repeat(65),
        }
        .encode_to_vec();
        assert!(matches!(admit("Resign", &game), Admission::Refused(_)));
        assert!(matches!(admit("Nothing", &game), Admission::Unread));
        assert!(matches!(admit("Resign", b"\xff"), Admission::Unread));
    }

    #[test]
    fn fields_within_their_limits_pass() {
        let request = pb::MakeMoveRequest {
            game_id: "abcdefghijkl".to_owned(),
            r#move: "e7e8q".to_owned(),
            ply: Some(3),
        };
        assert!(request.check().is_ok());
        let request = pb::MakeMoveRequest {
            game_id: "abcdefghijkl".to_owned(),
            r#move: "x".repeat(33),
            ply: None,
        };
        assert_eq!(
            request.check().unwrap_err().message(),
            "move is too long: at most 32 bytes"
        );
    }
}
