//! Clocks, enforced from the server's point of view.
//!
//! A clock only moves when told what happened and when (a `Timestamp`): it
//! never reads the time itself, so the same code runs live,
//! replays a stored game after a restart, and runs under test time.
//!
//! As on the big sites, no time is charged for the first move of each side:
//! the clocks start when black has made their first move. Until then a
//! first-move window applies instead, and a game whose first moves do not
//! come is aborted.

use chess_domain::{TimeControl, Timestamp};
use shakmaty::{ByColor, Color};

pub use chess_domain::Millis;

/// How long a player of a real-time game has for their first move.
pub const FIRST_MOVE_WINDOW_MS: Millis = 60_000;

/// The state of both clocks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Clock {
    control: TimeControl,
    /// Time left per side. For daily games: the time left for the current
    /// turn, which resets to the full turn limit when the side moves.
    remaining: ByColor<Millis>,
    /// n/k only: moves each side has made in its current period.
    period_moves: ByColor<u32>,
    /// The running side and since when, once the clocks have started.
    running: Option<(Color, Timestamp)>,
}

/// Both clocks at one instant, as reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockReading {
    pub remaining: ByColor<Millis>,
    /// Moves left until the next time control (n/k only).
    pub moves_to_control: ByColor<u32>,
    pub running: Option<Color>,
    pub flag_at: Option<Timestamp>,
    pub as_of: Timestamp,
}

/// What happened to the mover's clock when a move was charged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Charge {
    /// The move was in time; the mover's time left after it (timed games).
    InTime(Option<Millis>),
    /// The mover's time had run out before the move arrived.
    Flagged,
}

impl Clock {
    /// Fresh clocks for `control`; nothing runs yet.
    pub fn new(control: TimeControl) -> Self {
        let full = match control {
            TimeControl::Untimed => 0,
            TimeControl::Incremental { initial_secs, .. } => Millis::from(initial_secs) * 1000,
            TimeControl::MovesInPeriod { period_secs, .. } => Millis::from(period_secs) * 1000,
            TimeControl::Daily { turn_hours } => Millis::from(turn_hours) * 3_600_000,
        };
        Self {
            control,
            remaining: ByColor {
                white: full,
                black: full,
            },
            period_moves: ByColor::default(),
            running: None,
        }
    }

    /// The time control.
    pub fn control(&self) -> TimeControl {
        self.control
    }

    /// Whether the server keeps time at all.
    pub fn is_timed(&self) -> bool {
        self.control.is_timed()
    }

    /// Charges the move `mover` made at `at`, `ply_before` plies into the
    /// game. Starts the clocks after black's first move.
    pub fn charge(&mut self, mover: Color, ply_before: u32, at: Timestamp) -> Charge {
        if !self.is_timed() {
            return Charge::InTime(None);
        }
        if let Some((side, since)) = self.running {
            debug_assert_eq!(side, mover, "only the running side moves");
            let left = self.remaining[mover] - at.millis_since(since).max(0);
            if left <= 0 {
                self.remaining[mover] = 0;
                return Charge::Flagged;
            }
            self.remaining[mover] = left;
        }
        match self.control {
            TimeControl::Untimed => {}
            TimeControl::Incremental { increment_secs, .. } => {
                if self.running.is_some() {
                    self.remaining[mover] += Millis::from(increment_secs) * 1000;
                }
            }
            TimeControl::MovesInPeriod { moves, period_secs } => {
                self.period_moves[mover] += 1;
                if self.period_moves[mover] >= moves {
                    // Period complete: a new one begins, keeping what was
                    // left of the old.
                    self.period_moves[mover] = 0;
                    self.remaining[mover] += Millis::from(period_secs) * 1000;
                }
            }
            TimeControl::Daily { turn_hours } => {
                self.remaining[mover] = Millis::from(turn_hours) * 3_600_000;
            }
        }
        let after = self.remaining[mover];
        // Black's first move (ply 1) starts the clocks; from then on the
        // opponent's clock runs after every move.
        if ply_before >= 1 {
            self.running = Some((!mover, at));
        }
        Charge::InTime(Some(after))
    }

