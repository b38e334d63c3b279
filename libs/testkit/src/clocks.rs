//! Time controls as the requests of the lobby carry them, for the tests that
//! post seeks and challenges.

use chess_domain::TimeControl;
use chess_proto::common::v1 as wire;

/// A correspondence time control, `turn_hours` a move.
pub fn daily(turn_hours: u32) -> wire::TimeControl {
    TimeControl::Daily { turn_hours }.into()
}

/// Five minutes a side, no increment.
pub fn blitz() -> wire::TimeControl {
    TimeControl::Incremental {
        initial_secs: 300,
        increment_secs: 0,
    }
    .into()
}
