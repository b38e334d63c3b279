//! `chess-gateway`: serves the public gRPC API and the uqchess line protocol
//! until shut down.

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let config: chess_gateway::Config = chess_runtime::cli::parse("gateway");
    let _telemetry = chess_runtime::init_telemetry("gateway", &config.telemetry);
    chess_runtime::exit_code("gateway", chess_gateway::run(config).await)
}
