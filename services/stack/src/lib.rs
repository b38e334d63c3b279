//! The whole system on one machine.
//!
//! [`Stack`] starts the five service binaries (`chess-engine`, `chess-rating`,
//! `chess-game`, `chess-matchmaking`, `chess-gateway`) as supervised child
//! processes on the services' own loopback ports (or ports chosen free), with
//! embedded defaults (SQLite
//! files in a data directory, Stockfish from the system, mail written to a
//! folder), waits until every one reports SERVING on the gRPC health service,
//! restarts any that dies, and stops them all on request. Two programs use it:
//! `chess-stack` (the developer's one command) and `uqchessserver` (the
//! uqchess protocol's server, byte for byte as its contract says).
//!
//! The services call each other over Unix-domain sockets in the data
//! directory (`engine.sock`, `game.sock`, …), which spare both sides of
//! every call the TCP stack's work; their TCP ports stay for everyone else.
//! A data directory whose path is too long for a socket address (about 100
//! bytes) keeps those calls on TCP.
//!
//! With `game_replicas` above one, the game service runs as that many
//! replicas (`game-0`, `game-1`, …) on consecutive ports, sharing the games
//! by shard through one PostgreSQL database; the other services are given
//! every replica's address.
//!
//! - [`supervisor`]: child processes and their restarts.
//! - [`ports`]: free ports and service names.

pub mod ports;
pub mod supervisor;

use std::{
    ffi::OsString,
    net::{TcpListener, ToSocketAddrs as _},
    os::unix::net::UnixListener,
    path::{Path, PathBuf},
    process::ExitStatus,
    sync::Arc,
    time::Duration,
};

use tokio::{sync::mpsc, task::JoinSet, time::Instant};
use tonic_health::pb::{
    HealthCheckRequest, health_check_response::ServingStatus, health_client::HealthClient,
};

pub use supervisor::{ChildSpec, Exit, Listener, Output, Supervisor};

/// The exit status with which `chess-engine` says Stockfish could not be
/// started (as a process's exit code).
pub const ENGINE_UNAVAILABLE: i32 = chess_runtime::exit::ENGINE_UNAVAILABLE as i32;

/// How long the services have to become SERVING.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(120);

/// The engine's Stockfish niceness when the whole system runs on one
/// machine.
const STOCKFISH_NICE: i32 = 10;

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
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InternalListen {
    pub matchmaking: String,
    pub game: String,
    pub rating: String,
    pub engine: String,
}

