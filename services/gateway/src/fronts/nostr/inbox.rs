//! How the bridge's tasks reach the state only the bridge's own task
//! touches: commands on a channel, questions with a oneshot reply.

use chess_domain::GameId;
use tokio::sync::{mpsc, oneshot};

use super::bridge::OwnedSeats;
use crate::core::play::Pairing;

/// What the bridge's tasks ask of it.
#[derive(Debug)]
pub(super) enum Command {
    /// The players of a game followed here, from the journal.
    Seats {
        game_id: GameId,
        reply: oneshot::Sender<Option<OwnedSeats>>,
    },
    /// The last ply announced of a followed game.
    ToldPly {
        game_id: GameId,
        reply: oneshot::Sender<u32>,
    },
    Told {
        game_id: GameId,
        ply: u32,
    },
    /// The game was taken back to `ply`.
    Rewound {
        game_id: GameId,
        ply: u32,
    },
    Ended {
        game_id: GameId,
    },
    /// A follower stopped.
    Unfollowed {
        game_id: GameId,
    },
    Paired {
        key: String,
        paired: Pairing,
    },
    /// A wait ended: for good (`ended`), or only for now (shutdown).
    StoppedWaiting {
        key: String,
        ended: bool,
    },
}

/// The bridge's inbox, for its tasks. Cloning is cheap.
#[derive(Clone, Debug)]
pub(super) struct Inbox(pub(super) mpsc::UnboundedSender<Command>);

impl Inbox {
    fn send(&self, command: Command) {
        // Only fails once the bridge stopped, at shutdown, when what was
        // sent no longer matters.
        let _ = self.0.send(command);
    }

    async fn ask<T>(&self, command: impl FnOnce(oneshot::Sender<T>) -> Command) -> Option<T> {
        let (reply, answer) = oneshot::channel();
        self.send(command(reply));
        answer.await.ok()
    }

    pub(super) async fn journal_seats(&self, game_id: &GameId) -> Option<OwnedSeats> {
        let game_id = game_id.clone();
        self.ask(|reply| Command::Seats { game_id, reply })
            .await
            .flatten()
    }

    /// `None` once the bridge stopped.
    pub(super) async fn told_ply(&self, game_id: &GameId) -> Option<u32> {
        let game_id = game_id.clone();
        self.ask(|reply| Command::ToldPly { game_id, reply }).await
    }

    pub(super) fn told(&self, game_id: &GameId, ply: u32) {
        let game_id = game_id.clone();
        self.send(Command::Told { game_id, ply });
    }

    pub(super) fn rewound(&self, game_id: &GameId, ply: u32) {
        let game_id = game_id.clone();
        self.send(Command::Rewound { game_id, ply });
    }

    pub(super) fn ended(&self, game_id: &GameId) {
        let game_id = game_id.clone();
        self.send(Command::Ended { game_id });
    }

    pub(super) fn unfollowed(&self, game_id: &GameId) {
        let game_id = game_id.clone();
        self.send(Command::Unfollowed { game_id });
    }

    pub(super) fn paired(&self, key: &str, paired: Pairing) {
        let key = key.to_owned();
        self.send(Command::Paired { key, paired });
    }

    pub(super) fn stopped_waiting(&self, key: String, ended: bool) {
        self.send(Command::StoppedWaiting { key, ended });
    }
}
