//! One game: the position, the moves, the clocks and how it ended.
//!
//! [`Game`] is pure: every operation takes the acting side and the time, and
//! returns the events it caused or the reason it was refused, leaving the
//! game unchanged on refusal. The actor around it persists and publishes.
//!
//! Here the game's values, its making, restoring and catching up, and what
//! it shows; the rules that change it are in `game/moves.rs` (playing a
//! move) and `game/endings.rs` (deadlines, flags, draws and every other
//! ending). Its tests are in `game/tests.rs`.

mod endings;
mod moves;
mod takeback;

pub use takeback::Rewind;

use chess_domain::{GameId, PlayerId, RuleSet, TimeControl, Timestamp};
use shakmaty::{
    CastlingMode, Chess, Color, EnPassantMode, Position as _, fen::Fen, uci::UciMove,
    zobrist::Zobrist64,
};

use super::clock::{Clock, ClockReading, Millis};

/// Who plays a side.
pub use chess_domain::Participant;

/// How a game ends, one type for the model, the store and the wire.
pub use chess_domain::{Ending, GameResult, Termination};

/// A move as played and stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlayedMove {
    /// UCI, lower-case promotion.
    pub uci: String,
    /// SAN with check/mate suffix.
    pub san: String,
    /// Exactly what the player sent.
    pub submitted: String,
    pub at: Timestamp,
    /// The mover's time left after the move (timed games).
    pub clock_after: Option<Millis>,
}

/// Something a game operation caused, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A move was played; `ply` is its number (1 for white's first).
    MoveMade {
        ply: u32,
        color: Color,
        mv: PlayedMove,
        fen: String,
        check: bool,
    },
    DrawOffered {
        by: Color,
    },
    DrawDeclined {
        by: Color,
    },
    /// `moves_remaining` full moves remain before the fifty-move rule.
    FiftyMoveWarning {
        moves_remaining: u32,
    },
    GameEnded(Ending),
    /// `by` asks to take back the plies after `to_ply`.
    TakebackOffered {
        by: Color,
        to_ply: u32,
    },
    /// `by` declined the opponent's takeback request (a move declines it too).
    TakebackDeclined {
        by: Color,
    },
    /// `by` withdrew their own takeback request (or moved instead).
    TakebackCancelled {
        by: Color,
    },
    /// The game went back to `ply` plies, now at `fen`, asked for by `by`.
    TakenBack {
        by: Color,
        ply: u32,
        fen: String,
    },
}

/// Why an operation was refused. The game is unchanged.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GameError {
    #[error("you are not a player in this game")]
    NotAPlayer,
    #[error("it is not your turn")]
    NotYourTurn,
    #[error("the game is over")]
    GameOver,
    #[error("{0:?} is not a move in UCI or SAN notation")]
    Malformed(String),
    #[error("{0:?} is not a move in UCI notation (this game takes UCI moves only)")]
    UciOnly(String),
    /// `reason` says what is wrong as the rest of a sentence about `input`.
    #[error("{input} {reason}")]
    Illegal { input: String, reason: String },
    #[error("draws cannot be offered or claimed under the uqchess rules")]
    NoDrawsInRuleSet,
    #[error("games cannot be aborted under the uqchess rules")]
    NoAbortInRuleSet,
    #[error("there is no draw offer from your opponent")]
    NoDrawOffer,
    #[error("no position has occurred three times")]
    NoRepetition,
    #[error("too late to abort: both sides have moved")]
    TooLateToAbort,
    #[error("move {ply} was sent for a position the game has left: it has {played} plies")]
    StalePly { ply: u32, played: u32 },
    #[error("takebacks do not exist under the uqchess rules")]
    NoTakebacksInRuleSet,
    #[error("takebacks are not allowed in rated games on this server")]
    TakebacksNotAllowed,
    #[error("you have no move to take back")]
    NothingToTakeBack,
    #[error("in a timed game the moves before both clocks started cannot be taken back")]
    TakebackBeforeClocks,
    #[error("the game's record does not replay: {0}")]
    Unreplayable(String),
    #[error("a takeback request is already standing")]
    TakebackPending,
    #[error("there is no takeback request from your opponent")]
    NoTakebackRequest,
    #[error("you have no takeback request to withdraw")]
    NoOwnTakebackRequest,
    #[error(
        "hints are not allowed in this game: only against the computer, or in an unrated game whose players both allowed them"
    )]
    HintsNotAllowed,
}

