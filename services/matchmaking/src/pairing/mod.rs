//! The pairing queues: uqchess (`start human`) and Nostr (kind 20300).
//!
//! One actor owns the queues, so pairings happen one at a time in arrival
//! order. A newcomer is paired with a player waiting in the same pool whose
//! colour choice is
//! compatible (white with black, a colour with either, either with either);
//! among several, the one that connected to the server earliest. When both
//! said either, the one who waited plays white.
//!
//! A waiter's place is its open stream: when the stream closes the waiter
//! leaves the queue at once, and a waiter whose stream has closed is never
//! paired.
//!
//! [`PairingHandle`] is the mailbox; the actor, [`Pairing`], is private to
//! `pairing/actor.rs`.

mod actor;

use chess_domain::{Color, ColorChoice, GameId, Participant, PlayerId};
use tokio::sync::mpsc;

use crate::clients::GameError;
pub use crate::clients::Pool;
use actor::Message;
pub use actor::Pairing;

/// What a waiter hears: its place in the queue, then its game.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PairingUpdate {
    /// Queued, with this many players waiting (them included).
    Queued { waiting: u32 },
    /// Paired: the game, their colour in it, and their opponent's guest id
    /// (their place in the queue, whoever plays the game).
    Paired {
        game_id: GameId,
        color: Color,
        opponent_id: PlayerId,
    },
}

/// Why a waiter was not paired, or not queued.
#[derive(Debug, thiserror::Error)]
pub enum PairingError {
    /// The game service did not create the game; passed on as it answered.
    #[error(transparent)]
    Game(#[from] GameError),
    /// A pair the rules should not have made (a fault).
    #[error("incompatible colours")]
    Incompatible,
    #[error("pairing has stopped")]
    Stopped,
}

/// What a waiter receives.
pub type Updates = mpsc::Sender<Result<PairingUpdate, PairingError>>;

/// Someone asking to be paired.
#[derive(Debug)]
pub struct Seeker {
    /// Their place in the queue: one per guest id.
    pub guest_id: PlayerId,
    pub pool: Pool,
    /// Who plays the game: the guest, or (Nostr) the account their key is
    /// linked to.
    pub player: Participant,
    pub color: ColorChoice,
    /// When the player connected to the server, as (seconds, nanoseconds).
    pub connected_at: (i64, i32),
    pub updates: Updates,
}

/// A handle to the pairing actor ([`Pairing::spawn`]).
#[derive(Clone, Debug)]
pub struct PairingHandle {
    tx: mpsc::Sender<Message>,
}

impl PairingHandle {
    /// Queues `seeker` (or pairs them at once). When their update stream
    /// closes they leave the queue.
    pub async fn join(&self, seeker: Seeker) -> Result<(), PairingError> {
        let guest_id = seeker.guest_id.clone();
        let updates = seeker.updates.clone();
        self.tx
            .send(Message::Join(seeker))
            .await
            .map_err(|_| PairingError::Stopped)?;
        let tx = self.tx.clone();
        tokio::spawn(async move {
            updates.closed().await;
            // The actor only stops with the service.
            let _ = tx.send(Message::Leave { guest_id }).await;
        });
        Ok(())
    }
}
