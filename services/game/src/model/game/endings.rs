//! How a game ends: deadlines and flags, the endings that follow a move,
//! resigning, aborting, and draws offered, accepted, declined or claimed.

use chess_domain::{RuleSet, Timestamp};
use shakmaty::{Color, Position as _};

use super::{
    Ending, Event, FIFTY_MOVE_WARNING, FIFTY_MOVES, Game, GameError, GameResult, Termination,
    hash_of,
};

impl Game {
    /// When the game must be looked at again with nobody acting: the running
    /// side's flag, or the end of a first-move window.
    pub fn next_deadline(&self) -> Option<Timestamp> {
        if !self.is_active() || self.rules == RuleSet::Uqchess {
            return None;
        }
        if let Some(flag) = self.clock.flag_at() {
            return Some(flag);
        }
        let window = self.clock.first_move_window()? + self.credited_at(self.ply());
        match self.ply() {
            0 => Some(self.created_at.plus_millis(window)),
            1 => Some(self.moves[0].at.plus_millis(window)),
            _ => None,
        }
    }

    /// Ends the game if a deadline has passed at `now`.
    pub fn check_deadline(&mut self, now: Timestamp) -> Vec<Event> {
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

    /// `loser`'s flag has fallen: a loss, or a draw if the opponent cannot
    /// mate.
    pub(super) fn flag(&mut self, loser: Color, now: Timestamp) -> Event {
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
        at: Timestamp,
    ) -> Event {
        self.clock.stop(at);
        self.draw_offer = None;
        self.takeback_offer = None;
        let ending = Ending {
            result,
            termination,
            at,
        };
        self.ending = Some(ending);
        Event::GameEnded(ending)
    }

    /// The events of an action that ends the game: only its ending.
    fn ended(
        &mut self,
        result: Option<GameResult>,
        termination: Termination,
        now: Timestamp,
    ) -> Result<Vec<Event>, GameError> {
        Ok(vec![self.finish(result, termination, now)])
    }

    pub(super) fn ensure_active(&self) -> Result<(), GameError> {
        if self.is_active() {
            Ok(())
        } else {
            Err(GameError::GameOver)
        }
    }

    /// Refuses unless the game is active and its rules know draws by
    /// agreement or claim.
    fn ensure_draws(&self) -> Result<(), GameError> {
        self.ensure_active()?;
        if self.rules == RuleSet::Uqchess {
            return Err(GameError::NoDrawsInRuleSet);
        }
        Ok(())
    }

    /// The endings and warnings that follow a move by `mover`.
    pub(super) fn after_move(&mut self, mover: Color, now: Timestamp) -> Vec<Event> {
        if self.position.is_checkmate() {
            let won = Some(GameResult::win_for(mover));
            return vec![self.finish(won, Termination::Checkmate, now)];
        }
        if let Some(drawn) = self.drawn_by_rule() {
            return vec![self.finish(Some(GameResult::Draw), drawn, now)];
        }
        if self.rules != RuleSet::Uqchess && self.position.halfmoves() == FIFTY_MOVE_WARNING {
            return vec![Event::FiftyMoveWarning {
                moves_remaining: (FIFTY_MOVES - FIFTY_MOVE_WARNING) / 2,
            }];
        }
        Vec::new()
    }

    /// The rule that draws the position now without a claim, if any (the
    /// uqchess rules know only stalemate).
    fn drawn_by_rule(&self) -> Option<Termination> {
        if self.position.is_stalemate() {
            Some(Termination::Stalemate)
        } else if self.rules == RuleSet::Uqchess {
            None
        } else if self.position.is_insufficient_material() {
            Some(Termination::InsufficientMaterial)
        } else if self.position.halfmoves() >= FIFTY_MOVES {
            Some(Termination::FiftyMoveRule)
        } else {
            None
        }
    }

    /// `side` resigns.
    pub fn resign(&mut self, side: Color, now: Timestamp) -> Result<Vec<Event>, GameError> {
        self.ensure_active()?;
        self.ended(
            Some(GameResult::win_for(!side)),
            Termination::Resignation,
            now,
        )
    }

    /// `side` offers a draw; if the opponent had offered one, the game is
    /// drawn.
    pub fn offer_draw(&mut self, side: Color, now: Timestamp) -> Result<Vec<Event>, GameError> {
        self.ensure_draws()?;
        match self.draw_offer {
            Some(offerer) if offerer != side => {
                self.ended(Some(GameResult::Draw), Termination::DrawAgreement, now)
            }
            Some(_) => Ok(Vec::new()),
            None => {
                self.draw_offer = Some(side);
                Ok(vec![Event::DrawOffered { by: side }])
            }
        }
    }

    /// `side` accepts the opponent's draw offer.
    pub fn accept_draw(&mut self, side: Color, now: Timestamp) -> Result<Vec<Event>, GameError> {
        self.ensure_draws()?;
        if self.draw_offer != Some(!side) {
            return Err(GameError::NoDrawOffer);
        }
        self.ended(Some(GameResult::Draw), Termination::DrawAgreement, now)
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
    pub fn claim_draw(&mut self, _side: Color, now: Timestamp) -> Result<Vec<Event>, GameError> {
        self.ensure_draws()?;
        if self.repetitions() < 3 {
            return Err(GameError::NoRepetition);
        }
        self.ended(
            Some(GameResult::Draw),
            Termination::ThreefoldRepetition,
            now,
        )
    }

    /// `side` aborts the game before both sides have moved.
    pub fn abort(&mut self, _side: Color, now: Timestamp) -> Result<Vec<Event>, GameError> {
        self.ensure_active()?;
        if self.rules == RuleSet::Uqchess {
            return Err(GameError::NoAbortInRuleSet);
        }
        if self.ply() >= 2 {
            return Err(GameError::TooLateToAbort);
        }
        self.ended(None, Termination::Aborted, now)
    }
}
