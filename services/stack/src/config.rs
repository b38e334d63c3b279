//! What the system is told: [`StackOptions`], and the flags of `chess-stack`
//! ([`Config`], each flag with an environment twin `CHESS_STACK_<FLAG>`),
//! which come down to them in one place, [`Config::options`].
//! `uqchessserver` builds its options its own way, as its contract says.

use std::{ffi::OsString, path::PathBuf};

use chess_ratings::RatingSystem;
use chess_runtime::addr;
use chess_telemetry::LogFormat;
use clap::builder::PossibleValuesParser;

use crate::Output;

/// How to run the system.
#[derive(Clone, Debug)]
pub struct StackOptions {
    /// Where the service binaries are.
    pub bin_dir: PathBuf,
    /// Databases, mail, the token key and the internal key.
    pub data_dir: PathBuf,
    /// The public gRPC (and gRPC-Web) address.
    pub grpc_listen: String,
    /// The gateway's `--public-url`; by default `http://` and the address
    /// `grpc_listen` bound (127.0.0.1 for an unspecified host).
    pub public_url: Option<String>,
    /// The uqchess address; empty for none.
    pub uqchess_listen: String,
    /// Where the internal services listen.
    pub internal: InternalListen,
    /// Replicas of the game service, sharing the games by shard (more than
    /// one needs `game_database_url` to be PostgreSQL).
    pub game_replicas: u16,
    /// The game service's database; `None` for a SQLite file in the data
    /// directory.
    pub game_database_url: Option<String>,
    pub stockfish_path: Option<PathBuf>,
    pub engine_pool_size: Option<u32>,
    /// `club-elo`, `logistic-elo` or `glicko2`.
    pub rating_system: Option<String>,
    /// Extra flags for the gateway (mail settings and the like).
    pub gateway_args: Vec<OsString>,
    /// Flags every service gets (log format and filter).
    pub common_args: Vec<OsString>,
    pub output: Output,
    /// Print a line when a child dies and is restarted.
    pub announce_restarts: bool,
}

/// The addresses the internal services listen on (port 0 picks a free
/// one).
#[derive(Clone, Debug, PartialEq, Eq, clap::Args)]
pub struct InternalListen {
    /// Address of the internal matchmaking service; port 0 picks a free one.
    #[arg(long = "matchmaking-listen", value_name = "MATCHMAKING_LISTEN", default_value = addr::MATCHMAKING)]
    pub matchmaking: String,
    /// Address of the internal game service; port 0 picks a free one. With
    /// several replicas, the first's: the others take the ports after it.
    #[arg(long = "game-listen", value_name = "GAME_LISTEN", default_value = addr::GAME)]
    pub game: String,
    /// Address of the internal rating service; port 0 picks a free one.
    #[arg(long = "rating-listen", value_name = "RATING_LISTEN", default_value = addr::RATING)]
    pub rating: String,
    /// Address of the internal engine service; port 0 picks a free one.
    #[arg(long = "engine-listen", value_name = "ENGINE_LISTEN", default_value = addr::ENGINE)]
    pub engine: String,
}

impl InternalListen {
    /// Free loopback ports, for stacks that must not meet each other (tests,
    /// `uqchessserver`).
    pub fn free() -> Self {
        let free = || "127.0.0.1:0".to_owned();
        Self {
            matchmaking: free(),
            game: free(),
            rating: free(),
            engine: free(),
        }
    }
}

/// Starts the five chess services on this machine and supervises them until Ctrl-C
///
/// The flags of `chess-stack`, under the summary above that `--help` prints;
/// each has an environment twin `CHESS_STACK_<FLAG>`.
#[derive(Debug, clap::Parser)]
#[command(version, long_about = None)]
pub struct Config {
    /// Directory for the databases, outgoing mail and the session key.
    #[arg(long, default_value = "data")]
    pub data_dir: PathBuf,
    /// Address of the public gRPC and gRPC-Web API.
    #[arg(long, default_value = addr::GATEWAY)]
    pub grpc_listen: String,
    /// The address players reach the gateway at, for the links in emails
    /// (`<public-url>/games/<id>` opens the game). Default: `http://` and
    /// the address --grpc-listen bound, with 127.0.0.1 for 0.0.0.0 or [::].
    #[arg(long)]
    pub public_url: Option<String>,
    /// Address of the uqchess line protocol; empty to turn it off.
    #[arg(long, default_value = addr::UQCHESS)]
    pub uqchess_listen: String,
    #[command(flatten)]
    pub internal: InternalListen,
    /// Replicas of the game service, sharing the games by shard; more than
    /// one needs --database-url to be a PostgreSQL database.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub game_replicas: u16,
    /// The game service's database (default: game.sqlite in the data
    /// directory), e.g. `postgres://user:password@127.0.0.1:5432/chess`.
    /// The other services keep their SQLite files.
    #[arg(long, visible_alias = "database-url")]
    pub game_database_url: Option<String>,
    /// The Stockfish program (default: `stockfish` on PATH, else
    /// /usr/games/stockfish).
    #[arg(long)]
    pub stockfish_path: Option<PathBuf>,
    /// Stockfish processes in the engine's pool (default: one per core).
    #[arg(long)]
    pub engine_pool_size: Option<u32>,
    /// The rating system games are rated in.
    #[arg(long, default_value = RatingSystem::ClubElo.as_str(),
          value_parser = PossibleValuesParser::new(RatingSystem::ALL.map(RatingSystem::as_str)))]
    pub rating_system: String,
    /// Send mail through this SMTP server (`smtp://host:port`) instead of
    /// writing it to the data directory.
    #[arg(long)]
    pub smtp_url: Option<String>,
    /// Run the Nostr bridge on this relay (`ws://` or `wss://`); repeat the
    /// flag (or separate with commas) for several. Its key is kept in
    /// `<data-dir>/nostr/`. Default: none, no bridge.
    #[arg(long, value_delimiter = ',')]
    pub nostr_relay: Vec<String>,
    /// Where the service binaries are (default: next to this program).
    #[arg(long)]
    pub bin_dir: Option<PathBuf>,
    #[command(flatten)]
    pub telemetry: chess_telemetry::TelemetryArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// What else `chess-stack` does besides running the system.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Prints a caller assertion for calling an internal service by hand
    /// (`-H "x-chess-caller: <it>"`), valid for 60 seconds.
    MintAssertion(MintArgs),
    /// Grants or revokes an account's moderator role (moderators may mute
    /// an account's chat server-wide), on the running stack.
    Moderator(ModeratorArgs),
}

