//! The bridge at work: players' events in, the system's answers out.
//!
//! The bridge is an actor: one task ([`Bridge::run`]) owns the journal and
//! the sets of waiting keys and followed games, and takes the players'
//! events in the order they arrive (after checking id, signature, address,
//! age, and that the event was never handled before), so a player's moves
//! are applied in the order sent. Pairing waits in the matchmaking
//! service's Nostr queue, one task per waiting key ([`super::pairing`]);
//! each game paired here is followed on the game service's event stream by
//! a task of its own ([`super::follow`]), so every move is announced
//! whichever front made it. Those tasks reach the journal only through the
//! bridge's [`Inbox`], asking with a oneshot reply; shutdown ends them all.
//! What the bridge and the tasks share is their [`Context`].

use std::{collections::HashSet, sync::Arc};

use chess_domain::{Color, GameId, GameResult, Participant, PlayerId, Termination, Timestamp};
use chess_runtime::Reason;
use nostr_sdk::prelude::{Event, PublicKey};
use tokio::{sync::mpsc, time::sleep};

use super::{
    context::{Context, RETRY_DELAY},
    follow, guest,
    inbox::{Command, Inbox},
    journal::Journal,
    pairing,
    protocol::{self, Inbound, Seats},
};
use crate::core::play::{Ended, Pairing, PlayError};

/// Events older than this (by `created_at`) are not handled: relays may
/// replay them, and their ids are only remembered this long.
pub const WINDOW_SECS: u64 = 3600;
/// Events dated further ahead than this are not handled either.
const FUTURE_SECS: u64 = 15 * 60;
/// Tries of a call while the service behind it is unreachable.
const ATTEMPTS: u32 = 5;

/// The bridge: the state only its own task touches.
#[derive(Debug)]
pub struct Bridge {
    cx: Arc<Context>,
    journal: Journal,
    /// Keys waiting for an opponent.
    queued: HashSet<String>,
    /// Games with a running follower.
    following: HashSet<GameId>,
    inbox: Inbox,
    commands: mpsc::UnboundedReceiver<Command>,
}

impl Bridge {
    pub(super) fn new(cx: Context, journal: Journal) -> Self {
        let (inbox, commands) = mpsc::unbounded_channel();
        Self {
            cx: Arc::new(cx),
            journal,
            queued: HashSet::new(),
            following: HashSet::new(),
            inbox: Inbox(inbox),
            commands,
        }
    }

    /// Follows again every game that was being announced before a restart,
    /// queues again the keys that were waiting, then handles the players'
    /// events, one at a time, and its tasks' commands until shutdown.
    pub async fn run(mut self, mut events: mpsc::UnboundedReceiver<Event>) {
        self.resume();
        let shutdown = self.cx.shutdown.clone();
        loop {
            tokio::select! {
                Some(command) = self.commands.recv() => self.command(command),
                event = events.recv() => match event {
                    Some(event) => self.handle(event).await,
                    None => return,
                },
                () = shutdown.cancelled() => return,
            }
        }
    }

    fn resume(&mut self) {
        let waiting: Vec<(String, u64)> = self
            .journal
            .waiting()
            .map(|(key, since)| (key.clone(), *since))
            .collect();
        for (key, since) in waiting {
            self.queued.insert(key.clone());
            self.spawn_wait(key, since, true);
        }
        let games: Vec<GameId> = self.journal.games().map(|(id, _)| id.clone()).collect();
        if !games.is_empty() {
            tracing::info!(
                games = games.len(),
                "following the Nostr games in progress again"
            );
        }
        for game_id in games {
            self.follow(game_id);
        }
    }

