//! One game: the position, the moves, the clocks and how it ended.
//!
//! [`Game`] is pure: every operation takes the acting side and the time, and
//! returns the events it caused or the reason it was refused, leaving the
//! game unchanged on refusal. The actor around it persists and publishes.

use chess_domain::{RuleSet, TimeControl};
use shakmaty::{
    CastlingMode, Chess, Color, EnPassantMode, Move, Position as _,
    fen::Fen,
    san::{San, SanPlus},
    uci::UciMove,
    zobrist::Zobrist64,
};

use super::clock::{Charge, Clock, ClockReading, Millis};

/// Who plays a side.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Participant {
    /// A player with an account.
    Registered { id: String, username: String },
    /// An anonymous player.
    Guest { id: String, name: String },
    /// Stockfish; level 0 is full strength (the uqchess search), 1–8 graded.
    Engine { level: u8 },
}

impl Participant {
    /// The id a human acts with; none for the engine.
    pub fn actor_id(&self) -> Option<&str> {
        match self {
            Self::Registered { id, .. } | Self::Guest { id, .. } => Some(id),
            Self::Engine { .. } => None,
        }
    }

    /// A name to show.
    pub fn display_name(&self) -> String {
        match self {
            Self::Registered { username, .. } => username.clone(),
            Self::Guest { name, .. } if !name.is_empty() => name.clone(),
            Self::Guest { .. } => chess_domain::UNNAMED_GUEST.to_owned(),
            Self::Engine { level } => chess_domain::engine_name(u32::from(*level)),
        }
    }

    /// Whether this is the engine.
    pub fn is_engine(&self) -> bool {
        matches!(self, Self::Engine { .. })
    }

    /// Whether this is a registered player.
    pub fn is_registered(&self) -> bool {
        matches!(self, Self::Registered { .. })
    }
}

/// The result of a finished game: one type for the model, the store and
/// the wire.
pub use chess_domain::GameResult;

/// Why a game ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Termination {
    Checkmate,
    Stalemate,
    Resignation,
    Timeout,
    TimeoutVsInsufficientMaterial,
    DrawAgreement,
    ThreefoldRepetition,
    FiftyMoveRule,
    InsufficientMaterial,
    Aborted,
}

impl Termination {
    /// Every termination, for storage round trips.
    pub const ALL: [Self; 10] = [
        Self::Checkmate,
        Self::Stalemate,
        Self::Resignation,
        Self::Timeout,
        Self::TimeoutVsInsufficientMaterial,
        Self::DrawAgreement,
        Self::ThreefoldRepetition,
        Self::FiftyMoveRule,
        Self::InsufficientMaterial,
        Self::Aborted,
    ];

    /// Stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Checkmate => "checkmate",
            Self::Stalemate => "stalemate",
            Self::Resignation => "resignation",
            Self::Timeout => "timeout",
            Self::TimeoutVsInsufficientMaterial => "timeout_vs_insufficient_material",
            Self::DrawAgreement => "draw_agreement",
            Self::ThreefoldRepetition => "threefold_repetition",
            Self::FiftyMoveRule => "fifty_move_rule",
            Self::InsufficientMaterial => "insufficient_material",
            Self::Aborted => "aborted",
        }
    }

    /// The termination stored as `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == name)
    }
}

/// How and when a game ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ending {
    /// None for an aborted game.
    pub result: Option<GameResult>,
    pub termination: Termination,
    pub at: Millis,
}

/// A move as played and stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlayedMove {
    /// UCI, lower-case promotion.
    pub uci: String,
    /// SAN with check/mate suffix.
    pub san: String,
    /// Exactly what the player sent.
    pub submitted: String,
    pub at: Millis,
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
    #[error("illegal move {input}: {reason}")]
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
    id: String,
    white: Participant,
    black: Participant,
    rules: RuleSet,
    rated: bool,
    hints_allowed: bool,
    created_at: Millis,
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
    ending: Option<Ending>,
}

/// Time given back to the side to move at `ply`, granted at `granted_at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Credit {
    pub ply: u32,
    pub ms: Millis,
    pub granted_at: Millis,
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

/// Whether `input` has the shape of a UCI move (`e2e4`, `e7e8q`, any case
/// for the promotion letter).
fn looks_like_uci(input: &str) -> bool {
    let b = input.as_bytes();
    (b.len() == 4 || b.len() == 5)
        && (b'a'..=b'h').contains(&b[0])
        && (b'1'..=b'8').contains(&b[1])
        && (b'a'..=b'h').contains(&b[2])
        && (b'1'..=b'8').contains(&b[3])
}

