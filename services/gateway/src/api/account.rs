//! AccountService: accounts and sessions, profiles and leaderboards, served
//! by the rating service.
//!
//! Logins, password changes and registrations are throttled per source
//! address here ([`crate::api::limits`]) and per account in the rating service.
//! Sign-outs and password changes are recorded by the rating service and
//! enforced through [`crate::core::sessions`].

use std::net::IpAddr;

use chess_domain::{PlayerId, Username};
use chess_proto::{
    gateway::v1::{self as pb, account_service_server::AccountService},
    rating::v1::{self as rating, get_player_request::Key},
};
use chess_runtime::identity::Signed;
use tonic::{Code, Request, Response, Status};

use super::{
    Answer,
    convert::{expiry, require},
    edge::CallerOf as _,
    forward, relay, with_retries,
};
use super::{custom, public_service};
use crate::{api::limits::AddressLimits, core::auth::Session};

impl Accounts {
    /// The rating service.
    fn rating(&self) -> Rating {
        self.shared.backends.rating.rpc()
    }

    /// A read of one account (retried while the rating service restarts).
    async fn player(&self, key: Key) -> Result<rating::GetPlayerResponse, Status> {
        let request = rating::GetPlayerRequest { key: Some(key) };
        let call = |mut rating: Rating, r| async move { rating.get_player(r).await };
        with_retries(self.rating(), request, call).await
    }

    /// A call that checks a password from `source`: counted against the
    /// address when the rating service refuses it with `wrong`.
    async fn with_password<T>(
        &self,
        source: Option<IpAddr>,
        wrong: Code,
        call: impl Future<Output = Result<Response<T>, Status>>,
    ) -> Result<T, Status> {
        self.shared.limits.check_login(source)?;
        call.await.map(Response::into_inner).map_err(|status| {
            if status.code() == wrong {
                self.shared.limits.login_failed(source);
            }
            relay(status)
        })
    }

    /// A fresh session token for the player, as `answer` (one of the
    /// responses that sign in) carries it.
    fn sign_in<T>(
        &self,
        player_id: &PlayerId,
        username: &Username,
        generation: i64,
        answer: impl FnOnce(String, Option<prost_types::Timestamp>, String, String) -> T,
    ) -> T {
        let tokens = self.shared.sessions.tokens();
        let (token, session) = tokens.issue(player_id, username, generation);
        let expires_at = Some(expiry(session.expires_at));
        answer(
            token,
            expires_at,
            session.player_id.into(),
            session.username.into(),
        )
    }

    /// Ends the caller's session (`everywhere`: all their sessions) in the
    /// rating service, which records it, and here at once.
    async fn sign_out(&self, session: Session, everywhere: bool) -> Answer<()> {
        let mut rating = self.rating();
        let ended = if everywhere {
            let request = rating::RevokeAllSessionsRequest {
                player_id: session.player_id.to_string(),
            };
            forward(rating.revoke_all_sessions(request)).await?.state
        } else {
            let request = rating::RevokeSessionRequest {
                player_id: session.player_id.to_string(),
                session_id: session.session_id.clone(),
                expires_at: Some(expiry(session.expires_at)),
            };
            forward(rating.revoke_session(request)).await?.state
        };
        self.shared.sessions.ended(&session.player_id, ended);
        let what = if everywhere {
            "signed out everywhere"
        } else {
            "signed out"
        };
        tracing::debug!(player_id = %session.player_id, "{what}");
        Ok(())
    }
}

type Rating = rating::rating_service_client::RatingServiceClient<Signed>;

/// Signing the caller out: their session (`everywhere`: all of them)
/// ended in the rating service, which records it, and here at once.
macro_rules! sign_out {
    ($this:ident, $request:ident, $method:ident, $name:ident, [$($response:ident)::+],
        ($everywhere:literal)) => {{
        $this.sign_out($request.caller()?, $everywhere).await?;
        $($response)::+ {}
    }};
}

