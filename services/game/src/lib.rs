//! The game service: the single authority for every game.

pub mod model;

/// Flags of `chess-game`; each has an environment twin `CHESS_GAME_<FLAG>`.
#[derive(Debug, clap::Parser)]
#[command(
    name = "chess-game",
    version,
    about = "The game service: positions, rules, clocks and durable games"
)]
pub struct Config {
    #[command(flatten)]
    pub server: chess_runtime::ServerArgs,
    #[command(flatten)]
    pub telemetry: chess_telemetry::TelemetryArgs,
    /// Where games are stored: `sqlite://path?mode=rwc` or `postgres://…`.
    #[arg(long, default_value = "sqlite://data/game.sqlite?mode=rwc")]
    pub database_url: String,
    /// The engine service, `host:port`.
    #[arg(long, default_value = "127.0.0.1:50055")]
    pub engine_addr: String,
    /// The rating service, `host:port`.
    #[arg(long, default_value = "127.0.0.1:50054")]
    pub rating_addr: String,
}

/// Default gRPC address.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:50053";

/// Why the service could not run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Server(#[from] chess_runtime::server::Error),
    #[error(transparent)]
    Storage(#[from] chess_storage::Error),
}

/// Runs the service until shutdown.
pub async fn run(config: Config) -> Result<(), Error> {
    let server = chess_runtime::Server::bind(
        "game",
        &config.server,
        DEFAULT_LISTEN,
        &[chess_proto::game::v1::game_service_server::SERVICE_NAME],
    )
    .await?;
    let _db = chess_storage::connect(&config.database_url, 8).await?;
    server.health().set_ready(true).await;
    server
        .serve(tonic::service::Routes::builder().routes())
        .await?;
    Ok(())
}
