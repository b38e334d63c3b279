//! Seeks and correspondence tables, requests to play them, direct challenges
//! and the players' lobby event streams.
//!
//! - [`model`]: the domain values, and the events players hear.
//! - `actor` (private): the one task that owns the lobby's state.
//! - [`error`]: why a lobby call failed.
//!
//! [`LobbyHandle`] is what the gRPC layer ([`crate::api`]) calls, with checked
//! domain values: it reads ratings through [`crate::clients::RatingClient`],
//! asks the actor, and creates games through
//! [`crate::clients::GameClient`]. Its store is [`crate::store`].

mod actor;
pub mod error;
pub mod model;
/// The lobby's store, also reachable here (where it used to live).
pub use crate::store;

use std::{collections::HashMap, time::Duration};

use chess_domain::{ColorChoice, PlayerId, SpeedCategory, TimeControl, Timestamp};
use chess_runtime::Shutdown;
use tokio::sync::{mpsc, oneshot, watch};

pub use self::actor::{Act, Requests, SeekPage, Settled};
use self::{
    actor::{Lobby, Message, RequestEnd, Requested},
    error::LobbyError,
    model::{
        AcceptMode, Challenge, ChallengeStatus, GamePlan, LobbyEvent, Member, Seek, SeekRequest,
        Shown,
    },
};
use crate::{
    clients::{GameClient, RatingClient},
    store::{Store, StoreError},
};

/// How long a real-time seek posted with no event stream open waits for
/// one before it is withdrawn.
pub const DEFAULT_PRESENCE_GRACE: Duration = Duration::from_secs(30);
/// Bounds on a challenge's lifetime, in seconds.
const CHALLENGE_SECONDS: std::ops::RangeInclusive<u32> = 60..=1_209_600;
/// Longest decline reason kept.
const MAX_REASON_CHARS: usize = 200;

/// A seek as asked for, checked but not yet posted.
#[derive(Clone, Debug)]
pub struct NewSeek {
    pub poster: Member,
    pub time_control: TimeControl,
    pub color: ColorChoice,
    pub rated: bool,
    pub min_rating: Option<i32>,
    pub max_rating: Option<i32>,
    pub show_name: bool,
    pub accept: AcceptMode,
    pub allow_hints: bool,
}

/// A challenge as asked for, checked but not yet sent.
#[derive(Clone, Debug)]
pub struct NewChallenge {
    pub challenger: Member,
    pub opponent_username: String,
    pub time_control: TimeControl,
    pub color: ColorChoice,
    pub rated: bool,
    pub allow_hints: bool,
    /// How long it stays open, in seconds.
    pub lifetime_secs: u32,
}

/// A handle to the lobby. Cloning is cheap.
#[derive(Clone, Debug)]
pub struct LobbyHandle {
    tx: mpsc::Sender<Message>,
    game: GameClient,
    rating: RatingClient,
    /// True once the lobby has stopped and closed its database.
    closed: watch::Receiver<bool>,
}

impl LobbyHandle {
    /// Opens the store at `database_url`, loads the open tables and
    /// challenges, and starts the lobby. Games are created through `game`;
    /// ratings are read from `rating`.
    pub async fn open(
        database_url: &str,
        game: GameClient,
        rating: RatingClient,
        presence_grace: Duration,
        shutdown: Shutdown,
    ) -> Result<Self, StoreError> {
        let store = Store::open(database_url).await?;
        let loaded = store.load().await?;
        Ok(Lobby::spawn(
            store,
            loaded,
            presence_grace,
            shutdown,
            game,
            rating,
        ))
    }

    /// Waits until the lobby has stopped (at shutdown) and closed its
    /// database.
    pub async fn closed(&self) {
        let mut closed = self.closed.clone();
        // An error means the task is gone, which it is only once stopped.
        let _ = closed.wait_for(|closed| *closed).await;
    }

