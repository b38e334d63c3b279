//! `chess-rating`: serves the rating service until shut down.

use std::process::ExitCode;

fn main() -> ExitCode {
    let config: chess_rating::Config = chess_runtime::cli::parse("rating");
    chess_runtime::runtime("rating").block_on(async {
        let _telemetry = chess_runtime::init_telemetry("rating", &config.telemetry);
        chess_runtime::exit_code("rating", chess_rating::run(config).await)
    })
}
