//! Requests to play a seek: asking, accepting (which reserves the seek),
//! rejecting, withdrawing and listing.

use chess_domain::{PlayerId, Timestamp};

use super::{Lobby, Requested, Requests, listed};
use crate::lobby::{
    error::LobbyError,
    model::{GamePlan, LobbyEvent, Member, Origin, RequestStatus, Seek, SeekRequest, sides},
};

/// How a pending request ends without a game.
#[derive(Clone, Copy, Debug)]
pub(crate) enum RequestEnd {
    /// The seek's poster turns it down; the requester is told.
    Rejected,
    /// The requester takes it back; the seek's poster is told.
    Withdrawn,
}

impl Lobby {
    pub(super) async fn request_seek(
        &mut self,
        seek_id: &str,
        requester: Member,
        rating: Option<i32>,
    ) -> Result<Requested, LobbyError> {
        let seek = self.open_seek(seek_id)?.clone();
        if seek.poster.id == requester.id {
            return Err(LobbyError::Refused("you cannot play your own seek".into()));
        }
        if seek.has_range() {
            let Some(rating) = rating else {
                return Err(LobbyError::Unavailable(
                    "your rating could not be read to check the seek's range".into(),
                ));
            };
            if !seek.admits(rating) {
                return Err(LobbyError::Refused(format!(
                    "your {} rating {rating} is outside the seek's range",
                    seek.speed()
                )));
            }
        }
        if self
            .requests
            .values()
            .any(|r| r.seek_id == seek_id && r.requester.id == requester.id)
        {
            return Err(LobbyError::Refused(
                "you have already asked to play this seek".into(),
            ));
        }
        let request = SeekRequest {
            id: uuid::Uuid::new_v4().to_string(),
            seek_id: seek_id.to_owned(),
            requester,
            requester_rating: rating.unwrap_or(0),
            status: RequestStatus::Pending,
            game_id: None,
            created_at: Timestamp::now(),
        };
        self.store.insert_request(&request).await?;
        self.requests.insert(request.id.clone(), request.clone());
        match seek.accept {
            crate::lobby::model::AcceptMode::Automatic => {
                self.reserved.insert(seek.id.clone());
                Ok(Requested::Start(plan_for_seek(&seek, &request)))
            }
            crate::lobby::model::AcceptMode::Manual => {
                let poster = seek.poster.id.clone();
                self.notify(&poster, LobbyEvent::SeekRequestReceived(request.clone()));
                Ok(Requested::Pending(request))
            }
        }
    }

    /// The pending request `request_id` and its open seek.
    pub(super) fn pending_request(
        &self,
        request_id: &str,
    ) -> Result<(&SeekRequest, &Seek), LobbyError> {
        let request = self
            .requests
            .get(request_id)
            .ok_or_else(|| LobbyError::NotFound(format!("no pending request {request_id}")))?;
        let seek = self.open_seek(&request.seek_id)?;
        Ok((request, seek))
    }

    pub(super) fn accept_request(
        &mut self,
        request_id: &str,
        player_id: &PlayerId,
    ) -> Result<GamePlan, LobbyError> {
        let (request, seek) = self.pending_request(request_id)?;
        if seek.poster.id != *player_id {
            return Err(LobbyError::NotYours(format!(
                "request {request_id} is not for your seek"
            )));
        }
        let plan = plan_for_seek(seek, request);
        let seek_id = seek.id.clone();
        self.reserved.insert(seek_id);
        Ok(plan)
    }

    /// Ends the pending request `request_id` as `end` says, if `player_id`
    /// is the one who may, and tells the other side.
    pub(super) async fn end_request(
        &mut self,
        request_id: &str,
        player_id: &PlayerId,
        end: RequestEnd,
    ) -> Result<SeekRequest, LobbyError> {
        let (request, seek) = self.pending_request(request_id)?;
        let (ender, told, refusal, status, event): (_, _, _, _, fn(_) -> _) = match end {
            RequestEnd::Rejected => (
                &seek.poster,
                &request.requester,
                "is not for your seek",
                RequestStatus::Rejected,
                LobbyEvent::SeekRequestRejected,
            ),
            RequestEnd::Withdrawn => (
                &request.requester,
                &seek.poster,
                "is not yours",
                RequestStatus::Cancelled,
                LobbyEvent::SeekRequestCancelled,
            ),
        };
        if ender.id != *player_id {
            return Err(LobbyError::NotYours(format!(
                "request {request_id} {refusal}"
            )));
        }
        let told = told.id.clone();
        let mut request = request.clone();
        request.status = status;
        self.store
            .settle_request(&request, Timestamp::now())
            .await?;
        self.requests.remove(request_id);
        self.notify(&told, event(request.clone()));
        Ok(request)
    }

    pub(super) fn list_requests(&self, player_id: &PlayerId) -> Requests {
        let received = listed(self.requests.values(), |r| {
            self.seeks
                .get(&r.seek_id)
                .is_some_and(|s| s.poster.id == *player_id)
        });
        let sent = listed(self.requests.values(), |r| r.requester.id == *player_id);
        let seeks = listed(self.seeks.values(), |s| s.poster.id == *player_id);
        (received, sent, seeks)
    }
}

/// The game a seek and a request to it make.
fn plan_for_seek(seek: &Seek, request: &SeekRequest) -> GamePlan {
    let (poster_side, _) = sides(seek.color, rand::random());
    let (white, black) = match poster_side {
        chess_domain::Color::White => (seek.poster.clone(), request.requester.clone()),
        chess_domain::Color::Black => (request.requester.clone(), seek.poster.clone()),
    };
    GamePlan {
        origin: Origin::Seek {
            seek_id: seek.id.clone(),
            request_id: request.id.clone(),
        },
        white,
        black,
        time_control: seek.time_control,
        rated: seek.rated,
        allow_hints: seek.allow_hints,
    }
}