/// What a new game is made of.
#[derive(Clone, Debug)]
pub struct GameSetup {
    pub white: Participant,
    pub black: Participant,
    pub time_control: TimeControl,
    pub rules: RuleSet,
    pub rated: bool,
    /// The players agreed to engine hints. Games against the engine and
    /// uqchess games allow them anyway.
    pub allow_hints: bool,
    /// None for the standard start.
    pub initial_fen: Option<String>,
}

/// Why a game cannot be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SetupError {
    #[error("invalid FEN: {0}")]
    Fen(String),
    #[error("the starting position has no legal moves")]
    NoMoves,
    #[error("a player cannot play both sides")]
    SamePlayer,
    #[error("the engine cannot play itself")]
    EngineVsEngine,
    #[error("only games between two registered players can be rated")]
    RatedNeedsRegistered,
    #[error("engine levels are 1 to 8 (0 for full strength)")]
    EngineLevel,
    #[error("uqchess games are untimed and unrated")]
    UqchessTimed,
    #[error("untimed games cannot be rated")]
    RatedUntimed,
    #[error("hints cannot be allowed in a rated game")]
    HintsInRatedGame,
    #[error("stored move {ply} ({uci}) does not replay: {reason}")]
    Replay {
        ply: u32,
        uci: String,
        reason: String,
    },
}

/// The standard starting position in FEN.
pub const STARTING_FEN: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

/// Half-moves without capture or pawn move that draw the game.
const FIFTY_MOVES: u32 = 100;
/// Half-moves without capture or pawn move at which players are warned.
const FIFTY_MOVE_WARNING: u32 = FIFTY_MOVES - 20;

/// A game in progress or finished.
#[derive(Clone, Debug)]
pub struct Game {
    id: GameId,
    white: Participant,
    black: Participant,
    rules: RuleSet,
    rated: bool,
    hints_allowed: bool,
    created_at: Timestamp,
    initial_fen: String,
    position: Chess,
    moves: Vec<PlayedMove>,
    /// Hash of every position since the start, the start included.
    history: Vec<Zobrist64>,
    clock: Clock,
    /// Time given back to the side to move, in order: while the game had no
    /// replica serving it, its clock stood still.
    credits: Vec<Credit>,
    draw_offer: Option<Color>,
    /// The side asking for a takeback, while its request stands.
    takeback_offer: Option<Color>,
    /// The clocks set back by each takeback still in the record, one per
    /// ply, oldest first.
    rewinds: Vec<Rewind>,
    ending: Option<Ending>,
}

/// Time given back to the side to move at `ply`, granted at `granted_at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Credit {
    pub ply: u32,
    pub ms: Millis,
    pub granted_at: Timestamp,
}

fn parse_fen(fen: &str) -> Result<Chess, SetupError> {
    let parsed = Fen::from_ascii(fen.as_bytes()).map_err(|e| SetupError::Fen(e.to_string()))?;
    parsed
        .into_position(CastlingMode::Standard)
        .map_err(|e| SetupError::Fen(e.to_string()))
}

fn fen_of(position: &Chess) -> String {
    Fen::from_position(position, EnPassantMode::Legal).to_string()
}

fn hash_of(position: &Chess) -> Zobrist64 {
    position.zobrist_hash(EnPassantMode::Legal)
}

