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
//!
//! This file holds the messages, the state, [`Lobby::spawn`] (which hands
//! back the [`LobbyHandle`]) and the loop that dispatches each message to
//! one of:
//!
//! - [`watchers`]: players' event streams and presence.
//! - [`seeks`]: posting, cancelling, closing and listing seeks.
//! - [`requests`]: requests to play a seek.
//! - [`challenges`]: direct challenges and their expiry.
//! - [`started`]: settling what a created game came from.

mod challenges;
mod requests;
mod seeks;
mod started;
mod watchers;

pub(super) use self::{requests::RequestEnd, watchers::stream_channel};

use std::{
    cmp::Reverse,
    collections::{BTreeSet, BinaryHeap, HashMap, HashSet},
    time::Duration,
};

use chess_domain::{GameId, PlayerId, SpeedCategory};
use chess_runtime::Shutdown;
use tokio::{
    sync::{mpsc, oneshot, watch},
    time::Instant,
};

use super::{
    error::LobbyError,
    model::{Challenge, GamePlan, LobbyEvent, Member, Seek, SeekRequest, Timestamp},
};
use crate::{
    clients::{GameClient, RatingClient},
    lobby::LobbyHandle,
    store::{Loaded, Store},
};

/// Most seeks one player may have open at once.
pub(super) const MAX_SEEKS_PER_PLAYER: usize = 20;
/// Most challenges one player may have waiting for answers.
pub(super) const MAX_OPEN_CHALLENGES: usize = 50;
/// Lobby events a slow stream may have queued before it is closed.
const STREAM_CAPACITY: usize = 256;

/// Where one stream's events go.
pub(super) type Events = mpsc::Sender<LobbyEvent>;

type Reply<T> = oneshot::Sender<Result<T, LobbyError>>;

