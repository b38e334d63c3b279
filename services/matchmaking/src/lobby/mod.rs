//! Seeks and correspondence tables, requests to play them, direct challenges
//! and the players' lobby event streams.
//!
//! - [`model`]: the domain values and their wire forms.
//! - [`actor`]: the one task that owns the lobby's state.
//! - [`store`]: what survives a restart (tables, their requests, challenges).
//! - [`error`]: failures and their statuses.
//!
//! [`Lobby`] is the handle the gRPC layer calls: it checks and converts each
//! request, reads ratings from the rating service, asks the actor, and creates
//! games through the game service.

pub mod actor;
pub mod error;
pub mod model;
/// The lobby's store, also reachable here (where it used to live).
pub use crate::store;

use std::{collections::HashMap, pin::Pin, time::Duration};

use chess_domain::{ColorChoice, SpeedCategory, TimeControl};
use chess_proto::{
    common::v1 as common,
    game::v1::{CreateGameRequest, game_service_client::GameServiceClient},
    matchmaking::v1 as pb,
    rating::v1::{
        GetPlayerRequest, GetRatingsRequest, get_player_request::Key,
        rating_service_client::RatingServiceClient,
    },
};
use chess_runtime::{Channel, Shutdown};
use tokio::sync::{mpsc, oneshot};
use tokio_stream::{Stream, wrappers::ReceiverStream};
use tonic::{Code, Status};

use self::{
    actor::{Message, Requested, Settled, now_ms},
    error::LobbyError,
    model::{AcceptMode, Challenge, ChallengeStatus, GamePlan, Member, Millis, Seek, Shown},
};
use crate::store::Store;

type EventStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// How long a real-time seek posted with no event stream open waits for
/// one before it is withdrawn.
pub const DEFAULT_PRESENCE_GRACE: Duration = Duration::from_secs(30);
/// How long a call to another service may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// Bounds on a challenge's lifetime, in seconds.
const CHALLENGE_SECONDS: std::ops::RangeInclusive<u32> = 60..=1_209_600;
/// Longest decline reason kept.
const MAX_REASON_CHARS: usize = 200;

/// A handle to the lobby. Cloning is cheap.
#[derive(Clone, Debug)]
pub struct Lobby {
    tx: mpsc::Sender<Message>,
    game: GameServiceClient<Channel>,
    rating: RatingServiceClient<Channel>,
}