impl Game {
    /// A new game created at `now`.
    pub fn new(id: GameId, setup: GameSetup, now: Timestamp) -> Result<Self, SetupError> {
        let game = Self::build(id, setup, now)?;
        // Rules for new games only: a stored game keeps what it was created
        // with (older untimed games could be rated).
        if game.rated && !game.time_control().is_timed() {
            return Err(SetupError::RatedUntimed);
        }
        if game.rated && game.hints_allowed {
            return Err(SetupError::HintsInRatedGame);
        }
        Ok(game)
    }

    /// The game of `setup`, checked for what makes any game (new or stored)
    /// playable.
    fn build(id: GameId, setup: GameSetup, now: Timestamp) -> Result<Self, SetupError> {
        match (&setup.white, &setup.black) {
            (Participant::Engine { .. }, Participant::Engine { .. }) => {
                return Err(SetupError::EngineVsEngine);
            }
            (a, b) if a.actor_id().is_some() && a.actor_id() == b.actor_id() => {
                return Err(SetupError::SamePlayer);
            }
            _ => {}
        }
        for p in [&setup.white, &setup.black] {
            if let Participant::Engine { level } = p
                && !chess_domain::is_engine_level(u32::from(*level))
            {
                return Err(SetupError::EngineLevel);
            }
        }
        if setup.rated && !(setup.white.is_registered() && setup.black.is_registered()) {
            return Err(SetupError::RatedNeedsRegistered);
        }
        if setup.rules == RuleSet::Uqchess && (setup.rated || setup.time_control.is_timed()) {
            return Err(SetupError::UqchessTimed);
        }
        let initial_fen = match setup.initial_fen.as_deref().map(str::trim) {
            None | Some("") => STARTING_FEN.to_owned(),
            Some(fen) => fen_of(&parse_fen(fen)?),
        };
        let position = parse_fen(&initial_fen)?;
        if position.legal_moves().is_empty() {
            return Err(SetupError::NoMoves);
        }
        let hints_allowed = setup.allow_hints
            || setup.rules == RuleSet::Uqchess
            || [&setup.white, &setup.black]
                .iter()
                .any(|p| matches!(p, Participant::Engine { .. }));
        Ok(Self {
            id,
            white: setup.white,
            black: setup.black,
            rules: setup.rules,
            rated: setup.rated,
            hints_allowed,
            created_at: now,
            history: vec![hash_of(&position)],
            initial_fen,
            position,
            moves: Vec::new(),
            clock: Clock::new(setup.time_control),
            credits: Vec::new(),
            draw_offer: None,
            takeback_offer: None,
            rewinds: Vec::new(),
            ending: None,
        })
    }

    /// Rebuilds a stored game by replaying its moves with their times (and
    /// the time given back while it had no replica, `credits`), so clocks
    /// and deadlines come out exactly as they were.
    pub fn restore(
        id: GameId,
        setup: GameSetup,
        created_at: Timestamp,
        moves: Vec<PlayedMove>,
        credits: Vec<Credit>,
        draw_offer: Option<Color>,
        ending: Option<Ending>,
    ) -> Result<Self, SetupError> {
        Self::restore_with(
            id,
            setup,
            created_at,
            moves,
            credits,
            Vec::new(),
            draw_offer,
            ending,
        )
    }

