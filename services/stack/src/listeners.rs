//! Every listening socket of the system, bound before any service starts
//! and handed to the services: no port can be taken in between, and a
//! restarted service keeps its address. A service the others call also
//! gets a Unix-domain socket in the data directory, where they call it.

use std::{
    ffi::OsString,
    net::{TcpListener, ToSocketAddrs as _},
    os::unix::net::UnixListener,
    path::{Path, PathBuf},
    sync::Arc,
};

use crate::{Addresses, Listener, Output, StackOptions, StartError};

/// Every listening socket of the system.
pub(crate) struct Listeners {
    pub(crate) gateway: Arc<TcpListener>,
    pub(crate) uqchess: Option<Arc<TcpListener>>,
    pub(crate) engine: Internal,
    pub(crate) rating: Internal,
    /// One per replica.
    pub(crate) game: Vec<Internal>,
    pub(crate) matchmaking: Internal,
}

/// The sockets of a service the others call: its TCP port, and its Unix
/// socket in the data directory if one could be made there.
pub(crate) struct Internal {
    tcp: Arc<TcpListener>,
    local: Option<LocalSocket>,
}

/// A service's Unix-domain socket, where the other services call it.
struct LocalSocket {
    listener: Arc<UnixListener>,
    /// Its file (a UTF-8 path, so that it can be an address).
    path: PathBuf,
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

impl Internal {
    /// The TCP port `addr` (for `what`, set by `flag`), and a socket
    /// `<name>.sock` in `data_dir`: the data directory is locked, so a
    /// socket file already there is a stopped stack's. Where none can be
    /// made (a path too long for a socket address, or not UTF-8), the
    /// service is called on its TCP port, with a line saying so if `say`
    /// (never from `uqchessserver`, whose output is its contract).
    fn bind(
        addr: &str,
        (what, flag): (&'static str, &'static str),
        data_dir: &Path,
        name: &str,
        say: bool,
    ) -> Result<Self, StartError> {
        let tcp = listen(addr, what, flag)?;
        let path = data_dir.join(format!("{name}.sock"));
        if path.to_str().is_none() {
            return Ok(Self { tcp, local: None });
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
        Ok(Self { tcp, local })
    }

    /// Its socket file, if it has one.
    fn socket_file(&self) -> Option<PathBuf> {
        self.local.as_ref().map(|l| l.path.clone())
    }

    /// Where the other services call it.
    pub(crate) fn address(&self) -> String {
        match &self.local {
            Some(local) => format!("unix:{}", local.path.display()),
            None => reach(&self.tcp),
        }
    }

    /// The sockets handed to the service, and the flag that tells it of
    /// the second.
    pub(crate) fn handed(self) -> (Vec<Listener>, Vec<OsString>) {
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

/// Game replica `index` of `replicas`: a lone replica keeps the plain name;
/// replicas are numbered.
pub(crate) fn game_name(index: usize, replicas: usize) -> String {
    if replicas > 1 {
        format!("game-{index}")
    } else {
        "game".to_owned()
    }
}

impl Listeners {
    /// Binds every socket `options` names, the Unix ones in `data_dir`.
    pub(crate) fn bind(options: &StackOptions, data_dir: &Path) -> Result<Self, StartError> {
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
        let service = |addr: &str, name: &'static str, flag: &'static str| {
            Internal::bind(addr, (name, flag), data_dir, name, say)
        };
        Ok(Self {
            gateway: listen(&options.grpc_listen, "public gRPC API", "--grpc-listen")?,
            uqchess,
            engine: service(&internal.engine, "engine", "--engine-listen")?,
            rating: service(&internal.rating, "rating", "--rating-listen")?,
            game: (0..replicas)
                .map(|i| {
                    let name = game_name(usize::from(i), usize::from(replicas));
                    let addr = replica_listen(&internal.game, i);
                    Internal::bind(&addr, ("game", "--game-listen"), data_dir, &name, say)
                })
                .collect::<Result<_, StartError>>()?,
            matchmaking: service(&internal.matchmaking, "matchmaking", "--matchmaking-listen")?,
        })
    }

    /// The Unix sockets' files.
    pub(crate) fn socket_files(&self) -> Vec<PathBuf> {
        [&self.engine, &self.rating, &self.matchmaking]
            .into_iter()
            .chain(&self.game)
            .filter_map(Internal::socket_file)
            .collect()
    }

    /// Where the services are reached.
    pub(crate) fn addresses(&self, public_url: Option<&str>) -> Addresses {
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
