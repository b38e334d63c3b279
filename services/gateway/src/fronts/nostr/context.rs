//! What the bridge and its tasks share: the server's keys, the core's
//! [`Games`](crate::core::play::Games), the outbox, and the short-lived cache of which
//! account a key is linked to.

use std::{
    collections::HashMap,
    sync::{Mutex, MutexGuard},
    time::{Duration, Instant},
};

use chess_domain::{GameId, PlayerId};
use chess_runtime::Reason;
use nostr_sdk::prelude::Keys;
use tokio::time::sleep;
use tokio_util::sync::CancellationToken;

use super::{guest, outbox::Outbox, protocol};
use crate::core::{
    clients::Backends,
    play::{Account, Game, Games, PlayError},
};

/// Pause before calling a service again after it failed.
pub(super) const RETRY_DELAY: Duration = Duration::from_millis(300);
/// How long a key's account link is trusted before asking again.
const LINK_CACHE: Duration = Duration::from_secs(10);

/// Who a key plays as.
#[derive(Clone, Debug)]
pub(super) struct Identity {
    /// The key's place in the pairing queue.
    pub guest_id: PlayerId,
    /// The account the key is linked to, if any.
    pub account: Option<Account>,
}

impl Identity {
    /// Who the key plays as: its account, if linked, else its guest id.
    pub(super) fn player_id(&self) -> PlayerId {
        match &self.account {
            Some(account) => account.player_id.clone(),
            None => self.guest_id.clone(),
        }
    }
}

/// What the bridge and its tasks share and never change, but for the
/// short-lived cache of account links.
#[derive(Debug)]
pub(super) struct Context {
    pub keys: Keys,
    pub games: Games,
    pub outbox: Outbox,
    pub shutdown: CancellationToken,
    links: Mutex<HashMap<String, (Instant, Option<Account>)>>,
}

impl Context {
    pub(super) fn new(
        keys: Keys,
        backends: Backends,
        outbox: Outbox,
        shutdown: CancellationToken,
    ) -> Self {
        Self {
            keys,
            games: Games::new(backends),
            outbox,
            shutdown,
            links: Mutex::default(),
        }
    }

    fn links(&self) -> MutexGuard<'_, HashMap<String, (Instant, Option<Account>)>> {
        // Entries are replaced whole; a panic elsewhere leaves none half-done.
        self.links.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Publishes a reply of the server to `key`.
    pub(super) fn reply(&self, key: &str, text: &str) {
        self.outbox.publish(protocol::reply(&self.keys, key, text));
    }

    /// The account `key` is linked to, if any (cached briefly).
    pub(super) async fn identity(&self, key: &str) -> Result<Identity, PlayError> {
        let guest_id = guest::guest_id(key);
        let cached = self
            .links()
            .get(key)
            .filter(|(at, _)| at.elapsed() < LINK_CACHE)
            .map(|(_, account)| account.clone());
        let account = match cached {
            Some(account) => account,
            None => {
                let account = self.games.account_of_nostr_key(key).await?;
                let mut links = self.links();
                links.retain(|_, (at, _)| at.elapsed() < LINK_CACHE);
                links.insert(key.to_owned(), (Instant::now(), account.clone()));
                account
            }
        };
        Ok(Identity { guest_id, account })
    }

    /// The game, `None` when there is no such game.
    pub(super) async fn get_game(&self, game_id: &GameId) -> Result<Option<Game>, PlayError> {
        match self.games.game(game_id).await {
            Err(error) if error.reason() == Some(Reason::NotFound) => Ok(None),
            answer => answer,
        }
    }

    /// Sleeps a little; false when the wait should end instead (out of time,
    /// or shutdown).
    pub(super) async fn pause_until(&self, deadline: tokio::time::Instant) -> bool {
        tokio::select! {
            () = sleep(RETRY_DELAY) => tokio::time::Instant::now() < deadline,
            () = self.shutdown.cancelled() => false,
        }
    }

    /// Waits before trying again; false at shutdown.
    pub(super) async fn pause(&self) -> bool {
        tokio::select! {
            () = sleep(RETRY_DELAY) => true,
            () = self.shutdown.cancelled() => false,
        }
    }
}