    fn command(&mut self, command: Command) {
        let written = match command {
            Command::Seats { game_id, reply } => {
                let seats = self
                    .journal
                    .game(&game_id)
                    .map(|g| OwnedSeats::new(&game_id, &g.white, &g.black));
                // A follower that left no longer needs the answer.
                let _ = reply.send(seats);
                Ok(())
            }
            Command::ToldPly { game_id, reply } => {
                let told = self.journal.game(&game_id).map_or(0, |g| g.told_ply);
                let _ = reply.send(told);
                Ok(())
            }
            Command::Told { game_id, ply } => self.journal.told(&game_id, ply),
            Command::Rewound { game_id, ply } => self.journal.rewound(&game_id, ply),
            Command::Ended { game_id } => self.journal.ended(&game_id),
            Command::Unfollowed { game_id } => {
                self.following.remove(&game_id);
                Ok(())
            }
            Command::Paired { key, paired } => {
                self.paired(&key, &paired);
                Ok(())
            }
            Command::StoppedWaiting { key, ended } => {
                self.queued.remove(&key);
                // At shutdown the wait goes on after the restart.
                if ended {
                    self.journal.stop_waiting(&key)
                } else {
                    Ok(())
                }
            }
        };
        if let Err(e) = written {
            tracing::warn!(error = %e, "cannot write the Nostr journal");
        }
    }

    /// Whether the event is one to handle now; it is then taken for good.
    fn admit(&mut self, event: &Event) -> bool {
        if event.verify().is_err() {
            tracing::debug!(id = %event.id, "ignored: bad id or signature");
            return false;
        }
        if protocol::read(event).is_none()
            || !protocol::addressed_to(event, &self.cx.keys.public_key())
        {
            return false;
        }
        let now = Timestamp::now().unsigned_secs();
        let at = event.created_at.as_secs();
        if at + WINDOW_SECS < now || at > now + FUTURE_SECS {
            tracing::debug!(id = %event.id, at, "ignored: outside the acceptance window");
            return false;
        }
        let journal = &mut self.journal;
        journal.forget_before(now.saturating_sub(WINDOW_SECS));
        match journal.take(&event.id, at) {
            Ok(fresh) => fresh,
            Err(e) => {
                // Without the record the event could be handled twice.
                tracing::error!(error = %e, path = %journal.path().display(), "cannot write the Nostr journal; event not handled");
                false
            }
        }
    }

    async fn handle(&mut self, event: Event) {
        if !self.admit(&event) {
            return;
        }
        let author = event.pubkey.to_hex();
        let span = tracing::debug_span!("nostr.event", id = %event.id, kind = event.kind.as_u16(), %author);
        let _guard = span.enter();
        match protocol::read(&event) {
            Some(Ok(Inbound::Play)) => self.request_to_play(author),
            Some(Ok(Inbound::Move { game_id, uci })) => {
                self.play(&event, &game_id, Action::Move(uci)).await;
            }
            Some(Ok(Inbound::Quit { game_id })) => {
                self.play(&event, &game_id, Action::Quit).await;
            }
            Some(Err(malformed)) => {
                let seats = match protocol::game_of(&event) {
                    Some(id) => self.seats(&id).await,
                    None => None,
                };
                self.refuse(&event, seats.as_ref(), &malformed.to_string());
            }
            None => {}
        }
    }

    /// A 20300: wait in the Nostr queue (or be paired at once).
    fn request_to_play(&mut self, key: String) {
        let since = Timestamp::now().unsigned_secs();
        if !self.queued.insert(key.clone()) {
            // Already waiting: the place is kept.
            self.cx.reply(&key, "queued");
            return;
        }
        if let Err(e) = self.journal.wait(&key, since) {
            tracing::warn!(error = %e, "cannot write the Nostr journal");
        }
        self.spawn_wait(key, since, false);
    }

    /// Waits for an opponent for `key`, asking since `since` (Unix seconds).
    fn spawn_wait(&self, key: String, since: u64, told_queued: bool) {
        let (cx, inbox) = (Arc::clone(&self.cx), self.inbox.clone());
        let since = Timestamp::from_secs(i64::try_from(since).unwrap_or(i64::MAX));
        tokio::spawn(async move { pairing::wait(&cx, &inbox, key, since, told_queued).await });
    }

