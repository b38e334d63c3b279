//! AccountService: accounts and sessions, profiles and leaderboards, served
//! by the rating service.
//!
//! Logins, password changes and registrations are throttled per source
//! address here ([`crate::api::limits`]) and per account in the rating service.
//! Sign-outs and password changes are recorded by the rating service and
//! enforced through [`crate::core::sessions`].

use std::{net::IpAddr, sync::Arc};

use chess_proto::{
    gateway::v1::{self as pb, account_service_server::AccountService},
    rating::v1::{self as rating, get_player_request::Key},
};
use chess_runtime::identity::Signed;
use tonic::{Code, Request, Response, Status};
use tracing::instrument;

use super::{
    Shared,
    convert::{expiry, require},
    edge::CallerOf as _,
    forward, relay, with_retries,
};
use crate::api::limits::AddressLimits;

/// Implements `chess.gateway.v1.AccountService`.
#[derive(Debug)]
pub struct Accounts {
    shared: Arc<Shared>,
}

impl Accounts {
    pub fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }

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
        player_id: &str,
        username: &str,
        generation: i64,
        answer: impl FnOnce(String, Option<prost_types::Timestamp>, String, String) -> T,
    ) -> Response<T> {
        let tokens = self.shared.sessions.tokens();
        let (token, session) = tokens.issue(player_id, username, generation);
        let expires_at = Some(expiry(session.expires_at));
        Response::new(answer(
            token,
            expires_at,
            session.player_id,
            session.username,
        ))
    }
}

type Rating = rating::rating_service_client::RatingServiceClient<Signed>;

#[tonic::async_trait]
impl AccountService for Accounts {
    #[instrument(level = "debug", skip_all, fields(username = %request.get_ref().username))]
    async fn register(
        &self,
        request: Request<pb::RegisterRequest>,
    ) -> Result<Response<pb::RegisterResponse>, Status> {
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
        Ok(Response::new(pb::RegisterResponse { profile }))
    }

    #[instrument(level = "debug", skip_all)]
    async fn login(
        &self,
        request: Request<pb::LoginRequest>,
    ) -> Result<Response<pb::LoginResponse>, Status> {
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
            &who.player_id,
            &who.username,
            who.session_generation,
            answer,
        ))
    }

    #[instrument(level = "debug", skip_all)]
    async fn logout(
        &self,
        request: Request<pb::LogoutRequest>,
    ) -> Result<Response<pb::LogoutResponse>, Status> {
        let session = request.caller()?;
        let request = rating::RevokeSessionRequest {
            player_id: session.player_id.clone(),
            session_id: session.session_id.clone(),
            expires_at: Some(expiry(session.expires_at)),
        };
        let ended = forward(self.rating().revoke_session(request)).await?;
        self.shared.sessions.ended(&session.player_id, ended.state);
        tracing::debug!(player_id = session.player_id, "signed out");
        Ok(Response::new(pb::LogoutResponse {}))
    }

    #[instrument(level = "debug", skip_all)]
    async fn logout_everywhere(
        &self,
        request: Request<pb::LogoutEverywhereRequest>,
    ) -> Result<Response<pb::LogoutEverywhereResponse>, Status> {
        let session = request.caller()?;
        let request = rating::RevokeAllSessionsRequest {
            player_id: session.player_id.clone(),
        };
        let ended = forward(self.rating().revoke_all_sessions(request)).await?;
        self.shared.sessions.ended(&session.player_id, ended.state);
        tracing::debug!(player_id = session.player_id, "signed out everywhere");
        Ok(Response::new(pb::LogoutEverywhereResponse {}))
    }

    #[instrument(level = "debug", skip_all)]
    async fn change_password(
        &self,
        request: Request<pb::ChangePasswordRequest>,
    ) -> Result<Response<pb::ChangePasswordResponse>, Status> {
        let session = request.caller()?;
        let source = AddressLimits::source(&request);
        let r = request.into_inner();
        let request = rating::ChangePasswordRequest {
            player_id: session.player_id.clone(),
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
        tracing::debug!(player_id, "password changed");
        let answer = |token, expires_at, player_id, username| pb::ChangePasswordResponse {
            token,
            expires_at,
            player_id,
            username,
        };
        Ok(self.sign_in(player_id, &changed.username, generation, answer))
    }

    #[instrument(level = "debug", skip_all)]
    async fn me(
        &self,
        request: Request<pb::MeRequest>,
    ) -> Result<Response<pb::MeResponse>, Status> {
        let session = request.caller()?;
        let player = self.player(Key::PlayerId(session.player_id)).await?;
        Ok(Response::new(pb::MeResponse {
            profile: player.profile,
            email: player.email,
        }))
    }

    #[instrument(level = "debug", skip_all, fields(username = %request.get_ref().username))]
    async fn get_profile(
        &self,
        request: Request<pb::GetProfileRequest>,
    ) -> Result<Response<pb::GetProfileResponse>, Status> {
        let username = request.into_inner().username;
        require("username", &username)?;
        // The email stays private.
        let player = self.player(Key::Username(username)).await?;
        Ok(Response::new(pb::GetProfileResponse {
            profile: player.profile,
        }))
    }

    #[instrument(level = "debug", skip_all, fields(username = %request.get_ref().username))]
    async fn get_rating_history(
        &self,
        request: Request<pb::GetRatingHistoryRequest>,
    ) -> Result<Response<pb::GetRatingHistoryResponse>, Status> {
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
        Ok(Response::new(pb::GetRatingHistoryResponse {
            entries: history.entries,
            next_page_token: history.next_page_token,
        }))
    }

    #[instrument(level = "debug", skip_all, fields(category = request.get_ref().category))]
    async fn leaderboard(
        &self,
        request: Request<pb::LeaderboardRequest>,
    ) -> Result<Response<pb::LeaderboardResponse>, Status> {
        let r = request.into_inner();
        let request = rating::LeaderboardRequest {
            category: r.category,
            page_size: r.page_size,
            page_token: r.page_token,
        };
        let call = |mut rating: Rating, r| async move { rating.leaderboard(r).await };
        let board = with_retries(self.rating(), request, call).await?;
        Ok(Response::new(pb::LeaderboardResponse {
            rating_system: board.rating_system,
            entries: board.entries,
            next_page_token: board.next_page_token,
        }))
    }
}
