//! The gRPC edge: `chess.matchmaking.v1.MatchmakingService`. The only room
//! that sees the protocol's messages and `Status`: each call is checked and
//! converted ([`crate::convert`]), then served by [`crate::pairing`] (the
//! uqchess queue) or [`crate::lobby`] (everything else), whose answers are
//! converted back.

use std::pin::Pin;

use chess_domain::require;
use chess_proto::common::v1 as common;
use chess_proto::matchmaking::v1::{self as pb, matchmaking_service_server::MatchmakingService};
use chess_runtime::Claims;
use tokio::sync::mpsc;
use tokio_stream::{Stream, StreamExt as _, wrappers::ReceiverStream};
use tonic::{Request, Response, Status};
use tracing::instrument;

use crate::{
    convert::{cursor_token, ids, member, parse_cursor, seeker, speed_filter},
    lobby::{LobbyHandle, NewChallenge, NewSeek, Settled, error::LobbyError, model::Challenge},
    pairing::PairingHandle,
};

type EventStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// Implements `chess.matchmaking.v1.MatchmakingService`.
#[derive(Debug)]
pub struct MatchmakingApi {
    pub pairing: PairingHandle,
    pub lobby: LobbyHandle,
}

/// Seeks in a page when the caller does not say.
const DEFAULT_PAGE_SIZE: usize = 50;
/// Most seeks in a page.
const MAX_PAGE_SIZE: u32 = 100;

#[tonic::async_trait]
impl MatchmakingService for MatchmakingApi {
    type JoinPairingQueueStream = EventStream<pb::JoinPairingQueueResponse>;

    #[instrument(level = "debug", skip_all, fields(guest_id = %request.get_ref().guest_id))]
    async fn join_pairing_queue(
        &self,
        request: Request<pb::JoinPairingQueueRequest>,
    ) -> Result<Response<Self::JoinPairingQueueStream>, Status> {
        acting_for(&request, &request.get_ref().guest_id)?;
        let (updates, rx) = mpsc::channel(4);
        self.pairing
            .join(seeker(request.into_inner(), updates)?)
            .await?;
        Ok(Response::new(Box::pin(ReceiverStream::new(rx).map(
            |update| {
                update
                    .map(pb::JoinPairingQueueResponse::from)
                    .map_err(Status::from)
            },
        ))))
    }

    #[instrument(level = "debug", skip_all, fields(player_id = %request.get_ref().player_id))]
    async fn create_seek(
        &self,
        request: Request<pb::CreateSeekRequest>,
    ) -> Result<Response<pb::CreateSeekResponse>, Status> {
        acting_for(&request, &request.get_ref().player_id)?;
        let seek = self
            .lobby
            .create_seek(NewSeek::try_from(request.into_inner())?)
            .await?;
        Ok(Response::new(pb::CreateSeekResponse {
            seek: Some(seek.to_pb(Some(&seek.poster.id))),
        }))
    }

    #[instrument(level = "debug", skip_all, fields(seek_id = %request.get_ref().seek_id))]
    async fn cancel_seek(
        &self,
        request: Request<pb::CancelSeekRequest>,
    ) -> Result<Response<pb::CancelSeekResponse>, Status> {
        acting_for(&request, &request.get_ref().player_id)?;
        let r = request.into_inner();
        let (seek_id, player_id) = ids("seek_id", r.seek_id, r.player_id)?;
        let seek = self.lobby.cancel_seek(seek_id, player_id.clone()).await?;
        Ok(Response::new(pb::CancelSeekResponse {
            seek: Some(seek.to_pb(Some(&player_id))),
        }))
    }

    #[instrument(level = "debug", skip_all)]
    async fn list_seeks(
        &self,
        request: Request<pb::ListSeeksRequest>,
    ) -> Result<Response<pb::ListSeeksResponse>, Status> {
        acting_for(&request, &request.get_ref().viewer_id)?;
        let r = request.into_inner();
        let speed = speed_filter(r.speed)?;
        let after = if r.page_token.is_empty() {
            None
        } else {
            Some(parse_cursor(&r.page_token)?)
        };
        let limit = match r.page_size {
            0 => DEFAULT_PAGE_SIZE,
            n => n.min(MAX_PAGE_SIZE) as usize,
        };
        let (seeks, next) = self.lobby.list_seeks(speed, after, limit).await?;
        let viewer = Some(r.viewer_id.as_str()).filter(|v| !v.is_empty());
        Ok(Response::new(pb::ListSeeksResponse {
            seeks: seeks.iter().map(|s| s.to_pb(viewer)).collect(),
            next_page_token: next.as_ref().map(cursor_token).unwrap_or_default(),
        }))
    }

