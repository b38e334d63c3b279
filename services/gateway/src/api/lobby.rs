//! LobbyService: seeks, tables and challenges, served by matchmaking with
//! the caller's identity from their session; games against the engine,
//! created directly by the game service.

use std::sync::Arc;

use chess_internal_clients::NewGame;
use chess_proto::{
    gateway::v1::{self as pb, lobby_service_server::LobbyService},
    matchmaking::v1 as mm,
};
use chess_runtime::identity::Signed;
use tonic::{Request, Response, Status};
use tracing::instrument;

use super::{Shared, convert, edge::CallerOf as _, forward, relay, with_retries};
use crate::core::auth::Session;

/// Implements `chess.gateway.v1.LobbyService`.
#[derive(Debug)]
pub struct Lobby {
    shared: Arc<Shared>,
}

impl Lobby {
    pub fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }

    /// The matchmaking service, acting for `player_id`.
    fn acting(&self, player_id: &str) -> Matchmaking {
        self.shared.backends.matchmaking.acting(player_id)
    }

    /// The caller of `request`, with the matchmaking service acting for
    /// them and the request's message.
    fn me<T>(&self, request: Request<T>) -> Result<(Matchmaking, Session, T), Status> {
        let session = request.caller()?;
        Ok((
            self.acting(&session.player_id),
            session,
            request.into_inner(),
        ))
    }
}

type Matchmaking = mm::matchmaking_service_client::MatchmakingServiceClient<Signed>;

#[tonic::async_trait]
impl LobbyService for Lobby {
    #[instrument(level = "debug", skip_all)]
    async fn create_seek(
        &self,
        request: Request<pb::CreateSeekRequest>,
    ) -> Result<Response<pb::CreateSeekResponse>, Status> {
        let (mut matchmaking, me, r) = self.me(request)?;
        let request = mm::CreateSeekRequest {
            player_id: me.player_id,
            username: me.username,
            time_control: r.time_control,
            color: r.color,
            rated: r.rated,
            min_rating: r.min_rating,
            max_rating: r.max_rating,
            show_name: r.show_name,
            accept_mode: r.accept_mode,
            allow_hints: r.allow_hints,
        };
        let seek = forward(matchmaking.create_seek(request)).await?.seek;
        Ok(Response::new(pb::CreateSeekResponse { seek }))
    }

    #[instrument(level = "debug", skip_all, fields(seek_id = %request.get_ref().seek_id))]
    async fn cancel_seek(
        &self,
        request: Request<pb::CancelSeekRequest>,
    ) -> Result<Response<pb::CancelSeekResponse>, Status> {
        let (mut matchmaking, me, r) = self.me(request)?;
        let request = mm::CancelSeekRequest {
            seek_id: r.seek_id,
            player_id: me.player_id,
        };
        let seek = forward(matchmaking.cancel_seek(request)).await?.seek;
        Ok(Response::new(pb::CancelSeekResponse { seek }))
    }

    #[instrument(level = "debug", skip_all)]
    async fn list_seeks(
        &self,
        request: Request<pb::ListSeeksRequest>,
    ) -> Result<Response<pb::ListSeeksResponse>, Status> {
        // Public, but a signed-in reader sees their own seeks with their name.
        let viewer_id = request.viewer().map(|s| s.player_id).unwrap_or_default();
        let r = request.into_inner();
        // A signed-in reader's call acts for them.
        let client = self.acting(&viewer_id);
        let request = mm::ListSeeksRequest {
            viewer_id,
            speed: r.speed,
            page_size: r.page_size,
            page_token: r.page_token,
        };
        let page = with_retries(client, request, |mut client, request| async move {
            client.list_seeks(request).await
        })
        .await?;
        Ok(Response::new(pb::ListSeeksResponse {
            seeks: page.seeks,
            next_page_token: page.next_page_token,
        }))
    }

