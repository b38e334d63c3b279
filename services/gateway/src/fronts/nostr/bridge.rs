//! The bridge at work: players' events in, the system's answers out.
//!
//! One worker takes the players' events in the order they arrive (after
//! checking id, signature, address, age, and that the event was never
//! handled before), so a player's moves are applied in the order sent.
//! Pairing waits in the matchmaking service's Nostr queue, one stream per
//! waiting key; each game paired here is followed on the game service's
//! event stream, so every move is announced whichever front made it.

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use chess_domain::{Color, color_from_pb};
use chess_proto::{
    common::v1 as common,
    game::v1 as game_pb,
    matchmaking::v1::{self as mm_pb, join_pairing_queue_response::Update},
};
use chess_runtime::Reason;
use nostr_sdk::prelude::{Event, Keys, PublicKey};
use tokio::{sync::mpsc, time::sleep};
use tokio_stream::StreamExt as _;
use tokio_util::sync::CancellationToken;

use super::{
    journal::Journal,
    outbox::Outbox,
    protocol::{self, Inbound, Seats},
};
use crate::core::clients::Backends;

/// Events older than this (by `created_at`) are not handled: relays may
/// replay them, and their ids are only remembered this long.
pub const WINDOW_SECS: u64 = 3600;
/// Events dated further ahead than this are not handled either.
const FUTURE_SECS: u64 = 15 * 60;
/// How long a request to play waits for an opponent.
const QUEUE_LIFETIME: Duration = Duration::from_secs(10 * 60);
/// Tries of a call while the service behind it is unreachable.
const ATTEMPTS: u32 = 5;
/// Pause before calling a service again after it failed.
const RETRY_DELAY: Duration = Duration::from_millis(300);
/// How long a key's account link is trusted before asking again.
const LINK_CACHE: Duration = Duration::from_secs(10);
/// Guest ids of Nostr players: this and the key in hex.
pub const GUEST_PREFIX: &str = "nostr-";

pub fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Who a key plays as.
#[derive(Clone, Debug)]
struct Identity {
    /// The key's place in the pairing queue.
    guest_id: String,
    /// The account the key is linked to, if any.
    account: Option<common::RegisteredPlayer>,
}

impl Identity {
    fn player_id(&self) -> &str {
        self.account
            .as_ref()
            .map_or(&self.guest_id, |a| &a.player_id)
    }
}

/// A short name for a key: `npub`-free, but recognisable.
fn display_name(key: &str) -> String {
    format!("nostr:{}", &key[..key.len().min(8)])
}

/// The state shared by the bridge's tasks.
#[derive(Debug)]
pub struct Bridge {
    pub keys: Keys,
    backends: Backends,
    journal: Mutex<Journal>,
    outbox: Outbox,
    /// Keys waiting for an opponent.
    queued: Mutex<HashSet<String>>,
    /// Games with a running follower.
    following: Mutex<HashSet<String>>,
    links: Mutex<HashMap<String, (Instant, Option<common::RegisteredPlayer>)>>,
    shutdown: CancellationToken,
}

impl Bridge {
    pub fn new(
        keys: Keys,
        backends: Backends,
        journal: Journal,
        outbox: Outbox,
        shutdown: CancellationToken,
    ) -> Arc<Self> {
        Arc::new(Self {
            keys,
            backends,
            journal: Mutex::new(journal),
            outbox,
            queued: Mutex::default(),
            following: Mutex::default(),
            links: Mutex::default(),
            shutdown,
        })
    }

    fn journal(&self) -> std::sync::MutexGuard<'_, Journal> {
        // A panic while holding it cannot leave a record half-applied in
        // memory: every method writes the file first.
        self.journal.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Follows again every game that was being announced before a restart,
    /// and queues again the keys that were waiting.
    pub fn resume(self: &Arc<Self>) {
        let waiting: Vec<(String, u64)> = self
            .journal()
            .waiting()
            .map(|(key, since)| (key.clone(), *since))
            .collect();
        for (key, since) in waiting {
            self.queued
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(key.clone());
            self.spawn_wait(key, since, true);
        }
        let games: Vec<String> = self.journal().games().map(|(id, _)| id.clone()).collect();
        if !games.is_empty() {
            tracing::info!(
                games = games.len(),
                "following the Nostr games in progress again"
            );
        }
        for game_id in games {
            self.follow(game_id);
        }
    }

