//! One uqchess connection: a guest player.
//!
//! The session answers requests strictly in order, and interleaves the
//! events of its game (the opponent's or the engine's moves, the end of the
//! game) between the answers, in ply order. Against the computer, a move is
//! answered by `ok` and then the engine's `moved`, before the next request is
//! taken, as the protocol's reference server does. Turn and game state are
//! tracked from what this client has been told, so answers are always
//! consistent with the lines it has seen.

use std::time::Duration;

use chess_domain::{
    Color, ColorChoice, GameId, Participant, PlayerId, Termination, Timestamp, color_name,
};
use chess_runtime::Reason;
use tokio::{
    io::{AsyncRead, AsyncWrite, AsyncWriteExt as _},
    time::sleep,
};
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::{
    lines::{Line, LineReader},
    protocol::{self, Colour, Request, Versus},
};
use crate::core::play::{
    Ended, GameEvent, GameEvents, Games, PlayError, Pool, Queue, QueueUpdate, Seek,
};

/// Pause before following a game again after its event stream broke.
const RESUBSCRIBE_DELAY: Duration = Duration::from_millis(200);

/// What the connection is doing.
enum State {
    /// No game was ever started.
    Idle,
    /// Waiting in the pairing queue.
    Waiting { queue: Queue, colour: Colour },
    /// In a game, or just after one (its board stays available).
    Game(Play),
}

struct Play {
    game_id: GameId,
    colour: Color,
    versus_computer: bool,
    /// Moves this client has been told about (its own `ok`s and the
    /// opponent's `moved`s).
    told_ply: u32,
    in_progress: bool,
    /// After a move against the computer: its reply is part of the answer.
    awaiting_engine: bool,
    events: Option<GameEvents>,
}

impl Play {
    fn my_turn(&self) -> bool {
        // Games of this protocol start from the initial position.
        let white_to_move = self.told_ply.is_multiple_of(2);
        white_to_move == (self.colour == Color::White)
    }
}

/// The `gameover` line for an ending, if it is one this protocol knows.
fn gameover_line(ended: &Ended) -> String {
    let winner = ended.winner().map(color_name);
    match (ended.termination, winner) {
        (Some(Termination::Checkmate), Some(w)) => format!("gameover checkmate {w}\n"),
        (Some(Termination::Resignation), Some(w)) => format!("gameover resignation {w}\n"),
        (Some(Termination::Stalemate), _) => "gameover stalemate\n".to_owned(),
        // Uqchess games end no other way; say something true regardless.
        (_, Some(w)) => format!("gameover resignation {w}\n"),
        (_, None) => "gameover stalemate\n".to_owned(),
    }
}

/// A connected client.
pub struct Session<R, W> {
    guest_id: PlayerId,
    connected_at: Timestamp,
    games: Games,
    reader: LineReader<R>,
    writer: W,
    out: Vec<u8>,
    state: State,
}

impl<R, W> std::fmt::Debug for Session<R, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("guest_id", &self.guest_id)
            .finish_non_exhaustive()
    }
}

/// What woke the session up.
enum Wake {
    Line(std::io::Result<Option<Line>>),
    Queue(Option<QueueUpdate>),
    Event(Option<GameEvent>),
    Shutdown,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    pub fn new(
        guest_id: PlayerId,
        connected_at: Timestamp,
        games: Games,
        reader: R,
        writer: W,
    ) -> Self {
        Self {
            guest_id,
            connected_at,
            games,
            reader: LineReader::new(reader),
            writer,
            out: Vec::new(),
            state: State::Idle,
        }
    }

    fn say(&mut self, line: &str) {
        self.out.extend_from_slice(line.as_bytes());
    }

    async fn flush(&mut self) -> std::io::Result<()> {
        if !self.out.is_empty() {
            self.writer.write_all(&self.out).await?;
            self.out.clear();
            if self.out.capacity() > 4096 {
                self.out = Vec::new();
            }
        }
        Ok(())
    }