    async fn ask<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<T>) -> Message,
    ) -> Result<T, LobbyError> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(make(reply))
            .await
            .map_err(|_| LobbyError::Stopped)?;
        answer.await.map_err(|_| LobbyError::Stopped)
    }

    async fn rating_of(
        &self,
        player_id: &PlayerId,
        category: SpeedCategory,
    ) -> Result<Shown, LobbyError> {
        self.rating
            .ratings(vec![player_id.clone()], category)
            .await?
            .remove(player_id)
            .ok_or_else(|| LobbyError::NotFound(format!("no registered player {player_id}")))
    }

    /// Creates the game of `plan` and settles what it came from. Runs as its
    /// own task so that a caller going away cannot leave a seek reserved.
    async fn start(&self, plan: GamePlan) -> Result<Settled, LobbyError> {
        let this = self.clone();
        tokio::spawn(async move {
            let outcome = this.game.create_game(&plan).await;
            this.ask(|reply| Message::Started {
                plan,
                outcome,
                reply,
            })
            .await?
        })
        .await
        .map_err(|_| LobbyError::Stopped)?
    }

    /// Posts a seek, showing the poster's current rating.
    pub async fn create_seek(&self, new: NewSeek) -> Result<Seek, LobbyError> {
        let poster_rating = if new.time_control.speed().is_rated() {
            self.rating_of(&new.poster.id, new.time_control.speed())
                .await?
        } else {
            // No rating to show: untimed games are not rated.
            Shown::default()
        };
        let seek = Seek {
            id: uuid::Uuid::new_v4().to_string(),
            poster: new.poster,
            time_control: new.time_control,
            color: new.color,
            rated: new.rated,
            min_rating: new.min_rating,
            max_rating: new.max_rating,
            show_name: new.show_name,
            accept: new.accept,
            allow_hints: new.allow_hints,
            poster_rating,
            created_at: Timestamp::now(),
        };
        self.ask(|reply| Message::CreateSeek { seek, reply })
            .await?
    }

    /// Withdraws `player_id`'s seek `seek_id`.
    pub async fn cancel_seek(&self, act: Act) -> Result<Seek, LobbyError> {
        self.ask(|reply| Message::CancelSeek { act, reply }).await?
    }

    /// A page of open seeks (of `speed`, if given) after `after`, with their
    /// posters' current ratings.
    pub async fn list_seeks(
        &self,
        speed: Option<SpeedCategory>,
        after: Option<(Timestamp, String)>,
        limit: usize,
    ) -> Result<SeekPage, LobbyError> {
        let (mut seeks, next) = self
            .ask(|reply| Message::ListSeeks {
                speed,
                after,
                limit,
                reply,
            })
            .await?;
        self.refresh_ratings(&mut seeks).await;
        Ok((seeks, next))
    }

    /// Shows posters' current ratings; if the rating service cannot say, the
    /// ratings read when the seeks were posted stay.
    async fn refresh_ratings(&self, seeks: &mut [Seek]) {
        let mut by_category: HashMap<SpeedCategory, Vec<PlayerId>> = HashMap::new();
        for seek in seeks.iter().filter(|s| s.speed().is_rated()) {
            let ids = by_category.entry(seek.speed()).or_default();
            if !ids.contains(&seek.poster.id) {
                ids.push(seek.poster.id.clone());
            }
        }
        for (category, ids) in by_category {
            match self.rating.ratings(ids, category).await {
                Ok(current) => {
                    for seek in seeks.iter_mut().filter(|s| s.speed() == category) {
                        if let Some(shown) = current.get(&seek.poster.id) {
                            seek.poster_rating = *shown;
                        }
                    }
                }
                Err(e) => tracing::debug!(error = %e, "showing stored ratings"),
            }
        }
    }

    /// Asks to play seek `seek_id`: the request waits for the poster
    /// ([`Settled::Request`] pending), or an automatic seek starts its game
    /// at once.
    pub async fn request_seek(
        &self,
        seek_id: String,
        requester: Member,
    ) -> Result<Settled, LobbyError> {
        let seek = self
            .ask(|reply| Message::GetSeek {
                seek_id: seek_id.clone(),
                reply,
            })
            .await??;
        let rating = if seek.speed().is_rated() {
            match self.rating_of(&requester.id, seek.speed()).await {
                Ok(shown) => Some(shown.rating),
                // Without a range the rating is only shown.
                Err(LobbyError::Unavailable(_)) if !seek.has_range() => None,
                Err(e) => return Err(e),
            }
        } else {
            // Untimed seeks have no range and show no ratings.
            None
        };
        let requested = self
            .ask(|reply| Message::RequestSeek {
                seek_id,
                requester,
                rating,
                reply,
            })
            .await??;
        match requested {
            Requested::Pending(request) => Ok(Settled::Request(request)),
            Requested::Start(plan) => self.start(plan).await,
        }
    }

    /// The poster accepts request `request_id`; the game starts.
    pub async fn accept_seek_request(&self, act: Act) -> Result<Settled, LobbyError> {
        let plan = self.ask(|reply| Message::AcceptRequest { act, reply });
        self.start(plan.await??).await
    }

    /// The poster rejects request `request_id`.
    pub async fn reject_seek_request(&self, act: Act) -> Result<SeekRequest, LobbyError> {
        self.end_request(act, RequestEnd::Rejected).await
    }

    /// The requester withdraws request `request_id`.
    pub async fn withdraw_seek_request(&self, act: Act) -> Result<SeekRequest, LobbyError> {
        self.end_request(act, RequestEnd::Withdrawn).await
    }

    async fn end_request(&self, act: Act, end: RequestEnd) -> Result<SeekRequest, LobbyError> {
        self.ask(|reply| Message::EndRequest { act, end, reply })
            .await?
    }

    /// A player's requests: received, sent, and their own seeks (with
    /// current ratings).
    pub async fn list_seek_requests(&self, player_id: PlayerId) -> Result<Requests, LobbyError> {
        let (received, sent, mut seeks) = self
            .ask(|reply| Message::ListRequests { player_id, reply })
            .await?;
        self.refresh_ratings(&mut seeks).await;
        Ok((received, sent, seeks))
    }

    /// Sends a challenge to the player named in it.
    pub async fn create_challenge(&self, new: NewChallenge) -> Result<Challenge, LobbyError> {
        let challenged = self.rating.player_named(&new.opponent_username).await?;
        if challenged.id == new.challenger.id {
            return Err(LobbyError::Invalid("you cannot challenge yourself".into()));
        }
        let now = Timestamp::now();
        let challenge = Challenge {
            id: uuid::Uuid::new_v4().to_string(),
            challenger: new.challenger,
            challenged,
            time_control: new.time_control,
            color: new.color,
            rated: new.rated,
            allow_hints: new.allow_hints,
            status: ChallengeStatus::Pending,
            decline_reason: String::new(),
            game_id: None,
            created_at: now,
            expires_at: now.after(Duration::from_secs(u64::from(new.lifetime_secs))),
        };
        self.ask(|reply| Message::CreateChallenge { challenge, reply })
            .await?
    }

    /// The challenged player accepts; the game starts.
    pub async fn accept_challenge(&self, act: Act) -> Result<Settled, LobbyError> {
        let plan = self.ask(|reply| Message::AcceptChallenge { act, reply });
        self.start(plan.await??).await
    }

    /// The challenged player declines, with a reason (trimmed and cut short).
    pub async fn decline_challenge(&self, act: Act, reason: &str) -> Result<Challenge, LobbyError> {
        let reason: String = reason.trim().chars().take(MAX_REASON_CHARS).collect();
        self.ask(|reply| Message::DeclineChallenge { act, reason, reply })
            .await?
    }

    /// The challenger withdraws.
    pub async fn cancel_challenge(&self, act: Act) -> Result<Challenge, LobbyError> {
        self.ask(|reply| Message::CancelChallenge { act, reply })
            .await?
    }

    /// A player's pending challenges: incoming and outgoing.
    pub async fn list_challenges(
        &self,
        player_id: PlayerId,
    ) -> Result<(Vec<Challenge>, Vec<Challenge>), LobbyError> {
        self.ask(|reply| Message::ListChallenges { player_id, reply })
            .await
    }

    /// The player's lobby events until the receiver is dropped. The stream
    /// counts as open (for the player's real-time seeks) from when this
    /// returns.
    pub async fn watch_player(
        &self,
        player_id: PlayerId,
    ) -> Result<mpsc::Receiver<LobbyEvent>, LobbyError> {
        let (events, rx) = actor::stream_channel();
        self.ask(|reply| Message::Watch {
            player_id,
            events,
            reply,
        })
        .await?;
        Ok(rx)
    }
}

