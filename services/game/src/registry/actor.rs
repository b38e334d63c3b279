//! One task per live game.
//!
//! A game's actor owns its [`Game`], so moves to one game are serialised
//! without any lock shared between games. For every change it makes the
//! writes durable first, then answers the caller, then publishes the events.
//! It runs the game's timers (flag, first-move window, engine retry) itself,
//! so time runs out at the exact instant with nobody connected, and it asks
//! the engine for the computer's moves.
//!
//! Finished games linger briefly for readers, then their actor stops, and the
//! [`Registry`] loads the game back from the store when it is asked for again.
//! So does an active game left alone for the context's `evict_after` (no
//! message, no watcher, no engine search under way): everything it holds is
//! in the store already, and a deadline it has (a flag, the first-move
//! window) is handed to the registry, which loads the game back at that
//! instant so that time still runs out with nobody connected.

use std::{
    sync::{Arc, Weak},
    time::Duration,
};

use chess_domain::{PlayerId, Timestamp};
use shakmaty::Color;
use tokio::{
    sync::{broadcast, mpsc},
    time::Instant,
};

use super::{
    Acted, Action, Context, GameHandle, HintPosition, LINGER, Message, Registry, WATCH_CAPACITY,
    Watching, spectators::Spectators,
};
use crate::{
    clients::EngineError,
    convert,
    error::Error,
    hub::WireEvent,
    model::{Event, Game, GameError},
    shards::Serving,
    store::{self, StoreError},
};

/// The owner of one live game.
pub(super) struct GameActor {
    game: Game,
    ctx: Arc<Context>,
    registry: Weak<Registry>,
    generation: u64,
    /// The shard's lease this game is run under: its writes carry it, and
    /// the actor stops when the shard stops being served here.
    serving: Arc<Serving>,
    /// Set when a write was refused because another replica holds the
    /// shard now: the actor stops at once.
    fenced: bool,
    inbox: mpsc::Receiver<Message>,
    /// The game's watchers, made with the first one and dropped with the
    /// last (an unwatched game keeps no buffer of events).
    events: Option<broadcast::Sender<WireEvent>>,
    /// Its watchers who are not its players, and how many were last told.
    spectators: Arc<Spectators>,
    spectators_told: u32,
    engine_tx: mpsc::Sender<(Asked, Result<String, EngineError>)>,
    engine_rx: mpsc::Receiver<(Asked, Result<String, EngineError>)>,
    /// Takebacks made while this actor ran: an engine answer asked for
    /// before one is for a position the game has left, even at the same ply.
    takebacks: u64,
    engine_pending: bool,
    engine_retry_at: Option<Instant>,
    engine_failures: u32,
    /// When the actor last had anything to do.
    busy_at: Instant,
}

/// The position an engine search was asked for: the game's ply, and the
/// takebacks made before it.
type Asked = (u32, u64);

/// Sleeps until `at`, or forever.
async fn until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

impl GameActor {
    /// Starts the actor of `game`; the handle is its mailbox.
    pub(super) fn spawn(
        game: Game,
        ctx: Arc<Context>,
        registry: Weak<Registry>,
        generation: u64,
        serving: Arc<Serving>,
    ) -> GameHandle {
        let (tx, inbox) = mpsc::channel(64);
        let (engine_tx, engine_rx) = mpsc::channel(4);
        let actor = Self {
            game,
            ctx,
            registry,
            generation,
            serving: Arc::clone(&serving),
            fenced: false,
            inbox,
            events: None,
            spectators: Arc::default(),
            spectators_told: 0,
            engine_tx,
            engine_rx,
            takebacks: 0,
            engine_pending: false,
            engine_retry_at: None,
            engine_failures: 0,
            busy_at: Instant::now(),
        };
        serving.tasks.spawn(actor.run());
        GameHandle { tx, generation }
    }

