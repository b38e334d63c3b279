//! `chess-game`: serves the game service until shut down.

use std::process::ExitCode;

/// jemalloc: a game's many small allocations (its moves, its actor's
/// channels) pack tighter than with glibc's allocator, and what loading
/// the games at start-up used for a moment is given back within seconds.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    let config: chess_game::Config = chess_runtime::cli::parse("game");
    chess_runtime::runtime("game").block_on(async {
        let _telemetry = chess_runtime::init_telemetry("game", &config.telemetry);
        chess_runtime::exit_code("game", chess_game::run(config).await)
    })
}
