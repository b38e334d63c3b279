//! `chess-stack`: the whole system on one machine, in one command.

use std::{ffi::OsString, path::PathBuf, process::ExitCode};

use chess_ratings::SystemKind;
use chess_runtime::addr;
use chess_stack::{ENGINE_UNAVAILABLE, InternalListen, Output, Stack, StackOptions, StartError};
use chess_telemetry::LogFormat;
use clap::builder::PossibleValuesParser;
use tokio::signal::unix::{SignalKind, signal};

/// Flags of `chess-stack`; each has an environment twin `CHESS_STACK_<FLAG>`.
#[derive(Debug, clap::Parser)]
#[command(
    name = "chess-stack",
    version,
    about = "Starts the five chess services on this machine and supervises them until Ctrl-C"
)]
struct Config {
    /// Directory for the databases, outgoing mail and the session key.
    #[arg(long, default_value = "data")]
    data_dir: PathBuf,
    /// Address of the public gRPC and gRPC-Web API.
    #[arg(long, default_value = addr::GATEWAY)]
    grpc_listen: String,
    /// The address players reach the gateway at, for the links in emails
    /// (`<public-url>/games/<id>` opens the game). Default: `http://` and
    /// the address --grpc-listen bound, with 127.0.0.1 for 0.0.0.0 or [::].
    #[arg(long)]
    public_url: Option<String>,
    /// Address of the uqchess line protocol; empty to turn it off.
    #[arg(long, default_value = addr::UQCHESS)]
    uqchess_listen: String,
    /// Address of the internal matchmaking service; port 0 picks a free one.
    #[arg(long, default_value = addr::MATCHMAKING)]
    matchmaking_listen: String,
    /// Address of the internal game service; port 0 picks a free one. With
    /// several replicas, the first's: the others take the ports after it.
    #[arg(long, default_value = addr::GAME)]
    game_listen: String,
    /// Replicas of the game service, sharing the games by shard; more than
    /// one needs --database-url to be a PostgreSQL database.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    game_replicas: u16,
    /// The game service's database (default: game.sqlite in the data
    /// directory), e.g. `postgres://user:password@127.0.0.1:5432/chess`.
    /// The other services keep their SQLite files.
    #[arg(long, visible_alias = "database-url")]
    game_database_url: Option<String>,
    /// Address of the internal rating service; port 0 picks a free one.
    #[arg(long, default_value = addr::RATING)]
    rating_listen: String,
    /// Address of the internal engine service; port 0 picks a free one.
    #[arg(long, default_value = addr::ENGINE)]
    engine_listen: String,
    /// The Stockfish program (default: `stockfish` on PATH, else
    /// /usr/games/stockfish).
    #[arg(long)]
    stockfish_path: Option<PathBuf>,
    /// Stockfish processes in the engine's pool (default: one per core).
    #[arg(long)]
    engine_pool_size: Option<u32>,
    /// The rating system games are rated in.
    #[arg(long, default_value = SystemKind::ClubElo.as_str(),
          value_parser = PossibleValuesParser::new(SystemKind::ALL.map(SystemKind::as_str)))]
    rating_system: String,
    /// Send mail through this SMTP server (`smtp://host:port`) instead of
    /// writing it to the data directory.
    #[arg(long)]
    smtp_url: Option<String>,
    /// Run the Nostr bridge on this relay (`ws://` or `wss://`); repeat the
    /// flag (or separate with commas) for several. Its key is kept in
    /// `<data-dir>/nostr/`. Default: none, no bridge.
    #[arg(long, value_delimiter = ',')]
    nostr_relay: Vec<String>,
    /// Where the service binaries are (default: next to this program).
    #[arg(long)]
    bin_dir: Option<PathBuf>,
    #[command(flatten)]
    telemetry: chess_telemetry::TelemetryArgs,
    #[command(subcommand)]
    command: Option<Command>,
}

/// What else `chess-stack` does besides running the system.
#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Prints a caller assertion for calling an internal service by hand
    /// (`-H "x-chess-caller: <it>"`), valid for 60 seconds.
    MintAssertion(MintArgs),
}

/// Flags of `chess-stack mint-assertion`.
#[derive(Debug, clap::Args)]
struct MintArgs {
    /// The stack's data directory, whose internal.key signs the assertion.
    #[arg(long, default_value = "data")]
    data_dir: PathBuf,
    /// The internal key to sign with (e.g. a copy of a Kubernetes
    /// Secret's). Default: internal.key in --data-dir.
    #[arg(long)]
    internal_key_file: Option<PathBuf>,
    /// Who the assertion says is calling.
    #[arg(long, default_value = "ops")]
    caller: String,
    /// The player the call acts for, if it acts for one.
    #[arg(long, default_value = "")]
    player: String,
    /// The game the call acts in, if it acts in one.
    #[arg(long, default_value = "")]
    game: String,
}

