//! A follower: one task per game paired over Nostr, announcing each of its
//! moves (whichever front made it) and its ending. What has been told is
//! the bridge's journal, asked and written through the bridge's
//! [`Inbox`](super::inbox::Inbox).

use chess_proto::common::v1 as common;
use tokio_stream::StreamExt as _;

use super::{
    bridge::{OwnedSeats, result_of, termination_of},
    context::Context,
    inbox::Inbox,
    protocol,
};

/// Publishes a 20302 for each move of the game from the last one told,
/// and one with the result when it ends; then tells the bridge it stopped.
pub(super) async fn announce(cx: &Context, inbox: &Inbox, game_id: &str) {
    follow(cx, inbox, game_id).await;
    inbox.unfollowed(game_id);
}

async fn follow(cx: &Context, inbox: &Inbox, game_id: &str) {
    let Some(seats) = inbox.journal_seats(game_id).await else {
        return;
    };
    let mut fen = None;
    loop {
        let Some(told) = inbox.told_ply(game_id).await else {
            // The bridge stopped.
            return;
        };
        // The position now, for an ending that brings no move.
        match cx.get_game(game_id).await {
            Ok(Some(game)) => {
                fen.get_or_insert(game.fen.clone());
                if game.status == common::GameStatus::Finished as i32 && game.ply <= told {
                    let result = (result_of(game.result), termination_of(game.termination));
                    announce_end(cx, inbox, &seats, &game.fen, result);
                    return;
                }
            }
            Ok(None) => {
                tracing::warn!(game_id, "a followed Nostr game does not exist");
                inbox.ended(game_id);
                return;
            }
            Err(_) => {
                if cx.pause().await {
                    continue;
                }
                return;
            }
        }
        let mut stream = match cx.backends.game.watch_game(game_id, Some(told)).await {
            Ok(events) => events,
            Err(status) => {
                tracing::debug!(game_id, error = %status, "cannot follow a Nostr game; retrying");
                if cx.pause().await {
                    continue;
                }
                return;
            }
        };
        loop {
            let message = tokio::select! {
                message = stream.next() => message,
                () = cx.shutdown.cancelled() => return,
            };
            let Some(Ok(message)) = message else { break };
            let Some(event) = message.event else { continue };
            match event.kind {
                Some(common::game_event::Kind::MoveMade(made)) => {
                    let Some(told) = inbox.told_ply(game_id).await else {
                        return;
                    };
                    if event.ply <= told {
                        continue;
                    }
                    cx.outbox
                        .publish(protocol::state(&cx.keys, &seats.borrow(), &made.fen, None));
                    fen = Some(made.fen);
                    inbox.told(game_id, event.ply);
                }
                Some(common::game_event::Kind::GameEnded(ended)) => {
                    let result = (result_of(ended.result), termination_of(ended.termination));
                    let fen = fen.clone().unwrap_or_default();
                    announce_end(cx, inbox, &seats, &fen, result);
                    return;
                }
                _ => {}
            }
        }
        if !cx.pause().await {
            return;
        }
    }
}

fn announce_end(
    cx: &Context,
    inbox: &Inbox,
    seats: &OwnedSeats,
    fen: &str,
    (score, how): (&str, String),
) {
    cx.outbox.publish(protocol::state(
        &cx.keys,
        &seats.borrow(),
        fen,
        Some((score, &how)),
    ));
    inbox.ended(seats.game_id());
}
