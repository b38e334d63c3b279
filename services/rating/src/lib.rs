//! The rating service: player accounts, ratings per speed category, rating
//! history and leaderboards. Each finished game is applied exactly once.
//!
//! - [`api`]: the gRPC service, the only room that sees the wire's requests;
//!   [`convert`] beside it turns wire types into domain values and back (and
//!   pages into tokens, failures ([`error`]) into statuses).
//! - [`core`]: what each call does, in domain values: registration and
//!   logins under their throttle, sessions, games applied once, ratings,
//!   history and leaderboard pages. (Rating calls no other service, so it
//!   has no `clients`.)
//! - [`accounts`]: the rules for usernames, emails and passwords, and Argon2id
//!   hashing on the blocking pool.
//! - [`store`]: the tables, their migrations, and the transactions that
//!   register players and apply each game once without losing concurrent
//!   updates, on SQLite and PostgreSQL alike.
//! - [`model`]: the domain values — players, ratings per category, games as
//!   reported, rating changes, history and leaderboard rows.
//!
//! The formulas themselves live in `chess-ratings`.

pub mod accounts;
pub mod api;
pub mod convert;
pub mod core;
pub mod error;
pub mod model;
pub mod store;

use chess_proto::rating::v1::rating_service_server::{RatingServiceServer, SERVICE_NAME};
use chess_ratings::{RatingSystem, System, glicko2};

/// The rating service: accounts, ratings, rating history and leaderboards
///
/// The flags of `chess-rating`, under the summary above that `--help` prints;
/// each has an environment twin `CHESS_RATING_<FLAG>`.
#[derive(Debug, clap::Parser)]
#[command(version, long_about = None)]
pub struct Config {
    #[command(flatten)]
    pub service: chess_runtime::ServiceArgs,
    /// Where accounts and ratings are stored: `sqlite://path?mode=rwc` or
    /// `postgres://…`.
    #[arg(long, default_value = "sqlite://data/rating.sqlite?mode=rwc")]
    pub database_url: String,
    /// Most database connections held open.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..))]
    pub database_connections: u32,
    /// The rating system games are rated in.
    #[arg(long, value_enum, default_value_t = RatingSystem::ClubElo)]
    pub rating_system: RatingSystem,
    #[command(flatten)]
    pub glicko2: Glicko2Args,
    /// Longest wait, in seconds, an account's failed logins impose on the
    /// next attempt. Kept short: whoever fails is not necessarily the owner,
    /// and the owner must not be locked out for long.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub login_backoff_cap_secs: u64,
}

/// Failed logins of one account that cost nothing.
pub const FREE_LOGIN_FAILURES: u32 = 5;

/// Settings of Glicko-2 (ignored by the Elo systems).
#[derive(Clone, Debug, clap::Args)]
pub struct Glicko2Args {
    /// Glicko-2 system constant τ: how fast volatility may change (0.3–1.2).
    #[arg(long = "glicko2-tau", default_value_t = 0.5)]
    pub tau: f64,
    /// Glicko-2 rating of a new player.
    #[arg(long = "glicko2-initial-rating", default_value_t = 1500.0)]
    pub initial_rating: f64,
    /// Glicko-2 deviation of a new player, also the most a deviation grows to.
    #[arg(long = "glicko2-initial-deviation", default_value_t = 350.0)]
    pub initial_deviation: f64,
    /// Glicko-2 volatility of a new player.
    #[arg(long = "glicko2-initial-volatility", default_value_t = 0.06)]
    pub initial_volatility: f64,
    /// A Glicko-2 rating is provisional while its deviation is above this.
    #[arg(long = "glicko2-provisional-deviation", default_value_t = 110.0)]
    pub provisional_deviation: f64,
    /// Length of a Glicko-2 rating period in hours; a player's deviation grows
    /// by one period's volatility for every period without games.
    #[arg(long = "glicko2-period-hours", default_value_t = 24.0)]
    pub period_hours: f64,
}

impl Config {
    /// The rating system with its settings, checked.
    pub fn system(&self) -> Result<System, glicko2::ConfigError> {
        Ok(match self.rating_system {
            RatingSystem::ClubElo => System::ClubElo,
            RatingSystem::LogisticElo => System::LogisticElo,
            RatingSystem::Glicko2 => System::Glicko2(
                glicko2::Config {
                    tau: self.glicko2.tau,
                    initial_rating: self.glicko2.initial_rating,
                    initial_deviation: self.glicko2.initial_deviation,
                    initial_volatility: self.glicko2.initial_volatility,
                    provisional_deviation: self.glicko2.provisional_deviation,
                    period_secs: self.glicko2.period_hours * 3600.0,
                }
                .validate()?,
            ),
        })
    }
}

/// Default gRPC address.
pub const DEFAULT_LISTEN: &str = chess_runtime::addr::RATING;

chess_runtime::start_error! {
    /// Why the service could not run.
    pub enum StartError {
        #[error("invalid configuration: {0}")]
        Config(#[from] glicko2::ConfigError),
        #[error("cannot open the rating database: {0}")]
        Store(#[from] store::StoreError),
        #[error("{0}")]
        Hash(#[from] accounts::HashError),
    }
}

/// Runs the service until shutdown. Health turns SERVING once the migrations
/// have run.
pub async fn run(config: Config) -> Result<(), StartError> {
    let system = config.system()?;
    let (server, _) = config
        .service
        .bind_verified("rating", DEFAULT_LISTEN, &[SERVICE_NAME])
        .await?;
    // Held until the service stops; taken once the flags have proved good.
    let _database_lock =
        chess_runtime::lock::database(chess_storage::sqlite_path(&config.database_url))?;
    let store =
        store::Store::open(&config.database_url, config.database_connections, system).await?;
    tracing::info!(system = %system.kind(), "ratings ready");
    let hasher = accounts::Hasher::new().await?;
    server.health().set_ready(true).await;
    let logins = chess_runtime::throttle::Policy {
        free: FREE_LOGIN_FAILURES,
        base: std::time::Duration::from_secs(1),
        cap: std::time::Duration::from_secs(config.login_backoff_cap_secs),
        forget_after: std::time::Duration::from_secs(15 * 60),
    };
    let api = api::RatingApi::new(store.clone(), hasher, logins);
    let served = server
        .serve(tonic::service::Routes::new(RatingServiceServer::new(api)))
        .await;
    // Every call has been answered: a SQLite file is left without its log.
    store.close().await;
    served?;
    Ok(())
}