/// Prints the assertion `args` asks for.
fn mint_assertion(args: &MintArgs) -> ExitCode {
    let path = args
        .internal_key_file
        .clone()
        .unwrap_or_else(|| args.data_dir.join(chess_stack::INTERNAL_KEY_FILE));
    let minted = chess_runtime::InternalKey::read(&path)
        .map_err(|e| e.to_string())
        .and_then(|key| {
            chess_runtime::Signer::new(key, &args.caller)
                .mint(Some(&args.player), Some(&args.game))
                .map_err(|status| status.message().to_owned())
        });
    match minted {
        Ok(assertion) => {
            println!("{assertion}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("chess-stack: {e}");
            ExitCode::FAILURE
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let config: Config = chess_runtime::cli::parse("stack");
    if let Some(Command::MintAssertion(args)) = &config.command {
        return mint_assertion(args);
    }
    let Some(bin_dir) = config.bin_dir.clone().or_else(chess_stack::own_dir) else {
        eprintln!("chess-stack: cannot tell where the service binaries are; pass --bin-dir");
        return ExitCode::FAILURE;
    };
    let mut common_args: Vec<OsString> = Vec::new();
    let json = config.telemetry.log_format == LogFormat::Json;
    if json {
        common_args.extend(["--log-format".into(), "json".into()]);
    }
    if let Some(filter) = &config.telemetry.log_filter {
        common_args.extend(["--log-filter".into(), filter.into()]);
    }
    let mut gateway_args = Vec::new();
    if let Some(url) = &config.smtp_url {
        gateway_args.extend(["--smtp-url".into(), url.into()]);
    }
    if !config.nostr_relay.is_empty() {
        gateway_args.extend([
            "--nostr-relays".into(),
            config.nostr_relay.join(",").into(),
            "--nostr-data-dir".into(),
            config.data_dir.join("nostr").into(),
        ]);
    }
    let options = StackOptions {
        bin_dir,
        data_dir: config.data_dir.clone(),
        grpc_listen: config.grpc_listen.clone(),
        public_url: config.public_url.clone(),
        uqchess_listen: config.uqchess_listen.clone(),
        internal: InternalListen {
            matchmaking: config.matchmaking_listen.clone(),
            game: config.game_listen.clone(),
            rating: config.rating_listen.clone(),
            engine: config.engine_listen.clone(),
        },
        game_replicas: config.game_replicas,
        game_database_url: config.game_database_url.clone(),
        stockfish_path: config.stockfish_path.clone(),
        engine_pool_size: config.engine_pool_size,
        rating_system: Some(config.rating_system.clone()),
        gateway_args,
        common_args,
        output: if json {
            Output::Inherit
        } else {
            Output::Prefixed
        },
        announce_restarts: true,
    };
    let (mut term, mut int) = match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(term), Ok(int)) => (term, int),
        _ => {
            eprintln!("chess-stack: cannot install signal handlers");
            return ExitCode::FAILURE;
        }
    };
    let started = tokio::select! {
        started = Stack::start(options) => started,
        _ = term.recv() => return ExitCode::SUCCESS,
        _ = int.recv() => return ExitCode::SUCCESS,
    };
    let stack = match started {
        Ok(stack) => stack,
        Err(
            e @ StartError::ChildExited {
                name: "engine",
                code: Some(ENGINE_UNAVAILABLE),
                ..
            },
        ) => {
            eprintln!(
                "chess-stack: {e}: Stockfish cannot be started; install it (`apt-get install \
                 stockfish`, which puts it at /usr/games/stockfish) or point --stockfish-path \
                 (CHESS_STACK_STOCKFISH_PATH) at it"
            );
            return ExitCode::FAILURE;
        }
        Err(e) => {
            eprintln!("chess-stack: {e}");
            return ExitCode::FAILURE;
        }
    };
    let a = &stack.addresses;
    let data = config.data_dir.canonicalize().unwrap_or(config.data_dir);
    println!("chess-stack: all five services are SERVING");
    println!(
        "  play in a browser {}/",
        a.public_url.trim_end_matches('/')
    );
    println!("  public gRPC API   {}  (gRPC and gRPC-Web)", a.gateway);
    if !a.uqchess.is_empty() {
        println!("  uqchess protocol  {}", a.uqchess);
    }
    println!(
        "  internal          matchmaking {}, game {}, rating {}, engine {}",
        a.matchmaking, a.game, a.rating, a.engine
    );
    if a.game_replicas.len() > 1 {
        let replicas: Vec<String> = a
            .game_replicas
            .iter()
            .enumerate()
            .map(|(i, addr)| format!("game-{i} {addr}"))
            .collect();
        println!("  game replicas     {}", replicas.join(", "));
    }
    if !config.nostr_relay.is_empty() {
        match nostr_key(&a.gateway).await {
            Ok(key) => println!(
                "  Nostr bridge      key {key} on {}",
                config.nostr_relay.join(", ")
            ),
            Err(e) => eprintln!("chess-stack: cannot read the Nostr bridge's key: {e}"),
        }
    }
    println!("  data              {}", data.display());
    println!("Ctrl-C stops everything.");
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    eprintln!("chess-stack: stopping");
    stack.stop().await;
    ExitCode::SUCCESS
}

/// The Nostr bridge's public key, as the gateway at `addr` reports it.
async fn nostr_key(addr: &str) -> Result<String, Box<dyn std::error::Error>> {
    use chess_proto::gateway::v1::{GetNostrInfoRequest, nostr_service_client::NostrServiceClient};
    let mut client = NostrServiceClient::connect(format!("http://{addr}")).await?;
    let info = client
        .get_nostr_info(GetNostrInfoRequest {})
        .await?
        .into_inner();
    Ok(format!("{} ({})", info.public_key, info.npub))
}