    /// Gives the running side `ms` back: the clock stood still that long
    /// (the game had no replica to serve it). A no-op while no clock runs.
    pub fn credit(&mut self, ms: Millis) {
        if let Some((_, since)) = &mut self.running {
            *since = since.plus_millis(ms.max(0));
        }
    }

    /// Sets both clocks to `remaining`, `running` from the instant given:
    /// a takeback leaves the time each side has as it is and restarts the
    /// clock of the side to move.
    pub fn rewind(&mut self, (remaining, running): (ByColor<Millis>, Option<(Color, Timestamp)>)) {
        if self.is_timed() {
            self.remaining = remaining;
            self.running = running;
        }
    }

    /// Stops the clocks at `at` (the game ended), charging the running side.
    pub fn stop(&mut self, at: Timestamp) {
        if let Some((side, since)) = self.running.take() {
            self.remaining[side] = (self.remaining[side] - at.millis_since(since).max(0)).max(0);
        }
    }

    /// When the running side's time runs out, if a clock runs.
    pub fn flag_at(&self) -> Option<Timestamp> {
        self.running
            .map(|(side, since)| since.plus_millis(self.remaining[side]))
    }

    /// The side whose clock runs.
    pub fn running(&self) -> Option<Color> {
        self.running.map(|(side, _)| side)
    }

    /// Both clocks as of `now`.
    pub fn reading(&self, now: Timestamp) -> ClockReading {
        let mut remaining = self.remaining;
        if let Some((side, since)) = self.running {
            remaining[side] = (remaining[side] - now.millis_since(since).max(0)).max(0);
        }
        let moves_to_control = match self.control {
            TimeControl::MovesInPeriod { moves, .. } => ByColor {
                white: moves - self.period_moves.white,
                black: moves - self.period_moves.black,
            },
            _ => ByColor::default(),
        };
        ClockReading {
            remaining,
            moves_to_control,
            running: self.running(),
            flag_at: self.flag_at(),
            as_of: now,
        }
    }

