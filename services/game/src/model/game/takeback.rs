//! Takebacks: a player asks to take back their last move (the last two
//! plies once the opponent has replied), the opponent accepts or declines,
//! the asker may withdraw, and any move answers a standing request.
//! Against the engine a takeback is granted at once, back to the human's
//! turn.
//!
//! As on lichess, a takeback gives no time back: each side keeps the time
//! it has at that instant, and the clock of the side to move runs from
//! then. The game's record loses the plies taken back; the clocks' state
//! at that instant is kept as a [`Rewind`], so a stored game replays to
//! exactly the same clocks.

use chess_domain::{RuleSet, Timestamp};
use shakmaty::{ByColor, Color};

use super::{Event, Game, GameError, GameSetup, Participant};
use crate::model::clock::Millis;

/// The clocks as a takeback back to `ply` left them at `at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rewind {
    pub ply: u32,
    pub at: Timestamp,
    pub remaining: ByColor<Millis>,
}

impl Rewind {
    /// The clocks' state it sets, `turn` being the side to move at its ply.
    pub(super) fn clock(&self, turn: Color) -> (ByColor<Millis>, Option<(Color, Timestamp)>) {
        // Timed games never go back before both clocks started (ply 2).
        (self.remaining, (self.ply >= 2).then_some((turn, self.at)))
    }
}

impl Game {
    /// The side whose takeback request stands, if any.
    pub fn takeback_offer(&self) -> Option<Color> {
        self.takeback_offer
    }

    /// The takebacks still in the record, one per ply.
    pub fn rewinds(&self) -> &[Rewind] {
        &self.rewinds
    }

    /// The standing request as its event, for a watcher catching up.
    pub(super) fn takeback_request(&self) -> Option<Event> {
        let by = self.takeback_offer?;
        let to_ply = self.takeback_target(by).ok()?;
        Some(Event::TakebackOffered { by, to_ply })
    }

    /// The ply `side`'s takeback goes back to: before `side`'s last move.
    fn takeback_target(&self, side: Color) -> Result<u32, GameError> {
        let undo = if self.turn() == side { 2 } else { 1 };
        let ply = self.ply();
        if ply < undo {
            return Err(GameError::NothingToTakeBack);
        }
        let to_ply = ply - undo;
        // Before ply 2 the clocks have not started and the first-move
        // window runs from the game's creation: going back there would
        // abort the game.
        if self.clock.is_timed() && to_ply < 2 {
            return Err(GameError::TakebackBeforeClocks);
        }
        Ok(to_ply)
    }

    /// `side` asks to take back their last move. `rated_allowed`: the
    /// operator allows takebacks in rated games. Against the engine the
    /// takeback is made at once.
    pub fn propose_takeback(
        &mut self,
        side: Color,
        rated_allowed: bool,
        now: Timestamp,
    ) -> Result<Vec<Event>, GameError> {
        self.ensure_active()?;
        if self.rules == RuleSet::Uqchess {
            return Err(GameError::NoTakebacksInRuleSet);
        }
        if self.rated && !rated_allowed {
            return Err(GameError::TakebacksNotAllowed);
        }
        if self.takeback_offer.is_some() {
            return Err(GameError::TakebackPending);
        }
        let to_ply = self.takeback_target(side)?;
        if matches!(self.player(!side), Participant::Engine { .. }) {
            return Ok(vec![self.take_back(side, to_ply, now)?]);
        }
        self.takeback_offer = Some(side);
        Ok(vec![Event::TakebackOffered { by: side, to_ply }])
    }

    /// `side` accepts the opponent's takeback request.
    pub fn accept_takeback(
        &mut self,
        side: Color,
        now: Timestamp,
    ) -> Result<Vec<Event>, GameError> {
        self.ensure_active()?;
        if self.takeback_offer != Some(!side) {
            return Err(GameError::NoTakebackRequest);
        }
        let to_ply = self.takeback_target(!side)?;
        Ok(vec![self.take_back(!side, to_ply, now)?])
    }

