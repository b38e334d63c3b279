//! The pairing actor: the queue of waiters, one message at a time.

use chess_domain::{Color, ColorChoice, PlayerId};
use tokio::sync::mpsc;

use super::{PairingError, PairingHandle, PairingUpdate, Seeker};
use crate::clients::GameClient;

/// What the handle asks of the actor.
#[derive(Debug)]
pub(super) enum Message {
    Join(Seeker),
    Leave { guest_id: PlayerId },
}

/// The pairing queue's owner.
#[derive(Debug)]
pub struct Pairing {
    rx: mpsc::Receiver<Message>,
    game: GameClient,
    waiting: Vec<Seeker>,
}

impl Pairing {
    /// Starts the actor; games are created through `game`.
    pub fn spawn(game: GameClient) -> PairingHandle {
        let (tx, rx) = mpsc::channel(1024);
        let actor = Self {
            rx,
            game,
            waiting: Vec::new(),
        };
        tokio::spawn(actor.run());
        PairingHandle { tx }
    }

    async fn run(mut self) {
        while let Some(message) = self.rx.recv().await {
            match message {
                Message::Leave { guest_id } => self.waiting.retain(|w| w.guest_id != guest_id),
                Message::Join(newcomer) => self.join(newcomer).await,
            }
        }
    }

    async fn join(&mut self, newcomer: Seeker) {
        let waiting = &mut self.waiting;
        // A player asking again replaces their earlier place.
        waiting.retain(|w| w.guest_id != newcomer.guest_id && !w.updates.is_closed());
        let best = waiting
            .iter()
            .enumerate()
            .filter(|(_, w)| w.pool == newcomer.pool && colours(w.color, newcomer.color).is_some())
            .min_by_key(|(_, w)| (w.connected_at, w.guest_id.clone()))
            .map(|(i, _)| i);
        match best {
            None => {
                let in_pool = waiting.iter().filter(|w| w.pool == newcomer.pool).count();
                let queued = PairingUpdate::Queued {
                    waiting: in_pool as u32 + 1,
                };
                if newcomer.updates.send(Ok(queued)).await.is_ok() {
                    waiting.push(newcomer);
                }
            }
            Some(index) => {
                let waiter = waiting.remove(index);
                if let Err((waiter, error)) = pair(&self.game, waiter, &newcomer).await {
                    tracing::warn!(error = %error, "cannot create a paired game");
                    // The newcomer may ask again; the waiter keeps its place.
                    let _ = newcomer.updates.send(Err(error)).await;
                    self.waiting.push(waiter);
                }
            }
        }
    }
}

/// The colours of a waiter and a newcomer, if they can play each other:
/// the uqchess rule (the waiter plays white when neither minds).
fn colours(waiter: ColorChoice, newcomer: ColorChoice) -> Option<(Color, Color)> {
    ColorChoice::pair_waiting(waiter, newcomer)
}

/// Creates the game of `waiter` and `newcomer` and tells both.
async fn pair(
    game: &GameClient,
    waiter: Seeker,
    newcomer: &Seeker,
) -> Result<(), (Seeker, PairingError)> {
    let Some((waiter_colour, newcomer_colour)) = colours(waiter.color, newcomer.color) else {
        return Err((waiter, PairingError::Incompatible));
    };
    let (white, black) = match waiter_colour {
        Color::White => (&waiter, newcomer),
        Color::Black => (newcomer, &waiter),
    };
    let game_id = match game
        .create_paired_game(newcomer.pool, &white.player, &black.player)
        .await
    {
        Ok(game_id) => game_id,
        Err(error) => return Err((waiter, error.into())),
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
            let Some(player_id) = seeker.player.actor_id() else {
                continue;
            };
            if let Err(e) = game.resign(&game_id, player_id).await {
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