    #[instrument(level = "debug", skip_all, fields(seek_id = %request.get_ref().seek_id))]
    async fn request_seek(
        &self,
        request: Request<pb::RequestSeekRequest>,
    ) -> Result<Response<pb::RequestSeekResponse>, Status> {
        let (mut matchmaking, me, r) = self.me(request)?;
        let request = mm::RequestSeekRequest {
            seek_id: r.seek_id,
            player_id: me.player_id,
            username: me.username,
        };
        let request = forward(matchmaking.request_seek(request)).await?.request;
        Ok(Response::new(pb::RequestSeekResponse { request }))
    }

    #[instrument(level = "debug", skip_all, fields(request_id = %request.get_ref().request_id))]
    async fn accept_seek_request(
        &self,
        request: Request<pb::AcceptSeekRequestRequest>,
    ) -> Result<Response<pb::AcceptSeekRequestResponse>, Status> {
        let (mut matchmaking, me, r) = self.me(request)?;
        let request = mm::AcceptSeekRequestRequest {
            request_id: r.request_id,
            player_id: me.player_id,
        };
        let request = forward(matchmaking.accept_seek_request(request))
            .await?
            .request;
        Ok(Response::new(pb::AcceptSeekRequestResponse { request }))
    }

    #[instrument(level = "debug", skip_all, fields(request_id = %request.get_ref().request_id))]
    async fn reject_seek_request(
        &self,
        request: Request<pb::RejectSeekRequestRequest>,
    ) -> Result<Response<pb::RejectSeekRequestResponse>, Status> {
        let (mut matchmaking, me, r) = self.me(request)?;
        let request = mm::RejectSeekRequestRequest {
            request_id: r.request_id,
            player_id: me.player_id,
        };
        let request = forward(matchmaking.reject_seek_request(request))
            .await?
            .request;
        Ok(Response::new(pb::RejectSeekRequestResponse { request }))
    }

    #[instrument(level = "debug", skip_all, fields(request_id = %request.get_ref().request_id))]
    async fn withdraw_seek_request(
        &self,
        request: Request<pb::WithdrawSeekRequestRequest>,
    ) -> Result<Response<pb::WithdrawSeekRequestResponse>, Status> {
        let (mut matchmaking, me, r) = self.me(request)?;
        let request = mm::WithdrawSeekRequestRequest {
            request_id: r.request_id,
            player_id: me.player_id,
        };
        let request = forward(matchmaking.withdraw_seek_request(request))
            .await?
            .request;
        Ok(Response::new(pb::WithdrawSeekRequestResponse { request }))
    }

    #[instrument(level = "debug", skip_all)]
    async fn list_seek_requests(
        &self,
        request: Request<pb::ListSeekRequestsRequest>,
    ) -> Result<Response<pb::ListSeekRequestsResponse>, Status> {
        let (matchmaking, me, _) = self.me(request)?;
        let request = mm::ListSeekRequestsRequest {
            player_id: me.player_id,
        };
        let call = |mut mm: Matchmaking, r| async move { mm.list_seek_requests(r).await };
        let listed = with_retries(matchmaking, request, call).await?;
        Ok(Response::new(pb::ListSeekRequestsResponse {
            received: listed.received,
            sent: listed.sent,
            seeks: listed.seeks,
        }))
    }

    #[instrument(level = "debug", skip_all, fields(opponent = %request.get_ref().opponent_username))]
    async fn create_challenge(
        &self,
        request: Request<pb::CreateChallengeRequest>,
    ) -> Result<Response<pb::CreateChallengeResponse>, Status> {
        let (mut matchmaking, me, r) = self.me(request)?;
        let request = mm::CreateChallengeRequest {
            player_id: me.player_id,
            username: me.username,
            opponent_username: r.opponent_username,
            time_control: r.time_control,
            color: r.color,
            rated: r.rated,
            expires_in_seconds: r.expires_in_seconds,
            allow_hints: r.allow_hints,
        };
        let challenge = forward(matchmaking.create_challenge(request))
            .await?
            .challenge;
        Ok(Response::new(pb::CreateChallengeResponse { challenge }))
    }

