//! Chess over Nostr (`protocols/nostr.md`, `docs/nostr.md`): the bridge
//! between Nostr relays and the internal services.
//!
//! - [`keys`]: the server's key pair, kept in a file.
//! - [`journal`]: what survives a restart (handled events, games followed).
//! - [`guest`]: the guest id a player's key plays as.
//! - [`protocol`]: reading and writing the protocol's events.
//! - [`bridge`]: the actor handling the players' events: pairing through
//!   matchmaking ([`pairing`]), moves through the game service, every move
//!   announced ([`follow`]); its tasks reach it through its [`inbox`] and
//!   share a [`context`].
//! - [`outbox`]: publishing to every relay, with retries.
//!
//! Run it on one gateway replica only: each replica would otherwise answer
//! every event.

pub mod bridge;
mod context;
mod follow;
mod guest;
mod inbox;
pub mod journal;
pub mod keys;
pub mod outbox;
mod pairing;
pub mod protocol;

use std::{collections::HashMap, path::PathBuf, sync::Arc, time::Duration};

use nostr_sdk::prelude::{
    Filter, Keys, Kind, RelayMessage, RelayOptions, RelayPool, RelayPoolNotification, RelayUrl,
    SubscribeOptions, Timestamp, ToBech32 as _,
};
use tokio::sync::{Mutex, mpsc};
use tokio_util::sync::CancellationToken;

use crate::core::clients::Backends;

/// Flags of the Nostr bridge.
#[derive(Debug, Clone, clap::Args)]
pub struct NostrArgs {
    /// Relays the Nostr bridge listens and publishes on, `ws://` or `wss://`
    /// URLs, comma-separated. Set it on one gateway replica only. Default:
    /// none, and the bridge is off.
    #[arg(long = "nostr-relays", value_delimiter = ',')]
    pub relays: Vec<String>,
    /// Directory of the bridge's journal (the events it handled, the games
    /// it announces) and, by default, its key.
    #[arg(long, default_value = "data/nostr")]
    pub nostr_data_dir: PathBuf,
    /// File holding the server's Nostr secret key (64 hexadecimal digits or
    /// `nsec…`); created with a new key when missing. Default:
    /// `<nostr-data-dir>/server.key`.
    #[arg(long)]
    pub nostr_key_file: Option<PathBuf>,
}

/// Why the bridge could not start.
#[derive(Debug, thiserror::Error)]
pub enum NostrError {
    #[error(transparent)]
    Key(#[from] keys::KeyFileError),
    #[error("Nostr journal {path}: {source}")]
    Journal {
        path: String,
        source: std::io::Error,
    },
    #[error("Nostr relay {url:?}: {message}")]
    Relay { url: String, message: String },
}

/// What the public API reports of the bridge.
#[derive(Clone, Debug)]
pub struct NostrInfo {
    pub public_key: String,
    pub npub: String,
    pub relays: Vec<RelayInfo>,
}

#[derive(Clone, Debug)]
pub struct RelayInfo {
    pub url: String,
    pub connected: bool,
    pub subscribed: bool,
}

/// A running bridge, for the public API.
#[derive(Clone, Debug)]
pub struct Handle {
    keys: Keys,
    pool: RelayPool,
    relays: Vec<RelayUrl>,
    /// Per relay, the connection (its start time) whose subscription the
    /// relay acknowledged.
    acknowledged: Arc<Mutex<HashMap<RelayUrl, Timestamp>>>,
}

impl Handle {
    /// The server's public key, in hex.
    pub fn public_key(&self) -> String {
        self.keys.public_key().to_hex()
    }

    /// The server's key and each relay's state now.
    pub async fn info(&self) -> NostrInfo {
        let key = self.keys.public_key();
        let acknowledged = self.acknowledged.lock().await.clone();
        let mut relays = Vec::with_capacity(self.relays.len());
        for url in &self.relays {
            let (connected, subscribed) = match self.pool.relay(url).await {
                Ok(relay) => {
                    let connected = relay.is_connected();
                    let since = relay.stats().connected_at();
                    (
                        connected,
                        connected && acknowledged.get(url) == Some(&since),
                    )
                }
                Err(_) => (false, false),
            };
            relays.push(RelayInfo {
                url: url.to_string(),
                connected,
                subscribed,
            });
        }
        NostrInfo {
            public_key: key.to_hex(),
            npub: key.to_bech32().unwrap_or_default(),
            relays,
        }
    }
}

/// Starts the bridge when relays are given; it runs until `shutdown`.
pub async fn start(
    args: &NostrArgs,
    backends: Backends,
    shutdown: CancellationToken,
) -> Result<Option<Handle>, NostrError> {
    let urls: Vec<&str> = args
        .relays
        .iter()
        .map(|u| u.trim())
        .filter(|u| !u.is_empty())
        .collect();
    if urls.is_empty() {
        return Ok(None);
    }
    let key_file = args
        .nostr_key_file
        .clone()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| args.nostr_data_dir.join("server.key"));
    let keys = keys::load_or_create(&key_file)?;
    let journal_path = args.nostr_data_dir.join("journal");
    let journal_error = |source| NostrError::Journal {
        path: journal_path.display().to_string(),
        source,
    };
    std::fs::create_dir_all(&args.nostr_data_dir).map_err(journal_error)?;
    let journal = journal::Journal::open(
        &journal_path,
        chess_domain::Timestamp::now()
            .unsigned_secs()
            .saturating_sub(bridge::WINDOW_SECS),
    )
    .map_err(journal_error)?;

