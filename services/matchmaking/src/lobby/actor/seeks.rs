//! Posting, cancelling, closing and listing seeks.

use chess_domain::{PlayerId, SpeedCategory};

use super::{Lobby, MAX_SEEKS_PER_PLAYER, Message, SeekPage, room_for};
use crate::lobby::{
    error::LobbyError,
    model::{LobbyEvent, RequestStatus, Seek, Timestamp},
};

impl Lobby {
    pub(super) fn open_seek(&self, seek_id: &str) -> Result<&Seek, LobbyError> {
        self.seeks
            .get(seek_id)
            .filter(|_| !self.reserved.contains(seek_id))
            .ok_or_else(|| LobbyError::NotFound(format!("no open seek {seek_id}")))
    }

    pub(super) async fn create_seek(&mut self, seek: Seek) -> Result<Seek, LobbyError> {
        room_for(
            self.seeks
                .values()
                .filter(|s| s.poster.id == seek.poster.id),
            MAX_SEEKS_PER_PLAYER,
            "seeks may be open",
        )?;
        self.store.insert_seek(&seek).await?;
        if seek.lapses_with_poster() && !self.watchers.contains_key(&seek.poster.id) {
            self.check_presence_later(&seek.poster.id);
        }
        self.order.insert((seek.created_at, seek.id.clone()));
        self.seeks.insert(seek.id.clone(), seek.clone());
        tracing::debug!(
            seek_id = seek.id,
            poster = %seek.poster.id,
            real_time = seek.lapses_with_poster(),
            "seek posted"
        );
        Ok(seek)
    }

    /// Withdraws `player_id`'s real-time seeks after the presence grace
    /// unless they have a stream open by then.
    pub(super) fn check_presence_later(&self, player_id: &PlayerId) {
        let Some(me) = self.me.upgrade() else { return };
        let player_id = player_id.clone();
        let grace = self.presence_grace;
        tokio::spawn(async move {
            tokio::time::sleep(grace).await;
            // The lobby only stops with the service.
            let _ = me.send(Message::CheckPresence { player_id }).await;
        });
    }

    pub(super) async fn cancel_seek(
        &mut self,
        seek_id: &str,
        player_id: &PlayerId,
    ) -> Result<Seek, LobbyError> {
        let seek = self.open_seek(seek_id)?;
        if seek.poster.id != *player_id {
            return Err(LobbyError::NotYours(format!("seek {seek_id} is not yours")));
        }
        self.remove_seek(seek_id, "cancelled", None).await
    }

    /// Closes a seek: stored tables are marked, pending requests to it are
    /// cancelled (except `keep`, the one that took it), and the poster's
    /// streams hear that it is gone.
    pub(super) async fn remove_seek(
        &mut self,
        seek_id: &str,
        status: &str,
        keep: Option<&str>,
    ) -> Result<Seek, LobbyError> {
        let Some(seek) = self.seeks.get(seek_id).cloned() else {
            return Err(LobbyError::NotFound(format!("no open seek {seek_id}")));
        };
        let now = Timestamp::now();
        self.store.close_seek(seek_id, status, now).await?;
        self.seeks.remove(seek_id);
        self.order.remove(&(seek.created_at, seek.id.clone()));
        self.reserved.remove(seek_id);
        let orphans: Vec<String> = self
            .requests
            .values()
            .filter(|r| r.seek_id == seek_id && Some(r.id.as_str()) != keep)
            .map(|r| r.id.clone())
            .collect();
        for request_id in orphans {
            let Some(mut request) = self.requests.remove(&request_id) else {
                continue;
            };
            request.status = RequestStatus::Cancelled;
            if let Err(e) = self.store.settle_request(&request, now).await {
                // The seek is closed, so the request can never be answered;
                // a stale row only shows as pending after a restart, where
                // it is dropped for want of its table.
                tracing::warn!(request_id, error = %e, "could not store a cancelled request");
            }
            let requester = request.requester.id.clone();
            self.notify(
                &requester,
                LobbyEvent::SeekRequestCancelled(request.clone()),
            );
        }
        let poster = seek.poster.id.clone();
        self.notify(&poster, LobbyEvent::SeekRemoved(seek.clone()));
        Ok(seek)
    }

    pub(super) fn list_seeks(
        &self,
        speed: Option<SpeedCategory>,
        after: Option<(Timestamp, String)>,
        limit: usize,
    ) -> SeekPage {
        use std::ops::Bound;
        let start = match &after {
            Some(cursor) => Bound::Excluded(cursor.clone()),
            None => Bound::Unbounded,
        };
        let mut page: Vec<Seek> = self
            .order
            .range((start, Bound::Unbounded))
            .filter_map(|(_, id)| self.seeks.get(id))
            .filter(|s| !self.reserved.contains(&s.id))
            .filter(|s| speed.is_none_or(|speed| s.speed() == speed))
            .take(limit + 1)
            .cloned()
            .collect();
        let next = if page.len() > limit {
            page.truncate(limit);
            page.last().map(|s| (s.created_at, s.id.clone()))
        } else {
            None
        };
        (page, next)
    }
}