    /// [`restore`](Self::restore) of a game with takebacks: each rewind
    /// sets the clocks as they were set when its takeback was made, once
    /// the moves up to its ply are replayed.
    #[allow(clippy::too_many_arguments)]
    pub fn restore_with(
        id: GameId,
        setup: GameSetup,
        created_at: Timestamp,
        moves: Vec<PlayedMove>,
        mut credits: Vec<Credit>,
        mut rewinds: Vec<Rewind>,
        draw_offer: Option<Color>,
        ending: Option<Ending>,
    ) -> Result<Self, SetupError> {
        let mut game = Self::build(id, setup, created_at)?;
        credits.sort_by_key(|c| (c.ply, c.granted_at));
        rewinds.sort_by_key(|r| r.ply);
        let mut pending = credits.iter().peekable();
        let mut rewound = rewinds.iter().peekable();
        for (index, stored) in moves.into_iter().enumerate() {
            let ply = index as u32 + 1;
            // A takeback back to the previous ply set the clocks before
            // this move was made.
            while let Some(rewind) = rewound.next_if(|r| r.ply < ply) {
                game.clock.rewind(rewind.clock(game.turn()));
            }
            // Time given back during this turn, before the move was made.
            while let Some(credit) = pending.next_if(|c| c.ply < ply) {
                game.clock.credit(credit.ms);
            }
            let replay_error = |reason: String| SetupError::Replay {
                ply,
                uci: stored.uci.clone(),
                reason,
            };
            let uci = UciMove::from_ascii(stored.uci.as_bytes())
                .map_err(|e| replay_error(e.to_string()))?;
            let m = uci
                .to_move(&game.position)
                .map_err(|e| replay_error(e.to_string()))?;
            let mover = game.position.turn();
            game.clock.charge(mover, game.ply(), stored.at);
            game.replay(m, stored);
        }
        for rewind in rewound {
            game.clock.rewind(rewind.clock(game.turn()));
        }
        for credit in pending {
            game.clock.credit(credit.ms);
        }
        game.moves.shrink_to_fit();
        game.history.shrink_to_fit();
        game.credits = credits;
        game.rewinds = rewinds;
        game.draw_offer = draw_offer;
        if let Some(ending) = ending {
            game.clock.stop(ending.at);
            game.ending = Some(ending);
        }
        Ok(game)
    }

    /// Gives the side to move back the time since `since` (when the game's
    /// shard was last served by a live replica) or since the last thing that
    /// happened in the game, whichever is later, up to `now`: the game had
    /// no replica meanwhile, so no one could move. Only games with a running
    /// deadline get anything; the credit is returned for storing.
    pub fn credit_ownerless(&mut self, since: Timestamp, now: Timestamp) -> Option<Credit> {
        self.next_deadline()?;
        let last_move = self.moves.last().map_or(self.created_at, |m| m.at);
        let last_activity = self
            .credits
            .last()
            .map_or(last_move, |c| c.granted_at.max(last_move));
        let ms = now.millis_since(since.max(last_activity));
        if ms <= 0 {
            return None;
        }
        let credit = Credit {
            ply: self.ply(),
            ms,
            granted_at: now,
        };
        self.clock.credit(ms);
        self.credits.push(credit);
        Some(credit)
    }

    /// Time given back during the turn at `ply`.
    fn credited_at(&self, ply: u32) -> Millis {
        self.credits
            .iter()
            .filter(|c| c.ply == ply)
            .map(|c| c.ms)
            .sum()
    }

    /// Every credit, oldest first.
    pub fn credits(&self) -> &[Credit] {
        &self.credits
    }

    pub fn id(&self) -> &GameId {
        &self.id
    }

    pub fn white(&self) -> &Participant {
        &self.white
    }

    pub fn black(&self) -> &Participant {
        &self.black
    }

    /// The participant playing `color`.
    pub fn player(&self, color: Color) -> &Participant {
        match color {
            Color::White => &self.white,
            Color::Black => &self.black,
        }
    }

    pub fn rules(&self) -> RuleSet {
        self.rules
    }

    pub fn rated(&self) -> bool {
        self.rated
    }

    /// Whether the players may ask for engine hints: against the engine, in
    /// uqchess games, and where both players agreed (never when rated).
    pub fn hints_allowed(&self) -> bool {
        self.hints_allowed
    }

    pub fn time_control(&self) -> TimeControl {
        self.clock.control()
    }

    pub fn created_at(&self) -> Timestamp {
        self.created_at
    }

    pub fn initial_fen(&self) -> &str {
        &self.initial_fen
    }

    pub fn position(&self) -> &Chess {
        &self.position
    }

    /// The current position in FEN.
    pub fn fen(&self) -> String {
        fen_of(&self.position)
    }

    pub fn moves(&self) -> &[PlayedMove] {
        &self.moves
    }

    /// Half-moves played.
    pub fn ply(&self) -> u32 {
        self.moves.len() as u32
    }

