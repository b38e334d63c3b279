//! The live lines of each game's chat, for its watchers, and the order in
//! which a game's lines are numbered.
//!
//! A line is numbered, stored and sent while its game's turn is held
//! ([`ChatFeed::turn`]), so that a game's lines go out in the order of
//! their numbers. The turns are striped over a few locks: two games rarely
//! wait for each other, and a game never waits for itself twice.

use std::{
    collections::HashMap,
    hash::{BuildHasher as _, RandomState},
    sync::{Arc, RwLock},
};

use chess_domain::GameId;
use tokio::sync::{Mutex, MutexGuard, broadcast};

use crate::hub::WireEvent;

const STRIPES: usize = 16;
/// Lines a slow watcher may fall behind before it is cut off.
const CAPACITY: usize = 128;

/// Each game's live chat lines.
#[derive(Debug)]
pub struct ChatFeed {
    hasher: RandomState,
    turns: Vec<Mutex<()>>,
    games: RwLock<HashMap<GameId, broadcast::Sender<WireEvent>>>,
}

impl Default for ChatFeed {
    fn default() -> Self {
        Self {
            hasher: RandomState::new(),
            turns: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            games: RwLock::default(),
        }
    }
}

impl ChatFeed {
    /// Waits for `game`'s turn to change its chat; held until dropped.
    pub async fn turn(&self, game: &GameId) -> MutexGuard<'_, ()> {
        self.turns[self.hasher.hash_one(game) as usize % STRIPES]
            .lock()
            .await
    }

    /// Starts receiving `game`'s chat lines.
    pub fn subscribe(&self, game: &GameId) -> broadcast::Receiver<WireEvent> {
        let mut games = self
            .games
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        games
            .entry(game.clone())
            .or_insert_with(|| broadcast::channel(CAPACITY).0)
            .subscribe()
    }

    /// Sends `event`, a chat line of `game`, to its watchers, if any.
    pub fn publish(&self, game: &GameId, event: &WireEvent) {
        let unheard = {
            let games = self
                .games
                .read()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            match games.get(game) {
                Some(sender) => sender.send(Arc::clone(event)).is_err(),
                None => false,
            }
        };
        if unheard {
            let mut games = self
                .games
                .write()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if games.get(game).is_some_and(|s| s.receiver_count() == 0) {
                games.remove(game);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use chess_proto::common::v1::GameEvent;

    use super::*;

    #[tokio::test]
    async fn lines_reach_the_watchers_of_their_game_only() {
        let feed = ChatFeed::default();
        let [a, b] = ["a", "b"].map(GameId::trusted);
        let event = Arc::new(GameEvent {
            game_id: "a".into(),
            ..Default::default()
        });
        feed.publish(&a, &event);
        let mut rx = feed.subscribe(&a);
        let mut other = feed.subscribe(&b);
        feed.publish(&a, &event);
        assert_eq!(rx.recv().await.unwrap().game_id, "a");
        assert!(other.try_recv().is_err());
        drop(rx);
        feed.publish(&a, &event);
        assert!(!feed.games.read().unwrap().contains_key(&a));
        let _turn = feed.turn(&a).await;
    }
}