impl InternalListen {
    /// Each service's own default address, as the docs use them.
    pub fn fixed() -> Self {
        use chess_runtime::addr;
        Self {
            matchmaking: addr::MATCHMAKING.to_owned(),
            game: addr::GAME.to_owned(),
            rating: addr::RATING.to_owned(),
            engine: addr::ENGINE.to_owned(),
        }
    }

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

/// The name of the lock file in a data directory.
pub const LOCK_FILE: &str = "chess-stack.lock";

/// Why the system did not come up.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot prepare the data directory {path}: {source}")]
    DataDir {
        path: String,
        source: std::io::Error,
    },
    #[error("data directory {} is in use by another {}", path.display(), owner_text(.owner))]
    DataDirInUse {
        path: PathBuf,
        owner: Option<chess_runtime::lock::Owner>,
    },
    #[error("cannot lock the data directory: {0}")]
    Lock(chess_runtime::lock::Error),
    #[error("cannot listen on {addr} ({what}): {}", listen_reason(source, flag))]
    Listen {
        addr: String,
        /// Which address, e.g. `game`.
        what: &'static str,
        /// The flag that sets it, for the hint.
        flag: &'static str,
        source: std::io::Error,
    },
    #[error(
        "{binary} not found in {dir}: build the workspace first (cargo build --workspace --bins)"
    )]
    MissingBinary { binary: String, dir: String },
    #[error("chess-{name} exited while starting ({status})")]
    ChildExited {
        name: &'static str,
        status: String,
        code: Option<i32>,
    },
    #[error("chess-{name} could not be started: {error}")]
    ChildNotStarted { name: &'static str, error: String },
    #[error("chess-{0} did not become ready within {secs} s", secs = STARTUP_TIMEOUT.as_secs())]
    Timeout(&'static str),
    #[error("{0}")]
    Options(String),
}

fn owner_text(owner: &Option<chess_runtime::lock::Owner>) -> String {
    match owner {
        Some(owner) => format!("{} (pid {})", owner.program, owner.pid),
        None => "chess-stack".to_owned(),
    }
}

fn listen_reason(source: &std::io::Error, flag: &str) -> String {
    if source.kind() == std::io::ErrorKind::AddrInUse {
        format!(
            "address in use — is another chess-stack running? pass {flag} 127.0.0.1:0 for a free port"
        )
    } else {
        source.to_string()
    }
}

/// Whether process `pid` exists.
fn alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

/// How long a start waits for the services of a stack that was killed to
/// finish stopping (they stop when their standard input closes).
const ORPHANS_GRACE: Duration = Duration::from_secs(20);

/// Locks `data_dir` for this stack and the services it starts (they inherit
/// the lock, so it is free only once all of them are gone). A running owner
/// is an error at once; the services of an owner that was killed get a
/// grace period to stop.
async fn lock_data_dir(
    data_dir: &Path,
    shown: &Path,
) -> Result<chess_runtime::lock::FileLock, StartError> {
    use chess_runtime::lock::{Error, FileLock};
    let path = data_dir.join(LOCK_FILE);
    let deadline = Instant::now() + ORPHANS_GRACE;
    let mut announced = false;
    loop {
        match FileLock::acquire(&path, "data directory", shown) {
            Ok(lock) => {
                lock.share_with_children().map_err(StartError::Lock)?;
                return Ok(lock);
            }
            Err(Error::Held { owner, .. }) => {
                let owner_gone = owner.as_ref().is_some_and(|o| !alive(o.pid));
                if !owner_gone || Instant::now() >= deadline {
                    return Err(StartError::DataDirInUse {
                        path: shown.to_owned(),
                        owner,
                    });
                }
                if !announced {
                    announced = true;
                    eprintln!(
                        "chess-stack: waiting for the services of a stopped chess-stack to exit ({})",
                        shown.display()
                    );
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => return Err(StartError::Lock(e)),
        }
    }
}

/// The addresses of a running system.
#[derive(Clone, Debug)]
pub struct Addresses {
    pub gateway: String,
    /// Where players reach the gateway, for links: `http://<gateway>` unless
    /// another was given.
    pub public_url: String,
    pub uqchess: String,
    pub matchmaking: String,
    /// The first replica of the game service.
    pub game: String,
    /// Every replica of the game service (`game-0`, `game-1`, …), in order.
    pub game_replicas: Vec<String>,
    pub rating: String,
    pub engine: String,
}

/// A running system.
#[derive(Debug)]
pub struct Stack {
    pub addresses: Addresses,
    supervisor: Supervisor,
    exits: mpsc::UnboundedReceiver<Exit>,
    /// The services' Unix sockets, removed once they have stopped.
    sockets: Vec<PathBuf>,
    /// Held while the stack runs (and by its services).
    _lock: chess_runtime::lock::FileLock,
}

/// A listening socket on `addr` (port 0 picks a free one) for `what`, set
/// by `flag`.
fn listen(
    addr: &str,
    what: &'static str,
    flag: &'static str,
) -> Result<Arc<TcpListener>, StartError> {
    let error = |source| StartError::Listen {
        addr: addr.to_owned(),
        what,
        flag,
        source,
    };
    let mut last = None;
    for candidate in addr.to_socket_addrs().map_err(error)? {
        match TcpListener::bind(candidate) {
            Ok(listener) => return Ok(Arc::new(listener)),
            Err(e) => last = Some(e),
        }
    }
    Err(error(
        last.unwrap_or_else(|| std::io::Error::other("no address")),
    ))
}

/// Where a listener can be reached (`127.0.0.1` for an unspecified host).
fn reach(listener: &TcpListener) -> String {
    match listener.local_addr() {
        Ok(addr) if addr.ip().is_unspecified() => format!("127.0.0.1:{}", addr.port()),
        Ok(addr) => addr.to_string(),
        Err(_) => String::new(),
    }
}

/// The key file `name` in `data_dir` (the gateway's `token.key`, the
/// services' `internal.key`), created with a fresh random secret if missing,
/// readable by the owner only.
fn secret_file(data_dir: &Path, name: &str) -> std::io::Result<PathBuf> {
    use std::{io::Write as _, os::unix::fs::OpenOptionsExt as _};
    let path = data_dir.join(name);
    if !path.exists() {
        let hex = chess_runtime::InternalKey::generate_hex();
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?;
        file.write_all(hex.as_bytes())?;
    }
    Ok(path)
}

fn sqlite(data_dir: &Path, name: &str) -> OsString {
    format!(
        "sqlite://{}?mode=rwc",
        data_dir.join(format!("{name}.sqlite")).display()
    )
    .into()
}

/// Every listening socket of the system, bound before any service starts.
struct Listeners {
    gateway: Arc<TcpListener>,
    uqchess: Option<Arc<TcpListener>>,
    engine: Internal,
    rating: Internal,
    /// One per replica.
    game: Vec<Internal>,
    matchmaking: Internal,
}

/// The sockets of a service the others call: its TCP port, and its Unix
/// socket in the data directory if one could be made there.
struct Internal {
    tcp: Arc<TcpListener>,
    local: Option<LocalSocket>,
}

/// A service's Unix-domain socket, where the other services call it.
struct LocalSocket {
    listener: Arc<UnixListener>,
    /// Its file (a UTF-8 path, so that it can be an address).
    path: PathBuf,
}

impl Internal {
    /// `tcp`, and a socket `<name>.sock` in `data_dir`: the data directory
    /// is locked, so a socket file already there is a stopped stack's. Where
    /// none can be made (a path too long for a socket address, or not
    /// UTF-8), the service is called on its TCP port, with a line saying so
    /// if `say` (never from `uqchessserver`, whose output is its contract).
    fn new(tcp: Arc<TcpListener>, data_dir: &Path, name: &str, say: bool) -> Self {
        let path = data_dir.join(format!("{name}.sock"));
        if path.to_str().is_none() {
            return Self { tcp, local: None };
        }
        let local = match chess_runtime::server::bind_unix_listener(&path) {
            Ok(listener) => Some(LocalSocket {
                listener: Arc::new(listener),
                path,
            }),
            Err(e) => {
                if say {
                    eprintln!("chess-stack: the services call {name} over TCP ({e})");
                }
                None
            }
        };
        Self { tcp, local }
    }

    /// Its socket file, if it has one.
    fn socket_file(&self) -> Option<PathBuf> {
        self.local.as_ref().map(|l| l.path.clone())
    }

    /// Where the other services call it.
    fn address(&self) -> String {
        match &self.local {
            Some(local) => format!("unix:{}", local.path.display()),
            None => reach(&self.tcp),
        }
    }

    /// The sockets handed to the service, and the flag that tells it of
    /// the second.
    fn handed(self) -> (Vec<Listener>, Vec<OsString>) {
        let mut listeners = vec![Listener::Tcp(self.tcp)];
        let mut flags = Vec::new();
        if let Some(local) = self.local {
            listeners.push(Listener::Unix(local.listener));
            flags.extend(["--unix-listen-fd".into(), "1".into()]);
        }
        (listeners, flags)
    }
}

/// The address of game replica `index`: `--game-listen` for the first,
/// and the ports after it for the others (or free ports, for port 0).
fn replica_listen(addr: &str, index: u16) -> String {
    if index == 0 {
        return addr.to_owned();
    }
    match addr.rsplit_once(':') {
        Some((host, port)) => match port.parse::<u16>() {
            Ok(0) => addr.to_owned(),
            Ok(port) => format!("{host}:{}", port.saturating_add(index)),
            Err(_) => addr.to_owned(),
        },
        None => addr.to_owned(),
    }
}

impl Listeners {
    /// Binds every socket `options` names: each is handed to its service,
    /// so no port can be taken in between and restarts keep their address.
    fn bind(options: &StackOptions, data_dir: &Path) -> Result<Self, StartError> {
        let internal = &options.internal;
        let replicas = options.game_replicas.max(1);
        let say = options.output != Output::Silent;
        let uqchess = if options.uqchess_listen.is_empty() {
            None
        } else {
            Some(listen(
                &options.uqchess_listen,
                "uqchess protocol",
                "--uqchess-listen",
            )?)
        };
        Ok(Self {
            gateway: listen(&options.grpc_listen, "public gRPC API", "--grpc-listen")?,
            uqchess,
            engine: Internal::new(
                listen(&internal.engine, "engine", "--engine-listen")?,
                data_dir,
                "engine",
                say,
            ),
            rating: Internal::new(
                listen(&internal.rating, "rating", "--rating-listen")?,
                data_dir,
                "rating",
                say,
            ),
            game: (0..replicas)
                .map(|i| {
                    let tcp = listen(&replica_listen(&internal.game, i), "game", "--game-listen")?;
                    Ok(Internal::new(tcp, data_dir, &game_name(i, replicas), say))
                })
                .collect::<Result<_, StartError>>()?,
            matchmaking: Internal::new(
                listen(&internal.matchmaking, "matchmaking", "--matchmaking-listen")?,
                data_dir,
                "matchmaking",
                say,
            ),
        })
    }

    /// The Unix sockets' files.
    fn socket_files(&self) -> Vec<PathBuf> {
        [&self.engine, &self.rating, &self.matchmaking]
            .into_iter()
            .chain(&self.game)
            .filter_map(Internal::socket_file)
            .collect()
    }

    /// Where the services are reached.
    fn addresses(&self, public_url: Option<&str>) -> Addresses {
        let gateway = reach(&self.gateway);
        Addresses {
            public_url: public_url.map_or_else(|| format!("http://{gateway}"), str::to_owned),
            gateway,
            uqchess: self.uqchess.as_deref().map(reach).unwrap_or_default(),
            matchmaking: reach(&self.matchmaking.tcp),
            game: self.game.first().map(|l| reach(&l.tcp)).unwrap_or_default(),
            game_replicas: self.game.iter().map(|l| reach(&l.tcp)).collect(),
            rating: reach(&self.rating.tcp),
            engine: reach(&self.engine.tcp),
        }
    }
}

/// Game replica `index` of `replicas`: a lone replica keeps the plain name;
/// replicas are numbered.
fn game_name(index: u16, replicas: u16) -> String {
    if replicas > 1 {
        format!("game-{index}")
    } else {
        "game".to_owned()
    }
}

/// The secrets of one system, as files in its data directory.
struct Keys {
    /// Signs session tokens (the gateway's).
    token: PathBuf,
    /// Signs and checks the calls between the services (all five).
    internal: PathBuf,
}

/// The name of the internal key's file in a data directory.
pub const INTERNAL_KEY_FILE: &str = "internal.key";

/// The five services as supervised children, each after the services it
/// calls (they stop in the reverse order), with the flags that wire them
/// together on `listeners` and keep their files in `data_dir`; `addresses`
/// gives the public URL.
fn children(
    options: &StackOptions,
    data_dir: &Path,
    keys: Keys,
    addresses: &Addresses,
    listeners: Listeners,
) -> Result<Vec<ChildSpec>, StartError> {
    let binary = |name: &str| -> Result<PathBuf, StartError> {
        let path = options.bin_dir.join(name);
        if path.is_file() {
            Ok(path)
        } else {
            Err(StartError::MissingBinary {
                binary: name.to_owned(),
                dir: options.bin_dir.display().to_string(),
            })
        }
    };
    let args = |pairs: &[(&str, OsString)]| -> Vec<OsString> {
        let mut out: Vec<OsString> = options.common_args.clone();
        out.extend(["--listen-fd".into(), "0".into()]);
        out.extend(["--internal-key-file".into(), keys.internal.clone().into()]);
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
    let mut rating = args(&[("--database-url", sqlite(data_dir, "rating"))]);
    if let Some(system) = &options.rating_system {
        rating.extend(["--rating-system".into(), system.into()]);
    }
    let game_database = options
        .game_database_url
        .clone()
        .map_or_else(|| sqlite(data_dir, "game"), OsString::from);
    let replicas = listeners.game.len();
    let games: Vec<(&'static str, Vec<OsString>)> = game_replicas
        .iter()
        .enumerate()
        .map(|(i, addr)| {
            let name: &'static str =
                Box::leak(game_name(i as u16, replicas as u16).into_boxed_str());
            let mut flags = args(&[
                ("--database-url", game_database.clone()),
                ("--engine-addr", engine_addr.clone()),
                ("--rating-addr", rating_addr.clone()),
                ("--advertise-addr", addr.into()),
            ]);
            if replicas > 1 {
                flags.extend(["--replica-id".into(), name.into()]);
            }
            (name, flags)
        })
        .collect();
    let matchmaking = args(&[
        ("--database-url", sqlite(data_dir, "matchmaking")),
        ("--game-addr", game_addr.clone()),
        ("--rating-addr", rating_addr.clone()),
    ]);
    let mut gateway = args(&[
        ("--game-addr", game_addr),
        ("--matchmaking-addr", matchmaking_addr),
        ("--rating-addr", rating_addr),
        ("--token-key-file", keys.token.clone().into()),
        ("--mail-dir", data_dir.join("mail").into()),
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

    // A service the others call also gets its Unix socket, if it has one.
    let internal = |name, program, mut args: Vec<OsString>, sockets: Internal| {
        let (listeners, flags) = sockets.handed();
        args.extend(flags);
        ChildSpec {
            name,
            program,
            args,
            listeners,
        }
    };
    let mut children = vec![
        internal("engine", binary("chess-engine")?, engine, listeners.engine),
        internal("rating", binary("chess-rating")?, rating, listeners.rating),
    ];
    let game_binary = binary("chess-game")?;
    for ((name, flags), sockets) in games.into_iter().zip(listeners.game) {
        children.push(internal(name, game_binary.clone(), flags, sockets));
    }
    children.extend([
        internal(
            "matchmaking",
            binary("chess-matchmaking")?,
            matchmaking,
            listeners.matchmaking,
        ),
        ChildSpec {
            name: "gateway",
            program: binary("chess-gateway")?,
            args: gateway,
            listeners: gateway_listeners,
        },
    ]);
    Ok(children)
}

/// Waits until every service of `addresses` is SERVING; the first failure
/// otherwise: a child that exited or could not start, or the start-up
/// timeout.
async fn wait_until_serving(
    addresses: &Addresses,
    exits: &mut mpsc::UnboundedReceiver<Exit>,
) -> Result<(), StartError> {
    let mut health = vec![
        ("engine", addresses.engine.clone()),
        ("rating", addresses.rating.clone()),
        ("matchmaking", addresses.matchmaking.clone()),
        ("gateway", addresses.gateway.clone()),
    ];
    health.extend(addresses.game_replicas.iter().map(|a| ("game", a.clone())));
    let mut probes = JoinSet::new();
    for (name, addr) in health {
        probes.spawn(async move { (name, wait_serving(&addr).await) });
    }
    let deadline = Instant::now() + STARTUP_TIMEOUT;
    loop {
        tokio::select! {
            probe = probes.join_next() => match probe {
                None => return Ok(()),
                Some(Ok((_, true))) => {}
                Some(Ok((name, false))) => return Err(StartError::Timeout(name)),
                Some(Err(_)) => return Err(StartError::Timeout("stack")),
            },
            Some(exit) = exits.recv() => return Err(match (exit.status, exit.error) {
                (_, Some(error)) => StartError::ChildNotStarted { name: exit.name, error },
                (status, None) => StartError::ChildExited {
                    name: exit.name,
                    status: status.map_or_else(|| "unknown status".to_owned(), |s: ExitStatus| s.to_string()),
                    code: status.and_then(|s| s.code()),
                },
            }),
            () = tokio::time::sleep_until(deadline) => return Err(StartError::Timeout("stack")),
        }
    }
}

impl Stack {
    /// Starts the system and waits until every service is SERVING.
    pub async fn start(options: StackOptions) -> Result<Self, StartError> {
        let data_dir = &options.data_dir;
        let data_error = |source| StartError::DataDir {
            path: data_dir.display().to_string(),
            source,
        };
        std::fs::create_dir_all(data_dir).map_err(data_error)?;
        let shown = data_dir.clone();
        let data_dir = data_dir.canonicalize().map_err(data_error)?;
        // Before anything is bound or started: a second stack on the same
        // files must change nothing.
        let lock = lock_data_dir(&data_dir, &shown).await?;
        let keys = Keys {
            token: secret_file(&data_dir, "token.key").map_err(data_error)?,
            internal: secret_file(&data_dir, INTERNAL_KEY_FILE).map_err(data_error)?,
        };

        if options.game_replicas > 1
            && !options
                .game_database_url
                .as_deref()
                .is_some_and(|u| u.starts_with("postgres://") || u.starts_with("postgresql://"))
        {
            return Err(StartError::Options(
                "several game replicas share their games through PostgreSQL: pass \
                 --database-url postgres://… with --game-replicas"
                    .to_owned(),
            ));
        }
        let listeners = Listeners::bind(&options, &data_dir)?;
        let addresses = listeners.addresses(options.public_url.as_deref());
        let sockets = listeners.socket_files();
        let children = children(&options, &data_dir, keys, &addresses, listeners)?;
        let (supervisor, mut exits) =
            Supervisor::start(children, options.output, options.announce_restarts);
        // Dropping the probes on failure aborts them.
        if let Err(error) = wait_until_serving(&addresses, &mut exits).await {
            supervisor.stop().await;
            remove_all(&sockets);
            return Err(error);
        }
        Ok(Self {
            addresses,
            supervisor,
            exits,
            sockets,
            _lock: lock,
        })
    }

    /// Stops every service gracefully.
    pub async fn stop(self) {
        drop(self.exits);
        self.supervisor.stop().await;
        remove_all(&self.sockets);
    }

    /// The next exit of a child (it is being restarted).
    pub async fn next_exit(&mut self) -> Option<Exit> {
        self.exits.recv().await
    }
}

/// Removes the files at `paths`, those that are still there.
fn remove_all(paths: &[PathBuf]) {
    for path in paths {
        let _ = std::fs::remove_file(path);
    }
}

/// Waits until the gRPC server at `addr` reports SERVING; false on timeout.
pub async fn wait_serving(addr: &str) -> bool {
    let deadline = Instant::now() + STARTUP_TIMEOUT;
    let Ok(endpoint) = tonic::transport::Endpoint::from_shared(format!("http://{addr}")) else {
        return false;
    };
    let endpoint = endpoint.connect_timeout(Duration::from_secs(1));
    while Instant::now() < deadline {
        if let Ok(channel) = endpoint.connect().await {
            let mut client = HealthClient::new(channel);
            while Instant::now() < deadline {
                match client
                    .check(HealthCheckRequest {
                        service: String::new(),
                    })
                    .await
                {
                    Ok(r) if r.get_ref().status == ServingStatus::Serving as i32 => return true,
                    Ok(_) => tokio::time::sleep(Duration::from_millis(20)).await,
                    Err(_) => break,
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

/// The directory of the running executable, where the service binaries are
/// built next to it.
pub fn own_dir() -> Option<PathBuf> {
    std::env::current_exe()
        .ok()?
        .parent()
        .map(Path::to_path_buf)
}
