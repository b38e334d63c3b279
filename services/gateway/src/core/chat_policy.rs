//! Who may post in chat and whose lines each player sees: the account side
//! of chat, kept by the rating service (moderator role, server-wide mutes by
//! moderators, chat switched off, personal mutes) and cached here per
//! player.
//!
//! The chat code asks three questions: [`ChatPolicy::may_post`] (refused
//! while a moderator's mute lasts, with its end, or while the player has
//! chat off), [`ChatPolicy::sees`] (a viewer never sees lines of a player
//! they muted, nor any while their chat is off) and
//! [`ChatPolicy::is_moderator`].
//!
//! A player's standing is cached for [`STANDING_TTL`]; a change made
//! through this gateway replaces the cached one at once ([`ChatPolicy::
//! remember`]), so a player's own mutes and settings take effect
//! immediately, and one made elsewhere (a role granted by the operator, a
//! change through another gateway) within the TTL.

use std::{
    collections::HashMap,
    sync::{Mutex, PoisonError},
    time::{Duration, Instant},
};

use chess_domain::{PlayerId, Timestamp};
use chess_internal_clients::RatingClient;
use chess_proto::rating::v1 as rating;
use tonic::Status;

/// How long a standing read from the rating service is used.
pub const STANDING_TTL: Duration = Duration::from_secs(10);
/// Most players whose standing is cached.
const MAX_CACHED: usize = 10_000;

/// A player's standing in chat, as this gateway last read it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Standing {
    pub moderator: bool,
    pub muted_until: Option<Timestamp>,
    pub chat_off: bool,
    pub muted: Vec<PlayerId>,
}

impl From<rating::ChatStanding> for Standing {
    fn from(standing: rating::ChatStanding) -> Self {
        Self {
            moderator: standing.moderator,
            muted_until: standing
                .muted_until
                .as_ref()
                .and_then(Timestamp::from_proto),
            chat_off: standing.chat_off,
            muted: standing
                .muted
                .into_iter()
                .map(|m| PlayerId::trusted(m.player_id))
                .collect(),
        }
    }
}

/// Why a player may not post now.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("a moderator muted your chat until {}", until.to_proto())]
    Muted { until: Timestamp },
    #[error("your chat is switched off; switch it on in your account to post")]
    ChatOff,
    #[error("chat standing cannot be read now; try again")]
    Unavailable,
}

/// The chat standing of players, cached.
#[derive(Debug)]
pub struct ChatPolicy {
    rating: RatingClient,
    cache: Mutex<HashMap<PlayerId, (Instant, Standing)>>,
}

impl ChatPolicy {
    pub fn new(rating: RatingClient) -> Self {
        Self {
            rating,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// Whether `player_id` may post a line now.
    pub async fn may_post(&self, player_id: &PlayerId) -> Result<(), Refusal> {
        let standing = self
            .standing(player_id)
            .await
            .map_err(|_| Refusal::Unavailable)?;
        refusal(&standing, Timestamp::now()).map_or(Ok(()), Err)
    }

    /// Whether `viewer` is shown a line by `author`: not if they muted the
    /// author or switched their chat off. A viewer whose standing cannot be
    /// read is shown nothing rather than what they may have muted.
    pub async fn sees(&self, viewer: &PlayerId, author: &PlayerId) -> bool {
        match self.standing(viewer).await {
            Ok(standing) => !standing.chat_off && !standing.muted.contains(author),
            Err(_) => false,
        }
    }

    /// Whether `player_id` holds the moderator role (false when it cannot be
    /// told).
    pub async fn is_moderator(&self, player_id: &PlayerId) -> bool {
        self.standing(player_id)
            .await
            .is_ok_and(|standing| standing.moderator)
    }

    /// `player_id`'s standing, from the cache while fresh.
    pub async fn standing(&self, player_id: &PlayerId) -> Result<Standing, Status> {
        let cached = self
            .cache()
            .get(player_id)
            .filter(|(at, _)| at.elapsed() < STANDING_TTL)
            .map(|(_, standing)| standing.clone());
        if let Some(standing) = cached {
            return Ok(standing);
        }
        let request = rating::GetChatStandingRequest {
            player_id: player_id.to_string(),
        };
        let answer = self.rating.rpc().get_chat_standing(request).await?;
        let standing = answer.into_inner().standing.unwrap_or_default();
        Ok(self.remember(player_id, standing))
    }

    /// Caches `standing` as `player_id`'s (the answer of a change made
    /// through this gateway, or a read) and returns it.
    pub fn remember(&self, player_id: &PlayerId, standing: rating::ChatStanding) -> Standing {
        let standing = Standing::from(standing);
        let mut cache = self.cache();
        if cache.len() >= MAX_CACHED && !cache.contains_key(player_id) {
            cache.retain(|_, (at, _)| at.elapsed() < STANDING_TTL);
            if cache.len() >= MAX_CACHED {
                cache.clear();
            }
        }
        cache.insert(player_id.clone(), (Instant::now(), standing.clone()));
        standing
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<PlayerId, (Instant, Standing)>> {
        // Entries are replaced whole; a panic elsewhere leaves none half-done.
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Why `standing` forbids posting at `now`, if it does.
fn refusal(standing: &Standing, now: Timestamp) -> Option<Refusal> {
    match standing.muted_until {
        Some(until) if until > now => Some(Refusal::Muted { until }),
        _ if standing.chat_off => Some(Refusal::ChatOff),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mute_refuses_until_it_ends_and_chat_off_always() {
        let now = Timestamp::from_secs(1_000);
        let mut standing = Standing {
            muted_until: Some(Timestamp::from_secs(1_600)),
            ..Standing::default()
        };
        assert_eq!(
            refusal(&standing, now),
            Some(Refusal::Muted {
                until: Timestamp::from_secs(1_600)
            })
        );
        assert_eq!(refusal(&standing, Timestamp::from_secs(1_600)), None);
        standing.chat_off = true;
        assert_eq!(
            refusal(&standing, Timestamp::from_secs(2_000)),
            Some(Refusal::ChatOff)
        );
        assert_eq!(refusal(&Standing::default(), now), None);
    }

    #[test]
    fn a_standing_is_read_from_the_wire() {
        let standing = Standing::from(rating::ChatStanding {
            moderator: true,
            muted_until: Some(Timestamp::from_secs(5).to_proto()),
            chat_off: false,
            muted: vec![rating::MutedPlayer {
                player_id: "p2".into(),
                username: "bob".into(),
            }],
        });
        assert!(standing.moderator);
        assert_eq!(standing.muted_until, Some(Timestamp::from_secs(5)));
        assert_eq!(standing.muted, [PlayerId::trusted("p2")]);
    }
}
