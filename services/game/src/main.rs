//! `chess-game`: serves the game service until shut down.

use std::process::ExitCode;

/// jemalloc: a game's many small allocations (its moves, its actor's
/// channels) pack tighter than with glibc's allocator, and what loading
/// the games at start-up used for a moment is given back within seconds.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    chess_runtime::service::main("game", chess_game::run)
}