    /// A pairing: each player hears of it (once, whichever of the two
    /// waits saw it first), then the starting position, then every move.
    fn paired(&mut self, key: &str, paired: &Pairing) {
        let game_id = paired.game_id.clone();
        let Some(opponent) = guest::key_of(&paired.opponent_id) else {
            tracing::warn!(opponent = %paired.opponent_id, "paired with someone not on Nostr");
            return;
        };
        let (white, black) = match paired.color {
            Color::White => (key, opponent),
            Color::Black => (opponent, key),
        };
        let fresh = self.journal.game(&game_id).is_none();
        if let Err(e) = self.journal.follow(&game_id, white, black) {
            tracing::error!(error = %e, "cannot write the Nostr journal");
        }
        if !fresh {
            return;
        }
        for (player, other, letter) in [(white, black, 'w'), (black, white, 'b')] {
            self.cx
                .reply(player, &format!("started:{game_id}:{other}:{letter}"));
        }
        let seats = Seats {
            game_id: &game_id,
            white,
            black,
        };
        let start = shakmaty::fen::Fen::from_position(
            &shakmaty::Chess::default(),
            shakmaty::EnPassantMode::Legal,
        )
        .to_string();
        self.cx
            .outbox
            .publish(protocol::state(&self.cx.keys, &seats, &start, None));
        self.follow(game_id);
    }

    /// The players of a game by key: from the journal for games paired here,
    /// else from the game service (Nostr guests and linked accounts).
    async fn seats(&self, game_id: &GameId) -> Option<OwnedSeats> {
        if let Some(game) = self.journal.game(game_id) {
            return Some(OwnedSeats::new(game_id, &game.white, &game.black));
        }
        let game = self.cx.get_game(game_id).await.ok()??;
        let white = self.key_of(game.player(Color::White)?).await?;
        let black = self.key_of(game.player(Color::Black)?).await?;
        Some(OwnedSeats::new(game_id, &white, &black))
    }

    /// The Nostr key of a player of a game, if it has one.
    async fn key_of(&self, player: &Participant) -> Option<String> {
        match player {
            Participant::Guest { id, .. } => guest::key_of(id).map(str::to_owned),
            Participant::Registered { id, .. } => self.cx.games.nostr_key_of(id).await.ok()?,
            Participant::Engine { .. } => None,
        }
    }

    fn refuse(&self, event: &Event, seats: Option<&OwnedSeats>, message: &str) {
        tracing::debug!(message, "refused");
        let seats = seats.map(OwnedSeats::borrow);
        self.cx.outbox.publish(protocol::error(
            &self.cx.keys,
            &event.id,
            seats.as_ref(),
            &event.pubkey,
            message,
        ));
    }

    /// A 20303: a move or `quit` in a game.
    async fn play(&self, event: &Event, game_id: &GameId, action: Action) {
        let key = event.pubkey.to_hex();
        let seats = self.seats(game_id).await;
        let identity = match self.cx.identity(&key).await {
            Ok(identity) => identity,
            Err(error) => {
                tracing::warn!(%error, "cannot look up a Nostr key's account");
                self.refuse(
                    event,
                    seats.as_ref(),
                    "the server is busy; nothing changed; send the move again",
                );
                return;
            }
        };
        let player_id = identity.player_id();
        let outcome = match action {
            Action::Move(uci) => self.make_move(game_id, &player_id, uci).await,
            Action::Quit => {
                let games = &self.cx.games;
                games.resign(game_id, &player_id).await.map(drop)
            }
        };
        let Err(error) = outcome else {
            // The follower announces the new position (or the ending).
            return;
        };
        let message = match error.reason() {
            Some(Reason::NotFound) => "unknown game".to_owned(),
            Some(Reason::NotAPlayer) => "you are not a player of this game".to_owned(),
            Some(Reason::NotYourTurn) => "it is not your turn".to_owned(),
            Some(Reason::GameOver) => "the game is over".to_owned(),
            Some(Reason::IllegalMove | Reason::MalformedMove) => {
                format!("illegal move: {}", error.message())
            }
            Some(_) => error.message().to_owned(),
            None => {
                tracing::warn!(%error, "a Nostr move failed");
                "the server could not take the move now; nothing changed; send it again".to_owned()
            }
        };
        self.refuse(event, seats.as_ref(), &message);
    }