/// Flags of `chess-stack moderator`.
#[derive(Debug, clap::Args)]
pub struct ModeratorArgs {
    #[command(subcommand)]
    pub action: ModeratorAction,
    /// The stack's data directory: its internal.key signs the call, and its
    /// rating service's socket is where the call goes.
    #[arg(long, default_value = "data", global = true)]
    pub data_dir: PathBuf,
    /// The rating service's address, where the data directory has no
    /// socket of it (default: the stack's default rating port).
    #[arg(long, global = true)]
    pub rating_addr: Option<String>,
}

/// What `chess-stack moderator` does.
#[derive(Debug, clap::Subcommand)]
pub enum ModeratorAction {
    /// Makes the account a moderator.
    Grant {
        /// The account's username, any case.
        username: String,
    },
    /// Takes the moderator role back.
    Revoke {
        /// The account's username, any case.
        username: String,
    },
}

/// Flags of `chess-stack mint-assertion`.
#[derive(Debug, clap::Args)]
pub struct MintArgs {
    /// The stack's data directory, whose internal.key signs the assertion.
    #[arg(long, default_value = "data")]
    pub data_dir: PathBuf,
    /// The internal key to sign with (e.g. a copy of a Kubernetes
    /// Secret's). Default: internal.key in --data-dir.
    #[arg(long)]
    pub internal_key_file: Option<PathBuf>,
    /// Who the assertion says is calling.
    #[arg(long, default_value = "ops")]
    pub caller: String,
    /// The player the call acts for, if it acts for one.
    #[arg(long, default_value = "")]
    pub player: String,
    /// The game the call acts in, if it acts in one.
    #[arg(long, default_value = "")]
    pub game: String,
}

impl Config {
    /// The options these flags describe, with the service binaries in
    /// `bin_dir`.
    pub fn options(&self, bin_dir: PathBuf) -> StackOptions {
        let json = self.telemetry.log_format == LogFormat::Json;
        let mut common_args: Vec<OsString> = Vec::new();
        if json {
            common_args.extend(["--log-format".into(), "json".into()]);
        }
        if let Some(filter) = &self.telemetry.log_filter {
            common_args.extend(["--log-filter".into(), filter.into()]);
        }
        let mut gateway_args: Vec<OsString> = Vec::new();
        if let Some(url) = &self.smtp_url {
            gateway_args.extend(["--smtp-url".into(), url.into()]);
        }
        if !self.nostr_relay.is_empty() {
            gateway_args.extend([
                "--nostr-relays".into(),
                self.nostr_relay.join(",").into(),
                "--nostr-data-dir".into(),
                self.data_dir.join("nostr").into(),
            ]);
        }
        StackOptions {
            bin_dir,
            data_dir: self.data_dir.clone(),
            grpc_listen: self.grpc_listen.clone(),
            public_url: self.public_url.clone(),
            uqchess_listen: self.uqchess_listen.clone(),
            internal: self.internal.clone(),
            game_replicas: self.game_replicas,
            game_database_url: self.game_database_url.clone(),
            stockfish_path: self.stockfish_path.clone(),
            engine_pool_size: self.engine_pool_size,
            rating_system: Some(self.rating_system.clone()),
            gateway_args,
            common_args,
            // JSON lines stay whole for whoever collects them.
            output: if json {
                Output::Inherit
            } else {
                Output::Prefixed
            },
            announce_restarts: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Config {
        let args = std::iter::once("chess-stack").chain(args.iter().copied());
        chess_runtime::cli::try_parse_from("stack", args).unwrap()
    }

    #[test]
    fn the_flags_come_down_to_the_options() {
        let options = parse(&[
            "--data-dir",
            "/tmp/d",
            "--engine-listen",
            "127.0.0.1:0",
            "--database-url",
            "postgres://x",
            "--nostr-relay",
            "ws://a,ws://b",
            "--log-format",
            "json",
        ])
        .options(PathBuf::from("/bin"));
        assert_eq!(options.internal.engine, "127.0.0.1:0");
        assert_eq!(options.internal.game, addr::GAME);
        assert_eq!(options.game_database_url.as_deref(), Some("postgres://x"));
        assert_eq!(options.rating_system.as_deref(), Some("club-elo"));
        assert_eq!(options.output, Output::Inherit);
        assert_eq!(
            options.gateway_args,
            [
                "--nostr-relays",
                "ws://a,ws://b",
                "--nostr-data-dir",
                "/tmp/d/nostr"
            ]
            .map(OsString::from)
        );
        assert_eq!(
            options.common_args,
            ["--log-format", "json"].map(OsString::from)
        );
        assert_eq!(parse(&[]).options(PathBuf::new()).output, Output::Prefixed);
    }
}
