//! The gateway: every external protocol in front of the internal services.
//! It keeps no game state of its own, only live connections, so it scales by
//! adding replicas.
//!
//! - [`uqchess`]: the uqchess line protocol on its own TCP port.
//! - [`backends`]: the clients of the internal services.

pub mod backends;
pub mod uqchess;

/// Flags of `chess-gateway`; each has an environment twin
/// `CHESS_GATEWAY_<FLAG>`.
#[derive(Debug, clap::Parser)]
#[command(
    name = "chess-gateway",
    version,
    about = "The gateway: public gRPC API and the uqchess line protocol"
)]
pub struct Config {
    #[command(flatten)]
    pub server: chess_runtime::ServerArgs,
    #[command(flatten)]
    pub telemetry: chess_telemetry::TelemetryArgs,
    /// Address for the uqchess line protocol, `host:port`; empty to turn it
    /// off.
    #[arg(long, default_value = "127.0.0.1:50050")]
    pub uqchess_listen: String,
    /// Serve the uqchess protocol on listening socket number N handed over
    /// by a supervisor (`LISTEN_FDS`) instead of binding `--uqchess-listen`.
    #[arg(long)]
    pub uqchess_listen_fd: Option<usize>,
    /// The game service, `host:port`.
    #[arg(long, default_value = "127.0.0.1:50053")]
    pub game_addr: String,
    /// The matchmaking service, `host:port`.
    #[arg(long, default_value = "127.0.0.1:50052")]
    pub matchmaking_addr: String,
    /// The rating service, `host:port`.
    #[arg(long, default_value = "127.0.0.1:50054")]
    pub rating_addr: String,
    /// File holding the secret that signs session tokens.
    #[arg(long)]
    pub token_key_file: Option<std::path::PathBuf>,
    /// Directory outgoing mail is written to when no SMTP server is set.
    #[arg(long, default_value = "data/mail")]
    pub mail_dir: std::path::PathBuf,
}

/// Default address of the public gRPC API.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:50051";

/// Why the gateway could not run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Server(#[from] chess_runtime::server::Error),
    #[error("invalid service address: {0}")]
    Address(#[from] tonic::transport::Error),
}

/// Runs the gateway until shutdown.
pub async fn run(config: Config) -> Result<(), Error> {
    let server =
        chess_runtime::Server::bind("gateway", &config.server, DEFAULT_LISTEN, &[]).await?;
    let backends = backends::Backends::connect(
        &config.game_addr,
        &config.matchmaking_addr,
        &config.rating_addr,
    )?;
    let uqchess = if config.uqchess_listen.is_empty() && config.uqchess_listen_fd.is_none() {
        None
    } else {
        let listener = match config.uqchess_listen_fd {
            Some(index) => chess_runtime::server::inherited_listener(index)?,
            None => chess_runtime::server::bind_listener(&config.uqchess_listen).await?,
        };
        if let Ok(addr) = listener.local_addr() {
            tracing::info!(%addr, "serving the uqchess protocol");
        }
        Some(tokio::spawn(uqchess::serve(
            listener,
            backends.clone(),
            server.shutdown(),
        )))
    };
    server.health().set_ready(true).await;
    let routes = tonic::service::Routes::builder().routes();
    let served = server.serve(routes).await;
    if let Some(uqchess) = uqchess {
        // Sessions end promptly once shutdown began; a panic in one was
        // already reported by the runtime.
        let _ = uqchess.await;
    }
    served?;
    Ok(())
}