    #[instrument(level = "debug", skip_all, fields(challenge_id = %request.get_ref().challenge_id))]
    async fn accept_challenge(
        &self,
        request: Request<pb::AcceptChallengeRequest>,
    ) -> Result<Response<pb::AcceptChallengeResponse>, Status> {
        let (mut matchmaking, me, r) = self.me(request)?;
        let request = mm::AcceptChallengeRequest {
            challenge_id: r.challenge_id,
            player_id: me.player_id,
        };
        let challenge = forward(matchmaking.accept_challenge(request))
            .await?
            .challenge;
        Ok(Response::new(pb::AcceptChallengeResponse { challenge }))
    }

    #[instrument(level = "debug", skip_all, fields(challenge_id = %request.get_ref().challenge_id))]
    async fn decline_challenge(
        &self,
        request: Request<pb::DeclineChallengeRequest>,
    ) -> Result<Response<pb::DeclineChallengeResponse>, Status> {
        let (mut matchmaking, me, r) = self.me(request)?;
        let request = mm::DeclineChallengeRequest {
            challenge_id: r.challenge_id,
            player_id: me.player_id,
            reason: r.reason,
        };
        let challenge = forward(matchmaking.decline_challenge(request))
            .await?
            .challenge;
        Ok(Response::new(pb::DeclineChallengeResponse { challenge }))
    }

    #[instrument(level = "debug", skip_all, fields(challenge_id = %request.get_ref().challenge_id))]
    async fn cancel_challenge(
        &self,
        request: Request<pb::CancelChallengeRequest>,
    ) -> Result<Response<pb::CancelChallengeResponse>, Status> {
        let (mut matchmaking, me, r) = self.me(request)?;
        let request = mm::CancelChallengeRequest {
            challenge_id: r.challenge_id,
            player_id: me.player_id,
        };
        let challenge = forward(matchmaking.cancel_challenge(request))
            .await?
            .challenge;
        Ok(Response::new(pb::CancelChallengeResponse { challenge }))
    }

    #[instrument(level = "debug", skip_all)]
    async fn list_challenges(
        &self,
        request: Request<pb::ListChallengesRequest>,
    ) -> Result<Response<pb::ListChallengesResponse>, Status> {
        let (matchmaking, me, _) = self.me(request)?;
        let request = mm::ListChallengesRequest {
            player_id: me.player_id,
        };
        let call = |mut mm: Matchmaking, r| async move { mm.list_challenges(r).await };
        let listed = with_retries(matchmaking, request, call).await?;
        Ok(Response::new(pb::ListChallengesResponse {
            incoming: listed.incoming,
            outgoing: listed.outgoing,
        }))
    }

    #[instrument(level = "debug", skip_all, fields(level = request.get_ref().level))]
    async fn play_engine(
        &self,
        request: Request<pb::PlayEngineRequest>,
    ) -> Result<Response<pb::PlayEngineResponse>, Status> {
        let session = request.caller()?;
        let r = request.into_inner();
        let level = convert::engine_level(r.full_strength, r.level)?;
        let choice = convert::color_choice(r.color)?;
        let white = choice.resolve(rand::random()) == chess_domain::Color::White;
        let me = chess_domain::registered_player(&session.player_id, &session.username);
        let engine = chess_domain::engine_player(level);
        let (white, black) = if white { (me, engine) } else { (engine, me) };
        let time_control = convert::time_control(r.time_control.as_ref())?;
        // Games against the engine are casual, and hints are allowed in
        // them.
        let game = NewGame {
            allow_hints: true,
            ..NewGame::casual(white, black, time_control)
        };
        let game = self
            .shared
            .backends
            .game
            .create_game(game)
            .await
            .map_err(relay)?;
        Ok(Response::new(pb::PlayEngineResponse { game: Some(game) }))
    }
}
