//! The gRPC server every service runs.

use std::{
    convert::Infallible,
    net::SocketAddr,
    os::unix::fs::FileTypeExt as _,
    path::{Path, PathBuf},
    sync::{Arc, Mutex, MutexGuard, OnceLock},
    time::Duration,
};

use tokio::{
    net::{TcpListener, UnixListener},
    signal::unix::SignalKind,
};
use tokio_util::sync::CancellationToken;
use tonic::{service::Routes, transport::server::TcpIncoming};
use tonic_health::{ServingStatus, server::HealthReporter};

/// Server flags every service accepts.
#[derive(Clone, Debug, clap::Args)]
pub struct ServerArgs {
    /// Address to serve gRPC on, `host:port`; port 0 picks a free one.
    #[arg(long)]
    pub listen: Option<String>,
    /// Serve on listening socket number N handed over by a supervisor
    /// (systemd's socket activation protocol: `LISTEN_FDS`, sockets from
    /// descriptor 3) instead of binding `--listen`.
    #[arg(long)]
    pub listen_fd: Option<usize>,
    /// Also serve on a Unix-domain socket at PATH, for callers on the same
    /// machine (given the address `unix:PATH`): it skips the TCP stack. A
    /// socket left there by a server that is gone is replaced.
    #[arg(long, value_name = "PATH")]
    pub unix_listen: Option<PathBuf>,
    /// Also serve on the Unix-domain listening socket number N handed over
    /// by a supervisor (`LISTEN_FDS`, as for `--listen-fd`).
    #[arg(long, value_name = "N", conflicts_with = "unix_listen")]
    pub unix_listen_fd: Option<usize>,
    /// Seconds in-flight calls may take to finish after a shutdown signal.
    #[arg(long, default_value_t = 10)]
    pub shutdown_grace_secs: u64,
    /// Shut down when standard input reaches its end (a supervising parent
    /// holds the other end and its exit closes it).
    #[arg(long)]
    pub stop_on_stdin_eof: bool,
}

/// Why a server could not start or stopped abnormally.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot resolve listen address {addr:?}: {source}")]
    Resolve {
        addr: String,
        source: std::io::Error,
    },
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: String,
        source: std::io::Error,
    },
    #[error("no listening socket number {index} was handed over (LISTEN_FDS): {reason}")]
    Inherited { index: usize, reason: String },
    #[error("cannot install signal handlers: {0}")]
    Signals(std::io::Error),
    #[error("invalid descriptor set: {0}")]
    Reflection(String),
    #[error("the gRPC server failed: {0}")]
    Serve(#[from] tonic::transport::Error),
}