impl Game {
    /// A new game created at `now`.
    pub fn new(id: String, setup: GameSetup, now: Millis) -> Result<Self, SetupError> {
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
    fn build(id: String, setup: GameSetup, now: Millis) -> Result<Self, SetupError> {
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
            ending: None,
        })
    }

    /// Rebuilds a stored game by replaying its moves with their times (and
    /// the time given back while it had no replica, `credits`), so clocks
    /// and deadlines come out exactly as they were.
    pub fn restore(
        id: String,
        setup: GameSetup,
        created_at: Millis,
        moves: Vec<PlayedMove>,
        mut credits: Vec<Credit>,
        draw_offer: Option<Color>,
        ending: Option<Ending>,
    ) -> Result<Self, SetupError> {
        let mut game = Self::build(id, setup, created_at)?;
        credits.sort_by_key(|c| (c.ply, c.granted_at));
        let mut pending = credits.iter().peekable();
        for (index, stored) in moves.into_iter().enumerate() {
            let ply = index as u32 + 1;
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
        for credit in pending {
            game.clock.credit(credit.ms);
        }
        game.moves.shrink_to_fit();
        game.history.shrink_to_fit();
        game.credits = credits;
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
    pub fn credit_ownerless(&mut self, since: Millis, now: Millis) -> Option<Credit> {
        self.next_deadline()?;
        let last_activity = self
            .moves
            .last()
            .map_or(self.created_at, |m| m.at)
            .max(self.credits.last().map_or(Millis::MIN, |c| c.granted_at));
        let ms = now - since.max(last_activity);
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

    pub fn id(&self) -> &str {
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

    pub fn created_at(&self) -> Millis {
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
        let how = ending.termination.as_str().replace('_', " ");
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
    pub fn clock(&self, now: Millis) -> ClockReading {
        self.clock.reading(now)
    }

    /// The side `actor_id` plays, if any.
    pub fn side_of(&self, actor_id: &str) -> Option<Color> {
        if self.white.actor_id() == Some(actor_id) {
            Some(Color::White)
        } else if self.black.actor_id() == Some(actor_id) {
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

    /// When the game must be looked at again with nobody acting: the running
    /// side's flag, or the end of a first-move window.
    pub fn next_deadline(&self) -> Option<Millis> {
        if !self.is_active() || self.rules == RuleSet::Uqchess {
            return None;
        }
        if let Some(flag) = self.clock.flag_at() {
            return Some(flag);
        }
        let window = self.clock.first_move_window()? + self.credited_at(self.ply());
        match self.ply() {
            0 => Some(self.created_at + window),
            1 => Some(self.moves[0].at + window),
            _ => None,
        }
    }

    /// Ends the game if a deadline has passed at `now`.
    pub fn check_deadline(&mut self, now: Millis) -> Vec<Event> {
        match self.next_deadline() {
            Some(deadline) if now >= deadline => {}
            _ => return Vec::new(),
        }
        if self.clock.running().is_some() {
            self.clock.stop(now);
            vec![self.flag(self.turn(), now)]
        } else {
            vec![self.finish(None, Termination::Aborted, now)]
        }
    }

    fn flag(&mut self, loser: Color, now: Millis) -> Event {
        if self.position.has_insufficient_material(!loser) {
            self.finish(
                Some(GameResult::Draw),
                Termination::TimeoutVsInsufficientMaterial,
                now,
            )
        } else {
            self.finish(Some(GameResult::win_for(!loser)), Termination::Timeout, now)
        }
    }

    fn finish(
        &mut self,
        result: Option<GameResult>,
        termination: Termination,
        at: Millis,
    ) -> Event {
        self.clock.stop(at);
        self.draw_offer = None;
        let ending = Ending {
            result,
            termination,
            at,
        };
        self.ending = Some(ending);
        Event::GameEnded(ending)
    }

    fn ensure_active(&self) -> Result<(), GameError> {
        if self.is_active() {
            Ok(())
        } else {
            Err(GameError::GameOver)
        }
    }

    /// Parses `input` (UCI or SAN; UCI only under the uqchess rules) into a
    /// legal move in the current position.
    pub fn parse_move(&self, input: &str) -> Result<Move, GameError> {
        if looks_like_uci(input) {
            let lowered = input.to_ascii_lowercase();
            let uci = UciMove::from_ascii(lowered.as_bytes())
                .map_err(|_| GameError::Malformed(input.to_owned()))?;
            return uci.to_move(&self.position).map_err(|_| GameError::Illegal {
                input: input.to_owned(),
                reason: "not a legal move in this position".to_owned(),
            });
        }
        if self.rules == RuleSet::Uqchess {
            return Err(GameError::UciOnly(input.to_owned()));
        }
        let san = SanPlus::from_ascii(input.as_bytes())
            .map(|s| s.san)
            .or_else(|_| San::from_ascii(input.as_bytes()))
            .map_err(|_| GameError::Malformed(input.to_owned()))?;
        san.to_move(&self.position).map_err(|e| GameError::Illegal {
            input: input.to_owned(),
            reason: e.to_string(),
        })
    }

    /// Checks `side`'s move `input`, sent as ply `ply` (the game's ply
    /// plus one as the sender saw it), against the record. `Ok(None)`: it is
    /// the next ply, to be played. `Ok(Some(events))`: that ply was already
    /// played by `side` as `input` (a retry of a move whose answer was
    /// lost), and these are its events again, so it is never played twice.
    /// Otherwise the sender's view is stale: [`GameError::StalePly`].
    pub fn check_ply(
        &self,
        side: Color,
        input: &str,
        ply: u32,
    ) -> Result<Option<Vec<Event>>, GameError> {
        let played = self.ply();
        if ply == played + 1 {
            return Ok(None);
        }
        let stale = GameError::StalePly { ply, played };
        if ply == 0 || ply > played {
            return Err(stale);
        }
        let mut events = self.moves_after(ply - 1);
        events.truncate(1);
        let same = match events.first() {
            Some(Event::MoveMade { color, mv, .. }) => {
                let plain = |san: &str| san.trim_end_matches(['+', '#']).to_owned();
                *color == side
                    && (mv.submitted == input || mv.uci == input || plain(&mv.san) == plain(input))
            }
            _ => false,
        };
        if !same {
            return Err(stale);
        }
        if ply == played
            && let Some(ending) = self.ending
        {
            events.push(Event::GameEnded(ending));
        }
        Ok(Some(events))
    }

    /// Plays `input` for `side` at `now`.
    pub fn play(&mut self, side: Color, input: &str, now: Millis) -> Result<Vec<Event>, GameError> {
        self.ensure_active()?;
        if side != self.turn() {
            return Err(GameError::NotYourTurn);
        }
        let m = self.parse_move(input)?;
        let mut events = Vec::new();
        if self.clock.charge(side, self.ply(), now) == Charge::Flagged {
            // The move came too late; the flag fell first.
            events.push(self.flag(side, now));
            return Ok(events);
        }
        if self.draw_offer.is_some_and(|offerer| offerer != side) {
            // Moving instead of accepting declines the opponent's offer.
            self.draw_offer = None;
            events.push(Event::DrawDeclined { by: side });
        }
        events.push(self.apply(m, input.to_owned(), now));
        events.extend(self.after_move(side, now));
        Ok(events)
    }

    /// Replays a stored legal move: the position, its history and the
    /// record, as [`apply`](Self::apply) left them when the move was made,
    /// without what announcing it needs (its notations and the clock after
    /// it were stored with it).
    ///
    /// The strings are copied: the stored ones were allocated among the
    /// other rows of a bulk read, and keeping them would keep the memory of
    /// that whole read in use, a little of it on every page.
    fn replay(&mut self, m: Move, stored: PlayedMove) {
        self.position.play_unchecked(m);
        self.history.push(hash_of(&self.position));
        self.moves.push(PlayedMove {
            uci: stored.uci.as_str().to_owned(),
            san: stored.san.as_str().to_owned(),
            submitted: stored.submitted.as_str().to_owned(),
            ..stored
        });
    }

    /// Applies a legal move, recording it; no rules about endings yet.
    fn apply(&mut self, m: Move, submitted: String, at: Millis) -> Event {
        let color = self.turn();
        let uci = m.to_uci(CastlingMode::Standard).to_string();
        let san = SanPlus::from_move_and_play_unchecked(&mut self.position, m).to_string();
        self.history.push(hash_of(&self.position));
        let clock_after = self
            .clock
            .is_timed()
            .then(|| self.clock.reading(at).remaining[color]);
        let mv = PlayedMove {
            uci,
            san,
            submitted,
            at,
            clock_after,
        };
        self.moves.push(mv.clone());
        let check = self.position.is_check() && !self.position.is_checkmate();
        Event::MoveMade {
            ply: self.ply(),
            color,
            mv,
            fen: self.fen(),
            check,
        }
    }

    /// The endings and warnings that follow a move by `mover`.
    fn after_move(&mut self, mover: Color, now: Millis) -> Vec<Event> {
        if self.position.is_checkmate() {
            return vec![self.finish(
                Some(GameResult::win_for(mover)),
                Termination::Checkmate,
                now,
            )];
        }
        if self.position.is_stalemate() {
            return vec![self.finish(Some(GameResult::Draw), Termination::Stalemate, now)];
        }
        if self.rules == RuleSet::Uqchess {
            return Vec::new();
        }
        if self.position.is_insufficient_material() {
            return vec![self.finish(
                Some(GameResult::Draw),
                Termination::InsufficientMaterial,
                now,
            )];
        }
        match self.position.halfmoves() {
            h if h >= FIFTY_MOVES => {
                vec![self.finish(Some(GameResult::Draw), Termination::FiftyMoveRule, now)]
            }
            FIFTY_MOVE_WARNING => {
                vec![Event::FiftyMoveWarning {
                    moves_remaining: (FIFTY_MOVES - FIFTY_MOVE_WARNING) / 2,
                }]
            }
            _ => Vec::new(),
        }
    }

    /// `side` resigns.
    pub fn resign(&mut self, side: Color, now: Millis) -> Result<Vec<Event>, GameError> {
        self.ensure_active()?;
        Ok(vec![self.finish(
            Some(GameResult::win_for(!side)),
            Termination::Resignation,
            now,
        )])
    }

    /// `side` offers a draw; if the opponent had offered one, the game is
    /// drawn.
    pub fn offer_draw(&mut self, side: Color, now: Millis) -> Result<Vec<Event>, GameError> {
        self.ensure_active()?;
        if self.rules == RuleSet::Uqchess {
            return Err(GameError::NoDrawsInRuleSet);
        }
        match self.draw_offer {
            Some(offerer) if offerer != side => Ok(vec![self.finish(
                Some(GameResult::Draw),
                Termination::DrawAgreement,
                now,
            )]),
            Some(_) => Ok(Vec::new()),
            None => {
                self.draw_offer = Some(side);
                Ok(vec![Event::DrawOffered { by: side }])
            }
        }
    }

    /// `side` accepts the opponent's draw offer.
    pub fn accept_draw(&mut self, side: Color, now: Millis) -> Result<Vec<Event>, GameError> {
        self.ensure_active()?;
        if self.rules == RuleSet::Uqchess {
            return Err(GameError::NoDrawsInRuleSet);
        }
        if self.draw_offer != Some(!side) {
            return Err(GameError::NoDrawOffer);
        }
        Ok(vec![self.finish(
            Some(GameResult::Draw),
            Termination::DrawAgreement,
            now,
        )])
    }

    /// `side` declines the opponent's draw offer.
    pub fn decline_draw(&mut self, side: Color) -> Result<Vec<Event>, GameError> {
        self.ensure_active()?;
        if self.draw_offer != Some(!side) {
            return Err(GameError::NoDrawOffer);
        }
        self.draw_offer = None;
        Ok(vec![Event::DrawDeclined { by: side }])
    }

    /// How often the current position has occurred.
    pub fn repetitions(&self) -> usize {
        let current = hash_of(&self.position);
        self.history.iter().filter(|h| **h == current).count()
    }

    /// `side` claims a draw by threefold repetition.
    pub fn claim_draw(&mut self, _side: Color, now: Millis) -> Result<Vec<Event>, GameError> {
        self.ensure_active()?;
        if self.rules == RuleSet::Uqchess {
            return Err(GameError::NoDrawsInRuleSet);
        }
        if self.repetitions() < 3 {
            return Err(GameError::NoRepetition);
        }
        Ok(vec![self.finish(
            Some(GameResult::Draw),
            Termination::ThreefoldRepetition,
            now,
        )])
    }

    /// `side` aborts the game before both sides have moved.
    pub fn abort(&mut self, _side: Color, now: Millis) -> Result<Vec<Event>, GameError> {
        self.ensure_active()?;
        if self.rules == RuleSet::Uqchess {
            return Err(GameError::NoAbortInRuleSet);
        }
        if self.ply() >= 2 {
            return Err(GameError::TooLateToAbort);
        }
        Ok(vec![self.finish(None, Termination::Aborted, now)])
    }

    /// Every legal move now, as (UCI, SAN).
    pub fn legal_moves(&self) -> Vec<(String, String)> {
        if !self.is_active() {
            return Vec::new();
        }
        self.position
            .legal_moves()
            .into_iter()
            .map(|m| {
                let uci = m.to_uci(CastlingMode::Standard).to_string();
                let san = SanPlus::from_move(self.position.clone(), m).to_string();
                (uci, san)
            })
            .collect()
    }

    /// The UCI moves of the game, for the engine.
    pub fn uci_moves(&self) -> Vec<String> {
        self.moves.iter().map(|m| m.uci.clone()).collect()
    }

    /// Whether the side to move is in check.
    pub fn in_check(&self) -> bool {
        self.position.is_check()
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
mod tests {
    use super::*;

    fn guest(id: &str) -> Participant {
        Participant::Guest {
            id: id.to_owned(),
            name: id.to_owned(),
        }
    }

    /// `g` (a standard game between guests w and b) rebuilt from what the
    /// store keeps of it.
    fn reloaded(g: &Game) -> Game {
        Game::restore(
            g.id().to_owned(),
            GameSetup {
                white: guest("w"),
                black: guest("b"),
                time_control: g.time_control(),
                rules: RuleSet::Standard,
                rated: false,
                allow_hints: false,
                initial_fen: None,
            },
            g.created_at(),
            g.moves().to_vec(),
            g.credits().to_vec(),
            g.draw_offer(),
            g.ending(),
        )
        .unwrap()
    }

    fn game_with(rules: RuleSet, tc: TimeControl, fen: Option<&str>) -> Game {
        Game::new(
            "g1".to_owned(),
            GameSetup {
                white: guest("w"),
                black: guest("b"),
                time_control: tc,
                rules,
                rated: false,
                allow_hints: false,
                initial_fen: fen.map(str::to_owned),
            },
            0,
        )
        .unwrap()
    }

    fn standard() -> Game {
        game_with(RuleSet::Standard, TimeControl::Untimed, None)
    }

    fn play_all(g: &mut Game, moves: &[&str]) -> Vec<Event> {
        let mut all = Vec::new();
        for (i, m) in moves.iter().enumerate() {
            let side = g.turn();
            all.extend(
                g.play(side, m, i as Millis)
                    .unwrap_or_else(|e| panic!("{m}: {e}")),
            );
        }
        all
    }

    #[test]
    fn log_lines_say_who_plays_what_and_how_it_ended() {
        let mut g = Game::new(
            "g1".to_owned(),
            GameSetup {
                white: Participant::Registered {
                    id: "p1".to_owned(),
                    username: "alice".to_owned(),
                },
                black: Participant::Registered {
                    id: "p2".to_owned(),
                    username: "bob".to_owned(),
                },
                time_control: TimeControl::Incremental {
                    initial_secs: 300,
                    increment_secs: 3,
                },
                rules: RuleSet::Standard,
                rated: true,
                initial_fen: None,
                allow_hints: false,
            },
            0,
        )
        .unwrap();
        assert_eq!(
            g.started_line(),
            "started: alice (white) vs bob (black), 5+3 blitz, rated"
        );
        assert_eq!(g.finished_line(), None);
        let mut fools = standard();
        assert_eq!(
            fools.started_line(),
            "started: w (white) vs b (black), untimed, unrated"
        );
        play_all(&mut fools, &["f3", "e5", "g4", "Qh4#"]);
        assert_eq!(
            fools.finished_line().unwrap(),
            "finished: 0-1 by checkmate after 2 moves"
        );
        g.resign(Color::White, 10).unwrap();
        assert_eq!(
            g.finished_line().unwrap(),
            "finished: 0-1 by resignation after 0 moves"
        );
    }

    fn ending(g: &Game) -> (Option<GameResult>, Termination) {
        let e = g.ending().expect("game over");
        (e.result, e.termination)
    }

    #[test]
    fn fools_mate() {
        let mut g = standard();
        let events = play_all(&mut g, &["f2f3", "e7e5", "g2g4", "d8h4"]);
        assert_eq!(
            ending(&g),
            (Some(GameResult::BlackWins), Termination::Checkmate)
        );
        assert!(matches!(events.last(), Some(Event::GameEnded(_))));
        assert_eq!(g.moves()[3].san, "Qh4#");
        assert_eq!(g.play(Color::White, "e2e4", 9), Err(GameError::GameOver));
    }

    #[test]
    fn stalemate() {
        // White to move and stalemate black: Qc7? No: the classic K+Q.
        let mut g = game_with(
            RuleSet::Standard,
            TimeControl::Untimed,
            Some("k7/8/1K6/8/8/8/8/2Q5 w - - 0 1"),
        );
        g.play(Color::White, "c1c7", 1).unwrap();
        assert_eq!(ending(&g), (Some(GameResult::Draw), Termination::Stalemate));
    }

    #[test]
    fn check_is_reported_but_mate_is_not_check() {
        let mut g = standard();
        let events = play_all(&mut g, &["e2e4", "f7f6", "d1h5"]);
        assert!(matches!(
            events.last(),
            Some(Event::MoveMade { check: true, .. })
        ));
        assert_eq!(g.moves()[2].san, "Qh5+");
    }

    #[test]
    fn turn_and_membership_are_enforced() {
        let mut g = standard();
        assert_eq!(g.play(Color::Black, "e7e5", 0), Err(GameError::NotYourTurn));
        assert_eq!(g.side_of("w"), Some(Color::White));
        assert_eq!(g.side_of("nobody"), None);
        assert_eq!(g.ply(), 0);
    }

    #[test]
    fn moves_in_uci_and_san() {
        let mut g = standard();
        play_all(&mut g, &["e4", "e7e5", "Nf3", "Nc6", "Bb5", "a6", "O-O"]);
        assert_eq!(g.moves()[6].uci, "e1g1");
        assert_eq!(g.moves()[6].san, "O-O");
        assert!(matches!(
            g.play(Color::Black, "Zz9", 9),
            Err(GameError::Malformed(_))
        ));
        assert!(matches!(
            g.play(Color::Black, "e5e4", 9),
            Err(GameError::Illegal { .. })
        ));
        assert!(matches!(
            g.play(Color::Black, "Qd4", 9),
            Err(GameError::Illegal { .. })
        ));
        assert_eq!(g.ply(), 7);
    }

    #[test]
    fn uqchess_takes_uci_only_with_either_case_promotion() {
        let mut g = game_with(
            RuleSet::Uqchess,
            TimeControl::Untimed,
            Some("8/1P6/8/8/8/8/6k1/K7 w - - 0 1"),
        );
        assert!(matches!(
            g.play(Color::White, "b8=Q", 1),
            Err(GameError::UciOnly(_))
        ));
        let events = g.play(Color::White, "b7b8N", 1).unwrap();
        match &events[0] {
            Event::MoveMade { mv, .. } => {
                assert_eq!(mv.uci, "b7b8n");
                assert_eq!(mv.submitted, "b7b8N");
                assert_eq!(mv.san, "b8=N");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn castling_through_check_is_illegal() {
        // The black bishop on c4 covers f1.
        let mut g = game_with(
            RuleSet::Standard,
            TimeControl::Untimed,
            Some("4k3/8/8/8/2b5/8/8/4K2R w K - 0 1"),
        );
        assert!(matches!(
            g.play(Color::White, "e1g1", 1),
            Err(GameError::Illegal { .. })
        ));
        assert!(matches!(
            g.play(Color::White, "O-O", 1),
            Err(GameError::Illegal { .. })
        ));
    }

    #[test]
    fn en_passant_and_under_promotion() {
        let mut g = game_with(
            RuleSet::Standard,
            TimeControl::Untimed,
            Some("4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 1"),
        );
        g.play(Color::White, "e5d6", 1).unwrap();
        assert_eq!(g.moves()[0].san, "exd6");
        let mut g = game_with(
            RuleSet::Standard,
            TimeControl::Untimed,
            Some("8/2P1k3/8/8/8/8/8/4K3 w - - 0 1"),
        );
        g.play(Color::White, "c8=R", 1).unwrap();
        assert_eq!(g.moves()[0].uci, "c7c8r");
    }

    #[test]
    fn san_ambiguity_needs_disambiguation() {
        // Knights on b1 and f1 both reach d2.
        let mut g = game_with(
            RuleSet::Standard,
            TimeControl::Untimed,
            Some("4k3/8/8/8/8/8/8/1N2KN2 w - - 0 1"),
        );
        assert!(matches!(
            g.play(Color::White, "Nd2", 1),
            Err(GameError::Illegal { .. })
        ));
        g.play(Color::White, "Nbd2", 1).unwrap();
        assert_eq!(g.moves()[0].san, "Nbd2");
    }

    #[test]
    fn insufficient_material_draws() {
        let mut g = game_with(
            RuleSet::Standard,
            TimeControl::Untimed,
            Some("4k3/8/8/8/8/8/4n3/4K3 w - - 0 1"),
        );
        g.play(Color::White, "Kxe2", 1).unwrap();
        assert_eq!(
            ending(&g),
            (Some(GameResult::Draw), Termination::InsufficientMaterial)
        );
    }

    #[test]
    fn fifty_move_rule_warns_then_draws() {
        let mut g = game_with(
            RuleSet::Standard,
            TimeControl::Untimed,
            Some("4k3/8/8/8/8/8/R7/4K3 w - - 78 60"),
        );
        let events = play_all(&mut g, &["a2a3", "e8d8"]);
        assert!(events.iter().any(|e| matches!(
            e,
            Event::FiftyMoveWarning {
                moves_remaining: 10
            }
        )));
        let mut shuffle = Vec::new();
        for _ in 0..5 {
            shuffle.extend(["a3a4", "d8e8", "a4a3", "e8d8"]);
        }
        // 80 half-moves so far; 20 more reach 100.
        let shuffle = &shuffle[..20];
        let events = play_all(&mut g, shuffle);
        assert_eq!(
            ending(&g),
            (Some(GameResult::Draw), Termination::FiftyMoveRule)
        );
        assert_eq!(
            events
                .iter()
                .filter(|e| matches!(e, Event::FiftyMoveWarning { .. }))
                .count(),
            0
        );
    }

    #[test]
    fn uqchess_ignores_the_fifty_move_rule_and_material() {
        let mut g = game_with(
            RuleSet::Uqchess,
            TimeControl::Untimed,
            Some("4k3/8/8/8/8/8/4n3/4K3 w - - 99 60"),
        );
        g.play(Color::White, "e1e2", 1).unwrap();
        assert!(g.is_active());
        assert_eq!(
            g.offer_draw(Color::Black, 2),
            Err(GameError::NoDrawsInRuleSet)
        );
    }

    #[test]
    fn threefold_repetition_is_claimed() {
        let mut g = standard();
        assert_eq!(g.claim_draw(Color::White, 0), Err(GameError::NoRepetition));
        play_all(&mut g, &["Nf3", "Nf6", "Ng1", "Ng8", "Nf3", "Nf6", "Ng1"]);
        assert_eq!(g.claim_draw(Color::Black, 9), Err(GameError::NoRepetition));
        play_all(&mut g, &["Ng8"]);
        assert_eq!(g.repetitions(), 3);
        g.claim_draw(Color::White, 10).unwrap();
        assert_eq!(
            ending(&g),
            (Some(GameResult::Draw), Termination::ThreefoldRepetition)
        );
    }

    #[test]
    fn draw_offers() {
        let mut g = standard();
        assert_eq!(g.accept_draw(Color::Black, 0), Err(GameError::NoDrawOffer));
        assert_eq!(
            g.offer_draw(Color::White, 0).unwrap(),
            vec![Event::DrawOffered { by: Color::White }]
        );
        g.decline_draw(Color::Black).unwrap();
        assert_eq!(g.draw_offer(), None);
        g.offer_draw(Color::White, 0).unwrap();
        // White moves; white's own offer stands.
        g.play(Color::White, "e4", 1).unwrap();
        assert_eq!(g.draw_offer(), Some(Color::White));
        // Black moves instead of accepting: declined.
        let events = g.play(Color::Black, "e5", 2).unwrap();
        assert_eq!(events[0], Event::DrawDeclined { by: Color::Black });
        g.offer_draw(Color::White, 3).unwrap();
        g.accept_draw(Color::Black, 4).unwrap();
        assert_eq!(
            ending(&g),
            (Some(GameResult::Draw), Termination::DrawAgreement)
        );
    }

    #[test]
    fn abort_only_before_both_moved() {
        let mut g = standard();
        play_all(&mut g, &["e4"]);
        g.abort(Color::Black, 1).unwrap();
        assert_eq!(ending(&g), (None, Termination::Aborted));
        let mut g = standard();
        play_all(&mut g, &["e4", "e5"]);
        assert_eq!(g.abort(Color::White, 3), Err(GameError::TooLateToAbort));
    }

    #[test]
    fn flag_falls_by_deadline_and_insufficient_material_draws() {
        let tc = TimeControl::Incremental {
            initial_secs: 60,
            increment_secs: 0,
        };
        let mut g = game_with(RuleSet::Standard, tc, None);
        assert_eq!(g.next_deadline(), Some(60_000)); // first-move window
        g.play(Color::White, "e4", 1_000).unwrap();
        g.play(Color::Black, "e5", 2_000).unwrap();
        assert_eq!(g.next_deadline(), Some(62_000));
        assert!(g.check_deadline(61_999).is_empty());
        let events = g.check_deadline(62_000);
        assert_eq!(
            events,
            vec![Event::GameEnded(Ending {
                result: Some(GameResult::BlackWins),
                termination: Termination::Timeout,
                at: 62_000
            })]
        );
        // Black has only a king: white's flag is a draw.
        let mut g = game_with(
            RuleSet::Standard,
            tc,
            Some("4k3/8/8/8/8/8/PPPP4/4K3 w - - 0 1"),
        );
        g.play(Color::White, "a3", 0).unwrap();
        g.play(Color::Black, "Kd7", 0).unwrap();
        g.check_deadline(60_000);
        assert_eq!(
            ending(&g),
            (
                Some(GameResult::Draw),
                Termination::TimeoutVsInsufficientMaterial
            )
        );
    }

    #[test]
    fn missing_first_move_aborts() {
        let mut g = game_with(
            RuleSet::Standard,
            TimeControl::Daily { turn_hours: 24 },
            None,
        );
        assert_eq!(g.next_deadline(), Some(24 * 3_600_000));
        g.check_deadline(24 * 3_600_000);
        assert_eq!(ending(&g), (None, Termination::Aborted));
    }

    #[test]
    fn a_move_after_the_flag_loses() {
        let tc = TimeControl::Incremental {
            initial_secs: 10,
            increment_secs: 0,
        };
        let mut g = game_with(RuleSet::Standard, tc, None);
        play_all(&mut g, &["e4", "e5"]);
        let events = g.play(Color::White, "Nf3", 20_000).unwrap();
        assert!(matches!(
            events[..],
            [Event::GameEnded(Ending {
                termination: Termination::Timeout,
                ..
            })]
        ));
        assert_eq!(g.ply(), 2);
    }

    #[test]
    fn restore_replays_moves_and_clocks() {
        let tc = TimeControl::Incremental {
            initial_secs: 60,
            increment_secs: 1,
        };
        let mut g = game_with(RuleSet::Standard, tc, None);
        g.play(Color::White, "e4", 100).unwrap();
        g.play(Color::Black, "e5", 2_000).unwrap();
        g.play(Color::White, "Nf3", 7_000).unwrap();
        g.offer_draw(Color::White, 7_500).unwrap();
        let restored = reloaded(&g);
        assert_eq!(restored.fen(), g.fen());
        assert_eq!(restored.clock(9_000), g.clock(9_000));
        assert_eq!(restored.next_deadline(), g.next_deadline());
        assert_eq!(restored.moves(), g.moves());
        assert_eq!(restored.draw_offer(), Some(Color::White));
    }

    /// Time a game spent without a replica is given back to the side to
    /// move, live and after a reload, in every turn it happened.
    #[test]
    fn ownerless_time_is_given_back_and_survives_a_reload() {
        let tc = TimeControl::Incremental {
            initial_secs: 60,
            increment_secs: 0,
        };
        let mut g = game_with(RuleSet::Standard, tc, None);
        // Before the first move: the first-move window moves.
        assert_eq!(g.next_deadline(), Some(60_000));
        let credit = g.credit_ownerless(1_000, 4_000).unwrap();
        assert_eq!((credit.ply, credit.ms), (0, 3_000));
        assert_eq!(g.next_deadline(), Some(63_000));
        g.play(Color::White, "e4", 5_000).unwrap();
        g.play(Color::Black, "e5", 6_000).unwrap();
        assert_eq!(g.next_deadline(), Some(66_000));
        // The shard's last live moment was before the last move: the time
        // since the move is given back, not more.
        let credit = g.credit_ownerless(2_000, 10_000).unwrap();
        assert_eq!((credit.ply, credit.ms), (2, 4_000));
        assert_eq!(g.next_deadline(), Some(70_000));
        // A second outage in the same turn counts from the first credit.
        let credit = g.credit_ownerless(0, 11_000).unwrap();
        assert_eq!((credit.ply, credit.ms), (2, 1_000));
        assert_eq!(g.clock(11_000).remaining.white, 60_000);
        g.play(Color::White, "Nf3", 20_000).unwrap();
        assert_eq!(g.clock(20_000).remaining.white, 51_000);
        // Nothing is owed when the shard was served since the last move.
        assert_eq!(g.credit_ownerless(21_000, 21_000), None);
        let restored = reloaded(&g);
        assert_eq!(restored.clock(30_000), g.clock(30_000));
        assert_eq!(restored.next_deadline(), g.next_deadline());
        assert_eq!(restored.credits(), g.credits());
        // Untimed games have no clock to give time back to.
        let mut untimed = game_with(RuleSet::Standard, TimeControl::Untimed, None);
        assert_eq!(untimed.credit_ownerless(0, 10_000), None);
    }

    #[test]
    fn a_retried_move_is_answered_again_not_played_again() {
        let mut g = standard();
        assert_eq!(g.check_ply(Color::White, "e4", 1), Ok(None));
        let first = g.play(Color::White, "e4", 0).unwrap();
        // The same move for the same ply, however it is written.
        for input in ["e4", "e2e4"] {
            assert_eq!(g.check_ply(Color::White, input, 1), Ok(Some(first.clone())));
        }
        assert_eq!(g.ply(), 1);
        // Another move for a ply that is taken, or the other side's, or a
        // ply ahead: the sender's view is stale.
        let stale = |ply| GameError::StalePly { ply, played: 1 };
        assert_eq!(g.check_ply(Color::White, "d4", 1), Err(stale(1)));
        assert_eq!(g.check_ply(Color::Black, "e4", 1), Err(stale(1)));
        assert_eq!(g.check_ply(Color::White, "d4", 3), Err(stale(3)));
        assert_eq!(g.check_ply(Color::White, "e4", 0), Err(stale(0)));
        assert_eq!(g.check_ply(Color::Black, "e5", 2), Ok(None));
    }

    #[test]
    fn a_retried_mate_comes_back_with_the_ending() {
        let mut g = standard();
        play_all(&mut g, &["f3", "e5", "g4"]);
        let mate = g.play(Color::Black, "Qh4#", 0).unwrap();
        assert!(matches!(mate.last(), Some(Event::GameEnded(_))));
        assert_eq!(g.check_ply(Color::Black, "Qh4", 4), Ok(Some(mate)));
    }

    #[test]
    fn moves_after_replays_what_was_published() {
        let mut g = standard();
        let published = play_all(&mut g, &["e4", "f6", "Qh5+", "g6"]);
        let moves: Vec<Event> = published
            .into_iter()
            .filter(|e| matches!(e, Event::MoveMade { .. }))
            .collect();
        assert_eq!(g.moves_after(0), moves);
        assert_eq!(g.moves_after(2), moves[2..].to_vec());
        assert!(g.moves_after(4).is_empty());
    }

    #[test]
    fn catching_up_repeats_nothing_the_watcher_has() {
        let mut g = standard();
        let published = play_all(&mut g, &["e4", "e5", "Nf3"]);
        let offer = g.offer_draw(Color::Black, 0).unwrap();
        // Every ply was seen: only the standing offer, which has no ply of
        // its own, is told again.
        assert_eq!(g.catch_up(3), Some(offer.clone()));
        let mut missed = published[1..].to_vec();
        missed.extend(offer.clone());
        assert_eq!(g.catch_up(1), Some(missed));
        let ended = g.resign(Color::White, 0).unwrap();
        let mut missed = published[2..].to_vec();
        missed.extend(ended);
        assert_eq!(g.catch_up(2), Some(missed));
        assert_eq!(g.catch_up(4), None);
    }

    #[test]
    fn setups_are_checked() {
        let setup = |white, black, rated, fen: Option<&str>| GameSetup {
            white,
            black,
            time_control: TimeControl::Untimed,
            rules: RuleSet::Standard,
            rated,
            allow_hints: false,
            initial_fen: fen.map(str::to_owned),
        };
        let e = Participant::Engine { level: 3 };
        assert_eq!(
            Game::new("x".into(), setup(e.clone(), e.clone(), false, None), 0).unwrap_err(),
            SetupError::EngineVsEngine
        );
        assert_eq!(
            Game::new("x".into(), setup(guest("a"), guest("a"), false, None), 0).unwrap_err(),
            SetupError::SamePlayer
        );
        assert_eq!(
            Game::new("x".into(), setup(guest("a"), guest("b"), true, None), 0).unwrap_err(),
            SetupError::RatedNeedsRegistered
        );
        assert!(matches!(
            Game::new(
                "x".into(),
                setup(guest("a"), guest("b"), false, Some("nonsense")),
                0
            ),
            Err(SetupError::Fen(_))
        ));
        // Two white kings.
        assert!(matches!(
            Game::new(
                "x".into(),
                setup(
                    guest("a"),
                    guest("b"),
                    false,
                    Some("K6K/8/8/8/8/8/8/k7 w - - 0 1")
                ),
                0
            ),
            Err(SetupError::Fen(_))
        ));
    }

    fn registered(id: &str) -> Participant {
        Participant::Registered {
            id: id.to_owned(),
            username: id.to_owned(),
        }
    }

    #[test]
    fn untimed_games_are_not_rated_and_rated_games_have_no_hints() {
        let blitz = TimeControl::Incremental {
            initial_secs: 300,
            increment_secs: 0,
        };
        let setup = |time_control, rated, allow_hints| GameSetup {
            white: registered("a"),
            black: registered("b"),
            time_control,
            rules: RuleSet::Standard,
            rated,
            allow_hints,
            initial_fen: None,
        };
        assert_eq!(
            Game::new("x".into(), setup(TimeControl::Untimed, true, false), 0).unwrap_err(),
            SetupError::RatedUntimed
        );
        assert_eq!(
            Game::new("x".into(), setup(blitz, true, true), 0).unwrap_err(),
            SetupError::HintsInRatedGame
        );
        assert!(
            Game::new("x".into(), setup(blitz, true, false), 0)
                .unwrap()
                .rated()
        );
        // A stored game keeps what it was created with.
        let old = Game::restore(
            "x".into(),
            setup(TimeControl::Untimed, true, false),
            0,
            Vec::new(),
            Vec::new(),
            None,
            None,
        )
        .unwrap();
        assert!(old.rated() && !old.hints_allowed());
    }

    #[test]
    fn who_may_have_hints() {
        let setup = |white, black, rules, allow_hints| GameSetup {
            white,
            black,
            time_control: TimeControl::Untimed,
            rules,
            rated: false,
            allow_hints,
            initial_fen: None,
        };
        let engine = Participant::Engine { level: 3 };
        let new = |s| Game::new("x".into(), s, 0).unwrap().hints_allowed();
        // Two people: only if they agreed.
        assert!(!new(setup(
            guest("a"),
            guest("b"),
            RuleSet::Standard,
            false
        )));
        assert!(new(setup(guest("a"), guest("b"), RuleSet::Standard, true)));
        // The computer, either side, and uqchess games: always.
        assert!(new(setup(
            guest("a"),
            engine.clone(),
            RuleSet::Standard,
            false
        )));
        assert!(new(setup(engine, guest("b"), RuleSet::Standard, false)));
        assert!(new(setup(guest("a"), guest("b"), RuleSet::Uqchess, false)));
    }
}
