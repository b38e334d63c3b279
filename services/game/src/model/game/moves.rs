//! Playing a move: reading it (UCI or SAN), checking a resent ply against
//! the record, and applying it with its clock charge; also the legal moves
//! offered to players and the move list given to the engine.

use chess_domain::{RuleSet, Timestamp};
use shakmaty::{
    CastlingMode, Color, Move, Position as _,
    san::{San, SanError, SanPlus},
    uci::UciMove,
};

use super::{Event, Game, GameError, PlayedMove, hash_of};
use crate::model::clock::Charge;

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
    /// Parses `input` (UCI or SAN; UCI only under the uqchess rules) into a
    /// legal move in the current position.
    pub fn parse_move(&self, input: &str) -> Result<Move, GameError> {
        if looks_like_uci(input) {
            let lowered = input.to_ascii_lowercase();
            let uci = UciMove::from_ascii(lowered.as_bytes())
                .map_err(|_| GameError::Malformed(input.to_owned()))?;
            return uci.to_move(&self.position).map_err(|_| GameError::Illegal {
                input: input.to_owned(),
                reason: "is not a legal move here".to_owned(),
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
            reason: match e {
                SanError::AmbiguousSan => {
                    "could be more than one piece's move here: name its file or rank too, as in Nbd2"
                }
                SanError::IllegalSan => "is not a legal move here",
            }
            .to_owned(),
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
    pub fn play(
        &mut self,
        side: Color,
        input: &str,
        now: Timestamp,
    ) -> Result<Vec<Event>, GameError> {
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
        events.extend(self.answer_takeback_by_move(side));
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
    pub(super) fn replay(&mut self, m: Move, stored: PlayedMove) {
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
    fn apply(&mut self, m: Move, submitted: String, at: Timestamp) -> Event {
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
}
