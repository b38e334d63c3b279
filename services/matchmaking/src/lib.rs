//! The matchmaking service: turns the uqchess pairing queue, seeks, requests
//! to play and challenges into games, created through the game service.
//!
//! - [`api`]: the gRPC edge, the only room that sees the protocol; with
//!   [`convert`], its protobuf ↔ model conversions.
//! - [`pairing`]: the uqchess `start human` queue (one actor).
//! - [`lobby`]: seeks and correspondence tables, requests, challenges and the
//!   players' lobby event streams ([`lobby::LobbyHandle`] over its actor).
//! - [`clients`]: calls to the game and rating services.
//! - [`store`]: what of the lobby survives a restart.

pub mod api;
pub mod clients;
pub mod convert;
pub mod lobby;
pub mod pairing;
pub mod store;

use chess_proto::matchmaking::v1::matchmaking_service_server::{
    MatchmakingServiceServer, SERVICE_NAME,
};

/// The matchmaking service: pairing, seeks, tables and challenges
///
/// The flags of `chess-matchmaking`, under the summary above that `--help`
/// prints; each has an environment twin `CHESS_MATCHMAKING_<FLAG>`.
#[derive(Debug, clap::Parser)]
#[command(version, long_about = None)]
pub struct Config {
    #[command(flatten)]
    pub service: chess_runtime::ServiceArgs,
    /// Where seeks and challenges are stored: `sqlite://path?mode=rwc` or
    /// `postgres://…`.
    #[arg(long, default_value = "sqlite://data/matchmaking.sqlite?mode=rwc")]
    pub database_url: String,
    /// The game service, `host:port`; with several replicas, the
    /// addresses of one or more of them separated by commas (any one tells
    /// where the others are).
    #[arg(long, default_value = chess_runtime::addr::GAME)]
    pub game_addr: String,
    /// The rating service, `host:port`.
    #[arg(long, default_value = chess_runtime::addr::RATING)]
    pub rating_addr: String,
    /// Seconds a real-time seek posted while its poster has no event stream
    /// open waits for one before it is withdrawn.
    #[arg(long, default_value_t = 30)]
    pub presence_grace_secs: u64,
}

/// Default gRPC address.
pub const DEFAULT_LISTEN: &str = chess_runtime::addr::MATCHMAKING;

chess_runtime::start_error! {
    /// Why the service could not run.
    pub enum StartError {
        #[error("cannot open the lobby database: {0}")]
        Storage(#[from] store::StoreError),
    }
}

/// Runs the service until shutdown.
pub async fn run(config: Config) -> Result<(), StartError> {
    let (server, key) = config
        .service
        .bind_verified("matchmaking", DEFAULT_LISTEN, &[SERVICE_NAME])
        .await?;
    let signer = chess_runtime::Signer::new(key, "matchmaking");
    // Held until the service stops; taken once the flags have proved good.
    let _database_lock =
        chess_runtime::lock::database(chess_storage::sqlite_path(&config.database_url))?;
    let game = clients::GameClient::connect(&config.game_addr, signer.clone())?;
    let rating = clients::RatingClient::connect(&config.rating_addr, signer)?;
    let pairing = pairing::Pairing::spawn(game.clone());
    let lobby = lobby::LobbyHandle::open(
        &config.database_url,
        game,
        rating,
        std::time::Duration::from_secs(config.presence_grace_secs),
        server.shutdown(),
    )
    .await?;
    server.health().set_ready(true).await;
    let api = api::MatchmakingApi {
        pairing,
        lobby: lobby.clone(),
    };
    let served = server
        .serve(tonic::service::Routes::new(MatchmakingServiceServer::new(
            api,
        )))
        .await;
    // The lobby stops with the server; its last writes are made by then.
    if tokio::time::timeout(std::time::Duration::from_secs(10), lobby.closed())
        .await
        .is_err()
    {
        tracing::warn!("the lobby did not stop within 10 s");
    }
    served?;
    Ok(())
}
