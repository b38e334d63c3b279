//! A follower: one task per game paired over Nostr, announcing each of its
//! moves (whichever front made it) and its ending. What has been told is
//! the bridge's journal, asked and written through the bridge's
//! [`Inbox`](super::inbox::Inbox).

use chess_domain::GameId;

use super::{
    bridge::{OwnedSeats, ending_of},
    context::Context,
    inbox::Inbox,
    protocol,
};
use crate::core::play::GameEvent;

/// Publishes a 20302 for each move of the game from the last one told,
/// and one with the result when it ends; then tells the bridge it stopped.
pub(super) async fn announce(cx: &Context, inbox: &Inbox, game_id: &GameId) {
    follow(cx, inbox, game_id).await;
    inbox.unfollowed(game_id);
}

async fn follow(cx: &Context, inbox: &Inbox, game_id: &GameId) {
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
                if let Some(ended) = game.ended.filter(|_| game.ply() <= told) {
                    announce_end(cx, inbox, &seats, &game.fen, ending_of(&ended));
                    return;
                }
            }
            Ok(None) => {
                tracing::warn!(
                    game_id = game_id.as_str(),
                    "a followed Nostr game does not exist"
                );
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
        let mut events = match cx.games.watch(game_id, told, None).await {
            Ok(events) => events,
            Err(error) => {
                tracing::debug!(game_id = game_id.as_str(), %error, "cannot follow a Nostr game; retrying");
                if cx.pause().await {
                    continue;
                }
                return;
            }
        };
        loop {
            let event = tokio::select! {
                event = events.next() => event,
                () = cx.shutdown.cancelled() => return,
            };
            let Some(event) = event else { break };
            match event {
                GameEvent::Moved {
                    ply, fen: after, ..
                } => {
                    let Some(told) = inbox.told_ply(game_id).await else {
                        return;
                    };
                    if ply <= told {
                        continue;
                    }
                    cx.outbox
                        .publish(protocol::state(&cx.keys, &seats.borrow(), &after, None));
                    fen = Some(after);
                    inbox.told(game_id, ply);
                }
                // The protocol has no takeback: the position it went back
                // to is published as the game's state, and the moves played
                // from there are told as they come.
                GameEvent::TakenBack { ply, fen: after } => {
                    cx.outbox
                        .publish(protocol::state(&cx.keys, &seats.borrow(), &after, None));
                    fen = Some(after);
                    inbox.rewound(game_id, ply);
                }
                GameEvent::Ended(ended) => {
                    let fen = fen.clone().unwrap_or_default();
                    announce_end(cx, inbox, &seats, &fen, ending_of(&ended));
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
