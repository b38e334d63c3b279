//! AccountService: accounts and sessions, profiles and leaderboards, served
//! by the rating service.
//!
//! Logins and registrations are throttled per source address here
//! ([`crate::limits`]) and per account in the rating service.

use std::sync::Arc;

use chess_proto::{
    gateway::v1::{self as pb, account_service_server::AccountService},
    rating::v1::{self as rating, get_player_request::Key},
};
use tonic::{Code, Request, Response, Status};
use tracing::instrument;

use super::{Shared, relay, timestamp};
use crate::limits::AddressLimits;

/// Implements `chess.gateway.v1.AccountService`.
#[derive(Debug)]
pub struct Accounts {
    shared: Arc<Shared>,
}

impl Accounts {
    pub fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }

    async fn player(&self, key: Key) -> Result<rating::GetPlayerResponse, Status> {
        self.shared
            .backends
            .rating
            .clone()
            .get_player(rating::GetPlayerRequest { key: Some(key) })
            .await
            .map(Response::into_inner)
            .map_err(relay)
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
            .clone()
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
            .clone()
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
        let (token, expires_at) = self.shared.tokens.issue(&who.player_id, &who.username);
        tracing::debug!(player_id = who.player_id, "signed in");
        Ok(Response::new(pb::LoginResponse {
            token,
            expires_at: Some(timestamp(expires_at)),
            player_id: who.player_id,
            username: who.username,
        }))
    }

    #[instrument(level = "debug", skip_all)]
    async fn me(
        &self,
        request: Request<pb::MeRequest>,
    ) -> Result<Response<pb::MeResponse>, Status> {
        let session = self.shared.tokens.authenticate(&request)?;
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
        let history = self
            .shared
            .backends
            .rating
            .clone()
            .get_rating_history(rating::GetRatingHistoryRequest {
                player_id,
                category: r.category,
                page_size: r.page_size,
                page_token: r.page_token,
            })
            .await
            .map_err(relay)?
            .into_inner();
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
        let board = self
            .shared
            .backends
            .rating
            .clone()
            .leaderboard(rating::LeaderboardRequest {
                category: r.category,
                page_size: r.page_size,
                page_token: r.page_token,
            })
            .await
            .map_err(relay)?
            .into_inner();
        Ok(Response::new(pb::LeaderboardResponse {
            rating_system: board.rating_system,
            entries: board.entries,
            next_page_token: board.next_page_token,
        }))
    }
}