    /// `side` declines the opponent's takeback request.
    pub fn decline_takeback(&mut self, side: Color) -> Result<Vec<Event>, GameError> {
        self.ensure_active()?;
        if self.takeback_offer != Some(!side) {
            return Err(GameError::NoTakebackRequest);
        }
        self.takeback_offer = None;
        Ok(vec![Event::TakebackDeclined { by: side }])
    }

    /// `side` withdraws their own takeback request.
    pub fn cancel_takeback(&mut self, side: Color) -> Result<Vec<Event>, GameError> {
        self.ensure_active()?;
        if self.takeback_offer != Some(side) {
            return Err(GameError::NoOwnTakebackRequest);
        }
        self.takeback_offer = None;
        Ok(vec![Event::TakebackCancelled { by: side }])
    }

    /// A move by `mover` answers a standing request: the opponent's is
    /// declined, `mover`'s own withdrawn (its plies are no longer the last).
    pub(super) fn answer_takeback_by_move(&mut self, mover: Color) -> Option<Event> {
        let asker = self.takeback_offer.take()?;
        Some(if asker == mover {
            Event::TakebackCancelled { by: mover }
        } else {
            Event::TakebackDeclined { by: mover }
        })
    }

    /// Takes the game back to `to_ply` at `now`, for `by`. The game is
    /// rebuilt from its record as a reload would rebuild it, so the
    /// position, the repetition history, the fifty-move counter and the
    /// clocks are exactly those of the stored game. Draw offers lapse.
    fn take_back(&mut self, by: Color, to_ply: u32, now: Timestamp) -> Result<Event, GameError> {
        let rewind = Rewind {
            ply: to_ply,
            at: now,
            remaining: self.clock.reading(now).remaining,
        };
        let mut rewinds: Vec<Rewind> = self
            .rewinds
            .iter()
            .filter(|r| r.ply < to_ply)
            .copied()
            .collect();
        rewinds.push(rewind);
        // Time given back during the turns taken back is moot now.
        let credits = self
            .credits
            .iter()
            .filter(|c| c.ply < to_ply)
            .copied()
            .collect();
        let setup = GameSetup {
            white: self.white.clone(),
            black: self.black.clone(),
            time_control: self.time_control(),
            rules: self.rules,
            rated: self.rated,
            allow_hints: self.hints_allowed,
            initial_fen: Some(self.initial_fen.clone()),
        };
        let moves = self.moves[..to_ply as usize].to_vec();
        let rebuilt = Game::restore_with(
            self.id.clone(),
            setup,
            self.created_at,
            moves,
            credits,
            rewinds,
            None,
            None,
        )
        .map_err(|e| GameError::Unreplayable(e.to_string()))?;
        *self = rebuilt;
        Ok(Event::TakenBack {
            by,
            ply: to_ply,
            fen: self.fen(),
        })
    }
}

#[cfg(test)]
mod tests {
    use chess_domain::{GameId, PlayerId, TimeControl};

    use super::*;
    use crate::model::game::STARTING_FEN;

    const W: Color = Color::White;
    const B: Color = Color::Black;

    fn at(ms: Millis) -> Timestamp {
        Timestamp::from_millis(ms)
    }

    fn guest(id: &str) -> Participant {
        Participant::Guest {
            id: PlayerId::trusted(id),
            name: id.to_owned(),
        }
    }

    fn setup(black: Participant, time_control: TimeControl, rated: bool) -> GameSetup {
        GameSetup {
            white: if rated {
                Participant::Registered {
                    id: PlayerId::trusted("w"),
                    username: chess_domain::Username::trusted("w"),
                }
            } else {
                guest("w")
            },
            black,
            time_control,
            rules: RuleSet::Standard,
            rated,
            allow_hints: false,
            initial_fen: None,
        }
    }

    fn casual(time_control: TimeControl) -> Game {
        Game::new(
            GameId::trusted("t"),
            setup(guest("b"), time_control, false),
            at(0),
        )
        .unwrap()
    }

    fn blitz() -> TimeControl {
        TimeControl::Incremental {
            initial_secs: 60,
            increment_secs: 0,
        }
    }

