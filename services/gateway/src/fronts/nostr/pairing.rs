//! A key's wait for an opponent: one task per waiting key, in the
//! matchmaking service's Nostr queue. A pairing, and the end of the wait,
//! go back to the bridge through its [`Inbox`](super::inbox::Inbox).

use std::time::Duration;

use chess_domain::{ColorChoice, Timestamp};

use super::{context::Context, inbox::Inbox};
use crate::core::play::{Pool, QueueUpdate, Seek};

/// How long a request to play waits for an opponent.
const QUEUE_LIFETIME: Duration = Duration::from_secs(10 * 60);

/// Waits for an opponent for `key`, asking since `since`, and tells the
/// bridge how the wait ended.
pub(super) async fn wait(
    cx: &Context,
    inbox: &Inbox,
    key: String,
    since: Timestamp,
    told_queued: bool,
) {
    let ended = wait_for_opponent(cx, inbox, &key, since, told_queued).await;
    inbox.stopped_waiting(key, ended);
}

/// A short name for a key: `npub`-free, but recognisable.
fn display_name(key: &str) -> String {
    format!("nostr:{}", &key[..key.len().min(8)])
}

/// Waits in the queue until paired, refused or out of time (true), or
/// until shutdown (false).
async fn wait_for_opponent(
    cx: &Context,
    inbox: &Inbox,
    key: &str,
    since: Timestamp,
    mut told_queued: bool,
) -> bool {
    let left = since.after(QUEUE_LIFETIME).since(Timestamp::now());
    let deadline = tokio::time::Instant::now() + left;
    loop {
        if tokio::time::Instant::now() >= deadline {
            break;
        }
        let identity = match cx.identity(key).await {
            Ok(identity) => identity,
            Err(error) => {
                tracing::warn!(%error, "cannot look up a Nostr key's account; retrying");
                if cx.pause_until(deadline).await {
                    continue;
                }
                break;
            }
        };
        let seek = Seek {
            guest_id: identity.guest_id,
            display_name: display_name(key),
            color: ColorChoice::Either,
            since,
            pool: Pool::Nostr,
            account: identity.account,
        };
        let mut queue = match cx.games.join_queue(seek).await {
            Ok(queue) => queue,
            Err(error) if error.reason().is_some() => {
                cx.reply(key, &format!("error:{}", error.message()));
                return true;
            }
            Err(error) => {
                tracing::warn!(%error, "cannot join the pairing queue; retrying");
                if cx.pause_until(deadline).await {
                    continue;
                }
                break;
            }
        };
        loop {
            let update = tokio::select! {
                update = queue.next() => update,
                () = tokio::time::sleep_until(deadline) => break,
                () = cx.shutdown.cancelled() => return false,
            };
            match update {
                Some(QueueUpdate::Queued) => {
                    if !told_queued {
                        told_queued = true;
                        cx.reply(key, "queued");
                    }
                }
                Some(QueueUpdate::Paired(paired)) => {
                    inbox.paired(key, paired);
                    return true;
                }
                Some(QueueUpdate::Other) => {}
                // Matchmaking restarted: queue again, keeping the time
                // of the request, which orders the waiters.
                None => break,
            }
        }
        if !cx.pause_until(deadline).await {
            break;
        }
    }
    if cx.shutdown.is_cancelled() {
        return false;
    }
    cx.reply(
        key,
        "error:no opponent came within 10 minutes; send a new request to play",
    );
    true
}
