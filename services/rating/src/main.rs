//! `chess-rating`: serves the rating service until shut down.

use std::process::ExitCode;

fn main() -> ExitCode {
    chess_runtime::service::main("rating", chess_rating::run)
}