    /// Plays `moves` from `start` ms, one a second.
    fn play(g: &mut Game, moves: &[&str], start: Millis) {
        for (i, m) in moves.iter().enumerate() {
            let side = g.turn();
            g.play(side, m, at(start + 1_000 * i as Millis))
                .unwrap_or_else(|e| panic!("{m}: {e}"));
        }
    }

    /// `g` as the store rebuilds it.
    fn reloaded(g: &Game) -> Game {
        Game::restore_with(
            g.id().clone(),
            GameSetup {
                white: g.white().clone(),
                black: g.black().clone(),
                time_control: g.time_control(),
                rules: g.rules(),
                rated: g.rated(),
                allow_hints: false,
                initial_fen: None,
            },
            g.created_at(),
            g.moves().to_vec(),
            g.credits().to_vec(),
            g.rewinds().to_vec(),
            g.draw_offer(),
            g.ending(),
        )
        .unwrap()
    }

    #[test]
    fn one_ply_is_taken_back_when_the_opponent_has_not_replied() {
        let mut g = casual(TimeControl::Untimed);
        play(&mut g, &["e4", "e5", "Nf3"], 0);
        let offered = g.propose_takeback(W, false, at(5_000)).unwrap();
        assert_eq!(offered, vec![Event::TakebackOffered { by: W, to_ply: 2 }]);
        assert_eq!(g.takeback_offer(), Some(W));
        // A second request, from either side, waits for the first.
        assert_eq!(
            g.propose_takeback(B, false, at(5_000)),
            Err(GameError::TakebackPending)
        );
        assert_eq!(
            g.accept_takeback(W, at(5_000)),
            Err(GameError::NoTakebackRequest)
        );
        let done = g.accept_takeback(B, at(6_000)).unwrap();
        let fen = "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2";
        assert_eq!(
            done,
            vec![Event::TakenBack {
                by: W,
                ply: 2,
                fen: fen.to_owned()
            }]
        );
        assert_eq!((g.ply(), g.turn(), g.takeback_offer()), (2, W, None));
        assert_eq!(g.fen(), fen);
        // The position plays on from there.
        play(&mut g, &["Nc3"], 7_000);
        assert_eq!(g.moves().last().unwrap().san, "Nc3");
    }

    #[test]
    fn two_plies_are_taken_back_once_the_opponent_replied() {
        let mut g = casual(TimeControl::Untimed);
        play(&mut g, &["e4", "e5", "Nf3", "Nc6"], 0);
        // White to move: white's last move is two plies back.
        let offered = g.propose_takeback(W, false, at(5_000)).unwrap();
        assert_eq!(offered, vec![Event::TakebackOffered { by: W, to_ply: 2 }]);
        g.accept_takeback(B, at(6_000)).unwrap();
        assert_eq!((g.ply(), g.turn()), (2, W));
        // Untimed games can go back to the start.
        g.propose_takeback(B, false, at(7_000)).unwrap();
        g.accept_takeback(W, at(7_000)).unwrap();
        assert_eq!(g.ply(), 1);
        g.propose_takeback(W, false, at(8_000)).unwrap();
        g.accept_takeback(B, at(8_000)).unwrap();
        assert_eq!((g.ply(), g.fen().as_str()), (0, STARTING_FEN));
        assert_eq!(
            g.propose_takeback(W, false, at(9_000)),
            Err(GameError::NothingToTakeBack)
        );
        assert_eq!(
            g.propose_takeback(B, false, at(9_000)),
            Err(GameError::NothingToTakeBack)
        );
    }

