//! One task per live game.
//!
//! A game's actor owns its [`Game`], so moves to one game are serialised
//! without any lock shared between games. For every change it makes the
//! writes durable first, then answers the caller, then publishes the events.
//! It runs the game's timers (flag, first-move window, engine retry) itself,
//! so time runs out at the exact instant with nobody connected, and it asks
//! the engine for the computer's moves.
//!
//! Finished games linger briefly for readers, then their actor stops; the
//! [`Registry`] loads a game back from the store when it is asked for again.

use std::{
    collections::HashMap,
    hash::{BuildHasher as _, RandomState},
    sync::{
        Arc, RwLock,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use chess_domain::TimeControl;
use chess_proto::common::v1 as pb;
use chess_runtime::Shutdown;
use rand::Rng as _;
use shakmaty::Color;
use tokio::{
    sync::{broadcast, mpsc, oneshot},
    time::Instant,
};

use crate::{
    clients::{Engine, EngineError, Reporter},
    convert,
    error::Error,
    hub::PlayerHub,
    model::{ClockReading, Event, Game, GameError, GameSetup},
    store::{self, Store, WriteOp},
    time::TimeSource,
};

/// How long a finished game's actor stays for readers.
const LINGER: Duration = Duration::from_secs(30);
/// Events a slow watcher may fall behind before it is cut off.
const WATCH_CAPACITY: usize = 256;
const SHARDS: usize = 32;

/// What every actor needs.
#[derive(Debug)]
pub struct Context {
    pub store: Store,
    pub hub: PlayerHub,
    pub engine: Engine,
    pub reporter: Reporter,
    pub time: TimeSource,
    pub shutdown: Shutdown,
}

/// An action a player takes.
#[derive(Clone, Debug)]
pub enum Action {
    Move(String),
    Resign,
    OfferDraw,
    AcceptDraw,
    DeclineDraw,
    ClaimDraw,
    Abort,
}

/// The outcome of an action: what it caused and where the game stands, but
/// not the game itself (copying a long game for every move would cost in
/// proportion to its length).
#[derive(Clone, Debug)]
pub struct Acted {
    pub events: Vec<Event>,
    pub clock: ClockReading,
    /// Whether the game runs clocks.
    pub timed: bool,
    /// Half-moves played after the action.
    pub ply: u32,
    /// The side the acting player plays.
    pub side: Color,
}

/// The position a hint is computed for.
#[derive(Clone, Debug)]
pub struct HintPosition {
    pub initial_fen: String,
    pub moves: Vec<String>,
}

enum Message {
    Act {
        actor: String,
        action: Action,
        reply: oneshot::Sender<Result<Acted, Error>>,
    },
    View {
        reply: oneshot::Sender<Game>,
    },
    Watch {
        reply: oneshot::Sender<(Game, broadcast::Receiver<Arc<pb::GameEvent>>)>,
    },
    Hint {
        actor: String,
        reply: oneshot::Sender<Result<HintPosition, Error>>,
    },
}

/// A handle to a game's actor.
#[derive(Clone, Debug)]
pub struct GameHandle {
    tx: mpsc::Sender<Message>,
    generation: u64,
}

impl GameHandle {
    async fn ask<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Message) -> Option<T> {
        let (reply, answer) = oneshot::channel();
        self.tx.send(make(reply)).await.ok()?;
        answer.await.ok()
    }
}

/// Every live game, by id.
#[derive(Debug)]
pub struct Registry {
    ctx: Arc<Context>,
    hasher: RandomState,
    shards: Vec<RwLock<HashMap<String, GameHandle>>>,
    /// Serialises loading a game from the store, per shard, so that a game is
    /// never loaded twice.
    loading: Vec<tokio::sync::Mutex<()>>,
    generations: AtomicU64,
}

impl Registry {
    pub fn new(ctx: Arc<Context>) -> Arc<Self> {
        Arc::new(Self {
            ctx,
            hasher: RandomState::new(),
            shards: (0..SHARDS).map(|_| RwLock::default()).collect(),
            loading: (0..SHARDS).map(|_| tokio::sync::Mutex::default()).collect(),
            generations: AtomicU64::new(0),
        })
    }

    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    fn shard_of(&self, id: &str) -> usize {
        self.hasher.hash_one(id) as usize % SHARDS
    }

    fn cached(&self, id: &str) -> Option<GameHandle> {
        let shard = self.shards[self.shard_of(id)]
            .read()
            .unwrap_or_else(|p| p.into_inner());
        shard.get(id).cloned()
    }

    /// Starts an actor for `game` and registers it.
    pub fn start(self: &Arc<Self>, game: Game) -> GameHandle {
        let (tx, rx) = mpsc::channel(64);
        let handle = GameHandle {
            tx,
            generation: self.generations.fetch_add(1, Ordering::Relaxed),
        };
        let id = game.id().to_owned();
        {
            let mut shard = self.shards[self.shard_of(&id)]
                .write()
                .unwrap_or_else(|p| p.into_inner());
            shard.insert(id, handle.clone());
        }
        let (events, _) = broadcast::channel(WATCH_CAPACITY);
        let (engine_tx, engine_rx) = mpsc::channel(4);
        let actor = Actor {
            game,
            ctx: Arc::clone(&self.ctx),
            registry: Arc::downgrade(self),
            generation: handle.generation,
            inbox: rx,
            events,
            engine_tx,
            engine_rx,
            engine_pending: false,
            engine_retry_at: None,
            engine_failures: 0,
        };
        tokio::spawn(actor.run());
        handle
    }

    /// Creates, stores and starts a game, announcing it to its players (and to
    /// daily-game watchers), or returns the one made earlier with the same
    /// idempotency key.
    pub async fn create_game(
        self: &Arc<Self>,
        setup: GameSetup,
        idempotency_key: Option<String>,
    ) -> Result<Game, Error> {
        let ctx = &self.ctx;
        if let Some(key) = &idempotency_key
            && let Some(id) = ctx.store.game_for_key(key).await?
        {
            return self.view(&id).await;
        }
        let game = Game::new(new_game_id(), setup, ctx.time.now())?;
        let row = store::new_game_row(&game, idempotency_key.clone());
        if let Err(e) = ctx
            .store
            .write(vec![WriteOp::InsertGame(Box::new(row))])
            .await
        {
            // A concurrent create with the same key won the race.
            if let Some(key) = &idempotency_key
                && let Some(id) = ctx.store.game_for_key(key).await?
            {
                return self.view(&id).await;
            }
            return Err(e.into());
        }
        self.start(game.clone());
        let started = Arc::new(convert::notice(
            &game,
            game.created_at(),
            pb::game_event::Kind::GameStarted(pb::GameStarted {
                game: Some(convert::game_state(&game, game.created_at(), true)),
            }),
        ));
        for player in [game.white(), game.black()] {
            if let Some(id) = player.actor_id() {
                ctx.hub.publish(id, &started);
            }
        }
        if matches!(game.time_control(), TimeControl::Daily { .. }) {
            ctx.hub.publish_daily(&started);
        }
        tracing::info!("game {} {}", game.id(), game.started_line());
        Ok(game)
    }

    /// The actor of game `id`, loading the game if it is stored but not live.
    async fn handle(self: &Arc<Self>, id: &str) -> Result<GameHandle, Error> {
        if let Some(handle) = self.cached(id) {
            return Ok(handle);
        }
        let _loading = self.loading[self.shard_of(id)].lock().await;
        if let Some(handle) = self.cached(id) {
            return Ok(handle);
        }
        let game = self
            .ctx
            .store
            .load(id)
            .await?
            .ok_or_else(|| Error::NotFound(id.to_owned()))?;
        Ok(self.start(game))
    }

    /// Sends a request to game `id`'s actor, retrying once if the actor
    /// stopped in between.
    async fn ask<T>(
        self: &Arc<Self>,
        id: &str,
        make: impl Fn(oneshot::Sender<T>) -> Message,
    ) -> Result<T, Error> {
        for _ in 0..2 {
            let handle = self.handle(id).await?;
            if let Some(answer) = handle.ask(&make).await {
                return Ok(answer);
            }
            self.forget(id, handle.generation);
        }
        Err(Error::Busy)
    }

    fn forget(&self, id: &str, generation: u64) {
        let mut shard = self.shards[self.shard_of(id)]
            .write()
            .unwrap_or_else(|p| p.into_inner());
        if shard.get(id).is_some_and(|h| h.generation == generation) {
            shard.remove(id);
        }
    }

    /// `actor` takes `action` in game `id`.
    pub async fn act(
        self: &Arc<Self>,
        id: &str,
        actor: &str,
        action: Action,
    ) -> Result<Acted, Error> {
        self.ask(id, |reply| Message::Act {
            actor: actor.to_owned(),
            action: action.clone(),
            reply,
        })
        .await?
    }

    /// A copy of game `id` as it is now.
    pub async fn view(self: &Arc<Self>, id: &str) -> Result<Game, Error> {
        self.ask(id, |reply| Message::View { reply }).await
    }

    /// A copy of game `id` and its events from now on.
    pub async fn watch(
        self: &Arc<Self>,
        id: &str,
    ) -> Result<(Game, broadcast::Receiver<Arc<pb::GameEvent>>), Error> {
        self.ask(id, |reply| Message::Watch { reply }).await
    }

    /// The position `actor` may ask a hint for.
    pub async fn hint_position(
        self: &Arc<Self>,
        id: &str,
        actor: &str,
    ) -> Result<HintPosition, Error> {
        self.ask(id, |reply| Message::Hint {
            actor: actor.to_owned(),
            reply,
        })
        .await?
    }
}

struct Actor {
    game: Game,
    ctx: Arc<Context>,
    registry: std::sync::Weak<Registry>,
    generation: u64,
    inbox: mpsc::Receiver<Message>,
    events: broadcast::Sender<Arc<pb::GameEvent>>,
    engine_tx: mpsc::Sender<(u32, Result<String, EngineError>)>,
    engine_rx: mpsc::Receiver<(u32, Result<String, EngineError>)>,
    engine_pending: bool,
    engine_retry_at: Option<Instant>,
    engine_failures: u32,
}

/// Sleeps until `at`, or forever.
async fn until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

impl Actor {
    async fn run(mut self) {
        let game_id = self.game.id().to_owned();
        self.ask_engine();
        loop {
            let deadline = self
                .game
                .next_deadline()
                .map(|at| self.ctx.time.instant_at(at));
            let linger = (!self.game.is_active()).then(|| Instant::now() + LINGER);
            tokio::select! {
                message = self.inbox.recv() => match message {
                    Some(message) => self.handle(message).await,
                    None => break,
                },
                Some((ply, answer)) = self.engine_rx.recv() => self.engine_answered(ply, answer).await,
                () = until(deadline) => {
                    let now = self.ctx.time.now();
                    let events = self.game.check_deadline(now);
                    if let Err(e) = self.commit(&events, now).await {
                        tracing::warn!(game_id, error = %e, "could not store a timeout; retrying");
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                }
                () = until(self.engine_retry_at) => {
                    self.engine_retry_at = None;
                    self.ask_engine();
                }
                () = until(linger) => break,
                () = self.ctx.shutdown.cancelled() => break,
            }
        }
        if let Some(registry) = self.registry.upgrade() {
            registry.forget(&game_id, self.generation);
        }
    }

    async fn handle(&mut self, message: Message) {
        match message {
            Message::Act {
                actor,
                action,
                reply,
            } => {
                let result = self.act(&actor, action).await;
                // The caller may have gone; the change stands regardless.
                let _ = reply.send(result);
                self.ask_engine();
            }
            Message::View { reply } => {
                let _ = reply.send(self.game.clone());
            }
            Message::Watch { reply } => {
                let _ = reply.send((self.game.clone(), self.events.subscribe()));
            }
            Message::Hint { actor, reply } => {
                let _ = reply.send(self.hint(&actor));
            }
        }
    }

    fn side_of(&self, actor: &str) -> Result<Color, Error> {
        self.game
            .side_of(actor)
            .ok_or(Error::Game(GameError::NotAPlayer))
    }

    async fn act(&mut self, actor: &str, action: Action) -> Result<Acted, Error> {
        let side = self.side_of(actor)?;
        let now = self.ctx.time.now();
        // A flag that fell before this action arrived ends the game first.
        let expired = self.game.check_deadline(now);
        if !expired.is_empty() {
            self.commit(&expired, now).await?;
            return Err(Error::Game(GameError::GameOver));
        }
        let events = match action {
            Action::Move(input) => self.game.play(side, &input, now),
            Action::Resign => self.game.resign(side, now),
            Action::OfferDraw => self.game.offer_draw(side, now),
            Action::AcceptDraw => self.game.accept_draw(side, now),
            Action::DeclineDraw => self.game.decline_draw(side),
            Action::ClaimDraw => self.game.claim_draw(side, now),
            Action::Abort => self.game.abort(side, now),
        }?;
        self.commit(&events, now).await?;
        Ok(Acted {
            clock: self.game.clock(now),
            timed: self.game.time_control().is_timed(),
            ply: self.game.ply(),
            side,
            events,
        })
    }

    fn hint(&self, actor: &str) -> Result<HintPosition, Error> {
        let side = self.side_of(actor)?;
        if !self.game.hints_allowed() {
            return Err(Error::Game(GameError::HintsNotAllowed));
        }
        if !self.game.is_active() {
            return Err(Error::Game(GameError::GameOver));
        }
        if side != self.game.turn() {
            return Err(Error::Game(GameError::NotYourTurn));
        }
        Ok(HintPosition {
            initial_fen: self.game.initial_fen().to_owned(),
            moves: self.game.uci_moves(),
        })
    }

    /// Makes `events` (already applied to the game) durable, then publishes
    /// them. If they cannot be stored, the game is reloaded from the store so
    /// memory never holds what the database does not.
    async fn commit(&mut self, events: &[Event], now: i64) -> Result<(), Error> {
        if events.is_empty() {
            return Ok(());
        }
        let ops = store::ops_for(&self.game, events, now);
        if let Err(e) = self.ctx.store.write(ops).await {
            tracing::error!(game_id = self.game.id(), error = %e, "write failed; reloading the game");
            match self.ctx.store.load(self.game.id()).await {
                Ok(Some(stored)) => self.game = stored,
                Ok(None) | Err(_) => {
                    // Without a trustworthy copy the actor must not go on;
                    // dropping the inbox makes callers reload it.
                    self.inbox.close();
                }
            }
            return Err(e.into());
        }
        if events.iter().any(|e| matches!(e, Event::GameEnded(_))) {
            if let Some(line) = self.game.finished_line() {
                tracing::info!("game {} {line}", self.game.id());
            }
            self.ctx.reporter.notify();
            self.engine_retry_at = None;
        }
        for event in events {
            self.publish(convert::event(&self.game, event, now));
        }
        Ok(())
    }

    fn publish(&self, event: pb::GameEvent) {
        let event = Arc::new(event);
        // No watchers is fine.
        let _ = self.events.send(Arc::clone(&event));
        for player in [self.game.white(), self.game.black()] {
            if let Some(id) = player.actor_id() {
                self.ctx.hub.publish(id, &event);
            }
        }
        if matches!(self.game.time_control(), TimeControl::Daily { .. }) {
            self.ctx.hub.publish_daily(&event);
        }
    }

    /// Starts the engine's search if it is to move and not already thinking.
    fn ask_engine(&mut self) {
        let Some(level) = self.game.engine_to_move() else {
            return;
        };
        if self.engine_pending || self.engine_retry_at.is_some() {
            return;
        }
        self.engine_pending = true;
        let engine = self.ctx.engine.clone();
        let answers = self.engine_tx.clone();
        let ply = self.game.ply();
        let game_id = self.game.id().to_owned();
        let initial_fen = self.game.initial_fen().to_owned();
        let moves = self.game.uci_moves();
        tokio::spawn(async move {
            let answer = engine.best_move(&game_id, &initial_fen, moves, level).await;
            // The actor may have stopped; then the answer is moot.
            let _ = answers.send((ply, answer)).await;
        });
    }

    async fn engine_answered(&mut self, ply: u32, answer: Result<String, EngineError>) {
        self.engine_pending = false;
        if ply != self.game.ply() || self.game.engine_to_move().is_none() {
            return;
        }
        let side = self.game.turn();
        let now = self.ctx.time.now();
        let failure = match answer {
            Ok(uci) => match self.game.play(side, &uci, now) {
                Ok(events) => match self.commit(&events, now).await {
                    Ok(()) => {
                        self.engine_failures = 0;
                        self.ask_engine();
                        return;
                    }
                    Err(e) => e.to_string(),
                },
                Err(e) => format!("the engine's move {uci} was refused: {e}"),
            },
            Err(e) => e.to_string(),
        };
        self.engine_failures += 1;
        let backoff = Duration::from_millis(250 * 2u64.pow(self.engine_failures.min(7)));
        tracing::warn!(game_id = self.game.id(), error = %failure, retry_in = ?backoff, "engine move failed");
        self.engine_retry_at = Some(Instant::now() + backoff);
        self.publish(convert::notice(
            &self.game,
            now,
            pb::game_event::Kind::EngineFailed(pb::EngineFailed { message: failure }),
        ));
    }
}

/// A new game id: 12 letters and digits.
fn new_game_id() -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let mut rng = rand::rng();
    (0..12)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}
