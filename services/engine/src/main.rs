//! `chess-engine`: serves the engine service until shut down.
//!
//! Exits with status 3 and one line on standard error when no Stockfish
//! process can be started, saying how to install it or point to it
//! (launchers map that status to their own message).

use std::process::ExitCode;

fn main() -> ExitCode {
    chess_runtime::service::main_with("engine", |config| async move {
        match chess_engine::run(config).await {
            Err(e @ chess_engine::StartError::CannotStart { .. }) => {
                eprintln!(
                    "chess-engine: {e}; {}",
                    chess_engine::stockfish_hint("CHESS_ENGINE_STOCKFISH_PATH")
                );
                ExitCode::from(chess_engine::EXIT_ENGINE_UNAVAILABLE)
            }
            result => chess_runtime::exit_code("engine", result),
        }
    })
}