/// Readiness as reported by the standard gRPC health service, for the whole
/// server (`""`) and each of its services by name. Starts NOT_SERVING.
#[derive(Clone, Debug)]
pub struct Health {
    reporter: HealthReporter,
    services: Arc<[&'static str]>,
}

impl Health {
    fn new(reporter: HealthReporter, services: &[&'static str]) -> Self {
        Self {
            reporter,
            services: services.into(),
        }
    }

    /// Reports every service of this server as SERVING (`true`) or NOT_SERVING.
    pub async fn set_ready(&self, ready: bool) {
        let status = if ready {
            ServingStatus::Serving
        } else {
            ServingStatus::NotServing
        };
        self.reporter.set_service_status("", status).await;
        for name in self.services.iter() {
            self.reporter.set_service_status(*name, status).await;
        }
    }
}

/// The body of every request and response on a server's port, gRPC or not.
pub type Body = tonic::body::Body;

/// The server's HTTP service as a front layer sees it: every request on the
/// port, gRPC or not, and its response.
pub type HttpService =
    tower::util::BoxCloneSyncService<http::Request<Body>, http::Response<Body>, Infallible>;

/// Wraps the gRPC service in what a server answers besides gRPC (plain HTTP
/// pages on the same port).
type Front = Arc<dyn Fn(HttpService) -> HttpService + Send + Sync>;

/// Shutdown as seen from inside a service: cancelled when the server begins to
/// stop, so long-lived streams and background tasks can end.
pub type Shutdown = CancellationToken;

/// A Unix-domain socket a server also serves on.
struct UnixSide {
    listener: UnixListener,
    /// Where it is, for the log.
    shown: String,
    /// The socket file to remove when the server stops: one it bound
    /// itself (a handed-over socket is its supervisor's).
    owned: Option<PathBuf>,
}

/// A bound gRPC server that has not started serving yet.
pub struct Server {
    service: &'static str,
    listener: TcpListener,
    local_addr: SocketAddr,
    unix: Option<UnixSide>,
    grace: Duration,
    stop_on_stdin_eof: bool,
    health: Health,
    health_service:
        tonic_health::pb::health_server::HealthServer<tonic_health::server::HealthService>,
    shutdown: CancellationToken,
    grpc_web: bool,
    front: Option<Front>,
    callers: Option<crate::identity::VerifyLayer>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("service", &self.service)
            .field("local_addr", &self.local_addr)
            .field("unix", &self.unix.as_ref().map(|u| &u.shown))
            .field("grpc_web", &self.grpc_web)
            .field("front", &self.front.is_some())
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Binds the listen address (`default_addr` unless `--listen` is given).
    /// `services` names the gRPC services the health service reports on, e.g.
    /// `chess_proto::game::v1::game_service_server::SERVICE_NAME`.
    pub async fn bind(
        service: &'static str,
        args: &ServerArgs,
        default_addr: &str,
        services: &[&'static str],
    ) -> Result<Self, Error> {
        raise_open_file_limit();
        let addr = args.listen.as_deref().unwrap_or(default_addr);
        let listener = match args.listen_fd {
            Some(index) => inherited_listener(index)?,
            None => bind_listener(addr).await?,
        };
        let local_addr = listener.local_addr().map_err(|source| Error::Listen {
            addr: addr.to_owned(),
            source,
        })?;
        let unix = match (&args.unix_listen, args.unix_listen_fd) {
            (Some(path), _) => Some(UnixSide {
                listener: UnixListener::from_std(bind_unix_listener(path)?)
                    .map_err(unix_listen_error(path))?,
                shown: path.display().to_string(),
                owned: Some(path.clone()),
            }),
            (None, Some(index)) => {
                let listener = inherited_unix_listener(index)?;
                let shown = listener
                    .local_addr()
                    .ok()
                    .and_then(|a| a.as_pathname().map(|p| p.display().to_string()))
                    .unwrap_or_else(|| format!("descriptor {}", 3 + index));
                Some(UnixSide {
                    listener,
                    shown,
                    owned: None,
                })
            }
            (None, None) => None,
        };
        let reporter = HealthReporter::new();
        let health_service = tonic_health::pb::health_server::HealthServer::new(
            tonic_health::server::HealthService::from_health_reporter(reporter.clone()),
        );
        let health = Health::new(reporter, services);
        health.set_ready(false).await;
        Ok(Self {
            service,
            listener,
            local_addr,
            unix,
            grace: Duration::from_secs(args.shutdown_grace_secs),
            stop_on_stdin_eof: args.stop_on_stdin_eof,
            health,
            health_service,
            shutdown: CancellationToken::new(),
            grpc_web: false,
            front: None,
            callers: None,
        })
    }

    /// Also serves gRPC-Web (HTTP/1.1 and browser clients) on the same port.
    pub fn with_grpc_web(mut self, enabled: bool) -> Self {
        self.grpc_web = enabled;
        self
    }

    /// Takes only calls from the other services: every call but health and
    /// reflection must carry a valid caller assertion signed with `key`
    /// ([`crate::identity`]), or is refused with UNAUTHENTICATED.
    pub fn with_verified_callers(mut self, key: crate::InternalKey) -> Self {
        self.callers = Some(crate::identity::VerifyLayer::new(key));
        self
    }

    /// Puts `front` before everything else on the port: it gets each
    /// request first, with the gRPC service (tracing, gRPC-Web, the routes)
    /// to hand gRPC calls to, and answers the rest itself. It sees requests
    /// before gRPC-Web does, which refuses any other HTTP/1.1 request.
    pub fn with_front(
        mut self,
        front: impl Fn(HttpService) -> HttpService + Send + Sync + 'static,
    ) -> Self {
        self.front = Some(Arc::new(front));
        self
    }

    /// The address actually bound (the real port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The readiness handle.
    pub fn health(&self) -> Health {
        self.health.clone()
    }

    /// Cancelled when shutdown begins.
    pub fn shutdown(&self) -> Shutdown {
        self.shutdown.clone()
    }

    /// Serves `routes` with health, reflection and tracing until SIGTERM,
    /// SIGINT, the end of standard input (if asked for) or the shutdown token.
    /// Then it reports NOT_SERVING, stops accepting, gives in-flight calls the
    /// grace period and returns.
    pub async fn serve(self, routes: Routes) -> Result<(), Error> {
        // Reflection advertises what this server actually serves, not every
        // service in the shared descriptor set.
        let reflection = || {
            let mut builder = tonic_reflection::server::Builder::configure()
                .register_encoded_file_descriptor_set(chess_proto::FILE_DESCRIPTOR_SET)
                .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
                // Both reflection versions are served, so both are described.
                .register_encoded_file_descriptor_set(tonic_reflection::pb::v1::FILE_DESCRIPTOR_SET)
                .register_encoded_file_descriptor_set(
                    tonic_reflection::pb::v1alpha::FILE_DESCRIPTOR_SET,
                )
                .with_service_name("grpc.health.v1.Health")
                .with_service_name("grpc.reflection.v1.ServerReflection")
                .with_service_name("grpc.reflection.v1alpha.ServerReflection");
            for name in self.health.services.iter() {
                builder = builder.with_service_name(*name);
            }
            builder
        };
        let reflection_v1 = reflection()
            .build_v1()
            .map_err(|e| Error::Reflection(e.to_string()))?;
        let reflection_v1alpha = reflection()
            .build_v1alpha()
            .map_err(|e| Error::Reflection(e.to_string()))?;

        let routes = routes
            .add_service(self.health_service)
            .add_service(reflection_v1)
            .add_service(reflection_v1alpha);

        let signals = stop_signals(self.stop_on_stdin_eof, self.shutdown.clone())?;
        let shutdown = self.shutdown.clone();
        let health = self.health.clone();
        let stopping = async move {
            signals.await;
            tracing::info!("shutting down");
            shutdown.cancel();
            health.set_ready(false).await;
        };

        let incoming = TcpIncoming::from(self.listener).with_nodelay(Some(true));
        let router = tonic::transport::Server::builder()
            .http2_keepalive_interval(Some(Duration::from_secs(30)))
            .http2_keepalive_timeout(Some(Duration::from_secs(10)))
            .accept_http1(self.grpc_web || self.front.is_some())
            .layer(tower::util::option_layer(self.front.map(|front| {
                tower::layer::layer_fn(move |inner| front(HttpService::new(inner)))
            })))
            .layer(chess_telemetry::ServerTraceLayer)
            .layer(tower::util::option_layer(
                self.grpc_web.then(tonic_web::GrpcWebLayer::new),
            ))
            .layer(crate::status_cap::StatusCapLayer)
            .layer(tower::util::option_layer(self.callers))
            .add_routes(routes);
        // The same service on the Unix socket, stopping with the TCP side.
        // If it fails, the whole server stops (and is restarted by whoever
        // supervises it) rather than go on unreachable to its local callers.
        let unix = self.unix.map(|side| {
            let stopped = self.shutdown.clone();
            let failed = self.shutdown.clone();
            let served = router.clone().serve_with_incoming_shutdown(
                tokio_stream::StreamExt::map(
                    tokio_stream::wrappers::UnixListenerStream::new(side.listener),
                    |accepted| accepted.map(crate::authority::LocalAuthority::new),
                ),
                async move { stopped.cancelled().await },
            );
            tracing::info!(service = self.service, path = %side.shown, "serving gRPC on a Unix socket");
            let task = tokio::spawn(async move {
                if let Err(e) = served.await {
                    tracing::error!(error = %e, "the gRPC server on the Unix socket failed");
                    failed.cancel();
                }
            });
            (task, side.owned)
        });
        let server = router.serve_with_incoming_shutdown(incoming, stopping);
        tracing::info!(service = self.service, addr = %self.local_addr, "serving gRPC");

        tokio::pin!(server);
        let ended = tokio::select! {
            result = &mut server => Some(result.map_err(Error::from)),
            () = self.shutdown.cancelled() => None,
        };
        let deadline = tokio::time::Instant::now() + self.grace;
        let late = || {
            tracing::warn!(grace = ?self.grace, "calls still running after the grace period; stopping anyway");
        };
        let result = match ended {
            Some(result) => result,
            None => match tokio::time::timeout_at(deadline, server).await {
                Ok(result) => result.map_err(Error::from),
                Err(_) => {
                    late();
                    Ok(())
                }
            },
        };
        if let Some((task, owned)) = unix {
            self.shutdown.cancel();
            if tokio::time::timeout_at(deadline, task).await.is_err() {
                late();
            }
            if let Some(path) = owned {
                let _ = std::fs::remove_file(path);
            }
        }
        result
    }
}

/// Raises the soft limit on open files to the hard limit: every client
/// connection and every connection between services is a descriptor, and
/// the default soft limit (often 1024) is far below what a server needs.
fn raise_open_file_limit() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok((soft, hard)) if soft < hard => {
            if let Err(e) = setrlimit(Resource::RLIMIT_NOFILE, hard, hard) {
                tracing::warn!(error = %e, soft, hard, "cannot raise the open-file limit");
            }
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "cannot read the open-file limit"),
    }
}

/// The listening socket number `index` handed over by a supervisor
/// (`LISTEN_FDS`, descriptors from 3). Each can be taken once.
pub fn inherited_listener(index: usize) -> Result<TcpListener, Error> {
    inherited(index, listenfd::ListenFd::take_tcp_listener, |listener| {
        listener.set_nonblocking(true)?;
        TcpListener::from_std(listener)
    })
}

/// The Unix-domain listening socket number `index` handed over by a
/// supervisor, as [`inherited_listener`] takes a TCP one.
pub fn inherited_unix_listener(index: usize) -> Result<UnixListener, Error> {
    inherited(index, listenfd::ListenFd::take_unix_listener, |listener| {
        listener.set_nonblocking(true)?;
        UnixListener::from_std(listener)
    })
}

/// Socket `index` of those handed over, taken by `take` and made a Tokio
/// listener by `adopt`.
fn inherited<S, T>(
    index: usize,
    take: impl FnOnce(&mut listenfd::ListenFd, usize) -> std::io::Result<Option<S>>,
    adopt: impl FnOnce(S) -> std::io::Result<T>,
) -> Result<T, Error> {
    let error = |reason: String| Error::Inherited { index, reason };
    let listener = take(&mut handed_over(), index)
        .map_err(|e| error(e.to_string()))?
        .ok_or_else(|| error("none was passed".to_owned()))?;
    adopt(listener).map_err(|e| error(e.to_string()))
}

/// The sockets handed over in `LISTEN_FDS`, each to be taken once.
fn handed_over() -> MutexGuard<'static, listenfd::ListenFd> {
    static HANDED_OVER: OnceLock<Mutex<listenfd::ListenFd>> = OnceLock::new();
    HANDED_OVER
        .get_or_init(|| Mutex::new(listenfd::ListenFd::from_env()))
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Binds a Unix-domain listening socket at `path` (non-blocking). A socket
/// file there that nothing answers on is left from a server that is gone and
/// is replaced; one that answers, or any other file, is an error.
pub fn bind_unix_listener(path: &Path) -> Result<std::os::unix::net::UnixListener, Error> {
    let error = unix_listen_error(path);
    if let Ok(meta) = std::fs::symlink_metadata(path)
        && meta.file_type().is_socket()
    {
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(error(std::io::ErrorKind::AddrInUse.into()));
        }
        std::fs::remove_file(path).map_err(error)?;
    }
    let listener = std::os::unix::net::UnixListener::bind(path).map_err(error)?;
    listener.set_nonblocking(true).map_err(error)?;
    Ok(listener)
}

