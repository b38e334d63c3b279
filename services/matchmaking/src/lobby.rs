//! Seeks and tables, requests to play them, and direct challenges.

use std::pin::Pin;

use chess_proto::matchmaking::v1 as pb;
use tokio_stream::Stream;
use tonic::Status;

type EventStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// The lobby.
#[derive(Debug, Default)]
pub struct Lobby {}

impl Lobby {
    pub async fn create_seek(
        &self,
        _request: pb::CreateSeekRequest,
    ) -> Result<pb::CreateSeekResponse, Status> {
        Err(Status::unimplemented("CreateSeek"))
    }

    pub async fn cancel_seek(
        &self,
        _request: pb::CancelSeekRequest,
    ) -> Result<pb::CancelSeekResponse, Status> {
        Err(Status::unimplemented("CancelSeek"))
    }

    pub async fn list_seeks(
        &self,
        _request: pb::ListSeeksRequest,
    ) -> Result<pb::ListSeeksResponse, Status> {
        Err(Status::unimplemented("ListSeeks"))
    }

    pub async fn request_seek(
        &self,
        _request: pb::RequestSeekRequest,
    ) -> Result<pb::RequestSeekResponse, Status> {
        Err(Status::unimplemented("RequestSeek"))
    }

    pub async fn accept_seek_request(
        &self,
        _request: pb::AcceptSeekRequestRequest,
    ) -> Result<pb::AcceptSeekRequestResponse, Status> {
        Err(Status::unimplemented("AcceptSeekRequest"))
    }

    pub async fn reject_seek_request(
        &self,
        _request: pb::RejectSeekRequestRequest,
    ) -> Result<pb::RejectSeekRequestResponse, Status> {
        Err(Status::unimplemented("RejectSeekRequest"))
    }

    pub async fn withdraw_seek_request(
        &self,
        _request: pb::WithdrawSeekRequestRequest,
    ) -> Result<pb::WithdrawSeekRequestResponse, Status> {
        Err(Status::unimplemented("WithdrawSeekRequest"))
    }

    pub async fn list_seek_requests(
        &self,
        _request: pb::ListSeekRequestsRequest,
    ) -> Result<pb::ListSeekRequestsResponse, Status> {
        Err(Status::unimplemented("ListSeekRequests"))
    }

    pub async fn create_challenge(
        &self,
        _request: pb::CreateChallengeRequest,
    ) -> Result<pb::CreateChallengeResponse, Status> {
        Err(Status::unimplemented("CreateChallenge"))
    }

    pub async fn accept_challenge(
        &self,
        _request: pb::AcceptChallengeRequest,
    ) -> Result<pb::AcceptChallengeResponse, Status> {
        Err(Status::unimplemented("AcceptChallenge"))
    }

    pub async fn decline_challenge(
        &self,
        _request: pb::DeclineChallengeRequest,
    ) -> Result<pb::DeclineChallengeResponse, Status> {
        Err(Status::unimplemented("DeclineChallenge"))
    }

    pub async fn cancel_challenge(
        &self,
        _request: pb::CancelChallengeRequest,
    ) -> Result<pb::CancelChallengeResponse, Status> {
        Err(Status::unimplemented("CancelChallenge"))
    }

    pub async fn list_challenges(
        &self,
        _request: pb::ListChallengesRequest,
    ) -> Result<pb::ListChallengesResponse, Status> {
        Err(Status::unimplemented("ListChallenges"))
    }

    pub async fn watch_player(
        &self,
        _request: pb::WatchPlayerRequest,
    ) -> Result<EventStream<pb::WatchPlayerResponse>, Status> {
        Err(Status::unimplemented("WatchPlayer"))
    }
}
