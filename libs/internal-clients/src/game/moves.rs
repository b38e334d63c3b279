//! Moves sent over PlayMoves: one long-lived stream per replica, shared by
//! every clone of a [`super::GameClient`].
//!
//! A move made this way costs each side one message instead of an HTTP/2
//! call of its own. Each carries its own assertion, acting for its player
//! in its game, as a MakeMove call would. A lane (one stream) is opened on
//! a replica's first move and kept while it works; a lane whose stream
//! ends is replaced on the next move.
//!
//! What a caller sees is what MakeMove would have told it: the answer, or
//! the status with its metadata. A refusal naming another replica (or a
//! moving shard) has done nothing, so the move is then made as a routed
//! MakeMove call, which follows it. A move whose lane breaks before its
//! answer fails UNAVAILABLE, as a call whose replica went away does: it
//! may have been made.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex, Weak,
        atomic::{AtomicU64, Ordering},
    },
};

use chess_proto::game::v1::{self as pb, game_service_client::GameServiceClient};
use chess_runtime::Signer;
use tokio::sync::{mpsc, oneshot};
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::{
    Code, Status,
    metadata::{KeyAndValueRef, MetadataKey, MetadataValue},
    service::interceptor::InterceptedService,
};

use super::router::Endpoint;
use crate::CALL_TIMEOUT;

type Answer = Result<pb::MakeMoveResponse, Status>;

/// The lanes of one client, by replica address.
#[derive(Debug, Default)]
pub(crate) struct Lanes {
    by_address: Mutex<HashMap<Arc<str>, Arc<Lane>>>,
}

/// One PlayMoves stream and the moves waiting for its answers.
#[derive(Debug)]
struct Lane {
    /// `None` once the stream has ended: nothing more will be answered.
    waiting: Mutex<Option<HashMap<u64, oneshot::Sender<Answer>>>>,
    next_id: AtomicU64,
    moves: mpsc::UnboundedSender<pb::PlayMovesRequest>,
}

/// How many times a move is offered to a fresh lane when the one it found
/// had closed before the move was sent.
const SEND_TRIES: usize = 3;

impl Lanes {
    /// Sends `request` (with `assertion`, acting for its player in its game)
    /// to the replica at `endpoint` and waits for the answer, at most
    /// [`CALL_TIMEOUT`].
    pub(crate) async fn make_move(
        &self,
        endpoint: &Endpoint,
        signer: &Signer,
        assertion: String,
        request: pb::MakeMoveRequest,
    ) -> Answer {
        let mut message = pb::PlayMovesRequest {
            id: 0,
            assertion,
            r#move: Some(request),
            trace_context: chess_telemetry::current_context(),
        };
        for _ in 0..SEND_TRIES {
            let lane = self.lane(endpoint, signer);
            let Some((id, answer)) = lane.wait() else {
                self.forget(endpoint, &lane);
                continue;
            };
            message.id = id;
            if let Err(mpsc::error::SendError(back)) = lane.moves.send(message) {
                // Never sent: the lane's stream had ended.
                message = back;
                lane.give_up(id);
                self.forget(endpoint, &lane);
                continue;
            }
            return match tokio::time::timeout(CALL_TIMEOUT, answer).await {
                Ok(Ok(answer)) => answer,
                Ok(Err(_)) => Err(Status::unavailable(
                    "the stream of moves to the game service broke before the answer: the move may have been made",
                )),
                Err(_) => {
                    lane.give_up(id);
                    Err(Status::deadline_exceeded(format!(
                        "the game service did not answer the move in {} s",
                        CALL_TIMEOUT.as_secs()
                    )))
                }
            };
        }
        Err(Status::unavailable(
            "the game service closes every stream of moves; try again",
        ))
    }

    /// The working lane to `endpoint`, opened if there is none.
    fn lane(&self, endpoint: &Endpoint, signer: &Signer) -> Arc<Lane> {
        let mut lanes = self.by_address.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(lane) = lanes.get(&endpoint.address)
            && !lane.closed()
        {
            return Arc::clone(lane);
        }
        let lane = Lane::open(endpoint, signer);
        lanes.insert(Arc::clone(&endpoint.address), Arc::clone(&lane));
        lane
    }

    /// Drops `lane` from the lanes, unless it was replaced already.
    fn forget(&self, endpoint: &Endpoint, lane: &Arc<Lane>) {
        let mut lanes = self.by_address.lock().unwrap_or_else(|p| p.into_inner());
        if lanes
            .get(&endpoint.address)
            .is_some_and(|l| Arc::ptr_eq(l, lane))
        {
            lanes.remove(&endpoint.address);
        }
    }
}