/// A read of a list, retried while the rating service restarts: the
/// request's fields `$copied` sent, the answer's `$answer` copied back.
macro_rules! list {
    ($this:ident, $request:ident, $method:ident, $name:ident, [$($response:ident)::+],
        ($($copied:ident),+ -> $($answer:ident),+)) => {{
        let r = $request.into_inner();
        let request = rating::$name { $($copied: r.$copied),+ };
        let call = |mut rating: Rating, r| async move { rating.$method(r).await };
        let listed = with_retries($this.rating(), request, call).await?;
        $($response)::+ { $($answer: listed.$answer),+ }
    }};
}

public_service! {
    /// Implements `chess.gateway.v1.AccountService`.
    pub struct Accounts: AccountService;
    custom() [username]: register(RegisterRequest -> pb::RegisterResponse),
        get_profile(GetProfileRequest -> pb::GetProfileResponse),
        get_rating_history(GetRatingHistoryRequest -> pb::GetRatingHistoryResponse);
    custom() []: login(LoginRequest -> pb::LoginResponse),
        change_password(ChangePasswordRequest -> pb::ChangePasswordResponse),
        me(MeRequest -> pb::MeResponse);
    sign_out(false) []: logout(LogoutRequest -> pb::LogoutResponse);
    sign_out(true) []: logout_everywhere(LogoutEverywhereRequest -> pb::LogoutEverywhereResponse);
    list(category, page_size, page_token -> rating_system, entries, next_page_token) []:
        leaderboard(LeaderboardRequest -> pb::LeaderboardResponse);
    custom() []: list_players(ListPlayersRequest -> pb::ListPlayersResponse),
        list_muted_players(ListMutedPlayersRequest -> pb::ListMutedPlayersResponse),
        set_chat_off(SetChatOffRequest -> pb::SetChatOffResponse);
    custom() [username]: mute_player(MutePlayerRequest -> pb::MutePlayerResponse),
        unmute_player(UnmutePlayerRequest -> pb::UnmutePlayerResponse),
        mute_account(MuteAccountRequest -> pb::MuteAccountResponse);
}

/// The methods written out: those that do more than forward a call.
impl Accounts {
    async fn register(
        &self,
        request: Request<pb::RegisterRequest>,
    ) -> Answer<pb::RegisterResponse> {
        self.shared
            .limits
            .register(AddressLimits::source(&request))?;
        let r = request.into_inner();
        let request = rating::RegisterRequest {
            username: r.username,
            email: r.email,
            password: r.password,
        };
        let profile = forward(self.rating().register(request)).await?.profile;
        Ok(pb::RegisterResponse { profile })
    }

    async fn get_profile(
        &self,
        request: Request<pb::GetProfileRequest>,
    ) -> Answer<pb::GetProfileResponse> {
        let username = request.into_inner().username;
        require("username", &username)?;
        // The email stays private.
        let player = self.player(Key::Username(username)).await?;
        let presence = match &player.profile {
            Some(profile) => Some(
                self.presence(&PlayerId::trusted(profile.player_id.clone()))
                    .await,
            ),
            None => None,
        };
        Ok(pb::GetProfileResponse {
            profile: player.profile,
            presence,
        })
    }

    async fn get_rating_history(
        &self,
        request: Request<pb::GetRatingHistoryRequest>,
    ) -> Answer<pb::GetRatingHistoryResponse> {
        let r = request.into_inner();
        require("username", &r.username)?;
        let player_id = self
            .player(Key::Username(r.username))
            .await?
            .profile
            .map(|p| p.player_id)
            .ok_or_else(|| Status::unavailable("the rating service sent no profile"))?;
        let request = rating::GetRatingHistoryRequest {
            player_id,
            category: r.category,
            page_size: r.page_size,
            page_token: r.page_token,
        };
        let call = |mut rating: Rating, r| async move { rating.get_rating_history(r).await };
        let history = with_retries(self.rating(), request, call).await?;
        Ok(pb::GetRatingHistoryResponse {
            entries: history.entries,
            next_page_token: history.next_page_token,
        })
    }

    async fn login(&self, request: Request<pb::LoginRequest>) -> Answer<pb::LoginResponse> {
        let source = AddressLimits::source(&request);
        let r = request.into_inner();
        let request = rating::AuthenticateRequest {
            login: r.login,
            password: r.password,
        };
        let mut rating = self.rating();
        let authenticated = rating.authenticate(request);
        let who = self
            .with_password(source, Code::Unauthenticated, authenticated)
            .await?;
        tracing::debug!(player_id = who.player_id, "signed in");
        let answer = |token, expires_at, player_id, username| pb::LoginResponse {
            token,
            expires_at,
            player_id,
            username,
        };
        Ok(self.sign_in(
            &PlayerId::trusted(who.player_id),
            &Username::trusted(who.username),
            who.session_generation,
            answer,
        ))
    }

