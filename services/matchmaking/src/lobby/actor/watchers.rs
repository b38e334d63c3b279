//! The players' event streams, and presence: a real-time seek lasts only
//! while its poster has a stream open.

use chess_proto::common::v1::lobby_event::Kind;
use chess_proto::matchmaking::v1::WatchPlayerResponse;
use tokio::sync::mpsc;
use tonic::Status;

use super::{Events, Lobby, Message, STREAM_CAPACITY, event};

impl Lobby {
    pub(super) fn watch(&mut self, player_id: String, events: Events) {
        let watcher = self.next_watcher;
        self.next_watcher += 1;
        self.watchers
            .entry(player_id.clone())
            .or_default()
            .push((watcher, events.clone()));
        let me = self.me.clone();
        tokio::spawn(async move {
            events.closed().await;
            if let Some(me) = me.upgrade() {
                // The lobby only stops with the service.
                let _ = me.send(Message::Unwatch { player_id, watcher }).await;
            }
        });
    }

    pub(super) async fn unwatch(&mut self, player_id: &str, watcher: u64) {
        let Some(streams) = self.watchers.get_mut(player_id) else {
            return;
        };
        streams.retain(|(id, _)| *id != watcher);
        if streams.is_empty() {
            self.watchers.remove(player_id);
            self.withdraw_real_time(player_id).await;
        }
    }

    /// Sends `kind` to every open stream of `player_id`. A stream too far
    /// behind is closed rather than allowed to hold up the lobby.
    pub(super) fn notify(&mut self, player_id: &str, kind: Kind) {
        let Some(streams) = self.watchers.get_mut(player_id) else {
            return;
        };
        let message = WatchPlayerResponse {
            event: Some(event(kind)),
        };
        streams.retain(|(_, events)| match events.try_send(Ok(message.clone())) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                tracing::warn!(player_id, "lobby stream fell behind; closing it");
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        });
        // An emptied list is cleaned up by the streams' own Unwatch messages,
        // which also withdraw the real-time seeks.
    }

    /// Withdraws the real-time seeks of a player who has no stream open.
    pub(super) async fn withdraw_real_time(&mut self, player_id: &str) {
        let gone: Vec<String> = self
            .seeks
            .values()
            .filter(|s| {
                s.poster.id == player_id && !s.is_durable() && !self.reserved.contains(&s.id)
            })
            .map(|s| s.id.clone())
            .collect();
        for seek_id in gone {
            tracing::debug!(player_id, seek_id, "poster left; seek withdrawn");
            if let Err(e) = self.remove_seek(&seek_id, "cancelled", None).await {
                tracing::warn!(seek_id, error = %e, "could not withdraw a seek");
            }
        }
    }
}

/// A new event stream's channel.
pub fn stream_channel() -> (Events, mpsc::Receiver<Result<WatchPlayerResponse, Status>>) {
    mpsc::channel(STREAM_CAPACITY)
}
