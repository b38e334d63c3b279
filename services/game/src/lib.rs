//! The game service: the single authority for every game.
//!
//! The rooms, from the wire inwards (each uses only those below it):
//!
//! - [`api`]: the gRPC service, the only room that sees the wire's requests
//!   and statuses; [`convert`] beside it turns domain values into wire types
//!   and failures ([`error`]) into statuses. [`relay`] is PlayMoves' flow of
//!   many moves over one stream, fed by `api`.
//! - [`registry`]: the core handle, [`registry::Registry`]: creates games and
//!   runs one private actor per live game (`registry/actor.rs`), serialising
//!   its moves, running its timers and the engine's moves, persisting before
//!   it answers or publishes; [`hub`] carries live events per player. Those
//!   [`chat`] is each game's chat: its rules and its live feed. Those
//!   events are wire events, built once by [`convert`] and shared by every
//!   watcher: the core's one use of a room above it.
//!   Beside it, [`registry::lone`] and [`registry::manager`] keep it serving
//!   its shards: all of them alone on SQLite; on PostgreSQL, those whose
//!   lease it holds among several replicas.
//! - [`clients`]: the calls out to the engine and rating services (the results
//!   outbox's reporter).
//! - [`shards`]: which shards of the games this replica serves, and the
//!   SQL of their leases.
//! - [`store`]: the tables, migrations, reads and the group-committing writer,
//!   by back end.
//! - [`model`]: the rules, free of I/O — moves, clocks, endings, the board
//!   drawing and PGN; [`time`]: the clock source.

pub mod api;
pub mod chat;
pub mod clients;
pub mod convert;
pub mod error;
pub mod hub;
pub mod model;
pub mod registry;
pub mod relay;
pub mod shards;
pub mod store;
pub mod time;

use std::sync::Arc;

use chess_proto::game::v1::game_service_server::{GameServiceServer, SERVICE_NAME};

/// The game service: positions, rules, clocks and durable games
///
/// The flags of `chess-game`, under the summary above that `--help` prints;
/// each has an environment twin `CHESS_GAME_<FLAG>`.
#[derive(Debug, clap::Parser)]
#[command(version, long_about = None)]
pub struct Config {
    #[command(flatten)]
    pub service: chess_runtime::ServiceArgs,
    /// Where games are stored: `sqlite://path?mode=rwc` or `postgres://…`.
    #[arg(long, default_value = "sqlite://data/game.sqlite?mode=rwc")]
    pub database_url: String,
    /// The engine service, `host:port`.
    #[arg(long, default_value = chess_runtime::addr::ENGINE)]
    pub engine_addr: String,
    /// The rating service, `host:port`.
    #[arg(long, default_value = chess_runtime::addr::RATING)]
    pub rating_addr: String,
    /// The server's name in the `Site` tag of exported PGN.
    #[arg(long, default_value = "Rookery")]
    pub site: String,
    /// How long an active game with nothing happening (no move, no call, no
    /// watcher, no engine search) stays in memory, in seconds; it is loaded
    /// back from the database when it is next needed, or when its clock
    /// runs out. 0 keeps every active game in memory.
    #[arg(long, default_value_t = 60.0)]
    pub evict_after_secs: f64,
    /// Allow takebacks in rated games too (by default only casual games
    /// and games against the engine have them, as fair play asks).
    #[arg(long)]
    pub rated_takebacks: bool,
    #[command(flatten)]
    pub replica: ReplicaArgs,
}

/// Flags of a replica among several (games sharded over replicas sharing a
/// PostgreSQL database).
#[derive(Debug, Clone, clap::Args)]
pub struct ReplicaArgs {
    /// This replica's name, unique among the replicas and the same across
    /// its restarts (a StatefulSet pod's name).
    #[arg(long, default_value = "game")]
    pub replica_id: String,
    /// The address other services reach this replica at, `host:port`.
    /// Default: the address it listens on, unless that is a wildcard
    /// (0.0.0.0 or [::]); then callers use the address they were given.
    #[arg(long)]
    pub advertise_addr: Option<String>,
    /// How long a replica's lease on a shard lasts, in milliseconds: a
    /// replica that dies is replaced on its shards after at most about this
    /// long (several replicas only).
    #[arg(long, default_value_t = 3000)]
    pub lease_ttl_ms: u64,
    /// How often a replica renews its leases, in milliseconds; well below
    /// the lease's length.
    #[arg(long, default_value_t = 1000)]
    pub lease_renew_ms: u64,
}

impl ReplicaArgs {
    /// The lease timing, if the two flags make sense together.
    pub fn timing(&self) -> Result<registry::manager::LeaseTiming, StartError> {
        if self.lease_renew_ms == 0 || self.lease_renew_ms * 2 > self.lease_ttl_ms {
            return Err(StartError::Flags(format!(
                "--lease-renew-ms ({}) must be positive and at most half of --lease-ttl-ms ({})",
                self.lease_renew_ms, self.lease_ttl_ms
            )));
        }
        Ok(registry::manager::LeaseTiming {
            ttl: std::time::Duration::from_millis(self.lease_ttl_ms),
            renew_every: std::time::Duration::from_millis(self.lease_renew_ms),
        })
    }