    async fn change_password(
        &self,
        request: Request<pb::ChangePasswordRequest>,
    ) -> Answer<pb::ChangePasswordResponse> {
        let session = request.caller()?;
        let source = AddressLimits::source(&request);
        let r = request.into_inner();
        let request = rating::ChangePasswordRequest {
            player_id: session.player_id.to_string(),
            old_password: r.old_password,
            new_password: r.new_password,
        };
        let mut rating = self.rating();
        let changing = rating.change_password(request);
        let changed = self
            .with_password(source, Code::PermissionDenied, changing)
            .await?;
        let generation = changed.state.as_ref().map_or(0, |s| s.generation);
        let player_id = &session.player_id;
        self.shared.sessions.ended(player_id, changed.state);
        tracing::debug!(%player_id, "password changed");
        let answer = |token, expires_at, player_id, username| pb::ChangePasswordResponse {
            token,
            expires_at,
            player_id,
            username,
        };
        let username = Username::trusted(changed.username);
        Ok(self.sign_in(player_id, &username, generation, answer))
    }

    async fn me(&self, request: Request<pb::MeRequest>) -> Answer<pb::MeResponse> {
        let session = request.caller()?;
        let standing = self
            .shared
            .chat
            .standing(&session.player_id)
            .await
            .map_err(relay)?;
        let player = self.player(Key::PlayerId(session.player_id.into())).await?;
        Ok(pb::MeResponse {
            profile: player.profile,
            email: player.email,
            moderator: standing.moderator,
            chat_off: standing.chat_off,
            chat_muted_until: standing.muted_until.map(chess_domain::Timestamp::to_proto),
        })
    }

    async fn list_players(
        &self,
        request: Request<pb::ListPlayersRequest>,
    ) -> Answer<pb::ListPlayersResponse> {
        let r = request.into_inner();
        let sort = match pb::PlayerSort::try_from(r.sort) {
            Ok(pb::PlayerSort::Unspecified) => rating::PlayerSort::Unspecified,
            Ok(pb::PlayerSort::Name) => rating::PlayerSort::Name,
            Ok(pb::PlayerSort::Rating) => rating::PlayerSort::Rating,
            Ok(pb::PlayerSort::Games) => rating::PlayerSort::Games,
            Err(_) => return Err(invalid("sort: unknown player sort")),
        };
        let request = rating::ListPlayersRequest {
            username_prefix: r.username_prefix,
            sort: sort as i32,
            category: r.category,
            descending: r.descending,
            page_size: r.page_size,
            page_token: r.page_token,
        };
        let call = |mut rating: Rating, r| async move { rating.list_players(r).await };
        let listed = with_retries(self.rating(), request, call).await?;
        let ids: Vec<PlayerId> = listed
            .players
            .iter()
            .map(|p| PlayerId::trusted(p.player_id.clone()))
            .collect();
        let flags = self.shared.presence.flags(&ids).await;
        let players = listed
            .players
            .into_iter()
            .zip(flags)
            .map(|(profile, flags)| pb::DirectoryPlayer {
                games_played: profile.ratings.iter().map(|r| r.games_played).sum(),
                profile: Some(profile),
                presence: Some(presence_pb(flags)),
            })
            .collect();
        Ok(pb::ListPlayersResponse {
            rating_system: listed.rating_system,
            players,
            next_page_token: listed.next_page_token,
            players_online: u32::try_from(self.shared.presence.players_online())
                .unwrap_or(u32::MAX),
        })
    }

    async fn mute_player(
        &self,
        request: Request<pb::MutePlayerRequest>,
    ) -> Answer<pb::MutePlayerResponse> {
        let (session, r) = request.signed_in()?;
        let muted_usernames = self.set_mute(&session, r.username, true).await?;
        Ok(pb::MutePlayerResponse { muted_usernames })
    }

