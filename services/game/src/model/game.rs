//! One game: the position, the moves, the clocks and how it ended.
//!
//! [`Game`] is pure: every operation takes the acting side and the time, and
//! returns the events it caused or the reason it was refused, leaving the
//! game unchanged on refusal. The actor around it persists and publishes.
//!
//! One concept, kept in one file on purpose: the rules of a game (moves,
//! draws, clocks and flags, endings, restoring and catching up) act on the
//! same few fields, and read best together. Its tests are in
//! `game/tests.rs`.

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
mod tests;
