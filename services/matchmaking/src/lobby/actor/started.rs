//! Settling what a game came from once the game service has made it (or
//! releasing the reservation if it could not).

use chess_domain::{GameId, Timestamp};

use super::{Lobby, Settled};
use crate::lobby::{
    error::LobbyError,
    model::{ChallengeStatus, GamePlan, LobbyEvent, Origin, RequestStatus},
};

impl Lobby {
    pub(super) async fn started(
        &mut self,
        plan: GamePlan,
        outcome: Result<GameId, LobbyError>,
    ) -> Result<Settled, LobbyError> {
        match plan.origin {
            Origin::Seek {
                seek_id,
                request_id,
            } => {
                let game_id = match outcome {
                    Ok(game_id) => game_id,
                    Err(e) => {
                        self.reserved.remove(&seek_id);
                        return Err(e);
                    }
                };
                let Some(mut request) = self.requests.remove(&request_id) else {
                    return Err(LobbyError::NotFound(format!(
                        "no pending request {request_id}"
                    )));
                };
                request.status = RequestStatus::Accepted;
                request.game_id = Some(game_id.clone());
                if let Err(e) = self.store.settle_request(&request, Timestamp::now()).await {
                    // The game exists; after a restart the same request would
                    // find it again through its idempotency key.
                    tracing::warn!(request_id, error = %e, "could not store an accepted request");
                }
                if let Err(e) = self.remove_seek(&seek_id, "taken", Some(&request_id)).await {
                    tracing::warn!(seek_id, error = %e, "could not close a taken table");
                    self.seeks.remove(&seek_id);
                    self.reserved.remove(&seek_id);
                }
                let wire = request.clone();
                let requester = request.requester.id.clone();
                let poster = if plan.white.id == requester {
                    plan.black.id.clone()
                } else {
                    plan.white.id.clone()
                };
                self.notify(&requester, LobbyEvent::SeekRequestAccepted(wire.clone()));
                self.notify(&poster, LobbyEvent::SeekRequestAccepted(wire));
                tracing::debug!(seek_id, request_id, %game_id, "seek taken");
                Ok(Settled::Request(request))
            }
            Origin::Challenge { challenge_id } => {
                self.reserved.remove(&challenge_id);
                let game_id = outcome?;
                let Some(challenge) = self.challenges.get_mut(&challenge_id) else {
                    return Err(LobbyError::NotFound(format!(
                        "no pending challenge {challenge_id}"
                    )));
                };
                challenge.game_id = Some(game_id.clone());
                let settled = match self
                    .settle_challenge(&challenge_id, ChallengeStatus::Accepted, String::new())
                    .await
                {
                    Ok(settled) => settled,
                    Err(e) => {
                        // The game exists: the acceptance stands even if it
                        // could not be recorded.
                        tracing::warn!(challenge_id, error = %e, "could not store an accepted challenge");
                        let mut challenge = self.challenges.remove(&challenge_id).ok_or(e)?;
                        challenge.status = ChallengeStatus::Accepted;
                        challenge
                    }
                };
                tracing::debug!(challenge_id, %game_id, "challenge accepted");
                Ok(Settled::Challenge(settled))
            }
        }
    }
}
