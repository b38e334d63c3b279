//! The gRPC face of the service: the pairing queue is served by
//! [`crate::pairing`], everything else by [`crate::lobby`].

use std::pin::Pin;

use chess_domain::ColorChoice;
use chess_proto::matchmaking::v1::{self as pb, matchmaking_service_server::MatchmakingService};
use tokio::sync::mpsc;
use tokio_stream::{Stream, wrappers::ReceiverStream};
use tonic::{Request, Response, Status};
use tracing::instrument;

use crate::{
    lobby::Lobby,
    pairing::{Pairing, Seeker},
};

type EventStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// Implements `chess.matchmaking.v1.MatchmakingService`.
#[derive(Debug)]
pub struct MatchmakingApi {
    pub pairing: Pairing,
    pub lobby: Lobby,
}

#[tonic::async_trait]
impl MatchmakingService for MatchmakingApi {
    type JoinPairingQueueStream = EventStream<pb::JoinPairingQueueResponse>;

    #[instrument(level = "debug", skip_all, fields(guest_id = %request.get_ref().guest_id))]
    async fn join_pairing_queue(
        &self,
        request: Request<pb::JoinPairingQueueRequest>,
    ) -> Result<Response<Self::JoinPairingQueueStream>, Status> {
        let r = request.into_inner();
        if r.guest_id.is_empty() {
            return Err(Status::invalid_argument("guest_id must be given"));
        }
        let color = ColorChoice::try_from(r.color).map_err(|e| Status::invalid_argument(e.0))?;
        let connected_at = r
            .connected_at
            .map_or((i64::MAX, 0), |t| (t.seconds, t.nanos));
        let (updates, rx) = mpsc::channel(4);
        self.pairing
            .join(Seeker {
                guest_id: r.guest_id,
                display_name: r.display_name,
                color,
                connected_at,
                updates,
            })
            .await?;
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    #[instrument(level = "debug", skip_all, fields(player_id = %request.get_ref().player_id))]
    async fn create_seek(
        &self,
        request: Request<pb::CreateSeekRequest>,
    ) -> Result<Response<pb::CreateSeekResponse>, Status> {
        self.lobby
            .create_seek(request.into_inner())
            .await
            .map(Response::new)
    }

    #[instrument(level = "debug", skip_all, fields(seek_id = %request.get_ref().seek_id))]
    async fn cancel_seek(
        &self,
        request: Request<pb::CancelSeekRequest>,
    ) -> Result<Response<pb::CancelSeekResponse>, Status> {
        self.lobby
            .cancel_seek(request.into_inner())
            .await
            .map(Response::new)
    }

    #[instrument(level = "debug", skip_all)]
    async fn list_seeks(
        &self,
        request: Request<pb::ListSeeksRequest>,
    ) -> Result<Response<pb::ListSeeksResponse>, Status> {
        self.lobby
            .list_seeks(request.into_inner())
            .await
            .map(Response::new)
    }

    #[instrument(level = "debug", skip_all, fields(seek_id = %request.get_ref().seek_id))]
    async fn request_seek(
        &self,
        request: Request<pb::RequestSeekRequest>,
    ) -> Result<Response<pb::RequestSeekResponse>, Status> {
        self.lobby
            .request_seek(request.into_inner())
            .await
            .map(Response::new)
    }

    #[instrument(level = "debug", skip_all, fields(request_id = %request.get_ref().request_id))]
    async fn accept_seek_request(
        &self,
        request: Request<pb::AcceptSeekRequestRequest>,
    ) -> Result<Response<pb::AcceptSeekRequestResponse>, Status> {
        self.lobby
            .accept_seek_request(request.into_inner())
            .await
            .map(Response::new)
    }

    #[instrument(level = "debug", skip_all, fields(request_id = %request.get_ref().request_id))]
    async fn reject_seek_request(
        &self,
        request: Request<pb::RejectSeekRequestRequest>,
    ) -> Result<Response<pb::RejectSeekRequestResponse>, Status> {
        self.lobby
            .reject_seek_request(request.into_inner())
            .await
            .map(Response::new)
    }

    #[instrument(level = "debug", skip_all, fields(request_id = %request.get_ref().request_id))]
    async fn withdraw_seek_request(
        &self,
        request: Request<pb::WithdrawSeekRequestRequest>,
    ) -> Result<Response<pb::WithdrawSeekRequestResponse>, Status> {
        self.lobby
            .withdraw_seek_request(request.into_inner())
            .await
            .map(Response::new)
    }

    #[instrument(level = "debug", skip_all, fields(player_id = %request.get_ref().player_id))]
    async fn list_seek_requests(
        &self,
        request: Request<pb::ListSeekRequestsRequest>,
    ) -> Result<Response<pb::ListSeekRequestsResponse>, Status> {
        self.lobby
            .list_seek_requests(request.into_inner())
            .await
            .map(Response::new)
    }

    #[instrument(level = "debug", skip_all, fields(player_id = %request.get_ref().player_id))]
    async fn create_challenge(
        &self,
        request: Request<pb::CreateChallengeRequest>,
    ) -> Result<Response<pb::CreateChallengeResponse>, Status> {
        self.lobby
            .create_challenge(request.into_inner())
            .await
            .map(Response::new)
    }

    #[instrument(level = "debug", skip_all, fields(challenge_id = %request.get_ref().challenge_id))]
    async fn accept_challenge(
        &self,
        request: Request<pb::AcceptChallengeRequest>,
    ) -> Result<Response<pb::AcceptChallengeResponse>, Status> {
        self.lobby
            .accept_challenge(request.into_inner())
            .await
            .map(Response::new)
    }

    #[instrument(level = "debug", skip_all, fields(challenge_id = %request.get_ref().challenge_id))]
    async fn decline_challenge(
        &self,
        request: Request<pb::DeclineChallengeRequest>,
    ) -> Result<Response<pb::DeclineChallengeResponse>, Status> {
        self.lobby
            .decline_challenge(request.into_inner())
            .await
            .map(Response::new)
    }

    #[instrument(level = "debug", skip_all, fields(challenge_id = %request.get_ref().challenge_id))]
    async fn cancel_challenge(
        &self,
        request: Request<pb::CancelChallengeRequest>,
    ) -> Result<Response<pb::CancelChallengeResponse>, Status> {
        self.lobby
            .cancel_challenge(request.into_inner())
            .await
            .map(Response::new)
    }

    #[instrument(level = "debug", skip_all, fields(player_id = %request.get_ref().player_id))]
    async fn list_challenges(
        &self,
        request: Request<pb::ListChallengesRequest>,
    ) -> Result<Response<pb::ListChallengesResponse>, Status> {
        self.lobby
            .list_challenges(request.into_inner())
            .await
            .map(Response::new)
    }

    type WatchPlayerStream = EventStream<pb::WatchPlayerResponse>;

    #[instrument(level = "debug", skip_all, fields(player_id = %request.get_ref().player_id))]
    async fn watch_player(
        &self,
        request: Request<pb::WatchPlayerRequest>,
    ) -> Result<Response<Self::WatchPlayerStream>, Status> {
        self.lobby
            .watch_player(request.into_inner())
            .await
            .map(Response::new)
    }
}
