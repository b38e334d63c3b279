//! The task that owns the lobby.
//!
//! Every change to seeks, requests and challenges goes through this one task,
//! so a seek is taken, or a challenge accepted, exactly once. Durable changes
//! (correspondence tables, their requests, challenges) are written before the
//! task answers or tells anyone. Creating a game is a call to another service,
//! so it happens outside: accepting *reserves* the seek or challenge and hands
//! back a [`GamePlan`]; the caller creates the game and reports back with
//! [`Message::Started`], which settles everything (or releases the
//! reservation if the game could not be made).

use std::{
    cmp::Reverse,
    collections::{BTreeSet, BinaryHeap, HashMap, HashSet},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use chess_domain::SpeedCategory;
use chess_proto::{
    common::v1::{LobbyEvent, lobby_event::Kind},
    matchmaking::v1::WatchPlayerResponse,
};
use chess_runtime::Shutdown;
use tokio::{
    sync::{mpsc, oneshot},
    time::Instant,
};
use tonic::Status;

use super::{
    error::LobbyError,
    model::{
        Challenge, ChallengeStatus, GamePlan, Member, Millis, Origin, RequestStatus, Seek,
        SeekRequest, sides,
    },
};
use crate::store::{Loaded, Store};

/// Most seeks one player may have open at once.
pub const MAX_SEEKS_PER_PLAYER: usize = 20;
/// Most challenges one player may have waiting for answers.
pub const MAX_OPEN_CHALLENGES: usize = 50;
/// Lobby events a slow stream may have queued before it is closed.
const STREAM_CAPACITY: usize = 256;

/// Where one stream's events go.
pub type Events = mpsc::Sender<Result<WatchPlayerResponse, Status>>;

type Reply<T> = oneshot::Sender<Result<T, LobbyError>>;

/// What a request to play led to.
#[derive(Debug)]
pub enum Requested {
    /// Waiting for the poster.
    Pending(SeekRequest),
    /// An automatic seek: the game is to be created now.
    Start(GamePlan),
}

/// The final state of whatever a started game came from.
#[derive(Debug)]
pub enum Settled {
    Request(SeekRequest),
    Challenge(Challenge),
}

/// A page of open seeks: the seeks and where the next page starts.
pub type SeekPage = (Vec<Seek>, Option<(Millis, String)>);

/// A player's requests: received (to their seeks), sent, and their seeks.
pub type Requests = (Vec<SeekRequest>, Vec<SeekRequest>, Vec<Seek>);

/// Messages to the lobby task.
#[derive(Debug)]
pub enum Message {
    CreateSeek {
        seek: Seek,
        reply: Reply<Seek>,
    },
    CancelSeek {
        seek_id: String,
        player_id: String,
        reply: Reply<Seek>,
    },
    GetSeek {
        seek_id: String,
        reply: Reply<Seek>,
    },
    ListSeeks {
        speed: Option<SpeedCategory>,
        after: Option<(Millis, String)>,
        limit: usize,
        reply: oneshot::Sender<SeekPage>,
    },
    RequestSeek {
        seek_id: String,
        requester: Member,
        /// The requester's rating in the seek's category, if known.
        rating: Option<i32>,
        reply: Reply<Requested>,
    },
    AcceptRequest {
        request_id: String,
        player_id: String,
        reply: Reply<GamePlan>,
    },
    RejectRequest {
        request_id: String,
        player_id: String,
        reply: Reply<SeekRequest>,
    },
    WithdrawRequest {
        request_id: String,
        player_id: String,
        reply: Reply<SeekRequest>,
    },
    ListRequests {
        player_id: String,
        reply: oneshot::Sender<Requests>,
    },
    CreateChallenge {
        challenge: Challenge,
        reply: Reply<Challenge>,
    },
    AcceptChallenge {
        challenge_id: String,
        player_id: String,
        reply: Reply<GamePlan>,
    },
    DeclineChallenge {
        challenge_id: String,
        player_id: String,
        reason: String,
        reply: Reply<Challenge>,
    },
    CancelChallenge {
        challenge_id: String,
        player_id: String,
        reply: Reply<Challenge>,
    },
    ListChallenges {
        player_id: String,
        reply: oneshot::Sender<(Vec<Challenge>, Vec<Challenge>)>,
    },
    /// The game of a plan was created (with its id), or could not be.
    Started {
        plan: GamePlan,
        outcome: Result<String, LobbyError>,
        reply: Reply<Settled>,
    },
    /// A new event stream for a player; answered once it is registered.
    Watch {
        player_id: String,
        events: Events,
        reply: oneshot::Sender<()>,
    },
    /// A player's event stream closed.
    Unwatch {
        player_id: String,
        watcher: u64,
    },
    /// A real-time seek was posted with no stream open: if there still is
    /// none, the player's real-time seeks go.
    CheckPresence {
        player_id: String,
    },
}

/// The current time in milliseconds since the epoch.
pub fn now_ms() -> Millis {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Starts the lobby task from what the store kept.
pub fn spawn(
    store: Store,
    loaded: Loaded,
    presence_grace: Duration,
    shutdown: Shutdown,
) -> mpsc::Sender<Message> {
    let (tx, rx) = mpsc::channel(1024);
    let mut actor = Actor {
        store,
        inbox: rx,
        me: tx.downgrade(),
        presence_grace,
        shutdown,
        seeks: HashMap::new(),
        order: BTreeSet::new(),
        reserved: HashSet::new(),
        requests: HashMap::new(),
        challenges: HashMap::new(),
        expiries: BinaryHeap::new(),
        watchers: HashMap::new(),
        next_watcher: 0,
    };
    for seek in loaded.seeks {
        actor.order.insert((seek.created_at, seek.id.clone()));
        actor.seeks.insert(seek.id.clone(), seek);
    }
    for request in loaded.requests {
        // A request whose table is gone has no one to answer it; it is
        // settled as cancelled when the table's end is replayed below.
        if actor.seeks.contains_key(&request.seek_id) {
            actor.requests.insert(request.id.clone(), request);
        }
    }
    for challenge in loaded.challenges {
        actor
            .expiries
            .push(Reverse((challenge.expires_at, challenge.id.clone())));
        actor.challenges.insert(challenge.id.clone(), challenge);
    }
    tracing::info!(
        tables = actor.seeks.len(),
        requests = actor.requests.len(),
        challenges = actor.challenges.len(),
        "lobby loaded"
    );
    tokio::spawn(actor.run());
    tx
}

struct Actor {
    store: Store,
    inbox: mpsc::Receiver<Message>,
    /// For the presence checks it schedules; weak, so the task still ends
    /// when every handle is gone.
    me: mpsc::WeakSender<Message>,
    presence_grace: Duration,
    shutdown: Shutdown,
    /// Open seeks by id, reserved ones included.
    seeks: HashMap<String, Seek>,
    /// Open seeks, oldest first.
    order: BTreeSet<(Millis, String)>,
    /// Seeks and challenges whose game is being created.
    reserved: HashSet<String>,
    /// Pending requests by id.
    requests: HashMap<String, SeekRequest>,
    /// Pending challenges by id.
    challenges: HashMap<String, Challenge>,
    /// When pending challenges expire (entries of settled ones are skipped).
    expiries: BinaryHeap<Reverse<(Millis, String)>>,
    /// Each player's open event streams.
    watchers: HashMap<String, Vec<(u64, Events)>>,
    next_watcher: u64,
}

/// Sleeps until `at` (milliseconds since the epoch), or forever.
async fn until(at: Option<Millis>) {
    match at {
        Some(at) => {
            let wait = u64::try_from(at.saturating_sub(now_ms())).unwrap_or(0);
            tokio::time::sleep_until(Instant::now() + Duration::from_millis(wait)).await;
        }
        None => std::future::pending().await,
    }
}

fn event(kind: Kind) -> LobbyEvent {
    LobbyEvent { kind: Some(kind) }
}

impl Actor {
    async fn run(mut self) {
        loop {
            let next_expiry = self.expiries.peek().map(|Reverse((at, _))| *at);
            tokio::select! {
                message = self.inbox.recv() => match message {
                    Some(message) => self.handle(message).await,
                    None => break,
                },
                () = until(next_expiry) => self.expire_due().await,
                () = self.shutdown.cancelled() => break,
            }
        }
    }

    async fn handle(&mut self, message: Message) {
        // A caller that went away no longer needs the answer; the change
        // stands regardless.
        match message {
            Message::CreateSeek { seek, reply } => {
                let _ = reply.send(self.create_seek(seek).await);
            }
            Message::CancelSeek {
                seek_id,
                player_id,
                reply,
            } => {
                let _ = reply.send(self.cancel_seek(&seek_id, &player_id).await);
            }
            Message::GetSeek { seek_id, reply } => {
                let _ = reply.send(self.open_seek(&seek_id).cloned());
            }
            Message::ListSeeks {
                speed,
                after,
                limit,
                reply,
            } => {
                let _ = reply.send(self.list_seeks(speed, after, limit));
            }
            Message::RequestSeek {
                seek_id,
                requester,
                rating,
                reply,
            } => {
                let _ = reply.send(self.request_seek(&seek_id, requester, rating).await);
            }
            Message::AcceptRequest {
                request_id,
                player_id,
                reply,
            } => {
                let _ = reply.send(self.accept_request(&request_id, &player_id));
            }
            Message::RejectRequest {
                request_id,
                player_id,
                reply,
            } => {
                let _ = reply.send(self.reject_request(&request_id, &player_id).await);
            }
            Message::WithdrawRequest {
                request_id,
                player_id,
                reply,
            } => {
                let _ = reply.send(self.withdraw_request(&request_id, &player_id).await);
            }
            Message::ListRequests { player_id, reply } => {
                let _ = reply.send(self.list_requests(&player_id));
            }
            Message::CreateChallenge { challenge, reply } => {
                let _ = reply.send(self.create_challenge(challenge).await);
            }
            Message::AcceptChallenge {
                challenge_id,
                player_id,
                reply,
            } => {
                let _ = reply.send(self.accept_challenge(&challenge_id, &player_id).await);
            }
            Message::DeclineChallenge {
                challenge_id,
                player_id,
                reason,
                reply,
            } => {
                let result = self
                    .decline_challenge(&challenge_id, &player_id, reason)
                    .await;
                let _ = reply.send(result);
            }
            Message::CancelChallenge {
                challenge_id,
                player_id,
                reply,
            } => {
                let _ = reply.send(self.cancel_challenge(&challenge_id, &player_id).await);
            }
            Message::ListChallenges { player_id, reply } => {
                let _ = reply.send(self.list_challenges(&player_id));
            }
            Message::Started {
                plan,
                outcome,
                reply,
            } => {
                let _ = reply.send(self.started(plan, outcome).await);
            }
            Message::Watch {
                player_id,
                events,
                reply,
            } => {
                self.watch(player_id, events);
                let _ = reply.send(());
            }
            Message::Unwatch { player_id, watcher } => self.unwatch(&player_id, watcher).await,
            Message::CheckPresence { player_id } => {
                if !self.watchers.contains_key(&player_id) {
                    self.withdraw_real_time(&player_id).await;
                }
            }
        }
    }

    // --- Event streams and presence ---

    fn watch(&mut self, player_id: String, events: Events) {
        let watcher = self.next_watcher;
        self.next_watcher += 1;
        self.watchers
            .entry(player_id.clone())
            .or_default()
            .push((watcher, events.clone()));
        let me = self.me.clone();
        tokio::spawn(async move {
            events.closed().await;
            if let Some(me) = me.upgrade() {
                // The lobby only stops with the service.
                let _ = me.send(Message::Unwatch { player_id, watcher }).await;
            }
        });
    }

    async fn unwatch(&mut self, player_id: &str, watcher: u64) {
        let Some(streams) = self.watchers.get_mut(player_id) else {
            return;
        };
        streams.retain(|(id, _)| *id != watcher);
        if streams.is_empty() {
            self.watchers.remove(player_id);
            self.withdraw_real_time(player_id).await;
        }
    }

    /// Sends `kind` to every open stream of `player_id`. A stream too far
    /// behind is closed rather than allowed to hold up the lobby.
    fn notify(&mut self, player_id: &str, kind: Kind) {
        let Some(streams) = self.watchers.get_mut(player_id) else {
            return;
        };
        let message = WatchPlayerResponse {
            event: Some(event(kind)),
        };
        streams.retain(|(_, events)| match events.try_send(Ok(message.clone())) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                tracing::warn!(player_id, "lobby stream fell behind; closing it");
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        });
        // An emptied list is cleaned up by the streams' own Unwatch messages,
        // which also withdraw the real-time seeks.
    }

    /// Withdraws the real-time seeks of a player who has no stream open.
    async fn withdraw_real_time(&mut self, player_id: &str) {
        let gone: Vec<String> = self
            .seeks
            .values()
            .filter(|s| {
                s.poster.id == player_id && !s.is_durable() && !self.reserved.contains(&s.id)
            })
            .map(|s| s.id.clone())
            .collect();
        for seek_id in gone {
            tracing::debug!(player_id, seek_id, "poster left; seek withdrawn");
            if let Err(e) = self.remove_seek(&seek_id, "cancelled", None).await {
                tracing::warn!(seek_id, error = %e, "could not withdraw a seek");
            }
        }
    }

    // --- Seeks ---

    fn open_seek(&self, seek_id: &str) -> Result<&Seek, LobbyError> {
        self.seeks
            .get(seek_id)
            .filter(|_| !self.reserved.contains(seek_id))
            .ok_or_else(|| LobbyError::NotFound(format!("no open seek {seek_id}")))
    }

    async fn create_seek(&mut self, seek: Seek) -> Result<Seek, LobbyError> {
        let open = self
            .seeks
            .values()
            .filter(|s| s.poster.id == seek.poster.id)
            .count();
        if open >= MAX_SEEKS_PER_PLAYER {
            return Err(LobbyError::Refused(format!(
                "at most {MAX_SEEKS_PER_PLAYER} seeks may be open at once"
            )));
        }
        if seek.is_durable() {
            self.store.insert_seek(&seek).await?;
        } else if !self.watchers.contains_key(&seek.poster.id)
            && let Some(me) = self.me.upgrade()
        {
            let player_id = seek.poster.id.clone();
            let grace = self.presence_grace;
            tokio::spawn(async move {
                tokio::time::sleep(grace).await;
                // The lobby only stops with the service.
                let _ = me.send(Message::CheckPresence { player_id }).await;
            });
        }
        self.order.insert((seek.created_at, seek.id.clone()));
        self.seeks.insert(seek.id.clone(), seek.clone());
        tracing::debug!(
            seek_id = seek.id,
            poster = seek.poster.id,
            durable = seek.is_durable(),
            "seek posted"
        );
        Ok(seek)
    }

    async fn cancel_seek(&mut self, seek_id: &str, player_id: &str) -> Result<Seek, LobbyError> {
        let seek = self.open_seek(seek_id)?;
        if seek.poster.id != player_id {
            return Err(LobbyError::NotYours(format!("seek {seek_id} is not yours")));
        }
        self.remove_seek(seek_id, "cancelled", None).await
    }

    /// Closes a seek: stored tables are marked, pending requests to it are
    /// cancelled (except `keep`, the one that took it), and the poster's
    /// streams hear that it is gone.
    async fn remove_seek(
        &mut self,
        seek_id: &str,
        status: &str,
        keep: Option<&str>,
    ) -> Result<Seek, LobbyError> {
        let Some(seek) = self.seeks.get(seek_id).cloned() else {
            return Err(LobbyError::NotFound(format!("no open seek {seek_id}")));
        };
        let now = now_ms();
        if seek.is_durable() {
            self.store.close_seek(seek_id, status, now).await?;
        }
        self.seeks.remove(seek_id);
        self.order.remove(&(seek.created_at, seek.id.clone()));
        self.reserved.remove(seek_id);
        let orphans: Vec<String> = self
            .requests
            .values()
            .filter(|r| r.seek_id == seek_id && Some(r.id.as_str()) != keep)
            .map(|r| r.id.clone())
            .collect();
        for request_id in orphans {
            let Some(mut request) = self.requests.remove(&request_id) else {
                continue;
            };
            request.status = RequestStatus::Cancelled;
            if seek.is_durable()
                && let Err(e) = self.store.settle_request(&request, now).await
            {
                // The table is closed, so the request can never be answered;
                // a stale row only shows as pending after a restart, where
                // it is dropped for want of its table.
                tracing::warn!(request_id, error = %e, "could not store a cancelled request");
            }
            let requester = request.requester.id.clone();
            self.notify(&requester, Kind::SeekRequestCancelled(request.to_pb()));
        }
        let poster = seek.poster.id.clone();
        self.notify(&poster, Kind::SeekRemoved(seek.to_pb(Some(&poster))));
        Ok(seek)
    }

    fn list_seeks(
        &self,
        speed: Option<SpeedCategory>,
        after: Option<(Millis, String)>,
        limit: usize,
    ) -> SeekPage {
        use std::ops::Bound;
        let start = match &after {
            Some(cursor) => Bound::Excluded(cursor.clone()),
            None => Bound::Unbounded,
        };
        let mut page: Vec<Seek> = self
            .order
            .range((start, Bound::Unbounded))
            .filter_map(|(_, id)| self.seeks.get(id))
            .filter(|s| !self.reserved.contains(&s.id))
            .filter(|s| speed.is_none_or(|speed| s.speed() == speed))
            .take(limit + 1)
            .cloned()
            .collect();
        let next = if page.len() > limit {
            page.truncate(limit);
            page.last().map(|s| (s.created_at, s.id.clone()))
        } else {
            None
        };
        (page, next)
    }

    // --- Requests to play ---

    async fn request_seek(
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
            created_at: now_ms(),
        };
        if seek.is_durable() {
            self.store.insert_request(&request).await?;
        }
        self.requests.insert(request.id.clone(), request.clone());
        match seek.accept {
            super::model::AcceptMode::Automatic => {
                self.reserved.insert(seek.id.clone());
                Ok(Requested::Start(plan_for_seek(&seek, &request)))
            }
            super::model::AcceptMode::Manual => {
                let poster = seek.poster.id.clone();
                self.notify(&poster, Kind::SeekRequestReceived(request.to_pb()));
                Ok(Requested::Pending(request))
            }
        }
    }

    /// The pending request `request_id` and its open seek.
    fn pending_request(&self, request_id: &str) -> Result<(&SeekRequest, &Seek), LobbyError> {
        let request = self
            .requests
            .get(request_id)
            .ok_or_else(|| LobbyError::NotFound(format!("no pending request {request_id}")))?;
        let seek = self.open_seek(&request.seek_id)?;
        Ok((request, seek))
    }

    fn accept_request(
        &mut self,
        request_id: &str,
        player_id: &str,
    ) -> Result<GamePlan, LobbyError> {
        let (request, seek) = self.pending_request(request_id)?;
        if seek.poster.id != player_id {
            return Err(LobbyError::NotYours(format!(
                "request {request_id} is not for your seek"
            )));
        }
        let plan = plan_for_seek(seek, request);
        let seek_id = seek.id.clone();
        self.reserved.insert(seek_id);
        Ok(plan)
    }

    async fn reject_request(
        &mut self,
        request_id: &str,
        player_id: &str,
    ) -> Result<SeekRequest, LobbyError> {
        let (request, seek) = self.pending_request(request_id)?;
        if seek.poster.id != player_id {
            return Err(LobbyError::NotYours(format!(
                "request {request_id} is not for your seek"
            )));
        }
        let durable = seek.is_durable();
        let mut request = request.clone();
        request.status = RequestStatus::Rejected;
        if durable {
            self.store.settle_request(&request, now_ms()).await?;
        }
        self.requests.remove(request_id);
        let requester = request.requester.id.clone();
        self.notify(&requester, Kind::SeekRequestRejected(request.to_pb()));
        Ok(request)
    }

    async fn withdraw_request(
        &mut self,
        request_id: &str,
        player_id: &str,
    ) -> Result<SeekRequest, LobbyError> {
        let (request, seek) = self.pending_request(request_id)?;
        if request.requester.id != player_id {
            return Err(LobbyError::NotYours(format!(
                "request {request_id} is not yours"
            )));
        }
        let durable = seek.is_durable();
        let poster = seek.poster.id.clone();
        let mut request = request.clone();
        request.status = RequestStatus::Cancelled;
        if durable {
            self.store.settle_request(&request, now_ms()).await?;
        }
        self.requests.remove(request_id);
        self.notify(&poster, Kind::SeekRequestCancelled(request.to_pb()));
        Ok(request)
    }

    fn list_requests(&self, player_id: &str) -> Requests {
        let mut received = Vec::new();
        let mut sent = Vec::new();
        for request in self.requests.values() {
            if request.requester.id == player_id {
                sent.push(request.clone());
            }
            if self
                .seeks
                .get(&request.seek_id)
                .is_some_and(|s| s.poster.id == player_id)
            {
                received.push(request.clone());
            }
        }
        received.sort_by_key(|r| (r.created_at, r.id.clone()));
        sent.sort_by_key(|r| (r.created_at, r.id.clone()));
        let mut seeks: Vec<Seek> = self
            .seeks
            .values()
            .filter(|s| s.poster.id == player_id)
            .cloned()
            .collect();
        seeks.sort_by_key(|s| (s.created_at, s.id.clone()));
        (received, sent, seeks)
    }

    // --- Challenges ---

    async fn create_challenge(&mut self, challenge: Challenge) -> Result<Challenge, LobbyError> {
        let open = self
            .challenges
            .values()
            .filter(|c| c.challenger.id == challenge.challenger.id)
            .count();
        if open >= MAX_OPEN_CHALLENGES {
            return Err(LobbyError::Refused(format!(
                "at most {MAX_OPEN_CHALLENGES} challenges may wait for answers at once"
            )));
        }
        self.store.insert_challenge(&challenge).await?;
        self.expiries
            .push(Reverse((challenge.expires_at, challenge.id.clone())));
        self.challenges
            .insert(challenge.id.clone(), challenge.clone());
        let challenged = challenge.challenged.id.clone();
        self.notify(&challenged, Kind::ChallengeReceived(challenge.to_pb()));
        tracing::debug!(challenge_id = challenge.id, "challenge sent");
        Ok(challenge)
    }

    /// The pending, unreserved challenge `id`.
    fn pending_challenge(&self, id: &str) -> Result<&Challenge, LobbyError> {
        self.challenges
            .get(id)
            .filter(|_| !self.reserved.contains(id))
            .ok_or_else(|| LobbyError::NotFound(format!("no pending challenge {id}")))
    }

    async fn accept_challenge(
        &mut self,
        challenge_id: &str,
        player_id: &str,
    ) -> Result<GamePlan, LobbyError> {
        let challenge = self.pending_challenge(challenge_id)?.clone();
        if challenge.challenged.id != player_id {
            return Err(LobbyError::NotYours(format!(
                "challenge {challenge_id} is not addressed to you"
            )));
        }
        if challenge.expires_at <= now_ms() {
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

    async fn decline_challenge(
        &mut self,
        challenge_id: &str,
        player_id: &str,
        reason: String,
    ) -> Result<Challenge, LobbyError> {
        let challenge = self.pending_challenge(challenge_id)?;
        if challenge.challenged.id != player_id {
            return Err(LobbyError::NotYours(format!(
                "challenge {challenge_id} is not addressed to you"
            )));
        }
        self.settle_challenge(challenge_id, ChallengeStatus::Declined, reason)
            .await
    }

    async fn cancel_challenge(
        &mut self,
        challenge_id: &str,
        player_id: &str,
    ) -> Result<Challenge, LobbyError> {
        let challenge = self.pending_challenge(challenge_id)?;
        if challenge.challenger.id != player_id {
            return Err(LobbyError::NotYours(format!(
                "challenge {challenge_id} is not yours"
            )));
        }
        self.settle_challenge(challenge_id, ChallengeStatus::Cancelled, String::new())
            .await
    }

    /// Ends a pending challenge with `status` and tells the other side (both,
    /// for an expiry).
    async fn settle_challenge(
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
        self.store.settle_challenge(&challenge, now_ms()).await?;
        self.challenges.remove(challenge_id);
        let wire = challenge.to_pb();
        let challenger = challenge.challenger.id.clone();
        let challenged = challenge.challenged.id.clone();
        match status {
            ChallengeStatus::Declined => {
                self.notify(&challenger, Kind::ChallengeDeclined(wire));
            }
            ChallengeStatus::Cancelled => {
                self.notify(&challenged, Kind::ChallengeCancelled(wire));
            }
            ChallengeStatus::Expired => {
                self.notify(&challenger, Kind::ChallengeExpired(wire.clone()));
                self.notify(&challenged, Kind::ChallengeExpired(wire));
            }
            ChallengeStatus::Accepted => {
                self.notify(&challenger, Kind::ChallengeAccepted(wire.clone()));
                self.notify(&challenged, Kind::ChallengeAccepted(wire));
            }
            ChallengeStatus::Pending => {}
        }
        Ok(challenge)
    }

    async fn expire_due(&mut self) {
        let now = now_ms();
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
                    self.expiries.push(Reverse((now + 1000, id)));
                    break;
                }
            }
        }
    }

    fn list_challenges(&self, player_id: &str) -> (Vec<Challenge>, Vec<Challenge>) {
        let mut incoming: Vec<Challenge> = self
            .challenges
            .values()
            .filter(|c| c.challenged.id == player_id)
            .cloned()
            .collect();
        let mut outgoing: Vec<Challenge> = self
            .challenges
            .values()
            .filter(|c| c.challenger.id == player_id)
            .cloned()
            .collect();
        incoming.sort_by_key(|c| (c.created_at, c.id.clone()));
        outgoing.sort_by_key(|c| (c.created_at, c.id.clone()));
        (incoming, outgoing)
    }

    // --- Games ---

    async fn started(
        &mut self,
        plan: GamePlan,
        outcome: Result<String, LobbyError>,
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
                let durable = self.seeks.get(&seek_id).is_some_and(Seek::is_durable);
                if durable && let Err(e) = self.store.settle_request(&request, now_ms()).await {
                    // The game exists; after a restart the same request would
                    // find it again through its idempotency key.
                    tracing::warn!(request_id, error = %e, "could not store an accepted request");
                }
                if let Err(e) = self.remove_seek(&seek_id, "taken", Some(&request_id)).await {
                    tracing::warn!(seek_id, error = %e, "could not close a taken table");
                    self.seeks.remove(&seek_id);
                    self.reserved.remove(&seek_id);
                }
                let wire = request.to_pb();
                let requester = request.requester.id.clone();
                let poster = if plan.white.id == requester {
                    plan.black.id.clone()
                } else {
                    plan.white.id.clone()
                };
                self.notify(&requester, Kind::SeekRequestAccepted(wire.clone()));
                self.notify(&poster, Kind::SeekRequestAccepted(wire));
                tracing::debug!(seek_id, request_id, game_id, "seek taken");
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
                tracing::debug!(challenge_id, game_id, "challenge accepted");
                Ok(Settled::Challenge(settled))
            }
        }
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

/// A new event stream's channel.
pub fn stream_channel() -> (Events, mpsc::Receiver<Result<WatchPlayerResponse, Status>>) {
    mpsc::channel(STREAM_CAPACITY)
}