    /// Handles the players' events, one at a time, until shutdown.
    pub async fn work(self: Arc<Self>, mut events: mpsc::UnboundedReceiver<Event>) {
        loop {
            let event = tokio::select! {
                event = events.recv() => event,
                () = self.shutdown.cancelled() => None,
            };
            let Some(event) = event else { break };
            self.handle(event).await;
        }
    }

    /// Whether the event is one to handle now; it is then taken for good.
    async fn admit(&self, event: &Event) -> bool {
        if event.verify().is_err() {
            tracing::debug!(id = %event.id, "ignored: bad id or signature");
            return false;
        }
        if protocol::read(event).is_none()
            || !protocol::addressed_to(event, &self.keys.public_key())
        {
            return false;
        }
        let now = now_secs();
        let at = event.created_at.as_secs();
        if at + WINDOW_SECS < now || at > now + FUTURE_SECS {
            tracing::debug!(id = %event.id, at, "ignored: outside the acceptance window");
            return false;
        }
        let id = event.id.to_hex();
        let mut journal = self.journal();
        journal.forget_before(now.saturating_sub(WINDOW_SECS));
        match journal.take(&id, at) {
            Ok(fresh) => fresh,
            Err(e) => {
                // Without the record the event could be handled twice.
                tracing::error!(error = %e, path = %journal.path().display(), "cannot write the Nostr journal; event not handled");
                false
            }
        }
    }

    async fn handle(self: &Arc<Self>, event: Event) {
        if !self.admit(&event).await {
            return;
        }
        let author = event.pubkey.to_hex();
        let span = tracing::debug_span!("nostr.event", id = %event.id, kind = event.kind.as_u16(), %author);
        let _guard = span.enter();
        match protocol::read(&event) {
            Some(Ok(Inbound::Play)) => self.request_to_play(author),
            Some(Ok(Inbound::Move { game_id, uci })) => {
                self.play(&event, &game_id, Action::Move(uci)).await;
            }
            Some(Ok(Inbound::Quit { game_id })) => {
                self.play(&event, &game_id, Action::Quit).await;
            }
            Some(Err(malformed)) => {
                let seats = match protocol::game_of(&event) {
                    Some(id) => self.seats(id).await,
                    None => None,
                };
                self.refuse(&event, seats.as_ref(), &malformed.to_string());
            }
            None => {}
        }
    }

    /// The account `key` is linked to, if any (cached briefly).
    async fn identity(&self, key: &str) -> Result<Identity, tonic::Status> {
        let guest_id = format!("{GUEST_PREFIX}{key}");
        let cached = self
            .links
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(key)
            .filter(|(at, _)| at.elapsed() < LINK_CACHE)
            .map(|(_, account)| account.clone());
        let account = match cached {
            Some(account) => account,
            None => {
                let account = self
                    .backends
                    .rating
                    .player_by_nostr_key(key)
                    .await?
                    .and_then(|r| r.profile)
                    .map(|p| common::RegisteredPlayer {
                        player_id: p.player_id,
                        username: p.username,
                    });
                let mut links = self.links.lock().unwrap_or_else(|e| e.into_inner());
                links.retain(|_, (at, _)| at.elapsed() < LINK_CACHE);
                links.insert(key.to_owned(), (Instant::now(), account.clone()));
                account
            }
        };
        Ok(Identity { guest_id, account })
    }

    /// A 20300: wait in the Nostr queue (or be paired at once).
    fn request_to_play(self: &Arc<Self>, key: String) {
        let since = now_secs();
        {
            let mut queued = self.queued.lock().unwrap_or_else(|e| e.into_inner());
            if !queued.insert(key.clone()) {
                drop(queued);
                // Already waiting: the place is kept.
                self.outbox
                    .publish(protocol::reply(&self.keys, &key, "queued"));
                return;
            }
        }
        if let Err(e) = self.journal().wait(&key, since) {
            tracing::warn!(error = %e, "cannot write the Nostr journal");
        }
        self.spawn_wait(key, since, false);
    }