/// The error of listening on the Unix socket at `path`.
fn unix_listen_error(path: &Path) -> impl Fn(std::io::Error) -> Error + Copy + '_ {
    move |source| Error::Listen {
        addr: format!("unix:{}", path.display()),
        source,
    }
}

/// Binds a TCP listener on `host:port`, resolving names.
pub async fn bind_listener(addr: &str) -> Result<TcpListener, Error> {
    let candidates: Vec<SocketAddr> = tokio::net::lookup_host(addr)
        .await
        .map_err(|source| Error::Resolve {
            addr: addr.to_owned(),
            source,
        })?
        .collect();
    let mut last = None;
    for candidate in candidates {
        match TcpListener::bind(candidate).await {
            Ok(listener) => return Ok(listener),
            Err(e) => last = Some(e),
        }
    }
    Err(Error::Listen {
        addr: addr.to_owned(),
        source: last.unwrap_or_else(|| std::io::Error::other("no address")),
    })
}

/// A future that completes on SIGTERM, SIGINT, end of standard input (when
/// `stdin_eof`) or cancellation of `token`.
fn stop_signals(
    stdin_eof: bool,
    token: CancellationToken,
) -> Result<impl Future<Output = ()> + Send + 'static, Error> {
    let mut term = tokio::signal::unix::signal(SignalKind::terminate()).map_err(Error::Signals)?;
    let mut int = tokio::signal::unix::signal(SignalKind::interrupt()).map_err(Error::Signals)?;
    // Standard input is read on a thread of its own, not on one of the
    // runtime's blocking threads: a read that never returns (the supervisor
    // keeps the pipe open while it stops this process with a signal) would
    // otherwise keep the runtime, and so the process, from ever ending.
    let closed = stdin_eof.then(|| {
        let (closed, on_close) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("stdin-eof".to_owned())
            .spawn(move || {
                use std::io::Read as _;
                let mut stdin = std::io::stdin().lock();
                let mut buf = [0u8; 64];
                // Anything written is ignored; only the end (or a broken
                // pipe) matters.
                while let Ok(n) = stdin.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                }
                let _ = closed.send(());
            })
            .map_err(Error::Signals)
            .map(|_| on_close)
    });
    let closed = closed.transpose()?;
    Ok(async move {
        let stdin_closed = async {
            match closed {
                // A dropped sender (the thread died) counts as closed too.
                Some(on_close) => {
                    let _ = on_close.await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
            () = stdin_closed => {}
            () = token.cancelled() => {}
        }
    })
}