    async fn run(mut self) {
        let game_id = self.game.id().clone();
        self.ask_engine();
        while !self.fenced {
            let deadline = self
                .game
                .next_deadline()
                .map(|at| self.ctx.time.instant_at(at));
            let linger = (!self.game.is_active()).then(|| Instant::now() + LINGER);
            let evict = self
                .evictable()
                .then(|| self.busy_at + self.ctx.evict_after);
            tokio::select! {
                message = self.inbox.recv() => match message {
                    Some(message) => {
                        self.busy_at = Instant::now();
                        self.handle(message).await;
                    }
                    None => break,
                },
                Some((asked, answer)) = self.engine_rx.recv() => {
                    self.busy_at = Instant::now();
                    self.engine_answered(asked, answer).await;
                }
                () = until(deadline) => {
                    let now = self.ctx.time.now();
                    let events = self.game.check_deadline(now);
                    if let Err(e) = self.commit(&events, now).await && !self.fenced {
                        tracing::warn!(%game_id, error = %e, "could not store a timeout; retrying");
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                }
                () = self.spectators.changed() => self.tell_spectators(),
                () = until(self.engine_retry_at) => {
                    self.engine_retry_at = None;
                    self.ask_engine();
                }
                () = until(linger) => break,
                () = until(evict) => {
                    if self.watched() || !self.inbox.is_empty() {
                        // Looked at again once the watchers may have gone,
                        // or once the message that just came is handled.
                        self.busy_at = Instant::now();
                    } else {
                        self.evict(deadline);
                        break;
                    }
                }
                () = self.ctx.shutdown.cancelled() => break,
                () = self.serving.stop.cancelled() => break,
            }
        }
        if let Some(registry) = self.registry.upgrade() {
            registry.forget(&game_id, self.generation);
        }
    }

    /// Whether the game may leave memory once idle: it is active (a
    /// finished one lingers instead), eviction is on, and no engine search
    /// is under way or due.
    fn evictable(&self) -> bool {
        !self.ctx.evict_after.is_zero()
            && self.game.is_active()
            && !self.engine_pending
            && self.engine_retry_at.is_none()
    }

    /// Whether anyone watches the game through this actor.
    fn watched(&self) -> bool {
        self.events
            .as_ref()
            .is_some_and(|watchers| watchers.receiver_count() > 0)
    }

    /// Leaves memory: the store holds the whole game already (every change
    /// was written before it was answered). The game's `deadline` is left
    /// with the registry, which loads the game back then.
    fn evict(&mut self, deadline: Option<Instant>) {
        // Anything sent from now on finds the mailbox closed and is sent
        // again to a reloaded actor; anything already in it is dropped
        // unhandled, and its caller does the same.
        self.inbox.close();
        if let Some(registry) = self.registry.upgrade() {
            registry.evicted(self.game.id(), deadline);
        }
        tracing::debug!(game_id = %self.game.id(), "idle game evicted from memory");
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
            Message::Watch {
                watcher,
                as_player,
                reply,
            } => {
                let watchers = self
                    .events
                    .get_or_insert_with(|| broadcast::channel(WATCH_CAPACITY).0);
                let events = watchers.subscribe();
                let player =
                    as_player || watcher.is_some_and(|id| self.game.side_of(&id).is_some());
                let spectating = (!player).then(|| self.spectators.admit());
                let _ = reply.send(Watching {
                    game: self.game.clone(),
                    events,
                    spectating,
                    spectators: self.spectators.count(),
                });
            }
            Message::Hint { actor, reply } => {
                let _ = reply.send(self.hint(&actor));
            }
        }
    }

    fn side_of(&self, actor: &PlayerId) -> Result<Color, Error> {
        self.game
            .side_of(actor)
            .ok_or(Error::Game(GameError::NotAPlayer))
    }

    async fn act(&mut self, actor: &PlayerId, action: Action) -> Result<Acted, Error> {
        let side = self.side_of(actor)?;
        let now = self.ctx.time.now();
        // A move sent again after a lost answer gets that answer again.
        if let Action::Move {
            input,
            ply: Some(ply),
        } = &action
            && let Some(events) = self.game.check_ply(side, input, *ply)?
        {
            return Ok(Acted {
                clock: self.game.clock(now),
                timed: self.game.time_control().is_timed(),
                ply: *ply,
                side,
                events,
                taken_back: None,
            });
        }
        // A flag that fell before this action arrived ends the game first.
        let expired = self.game.check_deadline(now);
        if !expired.is_empty() {
            self.commit(&expired, now).await?;
            return Err(Error::Game(GameError::GameOver));
        }
        let events = match action {
            Action::Move { input, .. } => self.game.play(side, &input, now),
            Action::Resign => self.game.resign(side, now),
            Action::OfferDraw => self.game.offer_draw(side, now),
            Action::AcceptDraw => self.game.accept_draw(side, now),
            Action::DeclineDraw => self.game.decline_draw(side),
            Action::ClaimDraw => self.game.claim_draw(side, now),
            Action::Abort => self.game.abort(side, now),
            Action::ProposeTakeback => {
                self.game
                    .propose_takeback(side, self.ctx.rated_takebacks, now)
            }
            Action::AcceptTakeback => self.game.accept_takeback(side, now),
            Action::DeclineTakeback => self.game.decline_takeback(side),
            Action::CancelTakeback => self.game.cancel_takeback(side),
        }?;
        self.commit(&events, now).await?;
        let taken_back = events
            .iter()
            .any(|e| matches!(e, Event::TakenBack { .. }))
            .then(|| Box::new(self.game.clone()));
        Ok(Acted {
            clock: self.game.clock(now),
            timed: self.game.time_control().is_timed(),
            ply: self.game.ply(),
            side,
            events,
            taken_back,
        })
    }