    /// The first-move window of this time control: a minute for real-time
    /// games, the turn limit for daily ones.
    pub fn first_move_window(&self) -> Option<Millis> {
        match self.control {
            TimeControl::Untimed => None,
            TimeControl::Daily { turn_hours } => Some(Millis::from(turn_hours) * 3_600_000),
            _ => Some(FIRST_MOVE_WINDOW_MS),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: Color = Color::White;
    const B: Color = Color::Black;

    /// The instant `ms` after the epoch.
    fn at(ms: Millis) -> Timestamp {
        Timestamp::from_millis(ms)
    }

    /// A clock of `initial_secs`, and `increment_secs` more a move.
    fn incremental(initial_secs: u32, increment_secs: u32) -> Clock {
        Clock::new(TimeControl::Incremental {
            initial_secs,
            increment_secs,
        })
    }

    /// A clock of `moves` moves in every `period_secs`.
    fn in_period(moves: u32, period_secs: u32) -> Clock {
        Clock::new(TimeControl::MovesInPeriod { moves, period_secs })
    }

    #[test]
    fn incremental_clock_starts_after_blacks_first_move() {
        let mut c = incremental(60, 2);
        assert_eq!(c.charge(W, 0, at(1_000)), Charge::InTime(Some(60_000)));
        assert_eq!(c.running(), None);
        assert_eq!(c.charge(B, 1, at(5_000)), Charge::InTime(Some(60_000)));
        assert_eq!(c.running(), Some(W));
        assert_eq!(c.flag_at(), Some(at(65_000)));
        // White spends 10 s and gains 2 s.
        assert_eq!(c.charge(W, 2, at(15_000)), Charge::InTime(Some(52_000)));
        assert_eq!(c.running(), Some(B));
        let r = c.reading(at(20_000));
        assert_eq!(r.remaining.white, 52_000);
        assert_eq!(r.remaining.black, 55_000);
        assert_eq!(r.flag_at, Some(at(75_000)));
    }

    #[test]
    fn a_late_move_is_a_flag() {
        let mut c = incremental(10, 0);
        c.charge(W, 0, at(0));
        c.charge(B, 1, at(0));
        assert_eq!(c.charge(W, 2, at(10_000)), Charge::Flagged);
        assert_eq!(c.reading(at(10_000)).remaining.white, 0);
    }

    #[test]
    fn moves_in_period_carry_time_over() {
        let mut c = in_period(2, 60);
        c.charge(W, 0, at(0));
        assert_eq!(c.reading(at(0)).moves_to_control.white, 1);
        c.charge(B, 1, at(0));
        // White's second move completes the period with 50 s unused.
        assert_eq!(c.charge(W, 2, at(10_000)), Charge::InTime(Some(110_000)));
        assert_eq!(c.reading(at(10_000)).moves_to_control.white, 2);
        // Black used 30 s of the first period and has 1 move left in it.
        c.charge(B, 3, at(40_000));
        assert_eq!(c.reading(at(40_000)).remaining.black, 90_000);
        assert_eq!(c.reading(at(40_000)).moves_to_control.black, 2);
    }

    #[test]
    fn moves_in_period_flag_when_the_moves_are_not_made() {
        let mut c = in_period(40, 60);
        c.charge(W, 0, at(0));
        c.charge(B, 1, at(0));
        assert_eq!(c.flag_at(), Some(at(60_000)));
        assert_eq!(c.charge(W, 2, at(60_001)), Charge::Flagged);
    }

    #[test]
    fn daily_turns_reset() {
        let day = 24 * 3_600_000;
        let mut c = Clock::new(TimeControl::Daily { turn_hours: 24 });
        c.charge(W, 0, at(0));
        c.charge(B, 1, at(1000));
        assert_eq!(c.flag_at(), Some(at(1000 + day)));
        c.charge(W, 2, at(1000 + day - 1));
        assert_eq!(c.flag_at(), Some(at(1000 + 2 * day - 1)));
        let r = c.reading(at(1000 + day));
        assert_eq!(r.remaining.white, day);
        assert_eq!(r.remaining.black, day - 1);
    }

    #[test]
    fn a_credit_moves_the_flag_and_the_next_charge() {
        let mut c = incremental(10, 0);
        c.credit(5_000);
        assert_eq!(c.flag_at(), None, "nothing runs before black's first move");
        c.charge(W, 0, at(0));
        c.charge(B, 1, at(1_000));
        assert_eq!(c.flag_at(), Some(at(11_000)));
        c.credit(4_000);
        assert_eq!(c.flag_at(), Some(at(15_000)));
        assert_eq!(c.reading(at(5_000)).remaining.white, 10_000);
        // White moves at 13 s: 8 s of the 12 s spent were charged.
        assert_eq!(c.charge(W, 2, at(13_000)), Charge::InTime(Some(2_000)));
    }

    #[test]
    fn untimed_never_runs() {
        let mut c = Clock::new(TimeControl::Untimed);
        assert_eq!(c.charge(W, 0, at(5)), Charge::InTime(None));
        assert_eq!(c.charge(B, 1, at(5)), Charge::InTime(None));
        assert_eq!(c.flag_at(), None);
        assert_eq!(c.first_move_window(), None);
    }

    #[test]
    fn stopping_charges_the_running_side() {
        let mut c = incremental(60, 0);
        c.charge(W, 0, at(0));
        c.charge(B, 1, at(0));
        c.stop(at(20_000));
        assert_eq!(c.running(), None);
        assert_eq!(c.reading(at(99_000)).remaining.white, 40_000);
    }
}
