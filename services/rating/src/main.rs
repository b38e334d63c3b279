//! `chess-rating`: serves the rating service until shut down.

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let config: chess_rating::Config = chess_runtime::cli::parse("rating");
    let _telemetry = chess_runtime::init_telemetry("rating", &config.telemetry);
    chess_runtime::exit_code("rating", chess_rating::run(config).await)
}
