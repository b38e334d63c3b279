//! The core handle: every live game, by id, and the creation of new ones.
//!
//! [`Registry::create_game`] stores a new game before it starts it and
//! announces it; the other calls go to the game's actor (private, in
//! `actor.rs`), one task per live game.
//!
//! Finished games linger briefly for readers, then their actor stops; the
//! [`Registry`] loads a game back from the store when it is asked for again.
//! Active games left alone for [`Context::evict_after`] leave memory the
//! same way; one with a deadline (a flag that will fall) is loaded back by
//! the registry at that instant.
//!
//! Only games of the shards this replica serves ([`Shards`]) are run here:
//! asked about another, the registry refuses with where to go instead.
//! What keeps the registry serving its shards lives beside it: [`lone`], a
//! lone replica's resume and heartbeat; [`manager`], the leases of a
//! replica among several, which hands shards in
//! ([`Registry::take_shards`]) and out ([`Registry::drop_shard`]), both in
//! `handover.rs`.

mod actor;
mod handover;
pub mod lone;
pub mod manager;
mod spectators;

pub use spectators::Spectating;

use actor::GameActor;

use std::{
    collections::HashMap,
    sync::{
        Arc, RwLock, Weak,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use chess_domain::{GameId, PlayerId};
use chess_runtime::Shutdown;
use chess_shards::{SHARDS, shard_of};
use shakmaty::Color;
use tokio::{
    sync::{broadcast, mpsc, oneshot},
    time::Instant,
};
use tokio_util::time::{DelayQueue, delay_queue};

use crate::{
    clients::{EngineClient, Reporter},
    convert,
    error::Error,
    hub::{PlayerHub, WireEvent},
    model::{ClockReading, Event, Game, GameSetup},
    shards::{Serving, Shards},
    store::{self, Store, WriteOp},
    time::TimeSource,
};

/// How long a finished game's actor stays for readers.
const LINGER: Duration = Duration::from_secs(30);
/// Events a slow watcher may fall behind before it is cut off.
const WATCH_CAPACITY: usize = 256;
/// How many times a request is sent to a game's actor that keeps stopping
/// before it gets there.
const ASK_TRIES: usize = 4;
/// How long to wait before loading an evicted game at its deadline again,
/// after a failure to.
const RELOAD_RETRY: Duration = Duration::from_secs(1);
/// Game ids drawn before giving up finding one in a served shard.
const ID_TRIES: usize = 8192;

/// What every actor needs.
#[derive(Debug)]
pub struct Context {
    pub store: Store,
    pub hub: PlayerHub,
    pub engine: EngineClient,
    pub reporter: Reporter,
    pub time: TimeSource,
    pub shutdown: Shutdown,
    /// How long an active game stays in memory with nothing to do; zero
    /// keeps every active game in memory.
    pub evict_after: Duration,
    /// The operator allows takebacks in rated games.
    pub rated_takebacks: bool,
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
    ProposeTakeback,
    AcceptTakeback,
    DeclineTakeback,
    CancelTakeback,
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
    /// The game after a takeback (which replaces what a caller holds of it).
    pub taken_back: Option<Box<Game>>,
}

/// The position a hint is computed for.
#[derive(Clone, Debug)]
pub struct HintPosition {
    pub initial_fen: String,
    pub moves: Vec<String>,
}

/// A watch of one game just begun.
#[derive(Debug)]
pub struct Watching {
    /// The game as it stands.
    pub game: Game,
    /// Its live events from here on.
    pub events: broadcast::Receiver<WireEvent>,
    /// Held while the watcher is counted among the spectators: one who is
    /// none of the game's players.
    pub spectating: Option<Spectating>,
    /// The spectators now, this watcher included.
    pub spectators: u32,
}

enum Message {
    Act {
        actor: PlayerId,
        action: Action,
        reply: oneshot::Sender<Result<Acted, Error>>,
    },
    View {
        reply: oneshot::Sender<Game>,
    },
    Watch {
        /// Who watches, if known.
        watcher: Option<PlayerId>,
        /// The watch is a player's (it leaves out that side's moves).
        as_player: bool,
        reply: oneshot::Sender<Watching>,
    },
    Hint {
        actor: PlayerId,
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
    shards: Arc<Shards>,
    /// The live games' actors, per shard of the games.
    live: Vec<RwLock<HashMap<GameId, GameHandle>>>,
    /// Serialises loading a game from the store, per shard, so that a game is
    /// never loaded twice.
    loading: Vec<tokio::sync::Mutex<()>>,
    generations: AtomicU64,
    /// Evicted games with a deadline, to the task that loads each back then.
    evicted: mpsc::UnboundedSender<(GameId, Instant)>,
}

impl Registry {
    pub fn new(ctx: Arc<Context>, shards: Arc<Shards>) -> Arc<Self> {
        let (evicted, deadlines) = mpsc::unbounded_channel();
        let shutdown = ctx.shutdown.clone();
        let registry = Arc::new(Self {
            ctx,
            shards,
            live: (0..SHARDS).map(|_| RwLock::default()).collect(),
            loading: (0..SHARDS).map(|_| tokio::sync::Mutex::default()).collect(),
            generations: AtomicU64::new(0),
            evicted,
        });
        tokio::spawn(wake_evicted(Arc::downgrade(&registry), deadlines, shutdown));
        registry
    }

    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    pub fn shards(&self) -> &Arc<Shards> {
        &self.shards
    }

    fn bucket(&self, id: &GameId) -> &RwLock<HashMap<GameId, GameHandle>> {
        &self.live[usize::from(shard_of(id))]
    }

    fn cached(&self, id: &GameId) -> Option<GameHandle> {
        let bucket = self.bucket(id).read().unwrap_or_else(|p| p.into_inner());
        bucket.get(id).cloned()
    }

    /// How shard `shard` is served here, or the refusal naming where it is.
    fn serving(&self, id: &GameId, shard: u16) -> Result<Arc<Serving>, Error> {
        self.shards
            .serving(shard)
            .map_err(|elsewhere| Error::NotServed {
                game: id.clone(),
                shard,
                elsewhere,
            })
    }

    /// Starts an actor for `game`, served under `serving`, and registers it.
    pub fn start(self: &Arc<Self>, game: Game, serving: Arc<Serving>) -> GameHandle {
        let id = game.id().clone();
        let handle = GameActor::spawn(
            game,
            Arc::clone(&self.ctx),
            Arc::downgrade(self),
            self.generations.fetch_add(1, Ordering::Relaxed),
            serving,
        );
        let mut bucket = self.bucket(&id).write().unwrap_or_else(|p| p.into_inner());
        bucket.insert(id, handle.clone());
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
        let (id, serving) = self.new_id()?;
        let game = Game::new(id, setup, ctx.time.now())?;
        let row = store::new_game_row(&game, idempotency_key.clone());
        if let Err(e) = ctx
            .store
            .write(serving.fence, vec![WriteOp::InsertGame(Box::new(row))])
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
        self.start(game.clone(), serving);
        let started = WireEvent::new(convert::game_started(&game));
        for player in [game.white(), game.black()] {
            if let Some(id) = player.actor_id() {
                ctx.hub.publish(id, &started);
            }
        }
        if game.time_control().is_daily() {
            ctx.hub.publish_daily(&started);
        }
        ctx.hub.publish_live(&started);
        tracing::info!("game {} {}", game.id(), game.started_line());
        Ok(game)
    }

    /// A fresh game id in a shard served here, and how it is served.
    fn new_id(&self) -> Result<(GameId, Arc<Serving>), Error> {
        for _ in 0..ID_TRIES {
            let id = GameId::generate();
            if let Ok(serving) = self.shards.serving(shard_of(&id)) {
                return Ok((id, serving));
            }
        }
        Err(Error::NoShards)
    }

    /// The actor of game `id`, loading the game if it is stored but not live;
    /// refused if its shard is not served here.
    async fn handle(self: &Arc<Self>, id: &GameId) -> Result<GameHandle, Error> {
        let shard = shard_of(id);
        self.serving(id, shard)?;
        if let Some(handle) = self.cached(id) {
            return Ok(handle);
        }
        let _loading = self.loading[usize::from(shard)].lock().await;
        if let Some(handle) = self.cached(id) {
            return Ok(handle);
        }
        let game = self
            .ctx
            .store
            .load(id)
            .await?
            .ok_or_else(|| Error::NotFound(id.to_string()))?;
        // The shard may have gone while the game was read.
        let serving = self.serving(id, shard)?;
        Ok(self.start(game, serving))
    }

    /// Sends a request to game `id`'s actor, trying again (with the game
    /// loaded anew) if the actor stopped in between: it lingered out or left
    /// memory idle just as the request came.
    async fn ask<T>(
        self: &Arc<Self>,
        id: &GameId,
        make: impl Fn(oneshot::Sender<T>) -> Message,
    ) -> Result<T, Error> {
        for _ in 0..ASK_TRIES {
            let handle = self.handle(id).await?;
            if let Some(answer) = handle.ask(&make).await {
                return Ok(answer);
            }
            self.forget(id, handle.generation);
        }
        Err(Error::Busy)
    }

    /// Whether game `id` is in memory now.
    pub fn is_live(&self, id: &GameId) -> bool {
        self.cached(id).is_some()
    }

    /// How many games are in memory now.
    pub fn live_count(&self) -> usize {
        self.live
            .iter()
            .map(|bucket| bucket.read().unwrap_or_else(|p| p.into_inner()).len())
            .sum()
    }

    /// Game `id` left memory while active; if it has a deadline, it is
    /// loaded back then, so that its actor ends the game on time.
    fn evicted(&self, id: &GameId, deadline: Option<Instant>) {
        if let Some(at) = deadline {
            // Refused only once the waker has stopped, at shutdown.
            let _ = self.evicted.send((id.clone(), at));
        }
    }

    /// Loads game `id` at its deadline (if it is in memory already, its own
    /// actor keeps the deadline), retrying while the store fails.
    async fn load_at_deadline(self: Arc<Self>, id: GameId) {
        loop {
            match self.handle(&id).await {
                // Its shard went to another replica, which keeps the time;
                // or it is gone.
                Ok(_) | Err(Error::NotServed { .. } | Error::NotFound(_)) => return,
                Err(e) => {
                    tracing::warn!(game_id = %id, error = %e, "cannot load an evicted game at its deadline; retrying");
                }
            }
            tokio::select! {
                () = tokio::time::sleep(RELOAD_RETRY) => {}
                () = self.ctx.shutdown.cancelled() => return,
            }
        }
    }

    fn forget(&self, id: &GameId, generation: u64) {
        let mut bucket = self.bucket(id).write().unwrap_or_else(|p| p.into_inner());
        if bucket.get(id).is_some_and(|h| h.generation == generation) {
            bucket.remove(id);
        }
    }

    /// `actor` takes `action` in game `id`.
    pub async fn act(
        self: &Arc<Self>,
        id: &GameId,
        actor: &PlayerId,
        action: Action,
    ) -> Result<Acted, Error> {
        self.ask(id, |reply| Message::Act {
            actor: actor.clone(),
            action: action.clone(),
            reply,
        })
        .await?
    }

    /// A copy of game `id` as it is now.
    pub async fn view(self: &Arc<Self>, id: &GameId) -> Result<Game, Error> {
        self.ask(id, |reply| Message::View { reply }).await
    }

    /// What a watcher of `player_id` missed, resuming from `cursors` (game
    /// id → the last ply it applied): for each of those games that the
    /// player plays, the game and its events after that ply (`None` when the
    /// ply is beyond the game: the watcher needs the whole game); for each
    /// other active game of the player, the game, also with `None`. Games
    /// the player does not play are left out, and so are games of shards
    /// served elsewhere: their replica tells of them.
    pub async fn missed(
        self: &Arc<Self>,
        player_id: &PlayerId,
        cursors: &HashMap<GameId, u32>,
    ) -> Result<Vec<(Game, Option<Vec<Event>>)>, Error> {
        let mut missed = Vec::new();
        for (id, &ply) in cursors {
            // Another replica tells of the games it serves.
            if !self.shards.serves(shard_of(id)) {
                continue;
            }
            let game = match self.view(id).await {
                Ok(game) => game,
                Err(Error::NotFound(_) | Error::NotServed { .. }) => continue,
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
                let id = GameId::trusted(row.id);
                if cursors.contains_key(&id) || !self.shards.serves(shard_of(&id)) {
                    continue;
                }
                match self.view(&id).await {
                    Ok(game) => missed.push((game, None)),
                    // It went elsewhere meanwhile; that replica tells of it.
                    Err(Error::NotServed { .. }) => {}
                    Err(e) => return Err(e),
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
        id: &GameId,
        watcher: Option<PlayerId>,
        as_player: bool,
    ) -> Result<Watching, Error> {
        self.ask(id, |reply| Message::Watch {
            watcher: watcher.clone(),
            as_player,
            reply,
        })
        .await
    }

    /// A hint for `actor` in game `id`, from the engine: the best move, or
    /// every legal move.
    pub async fn hint(
        self: &Arc<Self>,
        id: &GameId,
        actor: &PlayerId,
        kind: HintKind,
    ) -> Result<Vec<String>, Error> {
        let position: HintPosition = self
            .ask(id, |reply| Message::Hint {
                actor: actor.clone(),
                reply,
            })
            .await??;
        let engine = &self.ctx.engine;
        Ok(match kind {
            HintKind::Best => vec![
                engine
                    .best_move(
                        id.as_str(),
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

/// Keeps the deadlines of evicted games, one entry per game (the latest),
/// and loads each game back when its deadline comes. One queue for them all:
/// an evicted game costs an entry here, not a task.
async fn wake_evicted(
    registry: Weak<Registry>,
    mut evicted: mpsc::UnboundedReceiver<(GameId, Instant)>,
    shutdown: Shutdown,
) {
    let mut queue: DelayQueue<GameId> = DelayQueue::new();
    let mut keys: HashMap<GameId, delay_queue::Key> = HashMap::new();
    loop {
        tokio::select! {
            Some((id, at)) = evicted.recv() => match keys.get(&id) {
                Some(key) => queue.reset_at(key, at),
                None => {
                    let key = queue.insert_at(id.clone(), at);
                    keys.insert(id, key);
                }
            },
            Some(due) = std::future::poll_fn(|cx| queue.poll_expired(cx)) => {
                let id = due.into_inner();
                keys.remove(&id);
                let Some(registry) = registry.upgrade() else {
                    return;
                };
                tokio::spawn(registry.load_at_deadline(id));
            }
            () = shutdown.cancelled() => return,
        }
    }
}