    pub fn turn(&self) -> Color {
        self.position.turn()
    }

    pub fn draw_offer(&self) -> Option<Color> {
        self.draw_offer
    }

    pub fn ending(&self) -> Option<Ending> {
        self.ending
    }

    /// The log's line about a new game, after its id: `started: alice
    /// (white) vs Stockfish level 3 (black), 5+3 blitz, rated`.
    pub fn started_line(&self) -> String {
        let time_control = match self.time_control() {
            TimeControl::Untimed => "untimed".to_owned(),
            tc => format!("{tc} {}", tc.speed()),
        };
        format!(
            "started: {} (white) vs {} (black), {time_control}, {}",
            self.white.display_name(),
            self.black.display_name(),
            if self.rated { "rated" } else { "unrated" }
        )
    }

    /// The log's line about a finished game, after its id: `finished: 1-0
    /// by checkmate after 43 moves`. None while it is being played.
    pub fn finished_line(&self) -> Option<String> {
        let ending = self.ending?;
        let how = ending.termination.words();
        let moves = self.ply().div_ceil(2);
        let plural = if moves == 1 { "" } else { "s" };
        Some(match ending.result {
            Some(result) => format!(
                "finished: {} by {how} after {moves} move{plural}",
                result.pgn()
            ),
            None => format!("finished: {how} after {moves} move{plural}"),
        })
    }

    pub fn is_active(&self) -> bool {
        self.ending.is_none()
    }

    /// Both clocks as of `now`.
    pub fn clock(&self, now: Timestamp) -> ClockReading {
        self.clock.reading(now)
    }

    /// The side `actor` plays, if any.
    pub fn side_of(&self, actor: &PlayerId) -> Option<Color> {
        if self.white.actor_id() == Some(actor) {
            Some(Color::White)
        } else if self.black.actor_id() == Some(actor) {
            Some(Color::Black)
        } else {
            None
        }
    }

    /// The engine's level if the engine is to move in an active game.
    pub fn engine_to_move(&self) -> Option<u8> {
        match (self.is_active(), self.player(self.turn())) {
            (true, Participant::Engine { level }) => Some(*level),
            _ => None,
        }
    }

    /// What a watcher who has seen the game up to `from_ply` missed, in
    /// order: every move after it (as it was published), then the draw offer
    /// standing now, then the ending if the game is over. Applied on top of
    /// the game as of `from_ply`, these give the game as it is now, and none
    /// repeats a move the watcher has; `None` if the game has not reached
    /// `from_ply`.
    pub fn catch_up(&self, from_ply: u32) -> Option<Vec<Event>> {
        if from_ply > self.ply() {
            return None;
        }
        let mut events = self.moves_after(from_ply);
        if let Some(by) = self.draw_offer {
            events.push(Event::DrawOffered { by });
        }
        if let Some(event) = self.takeback_request() {
            events.push(event);
        }
        if let Some(ending) = self.ending {
            events.push(Event::GameEnded(ending));
        }
        Some(events)
    }

    /// The move events of every ply after `from_ply`, as they were published.
    fn moves_after(&self, from_ply: u32) -> Vec<Event> {
        let Ok(mut position) = parse_fen(&self.initial_fen) else {
            return Vec::new();
        };
        let mut events = Vec::new();
        for (index, mv) in self.moves.iter().enumerate() {
            let ply = index as u32 + 1;
            let color = position.turn();
            let Ok(m) = UciMove::from_ascii(mv.uci.as_bytes())
                .map_err(|_| ())
                .and_then(|u| u.to_move(&position).map_err(|_| ()))
            else {
                break;
            };
            position.play_unchecked(m);
            if ply > from_ply {
                let check = position.is_check() && !position.is_checkmate();
                events.push(Event::MoveMade {
                    ply,
                    color,
                    mv: mv.clone(),
                    fen: fen_of(&position),
                    check,
                });
            }
        }
        events
    }
}

#[cfg(test)]
mod tests;