impl Lobby {
    /// Opens the store at `database_url`, loads the open tables and
    /// challenges, and starts the lobby. Games are created through `game`;
    /// ratings are read from `rating`.
    pub async fn open(
        database_url: &str,
        game: Channel,
        rating: Channel,
        presence_grace: Duration,
        shutdown: Shutdown,
    ) -> Result<Self, store::StoreError> {
        let store = Store::open(database_url).await?;
        let loaded = store.load().await?;
        let tx = actor::spawn(store, loaded, presence_grace, shutdown);
        Ok(Self {
            tx,
            game: GameServiceClient::new(game),
            rating: RatingServiceClient::new(rating),
        })
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

    /// Ratings of `ids` in `category`, by player id. Players the rating
    /// service does not know are missing.
    async fn ratings(
        &self,
        ids: Vec<String>,
        category: SpeedCategory,
    ) -> Result<HashMap<String, Shown>, LobbyError> {
        let request = GetRatingsRequest {
            player_ids: ids,
            category: common::SpeedCategory::from(category) as i32,
        };
        let response = tokio::time::timeout(CALL_TIMEOUT, self.rating.clone().get_ratings(request))
            .await
            .map_err(|_| LobbyError::Unavailable("the rating service did not answer".into()))?
            .map_err(|s| {
                LobbyError::Unavailable(format!("cannot read ratings: {}", s.message()))
            })?;
        Ok(response
            .into_inner()
            .ratings
            .into_iter()
            .filter_map(|r| {
                let rating = r.rating?;
                // Elo ratings are whole numbers; Glicko-2 ones are shown
                // rounded.
                Some((
                    r.player_id,
                    Shown {
                        rating: rating.rating.round() as i32,
                        provisional: rating.provisional,
                    },
                ))
            })
            .collect())
    }

    async fn rating_of(
        &self,
        player_id: &str,
        category: SpeedCategory,
    ) -> Result<Shown, LobbyError> {
        self.ratings(vec![player_id.to_owned()], category)
            .await?
            .remove(player_id)
            .ok_or_else(|| LobbyError::NotFound(format!("no registered player {player_id}")))
    }

    /// Creates the game of `plan` and settles what it came from. Runs as its
    /// own task so that a caller going away cannot leave a seek reserved.
    async fn start(&self, plan: GamePlan) -> Result<Settled, LobbyError> {
        let this = self.clone();
        tokio::spawn(async move {
            let outcome = this.create_game(&plan).await;
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

    async fn create_game(&self, plan: &GamePlan) -> Result<String, LobbyError> {
        let player = |m: &Member| common::Player {
            kind: Some(common::player::Kind::Registered(common::RegisteredPlayer {
                player_id: m.id.clone(),
                username: m.username.clone(),
            })),
        };
        let request = CreateGameRequest {
            white: Some(player(&plan.white)),
            black: Some(player(&plan.black)),
            time_control: Some(plan.time_control.into()),
            rules: common::RuleSet::Standard as i32,
            rated: plan.rated,
            allow_hints: plan.allow_hints,
            initial_fen: String::new(),
            idempotency_key: plan.idempotency_key(),
        };
        let response = tokio::time::timeout(CALL_TIMEOUT, self.game.clone().create_game(request))
            .await
            .map_err(|_| LobbyError::Game(Status::unavailable("the game service did not answer")))?
            .map_err(LobbyError::Game)?;
        response
            .into_inner()
            .game
            .map(|g| g.game_id)
            .ok_or_else(|| LobbyError::Game(Status::internal("the game service sent no game")))
    }

    pub async fn create_seek(
        &self,
        r: pb::CreateSeekRequest,
    ) -> Result<pb::CreateSeekResponse, Status> {
        let poster = member(r.player_id, r.username)?;
        let time_control =
            TimeControl::try_from(r.time_control.as_ref()).map_err(LobbyError::from)?;
        let color = color_choice(r.color)?;
        let (min_rating, max_rating) = rating_range(r.min_rating, r.max_rating)?;
        check_terms(time_control, r.rated, r.allow_hints)?;
        if !time_control.speed().is_rated() && (min_rating.is_some() || max_rating.is_some()) {
            return Err(LobbyError::Invalid(
                "untimed games are not rated, so an untimed seek cannot bound ratings".into(),
            )
            .into());
        }
        let accept = match common::AcceptMode::try_from(r.accept_mode) {
            Ok(common::AcceptMode::Automatic) => AcceptMode::Automatic,
            Ok(common::AcceptMode::Manual | common::AcceptMode::Unspecified) => AcceptMode::Manual,
            Err(_) => return Err(LobbyError::Invalid("unknown accept mode".into()).into()),
        };
        let poster_rating = if time_control.speed().is_rated() {
            self.rating_of(&poster.id, time_control.speed()).await?
        } else {
            // No rating to show: untimed games are not rated.
            Shown::default()
        };
        let seek = Seek {
            id: uuid::Uuid::new_v4().to_string(),
            poster,
            time_control,
            color,
            rated: r.rated,
            min_rating,
            max_rating,
            show_name: r.show_name,
            accept,
            allow_hints: r.allow_hints,
            poster_rating,
            created_at: now_ms(),
        };
        let seek = self
            .ask(|reply| Message::CreateSeek { seek, reply })
            .await??;
        Ok(pb::CreateSeekResponse {
            seek: Some(seek.to_pb(Some(&seek.poster.id))),
        })
    }

    pub async fn cancel_seek(
        &self,
        r: pb::CancelSeekRequest,
    ) -> Result<pb::CancelSeekResponse, Status> {
        require("seek_id", &r.seek_id)?;
        require("player_id", &r.player_id)?;
        let player_id = r.player_id.clone();
        let seek = self
            .ask(|reply| Message::CancelSeek {
                seek_id: r.seek_id,
                player_id: r.player_id,
                reply,
            })
            .await??;
        Ok(pb::CancelSeekResponse {
            seek: Some(seek.to_pb(Some(&player_id))),
        })
    }

    pub async fn list_seeks(
        &self,
        r: pb::ListSeeksRequest,
    ) -> Result<pb::ListSeeksResponse, Status> {
        let speed = match common::SpeedCategory::try_from(r.speed) {
            Ok(common::SpeedCategory::Unspecified) => None,
            _ => Some(SpeedCategory::try_from(r.speed).map_err(LobbyError::from)?),
        };
        let after = if r.page_token.is_empty() {
            None
        } else {
            Some(parse_cursor(&r.page_token)?)
        };
        let limit = match r.page_size {
            0 => 50,
            n => n.min(100) as usize,
        };
        let (mut seeks, next) = self
            .ask(|reply| Message::ListSeeks {
                speed,
                after,
                limit,
                reply,
            })
            .await?;
        self.refresh_ratings(&mut seeks).await;
        let viewer = Some(r.viewer_id.as_str()).filter(|v| !v.is_empty());
        Ok(pb::ListSeeksResponse {
            seeks: seeks.iter().map(|s| s.to_pb(viewer)).collect(),
            next_page_token: next
                .map(|(at, id)| format!("{at}:{id}"))
                .unwrap_or_default(),
        })
    }

    /// Shows posters' current ratings; if the rating service cannot say, the
    /// ratings read when the seeks were posted stay.
    async fn refresh_ratings(&self, seeks: &mut [Seek]) {
        let mut by_category: HashMap<SpeedCategory, Vec<String>> = HashMap::new();
        for seek in seeks.iter().filter(|s| s.speed().is_rated()) {
            let ids = by_category.entry(seek.speed()).or_default();
            if !ids.contains(&seek.poster.id) {
                ids.push(seek.poster.id.clone());
            }
        }
        for (category, ids) in by_category {
            match self.ratings(ids, category).await {
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

    pub async fn request_seek(
        &self,
        r: pb::RequestSeekRequest,
    ) -> Result<pb::RequestSeekResponse, Status> {
        require("seek_id", &r.seek_id)?;
        let requester = member(r.player_id, r.username)?;
        let seek_id = r.seek_id;
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
                Err(e) => return Err(e.into()),
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
        let request = match requested {
            Requested::Pending(request) => request,
            Requested::Start(plan) => match self.start(plan).await? {
                Settled::Request(request) => request,
                Settled::Challenge(_) => {
                    return Err(Status::internal("a seek settled as a challenge"));
                }
            },
        };
        Ok(pb::RequestSeekResponse {
            request: Some(request.to_pb()),
        })
    }

    pub async fn accept_seek_request(
        &self,
        r: pb::AcceptSeekRequestRequest,
    ) -> Result<pb::AcceptSeekRequestResponse, Status> {
        require("request_id", &r.request_id)?;
        require("player_id", &r.player_id)?;
        let plan = self
            .ask(|reply| Message::AcceptRequest {
                request_id: r.request_id,
                player_id: r.player_id,
                reply,
            })
            .await??;
        match self.start(plan).await? {
            Settled::Request(request) => Ok(pb::AcceptSeekRequestResponse {
                request: Some(request.to_pb()),
            }),
            Settled::Challenge(_) => Err(Status::internal("a seek settled as a challenge")),
        }
    }

    pub async fn reject_seek_request(
        &self,
        r: pb::RejectSeekRequestRequest,
    ) -> Result<pb::RejectSeekRequestResponse, Status> {
        require("request_id", &r.request_id)?;
        require("player_id", &r.player_id)?;
        let request = self
            .ask(|reply| Message::RejectRequest {
                request_id: r.request_id,
                player_id: r.player_id,
                reply,
            })
            .await??;
        Ok(pb::RejectSeekRequestResponse {
            request: Some(request.to_pb()),
        })
    }

    pub async fn withdraw_seek_request(
        &self,
        r: pb::WithdrawSeekRequestRequest,
    ) -> Result<pb::WithdrawSeekRequestResponse, Status> {
        require("request_id", &r.request_id)?;
        require("player_id", &r.player_id)?;
        let request = self
            .ask(|reply| Message::WithdrawRequest {
                request_id: r.request_id,
                player_id: r.player_id,
                reply,
            })
            .await??;
        Ok(pb::WithdrawSeekRequestResponse {
            request: Some(request.to_pb()),
        })
    }

    pub async fn list_seek_requests(
        &self,
        r: pb::ListSeekRequestsRequest,
    ) -> Result<pb::ListSeekRequestsResponse, Status> {
        require("player_id", &r.player_id)?;
        let player_id = r.player_id;
        let (received, sent, mut seeks) = self
            .ask(|reply| Message::ListRequests {
                player_id: player_id.clone(),
                reply,
            })
            .await?;
        self.refresh_ratings(&mut seeks).await;
        Ok(pb::ListSeekRequestsResponse {
            received: received.iter().map(|r| r.to_pb()).collect(),
            sent: sent.iter().map(|r| r.to_pb()).collect(),
            seeks: seeks.iter().map(|s| s.to_pb(Some(&player_id))).collect(),
        })
    }

    pub async fn create_challenge(
        &self,
        r: pb::CreateChallengeRequest,
    ) -> Result<pb::CreateChallengeResponse, Status> {
        let challenger = member(r.player_id, r.username)?;
        require("opponent_username", &r.opponent_username)?;
        let time_control =
            TimeControl::try_from(r.time_control.as_ref()).map_err(LobbyError::from)?;
        let color = color_choice(r.color)?;
        check_terms(time_control, r.rated, r.allow_hints)?;
        let lifetime = match r.expires_in_seconds {
            0 if matches!(time_control, TimeControl::Daily { .. }) => 86_400,
            0 => 600,
            n if CHALLENGE_SECONDS.contains(&n) => n,
            _ => {
                return Err(LobbyError::Invalid(format!(
                    "a challenge may stay open {} to {} seconds",
                    CHALLENGE_SECONDS.start(),
                    CHALLENGE_SECONDS.end()
                ))
                .into());
            }
        };
        let challenged = self.player_named(&r.opponent_username).await?;
        if challenged.id == challenger.id {
            return Err(LobbyError::Invalid("you cannot challenge yourself".into()).into());
        }
        let now = now_ms();
        let challenge = Challenge {
            id: uuid::Uuid::new_v4().to_string(),
            challenger,
            challenged,
            time_control,
            color,
            rated: r.rated,
            allow_hints: r.allow_hints,
            status: ChallengeStatus::Pending,
            decline_reason: String::new(),
            game_id: None,
            created_at: now,
            expires_at: now + Millis::from(lifetime) * 1000,
        };
        let challenge = self
            .ask(|reply| Message::CreateChallenge { challenge, reply })
            .await??;
        Ok(pb::CreateChallengeResponse {
            challenge: Some(challenge.to_pb()),
        })
    }

    /// The registered player called `username` (any case).
    async fn player_named(&self, username: &str) -> Result<Member, LobbyError> {
        let request = GetPlayerRequest {
            key: Some(Key::Username(username.to_owned())),
        };
        let response = tokio::time::timeout(CALL_TIMEOUT, self.rating.clone().get_player(request))
            .await
            .map_err(|_| LobbyError::Unavailable("the rating service did not answer".into()))?;
        match response {
            Ok(response) => {
                let profile = response.into_inner().profile.ok_or_else(|| {
                    LobbyError::Unavailable("the rating service sent no profile".into())
                })?;
                Ok(Member {
                    id: profile.player_id,
                    username: profile.username,
                })
            }
            Err(s) if s.code() == Code::NotFound => {
                Err(LobbyError::NotFound(format!("no player named {username}")))
            }
            Err(s) if s.code() == Code::InvalidArgument => {
                Err(LobbyError::Invalid(s.message().to_owned()))
            }
            Err(s) => Err(LobbyError::Unavailable(format!(
                "cannot look up {username}: {}",
                s.message()
            ))),
        }
    }

    pub async fn accept_challenge(
        &self,
        r: pb::AcceptChallengeRequest,
    ) -> Result<pb::AcceptChallengeResponse, Status> {
        require("challenge_id", &r.challenge_id)?;
        require("player_id", &r.player_id)?;
        let plan = self
            .ask(|reply| Message::AcceptChallenge {
                challenge_id: r.challenge_id,
                player_id: r.player_id,
                reply,
            })
            .await??;
        match self.start(plan).await? {
            Settled::Challenge(challenge) => Ok(pb::AcceptChallengeResponse {
                challenge: Some(challenge.to_pb()),
            }),
            Settled::Request(_) => Err(Status::internal("a challenge settled as a seek")),
        }
    }

    pub async fn decline_challenge(
        &self,
        r: pb::DeclineChallengeRequest,
    ) -> Result<pb::DeclineChallengeResponse, Status> {
        require("challenge_id", &r.challenge_id)?;
        require("player_id", &r.player_id)?;
        let reason: String = r.reason.trim().chars().take(MAX_REASON_CHARS).collect();
        let challenge = self
            .ask(|reply| Message::DeclineChallenge {
                challenge_id: r.challenge_id,
                player_id: r.player_id,
                reason,
                reply,
            })
            .await??;
        Ok(pb::DeclineChallengeResponse {
            challenge: Some(challenge.to_pb()),
        })
    }

    pub async fn cancel_challenge(
        &self,
        r: pb::CancelChallengeRequest,
    ) -> Result<pb::CancelChallengeResponse, Status> {
        require("challenge_id", &r.challenge_id)?;
        require("player_id", &r.player_id)?;
        let challenge = self
            .ask(|reply| Message::CancelChallenge {
                challenge_id: r.challenge_id,
                player_id: r.player_id,
                reply,
            })
            .await??;
        Ok(pb::CancelChallengeResponse {
            challenge: Some(challenge.to_pb()),
        })
    }

    pub async fn list_challenges(
        &self,
        r: pb::ListChallengesRequest,
    ) -> Result<pb::ListChallengesResponse, Status> {
        require("player_id", &r.player_id)?;
        let (incoming, outgoing) = self
            .ask(|reply| Message::ListChallenges {
                player_id: r.player_id,
                reply,
            })
            .await?;
        Ok(pb::ListChallengesResponse {
            incoming: incoming.iter().map(Challenge::to_pb).collect(),
            outgoing: outgoing.iter().map(Challenge::to_pb).collect(),
        })
    }

    /// The player's lobby events until the stream closes. The stream counts
    /// as open (for the player's real-time seeks) from when this returns.
    pub async fn watch_player(
        &self,
        r: pb::WatchPlayerRequest,
    ) -> Result<EventStream<pb::WatchPlayerResponse>, Status> {
        require("player_id", &r.player_id)?;
        let (events, rx) = actor::stream_channel();
        self.ask(|reply| Message::Watch {
            player_id: r.player_id,
            events,
            reply,
        })
        .await?;
        Ok(Box::pin(ReceiverStream::new(rx)))
    }
}

fn require(field: &str, value: &str) -> Result<(), LobbyError> {
    if value.is_empty() {
        return Err(LobbyError::Invalid(format!("{field} must be given")));
    }
    Ok(())
}

fn member(id: String, username: String) -> Result<Member, LobbyError> {
    require("player_id", &id)?;
    require("username", &username)?;
    Ok(Member { id, username })
}

/// Whether a game may be rated and allow hints as asked: untimed games are
/// never rated, and a rated game never allows engine help.
fn check_terms(
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

/// A colour choice; unspecified means either.
fn color_choice(value: i32) -> Result<ColorChoice, LobbyError> {
    if value == common::ColorChoice::Unspecified as i32 {
        return Ok(ColorChoice::Either);
    }
    Ok(ColorChoice::try_from(value)?)
}

/// Bounds on requesters' ratings; 0 means none.
fn rating_range(min: i32, max: i32) -> Result<(Option<i32>, Option<i32>), LobbyError> {
    if min < 0 || max < 0 {
        return Err(LobbyError::Invalid(
            "rating bounds cannot be negative".into(),
        ));
    }
    let min = (min > 0).then_some(min);
    let max = (max > 0).then_some(max);
    if let (Some(lo), Some(hi)) = (min, max)
        && lo > hi
    {
        return Err(LobbyError::Invalid(
            "the minimum rating is above the maximum".into(),
        ));
    }
    Ok((min, max))
}

/// A page token: `<created_at ms>:<seek id>` of the last seek seen.
fn parse_cursor(token: &str) -> Result<(Millis, String), LobbyError> {
    token
        .split_once(':')
        .and_then(|(at, id)| Some((at.parse().ok()?, id.to_owned())))
        .ok_or_else(|| LobbyError::Invalid("invalid page token".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rating_ranges() {
        assert_eq!(rating_range(0, 0).unwrap(), (None, None));
        assert_eq!(rating_range(1000, 0).unwrap(), (Some(1000), None));
        assert_eq!(rating_range(1000, 1400).unwrap(), (Some(1000), Some(1400)));
        assert!(rating_range(1500, 1400).is_err());
        assert!(rating_range(-1, 0).is_err());
    }

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

    #[test]
    fn cursors_and_colours() {
        assert_eq!(parse_cursor("12:abc").unwrap(), (12, "abc".to_owned()));
        assert!(parse_cursor("x:abc").is_err());
        assert!(parse_cursor("abc").is_err());
        assert_eq!(color_choice(0).unwrap(), ColorChoice::Either);
        assert_eq!(
            color_choice(common::ColorChoice::Black as i32).unwrap(),
            ColorChoice::Black
        );
        assert!(color_choice(42).is_err());
    }
}