    /// Waits for an opponent for `key`, asking since `since` (Unix seconds).
    fn spawn_wait(self: &Arc<Self>, key: String, since: u64, told_queued: bool) {
        let bridge = Arc::clone(self);
        tokio::spawn(async move {
            let ended = bridge.wait_for_opponent(&key, since, told_queued).await;
            bridge
                .queued
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&key);
            // At shutdown the wait goes on after the restart.
            if ended && let Err(e) = bridge.journal().stop_waiting(&key) {
                tracing::warn!(error = %e, "cannot write the Nostr journal");
            }
        });
    }

    /// Waits in the queue until paired, refused or out of time (true), or
    /// until shutdown (false).
    async fn wait_for_opponent(
        self: &Arc<Self>,
        key: &str,
        since: u64,
        mut told_queued: bool,
    ) -> bool {
        let left = (since + QUEUE_LIFETIME.as_secs()).saturating_sub(now_secs());
        let deadline = tokio::time::Instant::now() + Duration::from_secs(left);
        let asked_at = prost_types::Timestamp {
            seconds: i64::try_from(since).unwrap_or(i64::MAX),
            nanos: 0,
        };
        loop {
            if tokio::time::Instant::now() >= deadline {
                break;
            }
            let identity = match self.identity(key).await {
                Ok(identity) => identity,
                Err(status) => {
                    tracing::warn!(error = %status, "cannot look up a Nostr key's account; retrying");
                    if self.pause_until(deadline).await {
                        continue;
                    }
                    break;
                }
            };
            let request = mm_pb::JoinPairingQueueRequest {
                guest_id: identity.guest_id.clone(),
                display_name: display_name(key),
                color: common::ColorChoice::Either as i32,
                connected_at: Some(asked_at),
                pool: mm_pb::PairingPool::Nostr as i32,
                account: identity.account.clone(),
            };
            let mut stream = match self
                .backends
                .matchmaking
                .acting(&identity.guest_id)
                .join_pairing_queue(request)
                .await
            {
                Ok(response) => response.into_inner(),
                Err(status) if Reason::of(&status).is_some() => {
                    self.outbox.publish(protocol::reply(
                        &self.keys,
                        key,
                        &format!("error:{}", status.message()),
                    ));
                    return true;
                }
                Err(status) => {
                    tracing::warn!(error = %status, "cannot join the pairing queue; retrying");
                    if self.pause_until(deadline).await {
                        continue;
                    }
                    break;
                }
            };
            loop {
                let update = tokio::select! {
                    update = stream.message() => update,
                    () = tokio::time::sleep_until(deadline) => break,
                    () = self.shutdown.cancelled() => return false,
                };
                match update {
                    Ok(Some(mm_pb::JoinPairingQueueResponse {
                        update: Some(Update::Queued(_)),
                    })) => {
                        if !told_queued {
                            told_queued = true;
                            self.outbox
                                .publish(protocol::reply(&self.keys, key, "queued"));
                        }
                    }
                    Ok(Some(mm_pb::JoinPairingQueueResponse {
                        update: Some(Update::Paired(paired)),
                    })) => {
                        self.paired(key, &paired);
                        return true;
                    }
                    Ok(Some(_)) => {}
                    // Matchmaking restarted: queue again, keeping the time
                    // of the request, which orders the waiters.
                    Ok(None) | Err(_) => break,
                }
            }
            if !self.pause_until(deadline).await {
                break;
            }
        }
        if self.shutdown.is_cancelled() {
            return false;
        }
        self.outbox.publish(protocol::reply(
            &self.keys,
            key,
            "error:no opponent came within 10 minutes; send a new request to play",
        ));
        true
    }

    /// Sleeps a little; false when the wait should end instead (out of time,
    /// or shutdown).
    async fn pause_until(&self, deadline: tokio::time::Instant) -> bool {
        tokio::select! {
            () = sleep(RETRY_DELAY) => tokio::time::Instant::now() < deadline,
            () = self.shutdown.cancelled() => false,
        }
    }

    /// A pairing: each player hears of it (once, whichever of the two
    /// waits saw it first), then the starting position, then every move.
    fn paired(self: &Arc<Self>, key: &str, paired: &mm_pb::Paired) {
        let Some(opponent) = paired.opponent_id.strip_prefix(GUEST_PREFIX) else {
            tracing::warn!(opponent = %paired.opponent_id, "paired with someone not on Nostr");
            return;
        };
        let mine = color_from_pb(paired.color).unwrap_or(Color::White);
        let (white, black) = match mine {
            Color::White => (key, opponent),
            Color::Black => (opponent, key),
        };
        let fresh = {
            let mut journal = self.journal();
            let fresh = journal.game(&paired.game_id).is_none();
            if let Err(e) = journal.follow(&paired.game_id, white, black) {
                tracing::error!(error = %e, "cannot write the Nostr journal");
            }
            fresh
        };
        if !fresh {
            return;
        }
        for (player, other, letter) in [(white, black, 'w'), (black, white, 'b')] {
            self.outbox.publish(protocol::reply(
                &self.keys,
                player,
                &format!("started:{}:{other}:{letter}", paired.game_id),
            ));
        }
        let seats = Seats {
            game_id: &paired.game_id,
            white,
            black,
        };
        let start = shakmaty::fen::Fen::from_position(
            &shakmaty::Chess::default(),
            shakmaty::EnPassantMode::Legal,
        )
        .to_string();
        self.outbox
            .publish(protocol::state(&self.keys, &seats, &start, None));
        self.follow(paired.game_id.clone());
    }

    /// The players of a game by key: from the journal for games paired here,
    /// else from the game service (Nostr guests and linked accounts).
    async fn seats(&self, game_id: &str) -> Option<OwnedSeats> {
        if let Some(game) = self.journal().game(game_id) {
            return Some(OwnedSeats::new(game_id, &game.white, &game.black));
        }
        let game = self.get_game(game_id).await.ok()??;
        let white = self.key_of(game.white.as_ref()).await?;
        let black = self.key_of(game.black.as_ref()).await?;
        Some(OwnedSeats::new(game_id, &white, &black))
    }

    /// The Nostr key of a player of a game, if it has one.
    async fn key_of(&self, player: Option<&common::Player>) -> Option<String> {
        match player?.kind.as_ref()? {
            common::player::Kind::Guest(g) => {
                g.guest_id.strip_prefix(GUEST_PREFIX).map(str::to_owned)
            }
            common::player::Kind::Registered(r) => {
                let request = chess_proto::rating::v1::GetPlayerRequest {
                    key: Some(chess_proto::rating::v1::get_player_request::Key::PlayerId(
                        r.player_id.clone(),
                    )),
                };
                let profile = self
                    .backends
                    .rating
                    .rpc()
                    .get_player(request)
                    .await
                    .ok()?
                    .into_inner()
                    .profile?;
                Some(profile.nostr_public_key).filter(|k| !k.is_empty())
            }
            common::player::Kind::Engine(_) => None,
        }
    }

    /// The game, `None` when there is no such game.
    async fn get_game(&self, game_id: &str) -> Result<Option<common::GameState>, tonic::Status> {
        let request = game_pb::GetGameRequest {
            game_id: game_id.to_owned(),
        };
        match self.backends.game.for_game(game_id).get_game(request).await {
            Ok(response) => Ok(response.into_inner().game),
            Err(status) if Reason::of(&status) == Some(Reason::NotFound) => Ok(None),
            Err(status) => Err(status),
        }
    }

    fn refuse(&self, event: &Event, seats: Option<&OwnedSeats>, message: &str) {
        tracing::debug!(message, "refused");
        let seats = seats.map(OwnedSeats::borrow);
        self.outbox.publish(protocol::error(
            &self.keys,
            &event.id,
            seats.as_ref(),
            &event.pubkey,
            message,
        ));
    }

    /// A 20303: a move or `quit` in a game.
    async fn play(self: &Arc<Self>, event: &Event, game_id: &str, action: Action) {
        let key = event.pubkey.to_hex();
        let seats = self.seats(game_id).await;
        let identity = match self.identity(&key).await {
            Ok(identity) => identity,
            Err(status) => {
                tracing::warn!(error = %status, "cannot look up a Nostr key's account");
                self.refuse(
                    event,
                    seats.as_ref(),
                    "the server is busy; nothing changed; send the move again",
                );
                return;
            }
        };
        let player_id = identity.player_id().to_owned();
        let outcome = match action {
            Action::Move(uci) => self.make_move(game_id, &player_id, uci).await,
            Action::Quit => {
                let request = game_pb::ResignRequest {
                    game_id: game_id.to_owned(),
                    player_id: player_id.clone(),
                };
                self.backends
                    .game
                    .acting(&player_id, game_id)
                    .resign(request)
                    .await
                    .map(drop)
            }
        };
        let Err(status) = outcome else {
            // The follower announces the new position (or the ending).
            return;
        };
        let message = match Reason::of(&status) {
            Some(Reason::NotFound) => "unknown game".to_owned(),
            Some(Reason::NotAPlayer) => "you are not a player of this game".to_owned(),
            Some(Reason::NotYourTurn) => "it is not your turn".to_owned(),
            Some(Reason::GameOver) => "the game is over".to_owned(),
            Some(Reason::IllegalMove | Reason::MalformedMove) => {
                format!("illegal move: {}", status.message())
            }
            Some(_) => status.message().to_owned(),
            None => {
                tracing::warn!(error = %status, "a Nostr move failed");
                "the server could not take the move now; nothing changed; send it again".to_owned()
            }
        };
        self.refuse(event, seats.as_ref(), &message);
    }

    /// Plays `uci` as the game's next ply, so that repeating the call while
    /// the game service restarts cannot play it twice.
    async fn make_move(
        &self,
        game_id: &str,
        player_id: &str,
        uci: String,
    ) -> Result<(), tonic::Status> {
        let mut attempt = 0;
        let mut retry = |status: tonic::Status| {
            attempt += 1;
            // A refusal is final; a transport failure is tried again.
            if Reason::of(&status).is_some() || attempt >= ATTEMPTS {
                Err(status)
            } else {
                Ok(RETRY_DELAY * attempt)
            }
        };
        let ply = loop {
            match self.get_game(game_id).await {
                Ok(Some(game)) => break game.ply + 1,
                Ok(None) => {
                    return Err(Reason::NotFound.status(tonic::Code::NotFound, "no such game"));
                }
                Err(status) => sleep(retry(status)?).await,
            }
        };
        loop {
            let request = game_pb::MakeMoveRequest {
                game_id: game_id.to_owned(),
                player_id: player_id.to_owned(),
                r#move: uci.clone(),
                ply: Some(ply),
            };
            match self.backends.game.make_move(request).await {
                Ok(_) => return Ok(()),
                Err(status) => sleep(retry(status)?).await,
            }
        }
    }

    /// Starts announcing a game's moves (once per game).
    fn follow(self: &Arc<Self>, game_id: String) {
        if !self
            .following
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(game_id.clone())
        {
            return;
        }
        let bridge = Arc::clone(self);
        tokio::spawn(async move {
            bridge.announce(&game_id).await;
            bridge
                .following
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&game_id);
        });
    }

    /// Publishes a 20302 for each move of the game from the last one told,
    /// and one with the result when it ends.
    async fn announce(&self, game_id: &str) {
        let Some(seats) = self
            .journal()
            .game(game_id)
            .map(|g| OwnedSeats::new(game_id, &g.white, &g.black))
        else {
            return;
        };
        let mut fen = None;
        loop {
            let told = self.journal().game(game_id).map_or(0, |g| g.told_ply);
            // The position now, for an ending that brings no move.
            match self.get_game(game_id).await {
                Ok(Some(game)) => {
                    fen.get_or_insert(game.fen.clone());
                    if game.status == common::GameStatus::Finished as i32 && game.ply <= told {
                        let result = (result_of(game.result), termination_of(game.termination));
                        self.announce_end(&seats, &game.fen, result);
                        return;
                    }
                }
                Ok(None) => {
                    tracing::warn!(game_id, "a followed Nostr game does not exist");
                    let _ = self.journal().ended(game_id);
                    return;
                }
                Err(_) => {
                    if self.pause().await {
                        continue;
                    }
                    return;
                }
            }
            let mut stream = match self.backends.game.watch_game(game_id, Some(told)).await {
                Ok(events) => events,
                Err(status) => {
                    tracing::debug!(game_id, error = %status, "cannot follow a Nostr game; retrying");
                    if self.pause().await {
                        continue;
                    }
                    return;
                }
            };
            loop {
                let message = tokio::select! {
                    message = stream.next() => message,
                    () = self.shutdown.cancelled() => return,
                };
                let Some(Ok(message)) = message else { break };
                let Some(event) = message.event else { continue };
                match event.kind {
                    Some(common::game_event::Kind::MoveMade(made)) => {
                        let told = self.journal().game(game_id).map_or(0, |g| g.told_ply);
                        if event.ply <= told {
                            continue;
                        }
                        self.outbox.publish(protocol::state(
                            &self.keys,
                            &seats.borrow(),
                            &made.fen,
                            None,
                        ));
                        fen = Some(made.fen);
                        if let Err(e) = self.journal().told(game_id, event.ply) {
                            tracing::warn!(error = %e, "cannot write the Nostr journal");
                        }
                    }
                    Some(common::game_event::Kind::GameEnded(ended)) => {
                        let result = (result_of(ended.result), termination_of(ended.termination));
                        let fen = fen.clone().unwrap_or_default();
                        self.announce_end(&seats, &fen, result);
                        return;
                    }
                    _ => {}
                }
            }
            if !self.pause().await {
                return;
            }
        }
    }

    fn announce_end(&self, seats: &OwnedSeats, fen: &str, (score, how): (&str, String)) {
        self.outbox.publish(protocol::state(
            &self.keys,
            &seats.borrow(),
            fen,
            Some((score, &how)),
        ));
        if let Err(e) = self.journal().ended(&seats.game_id) {
            tracing::warn!(error = %e, "cannot write the Nostr journal");
        }
    }

    /// Waits before trying again; false at shutdown.
    async fn pause(&self) -> bool {
        tokio::select! {
            () = sleep(RETRY_DELAY) => true,
            () = self.shutdown.cancelled() => false,
        }
    }
}