    #[test]
    fn the_fifty_move_counter_and_the_repetitions_go_back_too() {
        let mut g = casual(TimeControl::Untimed);
        play(
            &mut g,
            &["Nf3", "Nf6", "Ng1", "Ng8", "Nf3", "Nf6", "Ng1", "Ng8"],
            0,
        );
        assert_eq!(g.repetitions(), 3);
        assert_eq!(shakmaty::Position::halfmoves(g.position()), 8);
        // Black takes back Ng8: the start position has occurred twice.
        g.propose_takeback(B, false, at(10_000)).unwrap();
        g.accept_takeback(W, at(10_000)).unwrap();
        assert_eq!(shakmaty::Position::halfmoves(g.position()), 7);
        play(&mut g, &["Ng8"], 11_000);
        assert_eq!(g.repetitions(), 3);
        g.propose_takeback(B, false, at(12_000)).unwrap();
        g.accept_takeback(W, at(12_000)).unwrap();
        assert_eq!(g.claim_draw(W, at(13_000)), Err(GameError::NoRepetition));
    }

    #[test]
    fn a_takeback_clears_a_draw_offer_and_a_move_answers_a_request() {
        let mut g = casual(TimeControl::Untimed);
        play(&mut g, &["e4", "e5", "Nf3"], 0);
        g.offer_draw(B, at(4_000)).unwrap();
        g.propose_takeback(W, false, at(4_000)).unwrap();
        g.accept_takeback(B, at(5_000)).unwrap();
        assert_eq!(g.draw_offer(), None);
        // The opponent moving declines the request ...
        g.propose_takeback(B, false, at(6_000)).unwrap();
        let events = g.play(W, "Nc3", at(7_000)).unwrap();
        assert_eq!(events[0], Event::TakebackDeclined { by: W });
        assert_eq!(g.takeback_offer(), None);
        // ... the asker moving withdraws it, and so does cancelling.
        g.propose_takeback(B, false, at(7_500)).unwrap();
        let events = g.play(B, "Nc6", at(7_600)).unwrap();
        assert_eq!(events[0], Event::TakebackCancelled { by: B });
        g.propose_takeback(B, false, at(8_000)).unwrap();
        assert_eq!(g.decline_takeback(B), Err(GameError::NoTakebackRequest));
        assert_eq!(g.cancel_takeback(W), Err(GameError::NoOwnTakebackRequest));
        assert_eq!(
            g.cancel_takeback(B).unwrap(),
            vec![Event::TakebackCancelled { by: B }]
        );
        g.propose_takeback(W, false, at(9_000)).unwrap();
        assert_eq!(
            g.decline_takeback(B).unwrap(),
            vec![Event::TakebackDeclined { by: B }]
        );
        assert_eq!(g.ply(), 4);
    }

    #[test]
    fn refusals_change_nothing() {
        let mut rated = Game::new(
            GameId::trusted("r"),
            setup(
                Participant::Registered {
                    id: PlayerId::trusted("b"),
                    username: chess_domain::Username::trusted("b"),
                },
                blitz(),
                true,
            ),
            at(0),
        )
        .unwrap();
        play(&mut rated, &["e4", "e5", "Nf3", "Nc6", "Bb5"], 0);
        assert_eq!(
            rated.propose_takeback(W, false, at(9_000)),
            Err(GameError::TakebacksNotAllowed)
        );
        assert_eq!(rated.takeback_offer(), None);
        // The operator may allow them.
        rated.propose_takeback(W, true, at(9_000)).unwrap();
        // Before both clocks started a timed game cannot go back.
        let mut timed = casual(blitz());
        play(&mut timed, &["e4", "e5"], 0);
        assert_eq!(
            timed.propose_takeback(B, false, at(3_000)),
            Err(GameError::TakebackBeforeClocks)
        );
        // Nor can a finished game.
        let mut over = casual(TimeControl::Untimed);
        play(&mut over, &["f3", "e5", "g4", "Qh4#"], 0);
        assert_eq!(
            over.propose_takeback(B, false, at(5_000)),
            Err(GameError::GameOver)
        );
        let before = over.fen();
        assert_eq!(over.accept_takeback(W, at(5_000)), Err(GameError::GameOver));
        assert_eq!(over.fen(), before);
        // uqchess has no takebacks.
        let mut uq = Game::new(
            GameId::trusted("u"),
            GameSetup {
                rules: RuleSet::Uqchess,
                ..setup(guest("b"), TimeControl::Untimed, false)
            },
            at(0),
        )
        .unwrap();
        play(&mut uq, &["e2e4"], 0);
        assert_eq!(
            uq.propose_takeback(W, false, at(1_000)),
            Err(GameError::NoTakebacksInRuleSet)
        );
    }