    /// The address to advertise, given the one bound.
    pub fn advertised(&self, bound: std::net::SocketAddr) -> String {
        match &self.advertise_addr {
            Some(addr) => addr.clone(),
            None if bound.ip().is_unspecified() => String::new(),
            None => bound.to_string(),
        }
    }
}

/// Default gRPC address.
pub const DEFAULT_LISTEN: &str = chess_runtime::addr::GAME;

/// How long a result being sent to the rating service as the service stops
/// is waited for before the store closes.
const REPORTER_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

chess_runtime::start_error! {
    /// Why the service could not run.
    pub enum StartError {
        #[error("cannot open the game database: {0}")]
        Store(#[from] store::StoreError),
        #[error("cannot resume the active games: {0}")]
        Resume(String),
        #[error("{0}")]
        Flags(String),
    }
}

/// Runs the service until shutdown.
pub async fn run(config: Config) -> Result<(), StartError> {
    let timing = config.replica.timing()?;
    let evict_after =
        std::time::Duration::try_from_secs_f64(config.evict_after_secs).map_err(|_| {
            StartError::Flags(format!(
                "--evict-after-secs must be a number of seconds, 0 or more (got {})",
                config.evict_after_secs
            ))
        })?;
    let (server, key) = config
        .service
        .bind_verified("game", DEFAULT_LISTEN, &[SERVICE_NAME])
        .await?;
    let signer = chess_runtime::Signer::new(key.clone(), "game");
    let me = shards::Replica {
        id: config.replica.replica_id.clone(),
        address: config.replica.advertised(server.local_addr()),
    };
    // Replicas share a PostgreSQL database and the games by leases; a
    // SQLite file serves one process, which runs every game.
    let leased = chess_storage::Backend::of(&config.database_url)
        .map_err(|e| StartError::Store(store::StoreError::Open(e)))?
        == chess_storage::Backend::Postgres;
    // One process per SQLite file: a second one would resume the same games
    // and race the first. Held until the service stops.
    let _database_lock =
        chess_runtime::lock::database(chess_storage::sqlite_path(&config.database_url))?;
    let (store, shards) = if leased {
        (
            store::Store::open_fenced(&config.database_url, &me.id).await?,
            shards::Shards::leased(me),
        )
    } else {
        (
            store::Store::open(&config.database_url).await?,
            shards::Shards::lone(me),
        )
    };
    let shutdown = server.shutdown();
    let reporter = clients::Reporter::spawn(
        store.clone(),
        Arc::clone(&shards),
        clients::RatingClient::connect(&config.rating_addr, signer.clone())?,
        shutdown.clone(),
    );
    let ctx = Arc::new(registry::Context {
        store: store.clone(),
        hub: hub::PlayerHub::default(),
        engine: clients::EngineClient::connect(&config.engine_addr, signer)?,
        reporter: reporter.clone(),
        time: time::TimeSource::system(),
        shutdown: shutdown.clone(),
        evict_after,
        rated_takebacks: config.rated_takebacks,
    });
    let registry = registry::Registry::new(ctx, Arc::clone(&shards));
    let manager = if leased {
        let mut manager = registry::manager::Manager::new(Arc::clone(&registry), timing);
        if !manager.join(&shutdown).await {
            return Ok(());
        }
        tracing::info!(
            replica = shards.me().id,
            shards = shards.served().len(),
            "serving the shards of the games this replica holds"
        );
        Some(tokio::spawn(manager.run(shutdown.clone())))
    } else {
        let games = registry::lone::resume(&registry)
            .await
            .map_err(|e| StartError::Resume(e.to_string()))?;
        tracing::info!(games, "resumed the active games");
        Some(tokio::spawn(registry::lone::keep_alive(
            Arc::clone(&registry),
            shutdown.clone(),
        )))
    };
    server.health().set_ready(true).await;
    let api = api::GameApi::new(registry, config.site, key);
    let served = server
        .serve(tonic::service::Routes::new(GameServiceServer::new(api)))
        .await;
    // The shards are handed back (or the last heartbeat written) before the
    // process ends, so that other replicas take over at once, and a restart
    // knows since when the games stood still.
    if let Some(manager) = manager {
        let _ = tokio::time::timeout(std::time::Duration::from_secs(15), manager).await;
    }
    // A result the rating service acknowledged is cleared from the outbox
    // before the store closes (else it is sent again at the next start).
    reporter.stop(REPORTER_GRACE).await;
    // Last, once nothing is left to write: a SQLite file is then left
    // without its log.
    store.close().await;
    served?;
    Ok(())
}
