//! `chess-matchmaking`: serves the matchmaking service until shut down.

use std::process::ExitCode;

fn main() -> ExitCode {
    let config: chess_matchmaking::Config = chess_runtime::cli::parse("matchmaking");
    chess_runtime::runtime("matchmaking").block_on(async {
        let _telemetry = chess_runtime::init_telemetry("matchmaking", &config.telemetry);
        chess_runtime::exit_code("matchmaking", chess_matchmaking::run(config).await)
    })
}