    let pool = RelayPool::default();
    let mut relays = Vec::new();
    for url in urls {
        let relay_url = RelayUrl::parse(url).map_err(|e| NostrError::Relay {
            url: url.to_owned(),
            message: e.to_string(),
        })?;
        // Reconnects after 1 s, then backs off (to a minute) while the relay
        // stays away.
        let options = RelayOptions::new()
            .reconnect(true)
            .retry_interval(Duration::from_secs(1))
            .adjust_retry_interval(true);
        pool.add_relay(relay_url.clone(), options)
            .await
            .map_err(|e| NostrError::Relay {
                url: url.to_owned(),
                message: e.to_string(),
            })?;
        relays.push(relay_url);
    }
    let (outbox, published) = outbox::Outbox::new();
    let key = keys.public_key();
    tracing::info!(
        public_key = %key.to_hex(),
        npub = %key.to_bech32().unwrap_or_default(),
        relays = ?relays.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "Nostr bridge started"
    );

    let handle = Handle {
        keys: keys.clone(),
        pool: pool.clone(),
        relays: relays.clone(),
        acknowledged: Arc::default(),
    };
    let (events_tx, events_rx) = mpsc::unbounded_channel();
    // Listen before connecting, so no acknowledgement is missed.
    let notifications = pool.notifications();
    tokio::spawn(listen(
        notifications,
        pool.clone(),
        Arc::clone(&handle.acknowledged),
        events_tx,
        shutdown.clone(),
    ));
    pool.connect().await;
    // Players' requests and moves to this server. The relay keeps the
    // subscription across reconnections (the pool sends it again).
    let filter = Filter::new()
        .kinds([
            Kind::Custom(protocol::REQUEST),
            Kind::Custom(protocol::MOVE),
        ])
        .pubkey(key)
        .since(Timestamp::from(
            chess_domain::Timestamp::now()
                .unsigned_secs()
                .saturating_sub(bridge::WINDOW_SECS),
        ));
    pool.subscribe(filter, SubscribeOptions::default())
        .await
        .map_err(|e| NostrError::Relay {
            url: relays
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(","),
            message: e.to_string(),
        })?;
    let bridge = bridge::Bridge::new(
        context::Context::new(keys, backends, outbox, shutdown.clone()),
        journal,
    );
    tokio::spawn(bridge.run(events_rx));
    tokio::spawn(outbox::run(
        pool.clone(),
        relays,
        published,
        shutdown.clone(),
    ));
    tokio::spawn({
        let pool = pool.clone();
        async move {
            shutdown.cancelled().await;
            pool.shutdown().await;
        }
    });
    Ok(Some(handle))
}

/// Passes the players' events to the worker and notes each relay's
/// acknowledgement of the subscription.
async fn listen(
    mut notifications: tokio::sync::broadcast::Receiver<RelayPoolNotification>,
    pool: RelayPool,
    acknowledged: Arc<Mutex<HashMap<RelayUrl, Timestamp>>>,
    events: mpsc::UnboundedSender<nostr_sdk::prelude::Event>,
    shutdown: CancellationToken,
) {
    use tokio::sync::broadcast::error::RecvError;
    loop {
        let notification = tokio::select! {
            n = notifications.recv() => n,
            () = shutdown.cancelled() => return,
        };
        match notification {
            Ok(RelayPoolNotification::Event { event, .. }) => {
                if events.send(*event).is_err() {
                    return;
                }
            }
            Ok(RelayPoolNotification::Message {
                relay_url,
                message: RelayMessage::EndOfStoredEvents(_),
            }) => {
                if let Ok(relay) = pool.relay(&relay_url).await {
                    let since = relay.stats().connected_at();
                    acknowledged.lock().await.insert(relay_url, since);
                }
            }
            Ok(RelayPoolNotification::Shutdown) | Err(RecvError::Closed) => return,
            Ok(_) => {}
            Err(RecvError::Lagged(missed)) => {
                tracing::warn!(
                    missed,
                    "the Nostr bridge fell behind its relays; notifications lost"
                );
            }
        }
    }
}
