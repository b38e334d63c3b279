//! The core handle: every live game, by id, and the creation of new ones.
//!
//! [`Registry::create_game`] stores a new game before it starts it and
//! announces it; the other calls go to the game's actor (private, in
//! `actor.rs`), one task per live game.
//!
//! Finished games linger briefly for readers, then their actor stops; the
//! [`Registry`] loads a game back from the store when it is asked for again.

mod actor;

use actor::GameActor;

use std::{
    collections::HashMap,
    hash::{BuildHasher as _, RandomState},
    sync::{
        Arc, RwLock,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use chess_runtime::Shutdown;
use rand::Rng as _;
use shakmaty::Color;
use tokio::sync::{broadcast, mpsc, oneshot};

use crate::{
    clients::{EngineClient, Reporter},
    convert,
    error::Error,
    hub::{PlayerHub, WireEvent},
    model::{ClockReading, Event, Game, GameSetup},
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
    pub engine: EngineClient,
    pub reporter: Reporter,
    pub time: TimeSource,
    pub shutdown: Shutdown,
}

/// An action a player takes.
#[derive(Clone, Debug)]
pub enum Action {
    /// A move, and the ply it is meant to be, if the caller said.
    Move {
        input: String,
        ply: Option<u32>,
    },
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
        reply: oneshot::Sender<(Game, broadcast::Receiver<WireEvent>)>,
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
        let id = game.id().to_owned();
        let handle = GameActor::spawn(
            game,
            Arc::clone(&self.ctx),
            Arc::downgrade(self),
            self.generations.fetch_add(1, Ordering::Relaxed),
        );
        let mut shard = self.shards[self.shard_of(&id)]
            .write()
            .unwrap_or_else(|p| p.into_inner());
        shard.insert(id, handle.clone());
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
        let started = WireEvent::new(convert::game_started(&game));
        for player in [game.white(), game.black()] {
            if let Some(id) = player.actor_id() {
                ctx.hub.publish(id, &started);
            }
        }
        if game.time_control().is_daily() {
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

    /// What a watcher of `player_id` missed, resuming from `cursors` (game
    /// id → the last ply it applied): for each of those games that the
    /// player plays, the game and its events after that ply (`None` when the
    /// ply is beyond the game: the watcher needs the whole game); for each
    /// other active game of the player, the game, also with `None`. Games
    /// the player does not play are left out.
    pub async fn missed(
        self: &Arc<Self>,
        player_id: &str,
        cursors: &HashMap<String, u32>,
    ) -> Result<Vec<(Game, Option<Vec<Event>>)>, Error> {
        let mut missed = Vec::new();
        for (id, &ply) in cursors {
            let game = match self.view(id).await {
                Ok(game) => game,
                Err(Error::NotFound(_)) => continue,
                Err(e) => return Err(e),
            };
            if game.side_of(player_id).is_none() {
                continue;
            }
            let events = game.catch_up(ply);
            missed.push((game, events));
        }
        let mut token = String::new();
        loop {
            let (rows, next) = self
                .ctx
                .store
                .list(player_id, store::ListFilter::Active, 100, &token)
                .await?;
            for row in rows {
                if !cursors.contains_key(&row.id) {
                    missed.push((self.view(&row.id).await?, None));
                }
            }
            if next.is_empty() {
                return Ok(missed);
            }
            token = next;
        }
    }

    /// A copy of game `id` and its events from now on.
    pub async fn watch(
        self: &Arc<Self>,
        id: &str,
    ) -> Result<(Game, broadcast::Receiver<WireEvent>), Error> {
        self.ask(id, |reply| Message::Watch { reply }).await
    }

    /// A hint for `actor` in game `id`, from the engine: the best move, or
    /// every legal move.
    pub async fn hint(
        self: &Arc<Self>,
        id: &str,
        actor: &str,
        kind: HintKind,
    ) -> Result<Vec<String>, Error> {
        let position: HintPosition = self
            .ask(id, |reply| Message::Hint {
                actor: actor.to_owned(),
                reply,
            })
            .await??;
        let engine = &self.ctx.engine;
        Ok(match kind {
            HintKind::Best => vec![
                engine
                    .best_move(
                        id,
                        &position.initial_fen,
                        position.moves,
                        chess_domain::FULL_STRENGTH,
                    )
                    .await?,
            ],
            HintKind::AllMoves => {
                engine
                    .list_moves(&position.initial_fen, position.moves)
                    .await?
            }
        })
    }
}

/// What a hint tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HintKind {
    /// The engine's best move at full strength.
    Best,
    /// Every legal move, in the engine's order.
    AllMoves,
}

/// A new game id: 12 letters and digits.
fn new_game_id() -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let mut rng = rand::rng();
    (0..12)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}