/// What a request to play led to.
#[derive(Debug)]
pub(super) enum Requested {
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
pub type SeekPage = (Vec<Seek>, Option<(Timestamp, String)>);

/// A player's requests: received (to their seeks), sent, and their seeks.
pub type Requests = (Vec<SeekRequest>, Vec<SeekRequest>, Vec<Seek>);

/// A player's call on one seek, request or challenge: its id, and the
/// player acting on it.
#[derive(Debug)]
pub struct Act {
    pub id: String,
    pub player_id: PlayerId,
}

/// Messages to the lobby task.
#[derive(Debug)]
pub(super) enum Message {
    CreateSeek {
        seek: Seek,
        reply: Reply<Seek>,
    },
    CancelSeek {
        act: Act,
        reply: Reply<Seek>,
    },
    GetSeek {
        seek_id: String,
        reply: Reply<Seek>,
    },
    ListSeeks {
        speed: Option<SpeedCategory>,
        after: Option<(Timestamp, String)>,
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
        act: Act,
        reply: Reply<GamePlan>,
    },
    EndRequest {
        act: Act,
        end: RequestEnd,
        reply: Reply<SeekRequest>,
    },
    ListRequests {
        player_id: PlayerId,
        reply: oneshot::Sender<Requests>,
    },
    CreateChallenge {
        challenge: Challenge,
        reply: Reply<Challenge>,
    },
    AcceptChallenge {
        act: Act,
        reply: Reply<GamePlan>,
    },
    DeclineChallenge {
        act: Act,
        reason: String,
        reply: Reply<Challenge>,
    },
    CancelChallenge {
        act: Act,
        reply: Reply<Challenge>,
    },
    ListChallenges {
        player_id: PlayerId,
        reply: oneshot::Sender<(Vec<Challenge>, Vec<Challenge>)>,
    },
    /// The game of a plan was created (with its id), or could not be.
    Started {
        plan: GamePlan,
        outcome: Result<GameId, LobbyError>,
        reply: Reply<Settled>,
    },
    /// A new event stream for a player; answered once it is registered.
    Watch {
        player_id: PlayerId,
        events: Events,
        reply: oneshot::Sender<()>,
    },
    /// A player's event stream closed.
    Unwatch {
        player_id: PlayerId,
        watcher: u64,
    },
    /// A real-time seek was posted with no stream open: if there still is
    /// none, the player's real-time seeks go.
    CheckPresence {
        player_id: PlayerId,
    },
}

/// What the lobby lists: every list of seeks, requests or challenges is
/// given oldest first, ties by id.
trait Listed: Clone {
    fn order(&self) -> (Timestamp, &str);
}

/// Implements [`Listed`] for types with `created_at` and `id`.
macro_rules! listed {
    ($($listed:ty),*) => {$(
        impl Listed for $listed {
            fn order(&self) -> (Timestamp, &str) {
                (self.created_at, &self.id)
            }
        }
    )*};
}

listed!(Seek, SeekRequest, Challenge);

/// Refuses one more of what a player has `open` when they have `max`
/// already: "at most `max` `what` at once".
fn room_for<T>(open: impl Iterator<Item = T>, max: usize, what: &str) -> Result<(), LobbyError> {
    if open.count() >= max {
        return Err(LobbyError::Refused(format!("at most {max} {what} at once")));
    }
    Ok(())
}

/// The `items` that `keep` picks, in their listed order.
fn listed<'a, T: Listed + 'a>(
    items: impl Iterator<Item = &'a T>,
    keep: impl Fn(&T) -> bool,
) -> Vec<T> {
    let mut list: Vec<T> = items.filter(|item| keep(item)).cloned().collect();
    list.sort_by(|a, b| a.order().cmp(&b.order()));
    list
}

impl Lobby {
    /// Starts the lobby task from what the store kept; games are created
    /// through `game`, ratings read from `rating`.
    pub(super) fn spawn(
        store: Store,
        loaded: Loaded,
        presence_grace: Duration,
        shutdown: Shutdown,
        game: GameClient,
        rating: RatingClient,
    ) -> LobbyHandle {
        let (tx, rx) = mpsc::channel(1024);
        let (stopped, closed) = watch::channel(false);
        let mut actor = Lobby {
            store,
            stopped,
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
        // Real-time seeks outlive a restart only if their posters come back
        // (their streams reconnect) within the grace.
        let posters: HashSet<PlayerId> = actor
            .seeks
            .values()
            .filter(|s| s.lapses_with_poster())
            .map(|s| s.poster.id.clone())
            .collect();
        for poster in &posters {
            actor.check_presence_later(poster);
        }
        tracing::info!(
            seeks = actor.seeks.len(),
            requests = actor.requests.len(),
            challenges = actor.challenges.len(),
            "lobby loaded"
        );
        tokio::spawn(actor.run());
        LobbyHandle {
            tx,
            game,
            rating,
            closed,
        }
    }
}

/// The lobby task's state.
pub(super) struct Lobby {
    store: Store,
    /// Set once the task has ended and closed the store.
    stopped: watch::Sender<bool>,
    inbox: mpsc::Receiver<Message>,
    /// For the presence checks it schedules; weak, so the task still ends
    /// when every handle is gone.
    me: mpsc::WeakSender<Message>,
    presence_grace: Duration,
    shutdown: Shutdown,
    /// Open seeks by id, reserved ones included.
    seeks: HashMap<String, Seek>,
    /// Open seeks, oldest first.
    order: BTreeSet<(Timestamp, String)>,
    /// Seeks and challenges whose game is being created.
    reserved: HashSet<String>,
    /// Pending requests by id.
    requests: HashMap<String, SeekRequest>,
    /// Pending challenges by id.
    challenges: HashMap<String, Challenge>,
    /// When pending challenges expire (entries of settled ones are skipped).
    expiries: BinaryHeap<Reverse<(Timestamp, String)>>,
    /// Each player's open event streams.
    watchers: HashMap<PlayerId, Vec<(u64, Events)>>,
    next_watcher: u64,
}

/// Sleeps until `at`, or forever.
async fn until(at: Option<Timestamp>) {
    match at {
        Some(at) => {
            tokio::time::sleep_until(Instant::now() + at.since(Timestamp::now())).await;
        }
        None => std::future::pending().await,
    }
}

impl Lobby {
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
        // Every change so far is written, and no more come: a SQLite file
        // is left without its log.
        self.store.close().await;
        let _ = self.stopped.send(true);
    }

    async fn handle(&mut self, message: Message) {
        // A caller that went away no longer needs the answer; the change
        // stands regardless.
        match message {
            Message::CreateSeek { seek, reply } => {
                let _ = reply.send(self.create_seek(seek).await);
            }
            Message::CancelSeek { act, reply } => {
                let _ = reply.send(self.cancel_seek(&act.id, &act.player_id).await);
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
            Message::AcceptRequest { act, reply } => {
                let _ = reply.send(self.accept_request(&act.id, &act.player_id));
            }
            Message::EndRequest { act, end, reply } => {
                let _ = reply.send(self.end_request(&act.id, &act.player_id, end).await);
            }
            Message::ListRequests { player_id, reply } => {
                let _ = reply.send(self.list_requests(&player_id));
            }
            Message::CreateChallenge { challenge, reply } => {
                let _ = reply.send(self.create_challenge(challenge).await);
            }
            Message::AcceptChallenge { act, reply } => {
                let _ = reply.send(self.accept_challenge(&act.id, &act.player_id).await);
            }
            Message::DeclineChallenge { act, reason, reply } => {
                let result = self
                    .decline_challenge(&act.id, &act.player_id, reason)
                    .await;
                let _ = reply.send(result);
            }
            Message::CancelChallenge { act, reply } => {
                let _ = reply.send(self.cancel_challenge(&act.id, &act.player_id).await);
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
}