    /// Serves the client until it disconnects or the gateway shuts down; a
    /// game in progress is then resigned.
    pub async fn run(mut self, shutdown: CancellationToken) {
        loop {
            if self.flush().await.is_err() {
                break;
            }
            self.reader.shrink();
            let taking_requests = !matches!(&self.state, State::Game(p) if p.awaiting_engine);
            let wake = tokio::select! {
                biased;
                () = shutdown.cancelled() => Wake::Shutdown,
                // Events first: a request is answered in the light of every
                // event that had already arrived.
                event = next_event(&mut self.state) => event,
                line = self.reader.next_line(), if taking_requests => Wake::Line(line),
            };
            match wake {
                Wake::Shutdown => break,
                Wake::Line(Ok(Some(line))) => {
                    let span = tracing::debug_span!("uqchess.request", guest_id = %self.guest_id);
                    self.request(line).instrument(span).await;
                }
                Wake::Line(Ok(None) | Err(_)) => break,
                Wake::Queue(update) => self.queue_update(update).await,
                Wake::Event(event) => self.game_event(event).await,
            }
        }
        self.disconnect().await;
    }

    async fn request(&mut self, line: Line) {
        let request = match line {
            Line::Complete(bytes) => protocol::parse(&bytes),
            Line::TooLong => None,
        };
        match request {
            None => self.say("error command\n"),
            Some(Request::Start { versus, colour }) => self.start(versus, colour).await,
            Some(Request::Board) => self.board().await,
            Some(Request::Hint { all }) => self.hint(all).await,
            Some(Request::Move(m)) => self.play(m).await,
            Some(Request::Resign) => self.resign().await,
        }
    }

    /// The game in progress, if any.
    fn playing(&mut self) -> Option<&mut Play> {
        match &mut self.state {
            State::Game(play) if play.in_progress => Some(play),
            _ => None,
        }
    }

    async fn start(&mut self, versus: Versus, colour: Colour) {
        // Starting again ends the game in progress as a resignation would.
        if self.playing().is_some() {
            self.resign().await;
        }
        self.state = State::Idle;
        match versus {
            Versus::Computer => self.start_computer(colour).await,
            Versus::Human => self.join_queue(colour).await,
        }
    }

    async fn start_computer(&mut self, colour: Colour) {
        let mine = if colour == Colour::Black {
            Color::Black
        } else {
            Color::White
        };
        // uqchess players give no name; the computer plays at full strength.
        let me = Participant::Guest {
            id: self.guest_id.clone(),
            name: String::new(),
        };
        // Level 0: full strength, the uqchess search.
        let engine = Participant::Engine { level: 0 };
        let (white, black) = if mine == Color::White {
            (&me, &engine)
        } else {
            (&engine, &me)
        };
        let game_id = match self.games.create_uqchess(white, black).await {
            Ok(game_id) => game_id,
            Err(error) => {
                tracing::warn!(%error, "cannot create a game against the computer");
                self.say("error engine\n");
                return;
            }
        };
        self.begin(game_id, mine, true).await;
    }

    /// Starts following a game that has just begun.
    async fn begin(&mut self, game_id: GameId, colour: Color, versus_computer: bool) {
        self.say(&format!("started {}\n", color_name(colour)));
        let mut play = Play {
            game_id,
            colour,
            versus_computer,
            told_ply: 0,
            in_progress: true,
            // The engine moves first when it has white.
            awaiting_engine: versus_computer && colour == Color::Black,
            events: None,
        };
        play.events = self.subscribe(&play.game_id, 0, colour).await;
        self.state = State::Game(play);
    }

