//! PlayMoves: the moves of many players over one stream.
//!
//! A caller relaying many players' moves (the gateway) would otherwise
//! make one MakeMove call per move, and each call costs both processes an
//! HTTP/2 stream of its own: headers encoded and decoded, the layers of
//! the server run, a task spawned. Over PlayMoves a move is one message
//! each way. Each message carries the assertion a MakeMove call would
//! carry, checked alike, so a stream gives its caller no right a call
//! would not.
//!
//! The moves of one stream are done concurrently, up to [`IN_FLIGHT`] at
//! a time (beyond that the stream is not read, and HTTP/2 flow control
//! holds the caller back), and answered as each is done.

use std::sync::Arc;

use chess_internal_clients::game;
use chess_proto::game::v1 as pb;
use chess_runtime::{InternalKey, Shutdown, identity};
use futures::{StreamExt as _, stream::FuturesUnordered};
use tokio::sync::mpsc;
use tonic::{Status, Streaming};
use tracing::Instrument as _;

use crate::{api, error::Error, registry::Registry};

/// Moves of one stream being done at once, at most.
pub const IN_FLIGHT: usize = 4096;
/// Answers waiting to be sent, at most.
const ANSWERS: usize = 1024;

/// Serves one PlayMoves stream: reads `moves`, does each, and sends each
/// answer on the stream returned. Reading stops at shutdown; the moves in
/// flight are then answered and the stream ends.
pub fn serve(
    registry: Arc<Registry>,
    key: InternalKey,
    shutdown: Shutdown,
    moves: Streaming<pb::PlayMovesRequest>,
) -> mpsc::Receiver<Result<pb::PlayMovesResponse, Status>> {
    let (tx, rx) = mpsc::channel(ANSWERS);
    tokio::spawn(relay(registry, key, shutdown, moves, tx));
    rx
}

async fn relay(
    registry: Arc<Registry>,
    key: InternalKey,
    shutdown: Shutdown,
    mut moves: Streaming<pb::PlayMovesRequest>,
    tx: mpsc::Sender<Result<pb::PlayMovesResponse, Status>>,
) {
    let mut pending = FuturesUnordered::new();
    let mut reading = true;
    while reading || !pending.is_empty() {
        tokio::select! {
            biased;
            // Answers first: they free room for more moves.
            Some(answer) = pending.next(), if !pending.is_empty() => {
                if tx.send(Ok(answer)).await.is_err() {
                    return;
                }
            }
            message = moves.message(), if reading && pending.len() < IN_FLIGHT => match message {
                Ok(Some(request)) => pending.push(play(&registry, &key, request)),
                // The caller has sent its last move, or its side broke:
                // the moves already read are still done and answered.
                Ok(None) | Err(_) => reading = false,
            },
            () = shutdown.cancelled(), if reading => reading = false,
            () = tx.closed() => return,
        }
    }
}

/// Does one move and says how it went.
async fn play(
    registry: &Arc<Registry>,
    key: &InternalKey,
    request: pb::PlayMovesRequest,
) -> pb::PlayMovesResponse {
    let pb::PlayMovesRequest {
        id,
        assertion,
        r#move,
        trace_context,
    } = request;
    let span = chess_telemetry::span_from("GameService/PlayMoves.move", &trace_context);
    let answer = async {
        let claims = identity::verify_now(key, &assertion)?;
        let request = r#move.ok_or_else(|| Error::Invalid("move must be given".to_owned()))?;
        api::make_move(registry, &claims, request).await
    }
    .instrument(span)
    .await;
    let result = match answer {
        Ok(made) => pb::play_moves_response::Result::Made(made),
        Err(status) => pb::play_moves_response::Result::Refused(game::refusal_of(&status)),
    };
    pb::PlayMovesResponse {
        id,
        result: Some(result),
    }
}
