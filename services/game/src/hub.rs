//! Live events per player, for WatchPlayer: every event of every game a
//! player takes part in, including games created after they subscribed. The
//! events of daily games also go to one more feed, for WatchDailyGames, and
//! the events of every game to the live feed, for WatchLiveGames.
//!
//! The map is split into shards so that games publishing at once rarely
//! contend for the same lock.

use std::{
    collections::HashMap,
    hash::{BuildHasher as _, RandomState},
    sync::{Arc, RwLock},
};

use chess_domain::PlayerId;
use chess_proto::common::v1::GameEvent;
use tokio::sync::broadcast;

/// An event as it goes out: built once by [`crate::convert`] and shared by
/// every watcher of the game and of its players.
pub type WireEvent = Arc<GameEvent>;

const SHARDS: usize = 16;
/// Events a slow subscriber may fall behind before it is cut off.
const CAPACITY: usize = 256;
/// The same for the live feed, which carries every game's events.
const LIVE_CAPACITY: usize = 4096;

/// Each player's channel, in one shard of the hub.
type Subscribers = HashMap<PlayerId, broadcast::Sender<Arc<GameEvent>>>;

/// Fan-out of game events to the players they concern.
#[derive(Debug)]
pub struct PlayerHub {
    hasher: RandomState,
    shards: Vec<RwLock<Subscribers>>,
    daily: broadcast::Sender<Arc<GameEvent>>,
    live: broadcast::Sender<Arc<GameEvent>>,
}

impl Default for PlayerHub {
    fn default() -> Self {
        Self {
            hasher: RandomState::new(),
            shards: (0..SHARDS).map(|_| RwLock::default()).collect(),
            daily: broadcast::channel(CAPACITY).0,
            live: broadcast::channel(LIVE_CAPACITY).0,
        }
    }
}

impl PlayerHub {
    fn shard(&self, player_id: &PlayerId) -> &RwLock<Subscribers> {
        &self.shards[self.hasher.hash_one(player_id) as usize % SHARDS]
    }

    /// Starts receiving `player_id`'s events.
    pub fn subscribe(&self, player_id: &PlayerId) -> broadcast::Receiver<Arc<GameEvent>> {
        let mut map = self
            .shard(player_id)
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        map.entry(player_id.clone())
            .or_insert_with(|| broadcast::channel(CAPACITY).0)
            .subscribe()
    }

    /// Starts receiving the events of every daily game.
    pub fn subscribe_daily(&self) -> broadcast::Receiver<Arc<GameEvent>> {
        self.daily.subscribe()
    }

    /// Sends `event`, an event of a daily game, to the daily feed.
    pub fn publish_daily(&self, event: &Arc<GameEvent>) {
        // Nobody listening is fine: notices are sent only by subscribers.
        let _ = self.daily.send(Arc::clone(event));
    }

    /// Starts receiving the events of every game served here.
    pub fn subscribe_live(&self) -> broadcast::Receiver<Arc<GameEvent>> {
        self.live.subscribe()
    }

    /// Sends `event`, an event of any game, to the live feed.
    pub fn publish_live(&self, event: &Arc<GameEvent>) {
        // Nobody listening is fine: the feed has no memory.
        let _ = self.live.send(Arc::clone(event));
    }

    /// Sends `event` to `player_id`'s subscribers, if there are any.
    pub fn publish(&self, player_id: &PlayerId, event: &Arc<GameEvent>) {
        let shard = self.shard(player_id);
        let unheard = {
            let map = shard
                .read()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            match map.get(player_id) {
                Some(sender) => sender.send(Arc::clone(event)).is_err(),
                None => false,
            }
        };
        if unheard {
            // Everyone unsubscribed: drop the channel unless someone has
            // subscribed again meanwhile.
            let mut map = shard
                .write()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if map.get(player_id).is_some_and(|s| s.receiver_count() == 0) {
                map.remove(player_id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn events_reach_subscribers_only() {
        let hub = PlayerHub::default();
        let event = Arc::new(GameEvent {
            game_id: "g".into(),
            ..Default::default()
        });
        let [nobody, alice, bob] = ["nobody", "alice", "bob"].map(PlayerId::trusted);
        hub.publish(&nobody, &event);
        let mut rx = hub.subscribe(&alice);
        hub.publish(&alice, &event);
        hub.publish(&bob, &event);
        assert_eq!(rx.recv().await.unwrap().game_id, "g");
        drop(rx);
        hub.publish(&alice, &event);
        assert!(hub.shard(&alice).read().unwrap().get("alice").is_none());
    }
}