    /// Follows the game from `from_ply`: the opponent's moves and the
    /// game's end (this client's own moves are told by their answers).
    async fn subscribe(
        &mut self,
        game_id: &GameId,
        from_ply: u32,
        colour: Color,
    ) -> Option<GameEvents> {
        match self.games.watch(game_id, from_ply, Some(colour)).await {
            Ok(events) => Some(events),
            Err(error) => {
                tracing::warn!(%game_id, %error, "cannot follow the game; retrying");
                None
            }
        }
    }

    async fn join_queue(&mut self, colour: Colour) {
        let seek = Seek {
            guest_id: self.guest_id.clone(),
            display_name: String::new(),
            color: match colour {
                Colour::Either => ColorChoice::Either,
                Colour::White => ColorChoice::White,
                Colour::Black => ColorChoice::Black,
            },
            since: self.connected_at,
            pool: Pool::Uqchess,
            account: None,
        };
        match self.games.join_queue(seek).await {
            Ok(queue) => self.state = State::Waiting { queue, colour },
            Err(error) => {
                tracing::warn!(%error, "cannot join the pairing queue");
                // Still waiting, as far as the client knows: try again.
                sleep(RESUBSCRIBE_DELAY).await;
                Box::pin(self.join_queue(colour)).await;
            }
        }
    }

    async fn queue_update(&mut self, update: Option<QueueUpdate>) {
        let State::Waiting { colour, .. } = &self.state else {
            return;
        };
        let colour = *colour;
        match update {
            Some(QueueUpdate::Paired(paired)) => {
                self.begin(paired.game_id, paired.color, false).await;
            }
            Some(_) => {}
            None => {
                // The queue went away (matchmaking restarted): queue again,
                // keeping the connection time that orders waiters.
                sleep(RESUBSCRIBE_DELAY).await;
                self.join_queue(colour).await;
            }
        }
    }

    async fn game_event(&mut self, event: Option<GameEvent>) {
        let State::Game(play) = &mut self.state else {
            return;
        };
        let event = match event {
            Some(event) => event,
            None => {
                play.events = None;
                if play.in_progress {
                    // Follow again from what the client has been told.
                    let (game_id, from, colour) =
                        (play.game_id.clone(), play.told_ply, play.colour);
                    sleep(RESUBSCRIBE_DELAY).await;
                    let events = self.subscribe(&game_id, from, colour).await;
                    if let State::Game(play) = &mut self.state {
                        play.events = events;
                    }
                }
                return;
            }
        };
        let mut lines = String::new();
        match event {
            GameEvent::Moved {
                ply,
                color,
                submitted,
                check,
                ..
            } if ply > play.told_ply => {
                play.told_ply = ply;
                if color != Some(play.colour) {
                    play.awaiting_engine = false;
                    lines.push_str(&format!("moved {submitted}\n"));
                    if check {
                        lines.push_str("check\n");
                    }
                }
            }
            GameEvent::Ended(ended) if play.in_progress => {
                play.in_progress = false;
                play.awaiting_engine = false;
                lines.push_str(&gameover_line(&ended));
            }
            GameEvent::EngineFailed if play.awaiting_engine => {
                play.awaiting_engine = false;
                lines.push_str("error engine\n");
            }
            _ => {}
        }
        self.say(&lines);
    }

    async fn board(&mut self) {
        let State::Game(play) = &self.state else {
            self.say("error game\n");
            return;
        };
        match self.games.board(&play.game_id).await {
            Ok(board) => {
                self.say("startboard\n");
                self.say(&board);
                self.say("endboard\n");
            }
            Err(error) => {
                tracing::warn!(%error, "cannot draw the board");
                self.say("error engine\n");
            }
        }
    }

    async fn hint(&mut self, all: bool) {
        let Some(game_id) = self.on_turn() else {
            return;
        };
        // A client that leaves while the engine searches for it takes the
        // search with it: dropping the call cancels it all the way to the
        // engine pool, which stops the search.
        let answer = tokio::select! {
            answer = self.games.hint(&game_id, &self.guest_id, all) => answer,
            () = self.reader.closed() => return,
        };
        match answer {
            Ok(moves) => self.say(&format!("moves {}\n", moves.join(" "))),
            Err(error) => self.refused(&error),
        }
    }

