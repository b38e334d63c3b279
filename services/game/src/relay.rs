//! PlayMoves' flow: the moves of many players over one stream.
//!
//! A caller relaying many players' moves (the gateway) would otherwise
//! make one MakeMove call per move, and each call costs both processes an
//! HTTP/2 stream of its own: headers encoded and decoded, the layers of
//! the server run, a task spawned. Over PlayMoves a move is one message
//! each way. Each message carries the assertion a MakeMove call would
//! carry, checked alike (by `api`), so a stream gives its caller no right
//! a call would not.
//!
//! The moves of one stream are done concurrently, up to [`IN_FLIGHT`] at
//! a time (beyond that the stream is not read, and HTTP/2 flow control
//! holds the caller back), and answered as each is done. This module is
//! the flow alone: the edge hands it the stream's messages and how to do
//! one, and sends on the answers.

use std::future::Future;

use chess_runtime::Shutdown;
use futures::{Stream, StreamExt as _, stream::FuturesUnordered};
use tokio::sync::mpsc;

/// Moves of one stream being done at once, at most.
pub const IN_FLIGHT: usize = 4096;
/// Answers waiting to be sent, at most.
const ANSWERS: usize = 1024;

/// Serves one stream: reads `moves` until it ends, does each by `play`,
/// and sends each answer on the channel returned. Reading stops at
/// shutdown; the moves in flight are then answered and the channel closes.
pub fn serve<M, A, P, F>(
    shutdown: Shutdown,
    moves: impl Stream<Item = M> + Send + 'static,
    play: P,
) -> mpsc::Receiver<A>
where
    M: Send + 'static,
    A: Send + 'static,
    P: Fn(M) -> F + Send + 'static,
    F: Future<Output = A> + Send + 'static,
{
    let (tx, rx) = mpsc::channel(ANSWERS);
    tokio::spawn(relay(shutdown, moves, play, tx));
    rx
}

async fn relay<M, A, P, F>(
    shutdown: Shutdown,
    moves: impl Stream<Item = M>,
    play: P,
    tx: mpsc::Sender<A>,
) where
    P: Fn(M) -> F,
    F: Future<Output = A>,
{
    let mut moves = std::pin::pin!(moves);
    let mut pending = FuturesUnordered::new();
    let mut reading = true;
    while reading || !pending.is_empty() {
        tokio::select! {
            biased;
            // Answers first: they free room for more moves.
            Some(answer) = pending.next(), if !pending.is_empty() => {
                if tx.send(answer).await.is_err() {
                    return;
                }
            }
            message = moves.next(), if reading && pending.len() < IN_FLIGHT => match message {
                Some(request) => pending.push(play(request)),
                // The caller has sent its last move, or its side broke:
                // the moves already read are still done and answered.
                None => reading = false,
            },
            () = shutdown.cancelled(), if reading => reading = false,
            () = tx.closed() => return,
        }
    }
}
