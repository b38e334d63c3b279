//! Every way a request can fail ([`Error`]; `api.rs` gives each its gRPC
//! status), and every way the service can fail to start ([`StartError`]).

use std::path::PathBuf;

use crate::limits::{MAX_DEPTH, MAX_MOVETIME_MS, MAX_MULTIPV};
use crate::position::MAX_MOVES;

/// Why a request (or the service) failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid FEN: {0}")]
    InvalidFen(String),
    #[error("move {index} ({text:?}) is not a UCI move")]
    MalformedMove { index: usize, text: String },
    #[error("move {index} ({text:?}) is illegal in its position")]
    IllegalMove { index: usize, text: String },
    #[error("too many moves: {0} (at most {MAX_MOVES})")]
    TooManyMoves(usize),
    #[error(
        "search limits need a movetime (at most {MAX_MOVETIME_MS} ms) or a depth (at most {MAX_DEPTH}), or both"
    )]
    MissingLimits,
    #[error("movetime {0} ms is above the maximum of {MAX_MOVETIME_MS} ms")]
    MovetimeTooLong(u32),
    #[error("depth {0} is above the maximum of {MAX_DEPTH}")]
    DepthTooDeep(u32),
    #[error("level {0} is not between 1 and 8")]
    InvalidLevel(u32),
    #[error("multipv {0} is not between 1 and {MAX_MULTIPV}")]
    InvalidMultipv(u32),
    #[error("the position has no legal move")]
    NoLegalMoves,
    #[error("too many requests are waiting for the engine ({0})")]
    QueueFull(usize),
    #[error("no Stockfish process is running")]
    NoEngine,
    #[error("the Stockfish process failed: {0}")]
    EngineFailed(String),
    #[error("the engine service is shutting down")]
    ShuttingDown,
}

chess_runtime::start_error! {
    /// Why the service could not start (or its server failed).
    pub enum StartError {
        #[error("cannot start Stockfish ({}): {reason}", .path.display())]
        CannotStart {
            path: PathBuf,
            reason: chess_uci::Error,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_up_failure_is_one_line() {
        let error = StartError::CannotStart {
            path: "/nowhere/stockfish".into(),
            reason: chess_uci::Error::Spawn(std::io::Error::from(std::io::ErrorKind::NotFound)),
        };
        let text = error.to_string();
        assert!(
            text.starts_with("cannot start Stockfish (/nowhere/stockfish): "),
            "{text}"
        );
        assert!(!text.contains('\n'));
    }
}
