//! The watchers' streams of the gRPC face (WatchGame, WatchPlayer,
//! WatchDailyGames): what a watcher is sent first, then the live events of
//! the games it follows, read from their broadcasts as the connection
//! polls.

use std::{collections::HashMap, pin::Pin, sync::Arc};

use chess_domain::GameId;
use chess_proto::common::v1 as common;
use tokio::sync::broadcast;
use tokio_stream::Stream;
use tonic::Status;

/// A response stream of the service.
pub(super) type EventStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// Where a resumed watcher already stands in each game it was sent: the ply
/// it was brought to, and whether the game had ended. Live events it was
/// sent already (moves up to that ply, the ending) are not sent again.
pub(super) type Sent = HashMap<GameId, (u32, bool)>;

/// Whether `event` was sent already, by `sent`.
fn already_sent(sent: &Sent, event: &common::GameEvent) -> bool {
    let Some(&(ply, ended)) = sent.get(event.game_id.as_str()) else {
        return false;
    };
    match event.kind {
        Some(common::game_event::Kind::MoveMade(_)) => event.ply <= ply,
        Some(common::game_event::Kind::GameEnded(_)) => ended,
        _ => false,
    }
}

/// Whether `event` is a chat line to leave out: of a room not asked for,
/// or sent already (by its revision, in `chat_sent`); if not, it counts as
/// sent.
fn chat_left_out(watch: &mut ChatSent, rooms: Option<&[i32]>, event: &common::GameEvent) -> bool {
    let Some((room, revision)) = super::chat::chat_of(event) else {
        return false;
    };
    if rooms.is_some_and(|rooms| !rooms.contains(&room)) {
        return true;
    }
    let sent = watch
        .entry(GameId::trusted(event.game_id.clone()))
        .or_default();
    if revision <= *sent {
        return true;
    }
    *sent = revision;
    false
}

/// The last chat revision sent of each game.
pub(super) type ChatSent = HashMap<GameId, u64>;

/// Receives from `events`, or never if there are none.
async fn next_of(
    events: &mut Option<broadcast::Receiver<Arc<common::GameEvent>>>,
) -> Result<Arc<common::GameEvent>, broadcast::error::RecvError> {
    match events {
        Some(events) => events.recv().await,
        None => std::future::pending().await,
    }
}

/// Whether `event` is a move of the side `color` (a `common::Color`).
fn moved_by(event: &common::GameEvent, color: Option<i32>) -> bool {
    match (&event.kind, color) {
        (Some(common::game_event::Kind::MoveMade(made)), Some(color)) => made.color == color,
        _ => false,
    }
}

/// A watcher's stream: what it is sent first, then the live events.
pub(super) struct Watch<T> {
    /// Sent before any live event (a snapshot, or what was missed).
    pub(super) first: std::vec::IntoIter<T>,
    /// The live events; `None` for none (a game already over).
    pub(super) events: Option<broadcast::Receiver<Arc<common::GameEvent>>>,
    pub(super) shutdown: chess_runtime::Shutdown,
    /// Makes an event the stream's message.
    pub(super) wrap: fn(common::GameEvent) -> T,
    /// The stream ends after the game's end (a stream of one game).
    pub(super) stop_at_end: bool,
    /// Live events not to send again.
    pub(super) sent: Sent,
    /// The side (a `common::Color`) whose live moves are left out.
    pub(super) without_moves_of: Option<i32>,
    /// Held for as long as the stream lives: the watcher counts among the
    /// game's spectators until then.
    pub(super) _spectating: Option<crate::registry::Spectating>,
    /// The game's live chat lines, for a watcher of one game who asked for
    /// them; it then stays open after the game's end.
    pub(super) chat: Option<broadcast::Receiver<Arc<common::GameEvent>>>,
    /// The rooms (`common::ChatRoom`) whose lines are sent; `None`: all.
    pub(super) chat_rooms: Option<Vec<i32>>,
    /// Chat lines not to send again.
    pub(super) chat_sent: ChatSent,
}

impl<T> Watch<T> {
    /// A feed of many games' events (daily games, live games): nothing sent
    /// first, none left out, no chat, on past any one game's end.
    pub(super) fn feed(
        events: broadcast::Receiver<Arc<common::GameEvent>>,
        shutdown: chess_runtime::Shutdown,
        wrap: fn(common::GameEvent) -> T,
    ) -> Self {
        Self {
            first: Vec::new().into_iter(),
            events: Some(events),
            shutdown,
            wrap,
            stop_at_end: false,
            sent: Sent::new(),
            without_moves_of: None,
            _spectating: None,
            chat: None,
            chat_rooms: None,
            chat_sent: ChatSent::new(),
        }
    }
}

/// Forwards live events into a response stream until the game ends, the
/// caller goes away, the service shuts down, or the watcher falls behind.
///
/// The stream reads the game's broadcast itself as the connection polls
/// it: no task of its own and no queue between, so an event costs each
/// watcher one wake-up, of the connection that sends it.
pub(super) fn forward<T: Send + 'static>(watch: Watch<T>) -> EventStream<T> {
    Box::pin(futures::stream::unfold(Some(watch), |watch| async move {
        let mut watch = watch?;
        if let Some(item) = watch.first.next() {
            return Some((Ok(item), Some(watch)));
        }
        loop {
            if watch.events.is_none() && watch.chat.is_none() {
                return None;
            }
            let (received, chat) = tokio::select! {
                received = next_of(&mut watch.events) => (received, false),
                received = next_of(&mut watch.chat) => (received, true),
                () = watch.shutdown.cancelled() => return None,
            };
            let item = match received {
                Ok(event)
                    if already_sent(&watch.sent, &event)
                        || moved_by(&event, watch.without_moves_of)
                        || chat_left_out(
                            &mut watch.chat_sent,
                            watch.chat_rooms.as_deref(),
                            &event,
                        ) =>
                {
                    continue;
                }
                Ok(event) => {
                    if matches!(event.kind, Some(common::game_event::Kind::TakenBack(_)))
                        && let Some(sent) = watch.sent.get_mut(event.game_id.as_str())
                    {
                        // The plies after the takeback are played afresh.
                        sent.0 = sent.0.min(event.ply);
                    }
                    let last = watch.stop_at_end
                        && matches!(event.kind, Some(common::game_event::Kind::GameEnded(_)));
                    let item = (watch.wrap)((*event).clone());
                    if last {
                        // The chat goes on after the game, for those
                        // following it.
                        watch.events = None;
                        if watch.chat.is_none() {
                            return Some((Ok(item), None));
                        }
                    }
                    item
                }
                // Ending right after is the point.
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    let status = Status::aborted(format!(
                        "the watcher fell {missed} events behind; watch again from the last ply seen"
                    ));
                    return Some((Err(status), None));
                }
                Err(broadcast::error::RecvError::Closed) if chat => {
                    watch.chat = None;
                    continue;
                }
                Err(broadcast::error::RecvError::Closed) => {
                    // The game's actor stopped before its end: its shard
                    // moved to another replica (or this one stops).
                    let status = Status::unavailable(
                        "this replica stopped serving the game; watch again from the last ply seen",
                    );
                    return Some((Err(status), None));
                }
            };
            return Some((Ok(item), Some(watch)));
        }
    }))
}
