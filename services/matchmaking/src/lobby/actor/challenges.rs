//! Direct challenges: sending, accepting (which reserves the challenge),
//! declining, cancelling, expiring and listing.

use std::{cmp::Reverse, time::Duration};

use chess_domain::{PlayerId, Timestamp};

use super::{Lobby, MAX_OPEN_CHALLENGES, listed, room_for};
use crate::lobby::{
    error::LobbyError,
    model::{Challenge, ChallengeStatus, GamePlan, LobbyEvent, Origin, sides},
};

/// A side of a challenge.
#[derive(Clone, Copy)]
enum Party {
    Challenger,
    Challenged,
}

impl Lobby {
    pub(super) async fn create_challenge(
        &mut self,
        challenge: Challenge,
    ) -> Result<Challenge, LobbyError> {
        room_for(
            self.challenges
                .values()
                .filter(|c| c.challenger.id == challenge.challenger.id),
            MAX_OPEN_CHALLENGES,
            "challenges may wait for answers",
        )?;
        self.store.insert_challenge(&challenge).await?;
        self.expiries
            .push(Reverse((challenge.expires_at, challenge.id.clone())));
        self.challenges
            .insert(challenge.id.clone(), challenge.clone());
        let challenged = challenge.challenged.id.clone();
        self.notify(
            &challenged,
            LobbyEvent::ChallengeReceived(challenge.clone()),
        );
        tracing::debug!(challenge_id = challenge.id, "challenge sent");
        Ok(challenge)
    }

    /// The pending, unreserved challenge `id`.
    pub(super) fn pending_challenge(&self, id: &str) -> Result<&Challenge, LobbyError> {
        self.challenges
            .get(id)
            .filter(|_| !self.reserved.contains(id))
            .ok_or_else(|| LobbyError::NotFound(format!("no pending challenge {id}")))
    }

    /// The pending, unreserved challenge `id`, if `player_id` is its
    /// `party`: only they may act on it so.
    fn challenge_of(
        &self,
        id: &str,
        player_id: &PlayerId,
        party: Party,
    ) -> Result<&Challenge, LobbyError> {
        let challenge = self.pending_challenge(id)?;
        let (player, refusal) = match party {
            Party::Challenged => (&challenge.challenged, "is not addressed to you"),
            Party::Challenger => (&challenge.challenger, "is not yours"),
        };
        if player.id != *player_id {
            return Err(LobbyError::NotYours(format!("challenge {id} {refusal}")));
        }
        Ok(challenge)
    }

    pub(super) async fn accept_challenge(
        &mut self,
        challenge_id: &str,
        player_id: &PlayerId,
    ) -> Result<GamePlan, LobbyError> {
        let challenge = self
            .challenge_of(challenge_id, player_id, Party::Challenged)?
            .clone();
        if challenge.expires_at <= Timestamp::now() {
            self.settle_challenge(challenge_id, ChallengeStatus::Expired, String::new())
                .await?;
            return Err(LobbyError::NotFound(format!(
                "challenge {challenge_id} has expired"
            )));
        }
        let (challenger_side, _) = sides(challenge.color, rand::random());
        let (white, black) = match challenger_side {
            chess_domain::Color::White => {
                (challenge.challenger.clone(), challenge.challenged.clone())
            }
            chess_domain::Color::Black => {
                (challenge.challenged.clone(), challenge.challenger.clone())
            }
        };
        let plan = GamePlan {
            origin: Origin::Challenge {
                challenge_id: challenge_id.to_owned(),
            },
            white,
            black,
            time_control: challenge.time_control,
            rated: challenge.rated,
            allow_hints: challenge.allow_hints,
        };
        self.reserved.insert(challenge_id.to_owned());
        Ok(plan)
    }

    pub(super) async fn decline_challenge(
        &mut self,
        challenge_id: &str,
        player_id: &PlayerId,
        reason: String,
    ) -> Result<Challenge, LobbyError> {
        self.challenge_of(challenge_id, player_id, Party::Challenged)?;
        self.settle_challenge(challenge_id, ChallengeStatus::Declined, reason)
            .await
    }

    pub(super) async fn cancel_challenge(
        &mut self,
        challenge_id: &str,
        player_id: &PlayerId,
    ) -> Result<Challenge, LobbyError> {
        self.challenge_of(challenge_id, player_id, Party::Challenger)?;
        self.settle_challenge(challenge_id, ChallengeStatus::Cancelled, String::new())
            .await
    }

    /// Ends a pending challenge with `status` and tells the other side (both,
    /// for an expiry).
    pub(super) async fn settle_challenge(
        &mut self,
        challenge_id: &str,
        status: ChallengeStatus,
        reason: String,
    ) -> Result<Challenge, LobbyError> {
        let Some(challenge) = self.challenges.get(challenge_id) else {
            return Err(LobbyError::NotFound(format!(
                "no pending challenge {challenge_id}"
            )));
        };
        let mut challenge = challenge.clone();
        challenge.status = status;
        challenge.decline_reason = reason;
        self.store
            .settle_challenge(&challenge, Timestamp::now())
            .await?;
        self.challenges.remove(challenge_id);
        let wire = challenge.clone();
        let challenger = challenge.challenger.id.clone();
        let challenged = challenge.challenged.id.clone();
        match status {
            ChallengeStatus::Declined => {
                self.notify(&challenger, LobbyEvent::ChallengeDeclined(wire));
            }
            ChallengeStatus::Cancelled => {
                self.notify(&challenged, LobbyEvent::ChallengeCancelled(wire));
            }
            ChallengeStatus::Expired => {
                self.notify(&challenger, LobbyEvent::ChallengeExpired(wire.clone()));
                self.notify(&challenged, LobbyEvent::ChallengeExpired(wire));
            }
            ChallengeStatus::Accepted => {
                self.notify(&challenger, LobbyEvent::ChallengeAccepted(wire.clone()));
                self.notify(&challenged, LobbyEvent::ChallengeAccepted(wire));
            }
            ChallengeStatus::Pending => {}
        }
        Ok(challenge)
    }

    pub(super) async fn expire_due(&mut self) {
        let now = Timestamp::now();
        while let Some(Reverse((at, id))) = self.expiries.peek().cloned() {
            if at > now {
                break;
            }
            self.expiries.pop();
            // A challenge being accepted right now is the acceptor's.
            if self.challenges.contains_key(&id) && !self.reserved.contains(&id) {
                tracing::debug!(challenge_id = id, "challenge expired");
                if let Err(e) = self
                    .settle_challenge(&id, ChallengeStatus::Expired, String::new())
                    .await
                {
                    tracing::warn!(challenge_id = id, error = %e, "could not expire a challenge; retrying");
                    self.expiries
                        .push(Reverse((now.after(Duration::from_secs(1)), id)));
                    break;
                }
            }
        }
    }

    pub(super) fn list_challenges(&self, player_id: &PlayerId) -> (Vec<Challenge>, Vec<Challenge>) {
        let incoming = listed(self.challenges.values(), |c| c.challenged.id == *player_id);
        let outgoing = listed(self.challenges.values(), |c| c.challenger.id == *player_id);
        (incoming, outgoing)
    }
}