    /// Plays `uci` as the game's next ply, so that repeating the call while
    /// the game service restarts cannot play it twice.
    async fn make_move(
        &self,
        game_id: &GameId,
        player_id: &PlayerId,
        uci: String,
    ) -> Result<(), PlayError> {
        let mut attempt = 0;
        let mut retry = |error: PlayError| {
            attempt += 1;
            // A refusal is final; a transport failure is tried again.
            if error.reason().is_some() || attempt >= ATTEMPTS {
                Err(error)
            } else {
                Ok(RETRY_DELAY * attempt)
            }
        };
        let ply = loop {
            match self.cx.get_game(game_id).await {
                Ok(Some(game)) => break game.ply() + 1,
                Ok(None) => {
                    return Err(PlayError::refused(Reason::NotFound, "no such game"));
                }
                Err(error) => sleep(retry(error)?).await,
            }
        };
        loop {
            let games = &self.cx.games;
            match games
                .make_move(game_id, player_id, uci.clone(), Some(ply))
                .await
            {
                Ok(_) => return Ok(()),
                Err(error) => sleep(retry(error)?).await,
            }
        }
    }

    /// Starts announcing a game's moves (once per game).
    fn follow(&mut self, game_id: GameId) {
        if !self.following.insert(game_id.clone()) {
            return;
        }
        let (cx, inbox) = (Arc::clone(&self.cx), self.inbox.clone());
        tokio::spawn(async move { follow::announce(&cx, &inbox, &game_id).await });
    }
}

enum Action {
    Move(String),
    Quit,
}

/// [`Seats`] that own their keys.
#[derive(Clone, Debug)]
pub struct OwnedSeats {
    game_id: GameId,
    white: String,
    black: String,
}

impl OwnedSeats {
    fn new(game_id: &GameId, white: &str, black: &str) -> Self {
        Self {
            game_id: game_id.clone(),
            white: white.to_owned(),
            black: black.to_owned(),
        }
    }

    pub(super) fn game_id(&self) -> &GameId {
        &self.game_id
    }

    pub(super) fn borrow(&self) -> Seats<'_> {
        Seats {
            game_id: &self.game_id,
            white: &self.white,
            black: &self.black,
        }
    }
}

/// The result as announced, `1-0`, `0-1`, `1/2-1/2` or `*` (aborted), and
/// how the game ended, in words: `checkmate`, `threefold repetition`, …
pub(super) fn ending_of(ended: &Ended) -> (&'static str, String) {
    let how = ended.termination.map_or("unknown", Termination::words);
    (GameResult::pgn_of(ended.result), how.to_owned())
}

/// Whether `key` is a player's key in hex (what a guest id carries).
pub fn is_key(key: &str) -> bool {
    PublicKey::from_hex(key).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endings_in_words() {
        let ended = |result, termination| Ended {
            result,
            termination,
        };
        assert_eq!(
            ending_of(&ended(
                Some(GameResult::Draw),
                Some(Termination::ThreefoldRepetition)
            )),
            ("1/2-1/2", "threefold repetition".to_owned())
        );
        assert_eq!(
            ending_of(&ended(Some(GameResult::BlackWins), None)),
            ("0-1", "unknown".to_owned())
        );
        assert_eq!(ending_of(&ended(None, None)).0, "*");
    }
}