    fn hint(&self, actor: &PlayerId) -> Result<HintPosition, Error> {
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
    async fn commit(&mut self, events: &[Event], now: Timestamp) -> Result<(), Error> {
        if events.is_empty() {
            return Ok(());
        }
        let ops = store::ops_for(&self.game, events, now);
        if let Err(e) = self.ctx.store.write(self.serving.fence, ops).await {
            if let StoreError::Fenced { shard, epoch } = e {
                // Another replica serves the game now: this copy is stale
                // and must neither write nor answer again.
                tracing::warn!(
                    game_id = %self.game.id(),
                    shard,
                    epoch,
                    "write refused: the shard's lease passed to another replica"
                );
                self.fenced = true;
                self.inbox.close();
                if let Some(registry) = self.registry.upgrade() {
                    registry.lost(shard, epoch);
                }
                return Err(e.into());
            }
            tracing::error!(game_id = %self.game.id(), error = %e, "write failed; reloading the game");
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
        if events.iter().any(|e| matches!(e, Event::TakenBack { .. })) {
            self.takebacks += 1;
            // A search under way is for the position taken back.
            self.engine_pending = false;
            self.engine_retry_at = None;
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

    fn publish(&mut self, event: impl Into<WireEvent>) {
        let event = event.into();
        if let Some(watchers) = &self.events
            && watchers.send(Arc::clone(&event)).is_err()
        {
            // The last watcher left.
            self.events = None;
        }
        for player in [self.game.white(), self.game.black()] {
            if let Some(id) = player.actor_id() {
                self.ctx.hub.publish(id, &event);
            }
        }
        if self.game.time_control().is_daily() {
            self.ctx.hub.publish_daily(&event);
        }
        self.ctx.hub.publish_live(&event);
    }

    /// Tells the game's watchers and the live feed how many spectators it
    /// has, if that changed since they were last told. The players' own
    /// feeds are spared: they learn it from the game's stream.
    fn tell_spectators(&mut self) {
        let count = self.spectators.count();
        if count == self.spectators_told {
            return;
        }
        self.spectators_told = count;
        let event = WireEvent::new(convert::notice(
            &self.game,
            self.ctx.time.now(),
            chess_proto::common::v1::game_event::Kind::SpectatorsChanged(
                chess_proto::common::v1::SpectatorsChanged { spectators: count },
            ),
        ));
        if let Some(watchers) = &self.events
            && watchers.send(Arc::clone(&event)).is_err()
        {
            self.events = None;
        }
        self.ctx.hub.publish_live(&event);
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
        let asked = (self.game.ply(), self.takebacks);
        let game_id = self.game.id().clone();
        let initial_fen = self.game.initial_fen().to_owned();
        let moves = self.game.uci_moves();
        tokio::spawn(async move {
            let answer = engine
                .best_move(game_id.as_str(), &initial_fen, moves, u32::from(level))
                .await;
            // The actor may have stopped; then the answer is moot.
            let _ = answers.send((asked, answer)).await;
        });
    }

    async fn engine_answered(&mut self, asked: Asked, answer: Result<String, EngineError>) {
        self.engine_pending = false;
        if asked != (self.game.ply(), self.takebacks) || self.game.engine_to_move().is_none() {
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
        tracing::warn!(game_id = %self.game.id(), error = %failure, retry_in = ?backoff, "engine move failed");
        self.engine_retry_at = Some(Instant::now() + backoff);
        self.publish(convert::engine_failed(&self.game, now, failure));
    }
}
