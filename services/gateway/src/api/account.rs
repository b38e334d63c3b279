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
        Ok(pb::GetProfileResponse {
            profile: player.profile,
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
        let player = self.player(Key::PlayerId(session.player_id.into())).await?;
        Ok(pb::MeResponse {
            profile: player.profile,
            email: player.email,
        })
    }
}
