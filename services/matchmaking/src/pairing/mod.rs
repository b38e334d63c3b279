//! The uqchess pairing queue (`start human`).
//!
//! One actor owns the queue, so pairings happen one at a time in arrival
//! order. A newcomer is paired with a waiting player whose colour choice is
//! compatible (white with black, a colour with either, either with either);
//! among several, the one that connected to the server earliest. When both
//! said either, the one who waited plays white.
//!
//! A waiter's place is its open stream: when the stream closes the waiter
//! leaves the queue at once, and a waiter whose stream has closed is never
//! paired.

use chess_domain::{Color, ColorChoice};
use tokio::sync::mpsc;
use tonic::Status;

use crate::clients::{GameClient, Guest};

/// What a waiter hears: its place in the queue, then its game.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PairingUpdate {
    /// Queued, with this many players waiting (them included).
    Queued { waiting: u32 },
    /// Paired: the game, their colour in it, and their opponent's guest id.
    Paired {
        game_id: String,
        color: Color,
        opponent_id: String,
    },
}

/// What a waiter receives; an error is the game service's, passed on as is.
pub type Updates = mpsc::Sender<Result<PairingUpdate, Status>>;

/// Someone asking to be paired.
#[derive(Debug)]
pub struct Seeker {
    pub guest_id: String,
    pub display_name: String,
    pub color: ColorChoice,
    /// When the player connected to the server, as (seconds, nanoseconds).
    pub connected_at: (i64, i32),
    pub updates: Updates,
}

enum Message {
    Join(Seeker),
    Leave { guest_id: String },
}

/// A handle to the pairing actor.
#[derive(Clone, Debug)]
pub struct Pairing {
    tx: mpsc::Sender<Message>,
}

impl Pairing {
    /// Starts the actor; games are created through `game`.
    pub fn spawn(game: GameClient) -> Self {
        let (tx, rx) = mpsc::channel(1024);
        tokio::spawn(run(rx, game));
        Self { tx }
    }

    /// Queues `seeker` (or pairs them at once). When their update stream
    /// closes they leave the queue.
    pub async fn join(&self, seeker: Seeker) -> Result<(), Status> {
        let guest_id = seeker.guest_id.clone();
        let updates = seeker.updates.clone();
        self.tx
            .send(Message::Join(seeker))
            .await
            .map_err(|_| Status::unavailable("pairing has stopped"))?;
        let tx = self.tx.clone();
        tokio::spawn(async move {
            updates.closed().await;
            // The actor only stops with the service.
            let _ = tx.send(Message::Leave { guest_id }).await;
        });
        Ok(())
    }
}

/// The colours of a waiter and a newcomer, if they can play each other:
/// the uqchess rule (the waiter plays white when neither minds).
fn colours(waiter: ColorChoice, newcomer: ColorChoice) -> Option<(Color, Color)> {
    ColorChoice::pair_waiting(waiter, newcomer)
}

fn guest(seeker: &Seeker) -> Guest<'_> {
    Guest {
        guest_id: &seeker.guest_id,
        display_name: &seeker.display_name,
    }
}

async fn run(mut rx: mpsc::Receiver<Message>, game: GameClient) {
    let mut waiting: Vec<Seeker> = Vec::new();
    while let Some(message) = rx.recv().await {
        match message {
            Message::Leave { guest_id } => waiting.retain(|w| w.guest_id != guest_id),
            Message::Join(newcomer) => {
                // A player asking again replaces their earlier place.
                waiting.retain(|w| w.guest_id != newcomer.guest_id && !w.updates.is_closed());
                let best = waiting
                    .iter()
                    .enumerate()
                    .filter(|(_, w)| colours(w.color, newcomer.color).is_some())
                    .min_by_key(|(_, w)| (w.connected_at, w.guest_id.clone()))
                    .map(|(i, _)| i);
                match best {
                    None => {
                        let queued = PairingUpdate::Queued {
                            waiting: waiting.len() as u32 + 1,
                        };
                        if newcomer.updates.send(Ok(queued)).await.is_ok() {
                            waiting.push(newcomer);
                        }
                    }
                    Some(index) => {
                        let waiter = waiting.remove(index);
                        if let Err((waiter, status)) = pair(&game, waiter, &newcomer).await {
                            tracing::warn!(error = %status, "cannot create a paired game");
                            // The newcomer may ask again; the waiter keeps its place.
                            let _ = newcomer.updates.send(Err(status)).await;
                            waiting.push(waiter);
                        }
                    }
                }
            }
        }
    }
}

/// Creates the game of `waiter` and `newcomer` and tells both.
async fn pair(
    game: &GameClient,
    waiter: Seeker,
    newcomer: &Seeker,
) -> Result<(), (Seeker, Status)> {
    let Some((waiter_colour, newcomer_colour)) = colours(waiter.color, newcomer.color) else {
        return Err((waiter, Status::internal("incompatible colours")));
    };
    let (white, black) = match waiter_colour {
        Color::White => (&waiter, newcomer),
        Color::Black => (newcomer, &waiter),
    };
    let game_id = match game.create_uqchess_game(guest(white), guest(black)).await {
        Ok(game_id) => game_id,
        Err(status) => return Err((waiter, status)),
    };
    tracing::debug!(%game_id, white = %white.guest_id, black = %black.guest_id, "paired");
    let paired = |colour: Color, opponent: &Seeker| PairingUpdate::Paired {
        game_id: game_id.clone(),
        color: colour,
        opponent_id: opponent.guest_id.clone(),
    };
    for (seeker, colour, opponent) in [
        (&waiter, waiter_colour, newcomer),
        (newcomer, newcomer_colour, &waiter),
    ] {
        if seeker
            .updates
            .send(Ok(paired(colour, opponent)))
            .await
            .is_err()
        {
            // They left as the game was made: that is a resignation.
            if let Err(e) = game.resign(&game_id, &seeker.guest_id).await {
                tracing::warn!(%game_id, error = %e, "cannot resign for a player who left");
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ColorChoice::*;

    #[test]
    fn colour_rules() {
        assert_eq!(colours(Either, Either), Some((Color::White, Color::Black)));
        assert_eq!(colours(Black, Either), Some((Color::Black, Color::White)));
        assert_eq!(colours(Either, White), Some((Color::Black, Color::White)));
        assert_eq!(colours(White, Black), Some((Color::White, Color::Black)));
        assert_eq!(colours(White, White), None);
        assert_eq!(colours(Black, Black), None);
    }
}