    async fn unmute_player(
        &self,
        request: Request<pb::UnmutePlayerRequest>,
    ) -> Answer<pb::UnmutePlayerResponse> {
        let (session, r) = request.signed_in()?;
        let muted_usernames = self.set_mute(&session, r.username, false).await?;
        Ok(pb::UnmutePlayerResponse { muted_usernames })
    }

    async fn list_muted_players(
        &self,
        request: Request<pb::ListMutedPlayersRequest>,
    ) -> Answer<pb::ListMutedPlayersResponse> {
        let session = request.caller()?;
        let request = rating::GetChatStandingRequest {
            player_id: session.player_id.to_string(),
        };
        let call = |mut rating: Rating, r| async move { rating.get_chat_standing(r).await };
        let standing = with_retries(self.rating(), request, call)
            .await?
            .standing
            .unwrap_or_default();
        let muted_usernames = muted_names(&standing);
        self.shared.chat.remember(&session.player_id, standing);
        Ok(pb::ListMutedPlayersResponse { muted_usernames })
    }

    async fn set_chat_off(
        &self,
        request: Request<pb::SetChatOffRequest>,
    ) -> Answer<pb::SetChatOffResponse> {
        let (session, r) = request.signed_in()?;
        let request = rating::SetChatOffRequest {
            player_id: session.player_id.to_string(),
            chat_off: r.chat_off,
        };
        let rating = self.shared.backends.rating.acting(&session.player_id);
        let call = |mut rating: Rating, r| async move { rating.set_chat_off(r).await };
        let standing = with_retries(rating, request, call)
            .await?
            .standing
            .unwrap_or_default();
        let standing = self.shared.chat.remember(&session.player_id, standing);
        Ok(pb::SetChatOffResponse {
            chat_off: standing.chat_off,
        })
    }

    async fn mute_account(
        &self,
        request: Request<pb::MuteAccountRequest>,
    ) -> Answer<pb::MuteAccountResponse> {
        let (session, r) = request.signed_in()?;
        require("username", &r.username)?;
        let request = rating::MuteAccountRequest {
            moderator_id: session.player_id.to_string(),
            username: r.username,
            duration_seconds: r.duration_seconds,
        };
        let mut rating = self.shared.backends.rating.acting(&session.player_id);
        let muted = forward(rating.mute_account(request)).await?;
        let standing = muted.standing.unwrap_or_default();
        let until = standing.muted_until;
        self.shared
            .chat
            .remember(&PlayerId::trusted(muted.player_id), standing);
        tracing::info!(moderator_id = %session.player_id, "account muted");
        Ok(pb::MuteAccountResponse { muted_until: until })
    }
}

/// Helpers of the directory and chat standing calls.
impl Accounts {
    /// `player_id`'s presence on the wire.
    async fn presence(&self, player_id: &PlayerId) -> pb::PlayerPresence {
        presence_pb(self.shared.presence.flags_of(player_id).await)
    }

    /// Mutes or unmutes `username` for the session's player; whom they mute
    /// now, by name.
    async fn set_mute(
        &self,
        session: &Session,
        username: String,
        muted: bool,
    ) -> Result<Vec<String>, Status> {
        require("username", &username)?;
        let request = rating::SetPersonalMuteRequest {
            player_id: session.player_id.to_string(),
            username,
            muted,
        };
        let rating = self.shared.backends.rating.acting(&session.player_id);
        // Setting a mute twice is setting it once: safe to repeat.
        let call = |mut rating: Rating, r| async move { rating.set_personal_mute(r).await };
        let standing = with_retries(rating, request, call)
            .await?
            .standing
            .unwrap_or_default();
        let names = muted_names(&standing);
        self.shared.chat.remember(&session.player_id, standing);
        Ok(names)
    }
}

fn presence_pb(flags: crate::core::presence::Flags) -> pb::PlayerPresence {
    pb::PlayerPresence {
        online: flags.online,
        playing: flags.playing,
    }
}

fn muted_names(standing: &rating::ChatStanding) -> Vec<String> {
    standing.muted.iter().map(|m| m.username.clone()).collect()
}

fn invalid(message: &str) -> Status {
    chess_runtime::Reason::InvalidRequest.status(Code::InvalidArgument, message)
}