impl Lane {
    /// Opens a stream to `endpoint`; its answers are read by a task of
    /// their own, which ends with the stream.
    fn open(endpoint: &Endpoint, signer: &Signer) -> Arc<Self> {
        // Unbounded: each move's sender waits for its answer, so a lane
        // holds at most one move per waiting caller.
        let (tx, rx) = mpsc::unbounded_channel();
        let lane = Arc::new(Self {
            waiting: Mutex::new(Some(HashMap::new())),
            next_id: AtomicU64::new(0),
            moves: tx,
        });
        // The stream itself acts for nobody: each move carries its own.
        let mut client = GameServiceClient::new(InterceptedService::new(
            endpoint.channel.clone(),
            signer.bound(None, None),
        ));
        let address = Arc::clone(&endpoint.address);
        let weak = Arc::downgrade(&lane);
        tokio::spawn(async move {
            match client.play_moves(UnboundedReceiverStream::new(rx)).await {
                Ok(response) => {
                    let mut answers = response.into_inner();
                    loop {
                        match answers.message().await {
                            Ok(Some(answer)) => deliver(&weak, answer),
                            Ok(None) => break,
                            Err(status) => {
                                tracing::debug!(%address, error = %status, "a stream of moves to a game replica broke");
                                break;
                            }
                        }
                    }
                }
                Err(status) => {
                    tracing::debug!(%address, error = %status, "cannot open a stream of moves to a game replica");
                }
            }
            if let Some(lane) = weak.upgrade() {
                lane.close();
            }
        });
        lane
    }

    fn closed(&self) -> bool {
        self.waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_none()
    }

    /// A new move's id and where its answer will come; `None` if the lane
    /// has closed.
    fn wait(&self) -> Option<(u64, oneshot::Receiver<Answer>)> {
        let (tx, rx) = oneshot::channel();
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        waiting.as_mut()?.insert(id, tx);
        Some((id, rx))
    }

    /// Stops waiting for move `id`.
    fn give_up(&self, id: u64) {
        let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(waiting) = waiting.as_mut() {
            waiting.remove(&id);
        }
    }

    /// The stream has ended: every move still waiting hears so (its
    /// sender is dropped).
    fn close(&self) {
        self.waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
    }
}

/// Hands `answer` to the move waiting for it.
fn deliver(lane: &Weak<Lane>, answer: pb::PlayMovesResponse) {
    let Some(lane) = lane.upgrade() else { return };
    let waiter = {
        let mut waiting = lane.waiting.lock().unwrap_or_else(|p| p.into_inner());
        waiting.as_mut().and_then(|w| w.remove(&answer.id))
    };
    // A move nobody waits for any more (it timed out) is dropped.
    if let Some(waiter) = waiter {
        let _ = waiter.send(answer_of(answer.result));
    }
}

/// What MakeMove would have returned.
fn answer_of(result: Option<pb::play_moves_response::Result>) -> Answer {
    match result {
        Some(pb::play_moves_response::Result::Made(made)) => Ok(made),
        Some(pb::play_moves_response::Result::Refused(refusal)) => Err(status_of(refusal)),
        None => Err(Status::internal(
            "the game service answered a move with nothing",
        )),
    }
}

/// `status` as PlayMoves carries a refusal: its code, message and ASCII
/// metadata (the reason, and where the game is served).
pub fn refusal_of(status: &Status) -> pb::Refusal {
    let metadata = status
        .metadata()
        .iter()
        .filter_map(|entry| match entry {
            KeyAndValueRef::Ascii(key, value) => {
                Some((key.as_str().to_owned(), value.to_str().ok()?.to_owned()))
            }
            KeyAndValueRef::Binary(..) => None,
        })
        .collect();
    pb::Refusal {
        code: status.code() as i32,
        message: status.message().to_owned(),
        metadata,
    }
}

/// The status a refusal carries.
fn status_of(refusal: pb::Refusal) -> Status {
    let mut status = Status::new(Code::from_i32(refusal.code), refusal.message);
    for (key, value) in refusal.metadata {
        if let (Ok(key), Ok(value)) = (
            MetadataKey::from_bytes(key.as_bytes()),
            MetadataValue::try_from(value.as_str()),
        ) {
            status.metadata_mut().insert(key, value);
        }
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_comes_back_as_the_status_it_was() {
        let refused = chess_runtime::Reason::NotYourTurn.status(Code::FailedPrecondition, "wait");
        let status = status_of(refusal_of(&refused));
        assert_eq!(status.code(), Code::FailedPrecondition);
        assert_eq!(status.message(), "wait");
        assert_eq!(
            chess_runtime::Reason::of(&status),
            Some(chess_runtime::Reason::NotYourTurn)
        );
        let moving = status_of(refusal_of(&chess_shards::routing::shard_moving(7)));
        assert!(chess_shards::routing::redirect(moving.code(), moving.metadata()).is_some());
        let elsewhere = chess_shards::routing::not_owner("g", 3, Some("10.0.0.2:50052"));
        let elsewhere = status_of(refusal_of(&elsewhere));
        assert!(chess_shards::routing::redirect(elsewhere.code(), elsewhere.metadata()).is_some());
        assert_eq!(
            status_of(refusal_of(&Status::internal("x"))).code(),
            Code::Internal
        );
    }
}
