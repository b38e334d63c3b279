//! `chess-game`: serves the game service until shut down.

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let config: chess_game::Config = chess_runtime::cli::parse("game");
    let _telemetry = chess_runtime::init_telemetry("game", &config.telemetry);
    chess_runtime::exit_code("game", chess_game::run(config).await)
}