    #[instrument(level = "debug", skip_all, fields(seek_id = %request.get_ref().seek_id))]
    async fn request_seek(
        &self,
        request: Request<pb::RequestSeekRequest>,
    ) -> Result<Response<pb::RequestSeekResponse>, Status> {
        acting_for(&request, &request.get_ref().player_id)?;
        let r = request.into_inner();
        require("seek_id", &r.seek_id).map_err(LobbyError::from)?;
        let requester = member(r.player_id, r.username)?;
        let settled = self.lobby.request_seek(r.seek_id, requester).await?;
        Ok(Response::new(pb::RequestSeekResponse {
            request: Some(settled_request(settled)?),
        }))
    }

    #[instrument(level = "debug", skip_all, fields(request_id = %request.get_ref().request_id))]
    async fn accept_seek_request(
        &self,
        request: Request<pb::AcceptSeekRequestRequest>,
    ) -> Result<Response<pb::AcceptSeekRequestResponse>, Status> {
        acting_for(&request, &request.get_ref().player_id)?;
        let r = request.into_inner();
        let (request_id, player_id) = ids("request_id", r.request_id, r.player_id)?;
        let settled = self
            .lobby
            .accept_seek_request(request_id, player_id)
            .await?;
        Ok(Response::new(pb::AcceptSeekRequestResponse {
            request: Some(settled_request(settled)?),
        }))
    }

    #[instrument(level = "debug", skip_all, fields(request_id = %request.get_ref().request_id))]
    async fn reject_seek_request(
        &self,
        request: Request<pb::RejectSeekRequestRequest>,
    ) -> Result<Response<pb::RejectSeekRequestResponse>, Status> {
        acting_for(&request, &request.get_ref().player_id)?;
        let r = request.into_inner();
        let (request_id, player_id) = ids("request_id", r.request_id, r.player_id)?;
        let request = self
            .lobby
            .reject_seek_request(request_id, player_id)
            .await?;
        Ok(Response::new(pb::RejectSeekRequestResponse {
            request: Some(request.to_pb()),
        }))
    }

    #[instrument(level = "debug", skip_all, fields(request_id = %request.get_ref().request_id))]
    async fn withdraw_seek_request(
        &self,
        request: Request<pb::WithdrawSeekRequestRequest>,
    ) -> Result<Response<pb::WithdrawSeekRequestResponse>, Status> {
        acting_for(&request, &request.get_ref().player_id)?;
        let r = request.into_inner();
        let (request_id, player_id) = ids("request_id", r.request_id, r.player_id)?;
        let request = self
            .lobby
            .withdraw_seek_request(request_id, player_id)
            .await?;
        Ok(Response::new(pb::WithdrawSeekRequestResponse {
            request: Some(request.to_pb()),
        }))
    }

    #[instrument(level = "debug", skip_all, fields(player_id = %request.get_ref().player_id))]
    async fn list_seek_requests(
        &self,
        request: Request<pb::ListSeekRequestsRequest>,
    ) -> Result<Response<pb::ListSeekRequestsResponse>, Status> {
        acting_for(&request, &request.get_ref().player_id)?;
        let r = request.into_inner();
        require("player_id", &r.player_id).map_err(LobbyError::from)?;
        let player_id = r.player_id;
        let (received, sent, seeks) = self.lobby.list_seek_requests(player_id.clone()).await?;
        Ok(Response::new(pb::ListSeekRequestsResponse {
            received: received.iter().map(|r| r.to_pb()).collect(),
            sent: sent.iter().map(|r| r.to_pb()).collect(),
            seeks: seeks.iter().map(|s| s.to_pb(Some(&player_id))).collect(),
        }))
    }

    #[instrument(level = "debug", skip_all, fields(player_id = %request.get_ref().player_id))]
    async fn create_challenge(
        &self,
        request: Request<pb::CreateChallengeRequest>,
    ) -> Result<Response<pb::CreateChallengeResponse>, Status> {
        acting_for(&request, &request.get_ref().player_id)?;
        let challenge = self
            .lobby
            .create_challenge(NewChallenge::try_from(request.into_inner())?)
            .await?;
        Ok(Response::new(pb::CreateChallengeResponse {
            challenge: Some(challenge.to_pb()),
        }))
    }

