//! The rules of a game, free of I/O: positions and moves (with shakmaty),
//! clocks, endings, the board drawing and PGN.

pub mod board;
pub mod clock;
pub mod game;
pub mod pgn;

pub use clock::{ClockReading, Millis};
pub use game::{
    Credit, Ending, Event, Game, GameError, GameResult, GameSetup, Participant, PlayedMove, Rewind,
    SetupError, Termination,
};