    /// The id of the game in progress when it is the client's turn in it;
    /// else the client is told why not.
    fn on_turn(&mut self) -> Option<GameId> {
        let Some(play) = self.playing() else {
            self.say("error game\n");
            return None;
        };
        if !play.my_turn() {
            self.say("error turn\n");
            return None;
        }
        Some(play.game_id.clone())
    }

    /// The `error` line for a refused request.
    fn refused(&mut self, error: &PlayError) {
        let line = match error.reason() {
            Some(Reason::IllegalMove | Reason::MalformedMove) => "error move\n",
            Some(Reason::NotYourTurn) => "error turn\n",
            Some(Reason::GameOver | Reason::NotAPlayer | Reason::NotFound) => "error game\n",
            _ => {
                tracing::warn!(%error, "request failed");
                "error engine\n"
            }
        };
        self.say(line);
    }

    async fn play(&mut self, m: String) {
        let guest_id = self.guest_id.clone();
        let Some(game_id) = self.on_turn() else {
            return;
        };
        let answer = match self.games.make_move(&game_id, &guest_id, m, None).await {
            Ok(answer) => answer,
            Err(error) => {
                self.refused(&error);
                return;
            }
        };
        let Some(play) = self.playing() else { return };
        play.told_ply = answer.ply;
        let mut lines = String::from("ok\n");
        if answer.check {
            lines.push_str("check\n");
        }
        if let Some(ended) = &answer.ended {
            play.in_progress = false;
            lines.push_str(&gameover_line(ended));
        } else if play.versus_computer {
            play.awaiting_engine = true;
        }
        self.say(&lines);
    }

    async fn resign(&mut self) {
        let guest_id = self.guest_id.clone();
        let Some(play) = self.playing() else {
            self.say("error game\n");
            return;
        };
        let game_id = play.game_id.clone();
        match self.games.resign(&game_id, &guest_id).await {
            Ok(ended) => {
                let Some(play) = self.playing() else { return };
                play.in_progress = false;
                play.awaiting_engine = false;
                let line = match ended {
                    Some(ended) => gameover_line(&ended),
                    None => format!("gameover resignation {}\n", color_name(!play.colour)),
                };
                self.say(&line);
            }
            Err(error) => self.refused(&error),
        }
    }

    /// The client left: a game in progress is resigned, a place in the queue
    /// given up (by dropping the queue stream).
    async fn disconnect(&mut self) {
        if let Some(play) = self.playing() {
            let (game_id, guest_id) = (play.game_id.clone(), self.guest_id.clone());
            let games = self.games.clone();
            // The resignation must happen even though nobody waits for it.
            tokio::spawn(async move {
                for attempt in 0..5u32 {
                    match games.resign(&game_id, &guest_id).await {
                        Ok(_) => return,
                        Err(error) if error.reason().is_some() => return,
                        Err(error) => {
                            tracing::warn!(%error, attempt, "cannot resign for a departed client");
                            sleep(Duration::from_millis(200 << attempt)).await;
                        }
                    }
                }
            });
        }
        self.state = State::Idle;
    }
}

/// The next message of the queue or game stream the session follows; never
/// completes when it follows none.
async fn next_event(state: &mut State) -> Wake {
    match state {
        State::Waiting { queue, .. } => Wake::Queue(queue.next().await),
        State::Game(Play {
            events: Some(events),
            ..
        }) => Wake::Event(events.next().await),
        State::Game(Play {
            events: None,
            in_progress: true,
            ..
        }) => {
            // The stream broke and could not be reopened yet.
            sleep(RESUBSCRIBE_DELAY).await;
            Wake::Event(None)
        }
        _ => std::future::pending().await,
    }
}
