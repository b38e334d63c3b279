//! AccountService: accounts and sessions, profiles and leaderboards, served
//! by the rating service.
//!
//! Logins, password changes and registrations are throttled per source
//! address here ([`crate::api::limits`]) and per account in the rating service.
//! Sign-outs and password changes are recorded by the rating service and
//! enforced through [`crate::core::sessions`].

use std::sync::Arc;

use chess_proto::{
    gateway::v1::{self as pb, account_service_server::AccountService},
    rating::v1::{self as rating, get_player_request::Key},
};
use tonic::{Code, Request, Response, Status};
use tracing::instrument;

use super::{Shared, edge::CallerOf as _, relay, timestamp, with_retries};
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

    /// A read of one account (retried while the rating service restarts).
    async fn player(&self, key: Key) -> Result<rating::GetPlayerResponse, Status> {
        with_retries(
            self.shared.backends.rating.rpc(),
            rating::GetPlayerRequest { key: Some(key) },
            |mut client, request| async move { client.get_player(request).await },
        )
        .await
    }
}

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
        let registered = self
            .shared
            .backends
            .rating
            .rpc()
            .register(rating::RegisterRequest {
                username: r.username,
                email: r.email,
                password: r.password,
            })
            .await
            .map_err(relay)?
            .into_inner();
        Ok(Response::new(pb::RegisterResponse {
            profile: registered.profile,
        }))
    }

    #[instrument(level = "debug", skip_all)]
    async fn login(
        &self,
        request: Request<pb::LoginRequest>,
    ) -> Result<Response<pb::LoginResponse>, Status> {
        let source = AddressLimits::source(&request);
        self.shared.limits.check_login(source)?;
        let r = request.into_inner();
        let who = self
            .shared
            .backends
            .rating
            .rpc()
            .authenticate(rating::AuthenticateRequest {
                login: r.login,
                password: r.password,
            })
            .await
            .map_err(|status| {
                if status.code() == Code::Unauthenticated {
                    self.shared.limits.login_failed(source);
                }
                relay(status)
            })?
            .into_inner();
        let (token, session) = self.shared.sessions.tokens().issue(
            &who.player_id,
            &who.username,
            who.session_generation,
        );
        tracing::debug!(player_id = who.player_id, "signed in");
        Ok(Response::new(pb::LoginResponse {
            token,
            expires_at: Some(timestamp(session.expires_at)),
            player_id: who.player_id,
            username: who.username,
        }))
    }

    #[instrument(level = "debug", skip_all)]
    async fn logout(
        &self,
        request: Request<pb::LogoutRequest>,
    ) -> Result<Response<pb::LogoutResponse>, Status> {
        let session = request.caller()?;
        let ended = self
            .shared
            .backends
            .rating
            .rpc()
            .revoke_session(rating::RevokeSessionRequest {
                player_id: session.player_id.clone(),
                session_id: session.session_id.clone(),
                expires_at: Some(timestamp(session.expires_at)),
            })
            .await
            .map_err(relay)?
            .into_inner();
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
        let ended = self
            .shared
            .backends
            .rating
            .rpc()
            .revoke_all_sessions(rating::RevokeAllSessionsRequest {
                player_id: session.player_id.clone(),
            })
            .await
            .map_err(relay)?
            .into_inner();
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
        self.shared.limits.check_login(source)?;
        let r = request.into_inner();
        let changed = self
            .shared
            .backends
            .rating
            .rpc()
            .change_password(rating::ChangePasswordRequest {
                player_id: session.player_id.clone(),
                old_password: r.old_password,
                new_password: r.new_password,
            })
            .await
            .map_err(|status| {
                if status.code() == Code::PermissionDenied {
                    self.shared.limits.login_failed(source);
                }
                relay(status)
            })?
            .into_inner();
        let generation = changed.state.as_ref().map_or(0, |s| s.generation);
        self.shared
            .sessions
            .ended(&session.player_id, changed.state);
        let (token, fresh) =
            self.shared
                .sessions
                .tokens()
                .issue(&session.player_id, &changed.username, generation);
        tracing::debug!(player_id = session.player_id, "password changed");
        Ok(Response::new(pb::ChangePasswordResponse {
            token,
            expires_at: Some(timestamp(fresh.expires_at)),
            player_id: fresh.player_id,
            username: fresh.username,
        }))
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
        if username.is_empty() {
            return Err(Status::invalid_argument("username must be given"));
        }
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
        if r.username.is_empty() {
            return Err(Status::invalid_argument("username must be given"));
        }
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
        let rating = self.shared.backends.rating.rpc();
        let history = with_retries(rating, request, |mut client, request| async move {
            client.get_rating_history(request).await
        })
        .await?;
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
        let rating = self.shared.backends.rating.rpc();
        let board = with_retries(rating, request, |mut client, request| async move {
            client.leaderboard(request).await
        })
        .await?;
        Ok(Response::new(pb::LeaderboardResponse {
            rating_system: board.rating_system,
            entries: board.entries,
            next_page_token: board.next_page_token,
        }))
    }
}