    #[test]
    fn the_engine_grants_a_takeback_at_once_back_to_the_humans_turn() {
        let mut g = Game::new(
            GameId::trusted("e"),
            setup(
                Participant::Engine { level: 1 },
                TimeControl::Untimed,
                false,
            ),
            at(0),
        )
        .unwrap();
        play(&mut g, &["e4", "e5"], 0);
        let done = g.propose_takeback(W, false, at(3_000)).unwrap();
        assert!(matches!(done[..], [Event::TakenBack { by: W, ply: 0, .. }]));
        assert_eq!((g.ply(), g.turn(), g.takeback_offer()), (0, W, None));
        // While the engine thinks, only the human's move goes.
        play(&mut g, &["d4"], 4_000);
        g.propose_takeback(W, false, at(5_000)).unwrap();
        assert_eq!((g.ply(), g.turn()), (0, W));
    }

    /// As on lichess, no time is given back: each side keeps what it has,
    /// and the clock of the side to move runs from the takeback. A reload
    /// comes to the same clocks, also after more moves.
    #[test]
    fn clocks_keep_their_time_and_survive_a_reload() {
        let mut g = casual(blitz());
        // The clocks start after black's first move (ply 2).
        g.play(W, "e4", at(0)).unwrap();
        g.play(B, "e5", at(1_000)).unwrap();
        g.play(W, "Nf3", at(6_000)).unwrap(); // white used 5 s
        g.play(B, "Nc6", at(8_000)).unwrap(); // black used 2 s
        g.propose_takeback(B, false, at(9_000)).unwrap(); // white's clock: 1 s more
        g.accept_takeback(W, at(10_000)).unwrap();
        assert_eq!((g.ply(), g.turn()), (3, B));
        let clock = g.clock(at(10_000));
        assert_eq!(clock.remaining.white, 53_000);
        assert_eq!(clock.remaining.black, 58_000);
        assert_eq!(clock.running, Some(B));
        assert_eq!(g.clock(at(13_000)).remaining.black, 55_000);
        assert_eq!(g.next_deadline(), Some(at(68_000)));
        let restored = reloaded(&g);
        assert_eq!(restored.clock(at(13_000)), g.clock(at(13_000)));
        assert_eq!(restored.fen(), g.fen());
        // Play on, take back again to an earlier ply, play on: the stored
        // record still replays to the same clocks.
        g.play(B, "Nf6", at(14_000)).unwrap();
        g.play(W, "Nc3", at(15_000)).unwrap();
        g.propose_takeback(W, false, at(16_000)).unwrap();
        g.accept_takeback(B, at(17_000)).unwrap();
        assert_eq!(g.ply(), 4);
        g.play(W, "d4", at(20_000)).unwrap();
        assert_eq!(g.rewinds().len(), 2);
        let restored = reloaded(&g);
        assert_eq!(restored.clock(at(21_000)), g.clock(at(21_000)));
        assert_eq!(restored.next_deadline(), g.next_deadline());
        assert_eq!(restored.moves(), g.moves());
        g.propose_takeback(B, false, at(22_000)).unwrap();
        g.accept_takeback(W, at(22_000)).unwrap();
        // Back before the first takeback's ply: only the earlier rewinds stay.
        assert_eq!(g.ply(), 3);
        assert_eq!(g.rewinds().iter().map(|r| r.ply).collect::<Vec<_>>(), [3]);
        assert_eq!(reloaded(&g).clock(at(23_000)), g.clock(at(23_000)));
    }

    #[test]
    fn a_watcher_catching_up_learns_of_a_standing_request() {
        let mut g = casual(TimeControl::Untimed);
        play(&mut g, &["e4"], 0);
        g.propose_takeback(W, false, at(2_000)).unwrap();
        let events = g.catch_up(1).unwrap();
        assert_eq!(events, vec![Event::TakebackOffered { by: W, to_ply: 0 }]);
    }
}
