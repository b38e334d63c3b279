//! The players' event streams, and presence: a real-time seek lasts only
//! while its poster has a stream open.

use tokio::sync::mpsc;

use chess_domain::PlayerId;

use super::{Events, Lobby, Message, STREAM_CAPACITY};
use crate::lobby::model::LobbyEvent;

impl Lobby {
    pub(super) fn watch(&mut self, player_id: PlayerId, events: Events) {
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

    pub(super) async fn unwatch(&mut self, player_id: &PlayerId, watcher: u64) {
        let Some(streams) = self.watchers.get_mut(player_id) else {
            return;
        };
        streams.retain(|(id, _)| *id != watcher);
        if streams.is_empty() {
            self.watchers.remove(player_id);
            self.withdraw_real_time(player_id).await;
        }
    }

    /// Sends `event` to every open stream of `player_id`. A stream too far
    /// behind is closed rather than allowed to hold up the lobby.
    pub(super) fn notify(&mut self, player_id: &PlayerId, event: LobbyEvent) {
        let Some(streams) = self.watchers.get_mut(player_id) else {
            return;
        };
        streams.retain(|(_, events)| match events.try_send(event.clone()) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                tracing::warn!(%player_id, "lobby stream fell behind; closing it");
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        });
        // An emptied list is cleaned up by the streams' own Unwatch messages,
        // which also withdraw the real-time seeks.
    }

    /// Withdraws the real-time seeks of a player who has no stream open.
    pub(super) async fn withdraw_real_time(&mut self, player_id: &PlayerId) {
        let gone: Vec<String> = self
            .seeks
            .values()
            .filter(|s| {
                s.poster.id == *player_id
                    && s.lapses_with_poster()
                    && !self.reserved.contains(&s.id)
            })
            .map(|s| s.id.clone())
            .collect();
        for seek_id in gone {
            tracing::debug!(%player_id, seek_id, "poster left; seek withdrawn");
            if let Err(e) = self.remove_seek(&seek_id, "cancelled", None).await {
                tracing::warn!(seek_id, error = %e, "could not withdraw a seek");
            }
        }
    }
}

/// A new event stream's channel.
pub(in crate::lobby) fn stream_channel() -> (Events, mpsc::Receiver<LobbyEvent>) {
    mpsc::channel(STREAM_CAPACITY)
}