/// Whether a game may be rated and allow hints as asked: untimed games are
/// never rated, and a rated game never allows engine help.
pub fn check_terms(
    time_control: TimeControl,
    rated: bool,
    allow_hints: bool,
) -> Result<(), LobbyError> {
    if rated && !time_control.speed().is_rated() {
        return Err(LobbyError::Invalid(
            "untimed games cannot be rated: choose a time control or an unrated game".into(),
        ));
    }
    if rated && allow_hints {
        return Err(LobbyError::Invalid(
            "hints cannot be allowed in a rated game".into(),
        ));
    }
    Ok(())
}

/// How long a challenge stays open: `requested` seconds, or by default a
/// day for a correspondence game and ten minutes otherwise.
pub fn challenge_lifetime(time_control: TimeControl, requested: u32) -> Result<u32, LobbyError> {
    match requested {
        0 if time_control.is_daily() => Ok(86_400),
        0 => Ok(600),
        n if CHALLENGE_SECONDS.contains(&n) => Ok(n),
        _ => Err(LobbyError::Invalid(format!(
            "a challenge may stay open {} to {} seconds",
            CHALLENGE_SECONDS.start(),
            CHALLENGE_SECONDS.end()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms() {
        let blitz = TimeControl::Incremental {
            initial_secs: 300,
            increment_secs: 0,
        };
        assert!(check_terms(blitz, true, false).is_ok());
        assert!(check_terms(blitz, false, true).is_ok());
        assert!(check_terms(TimeControl::Untimed, false, true).is_ok());
        let untimed = check_terms(TimeControl::Untimed, true, false).unwrap_err();
        assert!(untimed.to_string().contains("untimed"), "{untimed}");
        let hints = check_terms(blitz, true, true).unwrap_err();
        assert!(hints.to_string().contains("hints"), "{hints}");
    }
}
