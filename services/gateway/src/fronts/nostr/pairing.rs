//! A key's wait for an opponent: one task per waiting key, in the
//! matchmaking service's Nostr queue. A pairing, and the end of the wait,
//! go back to the bridge through its [`Inbox`](super::inbox::Inbox).

use std::time::Duration;

use chess_proto::{
    common::v1 as common,
    matchmaking::v1::{self as mm_pb, join_pairing_queue_response::Update},
};
use chess_runtime::Reason;

use super::{bridge::now_secs, context::Context, inbox::Inbox};

/// How long a request to play waits for an opponent.
const QUEUE_LIFETIME: Duration = Duration::from_secs(10 * 60);

/// Waits for an opponent for `key`, asking since `since` (Unix seconds),
/// and tells the bridge how the wait ended.
pub(super) async fn wait(cx: &Context, inbox: &Inbox, key: String, since: u64, told_queued: bool) {
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
    since: u64,
    mut told_queued: bool,
) -> bool {
    let left = (since + QUEUE_LIFETIME.as_secs()).saturating_sub(now_secs());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(left);
    let asked_at = prost_types::Timestamp {
        seconds: i64::try_from(since).unwrap_or(i64::MAX),
        nanos: 0,
    };
    loop {
        if tokio::time::Instant::now() >= deadline {
            break;
        }
        let identity = match cx.identity(key).await {
            Ok(identity) => identity,
            Err(status) => {
                tracing::warn!(error = %status, "cannot look up a Nostr key's account; retrying");
                if cx.pause_until(deadline).await {
                    continue;
                }
                break;
            }
        };
        let request = mm_pb::JoinPairingQueueRequest {
            guest_id: identity.guest_id.clone(),
            display_name: display_name(key),
            color: common::ColorChoice::Either as i32,
            connected_at: Some(asked_at),
            pool: mm_pb::PairingPool::Nostr as i32,
            account: identity.account.clone(),
        };
        let mut stream = match cx
            .backends
            .matchmaking
            .acting(&identity.guest_id)
            .join_pairing_queue(request)
            .await
        {
            Ok(response) => response.into_inner(),
            Err(status) if Reason::of(&status).is_some() => {
                cx.reply(key, &format!("error:{}", status.message()));
                return true;
            }
            Err(status) => {
                tracing::warn!(error = %status, "cannot join the pairing queue; retrying");
                if cx.pause_until(deadline).await {
                    continue;
                }
                break;
            }
        };
        loop {
            let update = tokio::select! {
                update = stream.message() => update,
                () = tokio::time::sleep_until(deadline) => break,
                () = cx.shutdown.cancelled() => return false,
            };
            match update {
                Ok(Some(mm_pb::JoinPairingQueueResponse {
                    update: Some(Update::Queued(_)),
                })) => {
                    if !told_queued {
                        told_queued = true;
                        cx.reply(key, "queued");
                    }
                }
                Ok(Some(mm_pb::JoinPairingQueueResponse {
                    update: Some(Update::Paired(paired)),
                })) => {
                    inbox.paired(key, paired);
                    return true;
                }
                Ok(Some(_)) => {}
                // Matchmaking restarted: queue again, keeping the time
                // of the request, which orders the waiters.
                Ok(None) | Err(_) => break,
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
