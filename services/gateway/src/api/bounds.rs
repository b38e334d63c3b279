//! The longest value each string field of a public request may hold.
//!
//! Checked first thing in every handler, before the request reaches a
//! service: an oversized field is INVALID_ARGUMENT at once, with a message
//! that names the field and its limit but never quotes the value. The
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
/// Games a resumed event stream may name.
const CURSORS: usize = 1000;

/// A public request whose string fields have limits.
pub(super) trait Bounded {
    /// INVALID_ARGUMENT naming the first field over its limit.
    fn check(&self) -> Result<(), Status>;
}

/// Checks `request` against its limits.
pub(super) fn bounded<T: Bounded>(request: &tonic::Request<T>) -> Result<(), Status> {
    request.get_ref().check()
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

macro_rules! bounds {
    ($($request:ident { $($field:ident: $max:expr),* $(,)? })*) => {
        $(
            impl Bounded for pb::$request {
                fn check(&self) -> Result<(), Status> {
                    $(within(stringify!($field).trim_start_matches("r#"), &self.$field, $max)?;)*
                    Ok(())
                }
            }
        )*
    };
}

bounds! {
    RegisterRequest { username: NAME, email: LOGIN, password: PASSWORD }
    LoginRequest { login: LOGIN, password: PASSWORD }
    LogoutRequest {}
    LogoutEverywhereRequest {}
    ChangePasswordRequest { old_password: PASSWORD, new_password: PASSWORD }
    MeRequest {}
    GetProfileRequest { username: NAME }
    GetRatingHistoryRequest { username: NAME, page_token: PAGE_TOKEN }
    LeaderboardRequest { page_token: PAGE_TOKEN }
    CreateSeekRequest {}
    CancelSeekRequest { seek_id: ID }
    ListSeeksRequest { page_token: PAGE_TOKEN }
    RequestSeekRequest { seek_id: ID }
    AcceptSeekRequestRequest { request_id: ID }
    RejectSeekRequestRequest { request_id: ID }
    WithdrawSeekRequestRequest { request_id: ID }
    ListSeekRequestsRequest {}
    CreateChallengeRequest { opponent_username: NAME }
    AcceptChallengeRequest { challenge_id: ID }
    DeclineChallengeRequest { challenge_id: ID, reason: REASON }
    CancelChallengeRequest { challenge_id: ID }
    ListChallengesRequest {}
    PlayEngineRequest {}
    MakeMoveRequest { game_id: ID, r#move: MOVE }
    ResignRequest { game_id: ID }
    OfferDrawRequest { game_id: ID }
    AcceptDrawRequest { game_id: ID }
    DeclineDrawRequest { game_id: ID }
    ClaimDrawRequest { game_id: ID }
    AbortRequest { game_id: ID }
    HintRequest { game_id: ID }
    LegalMovesRequest { game_id: ID }
    BoardRequest { game_id: ID }
    GetGameRequest { game_id: ID }
    ListMyGamesRequest { page_token: PAGE_TOKEN }
    ExportPgnRequest { game_id: ID }
    WatchGameRequest { game_id: ID }
    GetNostrInfoRequest {}
    LinkNostrKeyRequest { event: NOSTR_EVENT }
    UnlinkNostrKeyRequest {}
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
