//! `chess-matchmaking`: serves the matchmaking service until shut down.

use std::process::ExitCode;

fn main() -> ExitCode {
    chess_runtime::service::main("matchmaking", chess_matchmaking::run)
}