    #[instrument(level = "debug", skip_all, fields(challenge_id = %request.get_ref().challenge_id))]
    async fn accept_challenge(
        &self,
        request: Request<pb::AcceptChallengeRequest>,
    ) -> Result<Response<pb::AcceptChallengeResponse>, Status> {
        acting_for(&request, &request.get_ref().player_id)?;
        let r = request.into_inner();
        let (challenge_id, player_id) = ids("challenge_id", r.challenge_id, r.player_id)?;
        let settled = self.lobby.accept_challenge(challenge_id, player_id).await?;
        Ok(Response::new(pb::AcceptChallengeResponse {
            challenge: Some(settled_challenge(settled)?),
        }))
    }

    #[instrument(level = "debug", skip_all, fields(challenge_id = %request.get_ref().challenge_id))]
    async fn decline_challenge(
        &self,
        request: Request<pb::DeclineChallengeRequest>,
    ) -> Result<Response<pb::DeclineChallengeResponse>, Status> {
        acting_for(&request, &request.get_ref().player_id)?;
        let r = request.into_inner();
        let (challenge_id, player_id) = ids("challenge_id", r.challenge_id, r.player_id)?;
        let challenge = self
            .lobby
            .decline_challenge(challenge_id, player_id, &r.reason)
            .await?;
        Ok(Response::new(pb::DeclineChallengeResponse {
            challenge: Some(challenge.to_pb()),
        }))
    }

    #[instrument(level = "debug", skip_all, fields(challenge_id = %request.get_ref().challenge_id))]
    async fn cancel_challenge(
        &self,
        request: Request<pb::CancelChallengeRequest>,
    ) -> Result<Response<pb::CancelChallengeResponse>, Status> {
        acting_for(&request, &request.get_ref().player_id)?;
        let r = request.into_inner();
        let (challenge_id, player_id) = ids("challenge_id", r.challenge_id, r.player_id)?;
        let challenge = self.lobby.cancel_challenge(challenge_id, player_id).await?;
        Ok(Response::new(pb::CancelChallengeResponse {
            challenge: Some(challenge.to_pb()),
        }))
    }

    #[instrument(level = "debug", skip_all, fields(player_id = %request.get_ref().player_id))]
    async fn list_challenges(
        &self,
        request: Request<pb::ListChallengesRequest>,
    ) -> Result<Response<pb::ListChallengesResponse>, Status> {
        acting_for(&request, &request.get_ref().player_id)?;
        let r = request.into_inner();
        require("player_id", &r.player_id).map_err(LobbyError::from)?;
        let (incoming, outgoing) = self.lobby.list_challenges(r.player_id).await?;
        Ok(Response::new(pb::ListChallengesResponse {
            incoming: incoming.iter().map(Challenge::to_pb).collect(),
            outgoing: outgoing.iter().map(Challenge::to_pb).collect(),
        }))
    }

    type WatchPlayerStream = EventStream<pb::WatchPlayerResponse>;

    /// The player's lobby events until the stream closes. The stream counts
    /// as open (for the player's real-time seeks) from when this returns.
    #[instrument(level = "debug", skip_all, fields(player_id = %request.get_ref().player_id))]
    async fn watch_player(
        &self,
        request: Request<pb::WatchPlayerRequest>,
    ) -> Result<Response<Self::WatchPlayerStream>, Status> {
        acting_for(&request, &request.get_ref().player_id)?;
        let r = request.into_inner();
        require("player_id", &r.player_id).map_err(LobbyError::from)?;
        let events = self.lobby.watch_player(r.player_id).await?;
        Ok(Response::new(Box::pin(
            ReceiverStream::new(events).map(|event| Ok(pb::WatchPlayerResponse::from(event))),
        )))
    }
}

/// The request a seek settled as (a seek never settles as a challenge).
fn settled_request(settled: Settled) -> Result<common::SeekRequest, Status> {
    match settled {
        Settled::Request(request) => Ok(request.to_pb()),
        Settled::Challenge(_) => Err(Status::internal("a seek settled as a challenge")),
    }
}

/// The challenge a challenge settled as.
fn settled_challenge(settled: Settled) -> Result<common::Challenge, Status> {
    match settled {
        Settled::Challenge(challenge) => Ok(challenge.to_pb()),
        Settled::Request(_) => Err(Status::internal("a challenge settled as a seek")),
    }
}

/// Refuses a request acting for `player_id` unless the caller's assertion
/// acts for that player. A request for nobody (an empty id: a guest's view
/// of the lobby, or a request refused as invalid further on) needs only a
/// valid assertion.
fn acting_for<T>(request: &Request<T>, player_id: &str) -> Result<(), Status> {
    if player_id.is_empty() {
        return Ok(());
    }
    Claims::of(request)?.check_player(player_id)
}