enum Action {
    Move(String),
    Quit,
}

/// [`Seats`] that own their keys.
#[derive(Clone, Debug)]
pub struct OwnedSeats {
    game_id: String,
    white: String,
    black: String,
}

impl OwnedSeats {
    fn new(game_id: &str, white: &str, black: &str) -> Self {
        Self {
            game_id: game_id.to_owned(),
            white: white.to_owned(),
            black: black.to_owned(),
        }
    }

    fn borrow(&self) -> Seats<'_> {
        Seats {
            game_id: &self.game_id,
            white: &self.white,
            black: &self.black,
        }
    }
}

/// `1-0`, `0-1`, `1/2-1/2` or `*` (aborted).
fn result_of(result: i32) -> &'static str {
    match common::GameResult::try_from(result) {
        Ok(common::GameResult::WhiteWins) => "1-0",
        Ok(common::GameResult::BlackWins) => "0-1",
        Ok(common::GameResult::Draw) => "1/2-1/2",
        _ => "*",
    }
}

/// How the game ended, in words: `checkmate`, `threefold repetition`, …
fn termination_of(termination: i32) -> String {
    common::Termination::try_from(termination)
        .ok()
        .and_then(|t| {
            t.as_str_name()
                .strip_prefix("TERMINATION_")
                .map(str::to_owned)
        })
        .map_or_else(
            || "unknown".to_owned(),
            |t| t.to_ascii_lowercase().replace('_', " "),
        )
}

/// Whether `key` is a player's key in hex (what a guest id carries).
pub fn is_key(key: &str) -> bool {
    PublicKey::from_hex(key).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endings_in_words() {
        assert_eq!(result_of(common::GameResult::BlackWins as i32), "0-1");
        assert_eq!(result_of(0), "*");
        assert_eq!(
            termination_of(common::Termination::ThreefoldRepetition as i32),
            "threefold repetition"
        );
        assert_eq!(termination_of(99), "unknown");
    }
}
