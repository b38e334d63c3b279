//! The five services as supervised children: which binary each runs, and
//! the command line that wires it to the others, to its sockets and to its
//! files in the data directory.

use std::{ffi::OsString, path::PathBuf};

use crate::{
    Addresses, ChildSpec, Listener, StackOptions, StartError,
    data_dir::DataDir,
    listeners::{Internal, Listeners, game_name},
};

/// The engine's Stockfish niceness when the whole system runs on one
/// machine.
const STOCKFISH_NICE: i32 = 10;

/// The program `name` in `options.bin_dir`, which must be there.
fn binary(options: &StackOptions, name: &str) -> Result<PathBuf, StartError> {
    let path = options.bin_dir.join(name);
    if path.is_file() {
        Ok(path)
    } else {
        Err(StartError::MissingBinary {
            binary: name.to_owned(),
            dir: options.bin_dir.display().to_string(),
        })
    }
}

/// A service the others call, handed its Unix socket too if it has one.
fn internal(
    name: &'static str,
    program: PathBuf,
    mut args: Vec<OsString>,
    sockets: Internal,
) -> ChildSpec {
    let (listeners, flags) = sockets.handed();
    args.extend(flags);
    ChildSpec {
        name,
        program,
        args,
        listeners,
    }
}

/// The five services as supervised children, each after the services it
/// calls (they stop in the reverse order), with the flags that wire them
/// together on `listeners` and keep their files in `data`; `addresses`
/// gives the public URL.
pub(crate) fn children(
    options: &StackOptions,
    data: &DataDir,
    addresses: &Addresses,
    listeners: Listeners,
) -> Result<Vec<ChildSpec>, StartError> {
    // Looked for in the order they start, so the first missing is named.
    let engine_binary = binary(options, "chess-engine")?;
    let rating_binary = binary(options, "chess-rating")?;
    let game_binary = binary(options, "chess-game")?;
    let matchmaking_binary = binary(options, "chess-matchmaking")?;
    let gateway_binary = binary(options, "chess-gateway")?;
    let args = |pairs: &[(&str, OsString)]| -> Vec<OsString> {
        let mut out: Vec<OsString> = options.common_args.clone();
        out.extend(["--listen-fd".into(), "0".into()]);
        out.extend([
            "--internal-key-file".into(),
            data.keys.internal.clone().into(),
        ]);
        for (flag, value) in pairs {
            out.push(flag.into());
            out.push(value.clone());
        }
        out
    };

    // Where the services call each other.
    let engine_addr: OsString = listeners.engine.address().into();
    let rating_addr: OsString = listeners.rating.address().into();
    let matchmaking_addr: OsString = listeners.matchmaking.address().into();
    let game_replicas: Vec<String> = listeners.game.iter().map(Internal::address).collect();
    let game_addr: OsString = game_replicas.join(",").into();

    // Everything shares this machine's cores: searches yield to the
    // services, so a busy engine pool does not slow everyone's moves
    // (SCHED_IDLE where the kernel allows it, else the niceness).
    let mut engine = args(&[("--stockfish-nice", STOCKFISH_NICE.to_string().into())]);
    engine.push("--stockfish-idle".into());
    if let Some(path) = &options.stockfish_path {
        engine.extend(["--stockfish-path".into(), path.into()]);
    }
    if let Some(size) = options.engine_pool_size {
        engine.extend(["--pool-size".into(), size.to_string().into()]);
    }
    let mut rating = args(&[("--database-url", data.sqlite("rating"))]);
    if let Some(system) = &options.rating_system {
        rating.extend(["--rating-system".into(), system.into()]);
    }
    let game_database = options
        .game_database_url
        .clone()
        .map_or_else(|| data.sqlite("game"), OsString::from);
    let replicas = listeners.game.len();
    let games: Vec<ChildSpec> = game_replicas
        .iter()
        .zip(listeners.game)
        .enumerate()
        .map(|(i, (addr, sockets))| {
            // Child names live as long as the process.
            let name: &'static str = Box::leak(game_name(i, replicas).into_boxed_str());
            let mut flags = args(&[
                ("--database-url", game_database.clone()),
                ("--engine-addr", engine_addr.clone()),
                ("--rating-addr", rating_addr.clone()),
                ("--advertise-addr", addr.into()),
            ]);
            if replicas > 1 {
                flags.extend(["--replica-id".into(), name.into()]);
            }
            internal(name, game_binary.clone(), flags, sockets)
        })
        .collect();
    let matchmaking = args(&[
        ("--database-url", data.sqlite("matchmaking")),
        ("--game-addr", game_addr.clone()),
        ("--rating-addr", rating_addr.clone()),
    ]);
    let mut gateway = args(&[
        ("--game-addr", game_addr),
        ("--matchmaking-addr", matchmaking_addr),
        ("--rating-addr", rating_addr),
        ("--token-key-file", data.keys.token.clone().into()),
        ("--mail-dir", data.path.join("mail").into()),
        ("--public-url", addresses.public_url.clone().into()),
    ]);
    let mut gateway_listeners = vec![Listener::Tcp(listeners.gateway)];
    match listeners.uqchess {
        Some(listener) => {
            gateway.extend(["--uqchess-listen-fd".into(), "1".into()]);
            gateway_listeners.push(Listener::Tcp(listener));
        }
        None => gateway.extend(["--uqchess-listen".into(), "".into()]),
    }
    gateway.extend(options.gateway_args.iter().cloned());

    let mut children = vec![
        internal("engine", engine_binary, engine, listeners.engine),
        internal("rating", rating_binary, rating, listeners.rating),
    ];
    children.extend(games);
    children.extend([
        internal(
            "matchmaking",
            matchmaking_binary,
            matchmaking,
            listeners.matchmaking,
        ),
        ChildSpec {
            name: "gateway",
            program: gateway_binary,
            args: gateway,
            listeners: gateway_listeners,
        },
    ]);
    Ok(children)
}
