//! Publishing the server's events to every relay, again and again for a
//! relay that did not take one (disconnected, or `OK false`, e.g. rate
//! limited), until it does or the event is too old to matter.
//!
//! Events go out in the order published. A retried game state (20302) is
//! dropped once a newer state of the same game reached that relay, so a
//! late retry never shows an older position after a newer one.

use std::{
    collections::{HashMap, HashSet},
    time::Duration,
};

use chess_domain::GameId;
use nostr_sdk::prelude::{Event, RelayPool, RelayUrl};
use tokio::{sync::mpsc, time::Instant};
use tokio_util::sync::CancellationToken;

use super::protocol;

/// First pause before sending an event again to a relay that failed it;
/// doubled each time up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// An event not taken by a relay in this long is given up for it.
const GIVE_UP_AFTER: Duration = Duration::from_secs(15 * 60);

/// Where the bridge's events are handed to be published.
#[derive(Clone, Debug)]
pub struct Outbox {
    tx: mpsc::UnboundedSender<Event>,
}

impl Outbox {
    /// The outbox and the receiving end for [`run`].
    pub fn new() -> (Self, mpsc::UnboundedReceiver<Event>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Self { tx }, rx)
    }

    /// Queues an event for every relay.
    pub fn publish(&self, event: Event) {
        // Only fails once the publisher stopped, at shutdown.
        let _ = self.tx.send(event);
    }
}

/// An event some relays still have to take.
struct Pending {
    event: Event,
    relays: HashSet<RelayUrl>,
    attempt: u32,
    due: Instant,
    since: Instant,
    /// For a state event, its number among its game's (newer is larger).
    number: u64,
}

/// The game a state event is about.
fn state_of(event: &Event) -> Option<GameId> {
    (event.kind.as_u16() == protocol::STATE)
        .then(|| protocol::game_of(event))
        .flatten()
}

/// Sends what is published until shutdown.
pub async fn run(
    pool: RelayPool,
    relays: Vec<RelayUrl>,
    mut rx: mpsc::UnboundedReceiver<Event>,
    shutdown: CancellationToken,
) {
    let mut pending: Vec<Pending> = Vec::new();
    // Per game, the newest state event each relay took.
    let mut delivered: HashMap<GameId, HashMap<RelayUrl, u64>> = HashMap::new();
    let mut sequence: HashMap<GameId, u64> = HashMap::new();
    loop {
        let next_due = pending.iter().map(|p| p.due).min();
        let fresh = tokio::select! {
            event = rx.recv() => match event {
                Some(event) => Some(event),
                None => break,
            },
            () = async {
                match next_due {
                    Some(due) => tokio::time::sleep_until(due).await,
                    None => std::future::pending().await,
                }
            } => None,
            () = shutdown.cancelled() => break,
        };
        let mut batch: Vec<Pending> = Vec::new();
        if let Some(event) = fresh {
            let now = Instant::now();
            // Numbering state events per game lets an older one be dropped.
            let number = state_of(&event).map_or(0, |game| {
                let n = sequence.entry(game).or_default();
                *n += 1;
                *n
            });
            batch.push(Pending {
                event,
                relays: relays.iter().cloned().collect(),
                attempt: 0,
                due: now,
                since: now,
                number,
            });
        } else {
            let now = Instant::now();
            let (due, later): (Vec<_>, Vec<_>) = pending.drain(..).partition(|p| p.due <= now);
            pending = later;
            batch = due;
        }
        for mut item in batch {
            let state = state_of(&item.event);
            let number = item.number;
            if let Some(game) = state.as_ref().filter(|_| item.attempt > 0) {
                // A retry: skip the relays that took a newer state already.
                let newer = delivered.get(game);
                item.relays
                    .retain(|url| newer.and_then(|d| d.get(url)).is_none_or(|n| *n < number));
            }
            if item.relays.is_empty() {
                continue;
            }
            let output = pool
                .send_event_to(item.relays.iter().cloned(), &item.event)
                .await;
            let failed: HashMap<RelayUrl, String> = match output {
                Ok(output) => {
                    if let Some(game) = &state {
                        let taken = delivered.entry(game.clone()).or_default();
                        for url in &output.success {
                            taken.insert(url.clone(), number);
                        }
                    }
                    output.failed
                }
                Err(e) => item
                    .relays
                    .iter()
                    .map(|url| (url.clone(), e.to_string()))
                    .collect(),
            };
            if failed.is_empty() {
                continue;
            }
            if item.since.elapsed() > GIVE_UP_AFTER {
                tracing::warn!(id = %item.event.id, kind = item.event.kind.as_u16(), relays = ?failed.keys().collect::<Vec<_>>(), "relays never took an event; given up");
                continue;
            }
            tracing::debug!(id = %item.event.id, ?failed, attempt = item.attempt, "a relay did not take an event; will send it again");
            let backoff = FIRST_BACKOFF
                .saturating_mul(1 << item.attempt.min(10))
                .min(MAX_BACKOFF);
            pending.push(Pending {
                relays: failed.into_keys().collect(),
                attempt: item.attempt + 1,
                due: Instant::now() + backoff,
                ..item
            });
        }
        // Forget the bookkeeping of games no longer in any retry.
        if delivered.len() > 1024 {
            let live: HashSet<GameId> = pending.iter().filter_map(|p| state_of(&p.event)).collect();
            delivered.retain(|game, _| live.contains(game));
            sequence.retain(|game, _| live.contains(game));
        }
    }
}
