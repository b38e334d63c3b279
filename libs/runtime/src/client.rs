//! Channels to other services.
//!
//! A service address whose host is an IP address gets one lazily connected
//! HTTP/2 connection. A host name is resolved again every few seconds and
//! calls are spread round-robin over one connection per address it resolves
//! to: behind a Kubernetes headless Service that is one connection per
//! replica, so replicas added to (or removed from) the engine pool take
//! (or stop taking) their share of the calls. A single connection to a
//! virtual IP would pin every call to whichever replica it reached.
//!
//! A `unix:PATH` address is a service on the same machine serving on a
//! Unix-domain socket (`--unix-listen`): one connection, without the TCP
//! stack's work on either side.

use std::{
    collections::BTreeMap,
    net::{IpAddr, SocketAddr},
    path::PathBuf,
    pin::Pin,
    sync::{
        Arc, RwLock,
        atomic::{AtomicUsize, Ordering},
    },
    task::{Context, Poll},
    time::Duration,
};

use tonic::transport::Endpoint;
use tower::ServiceExt as _;

/// How often a host name is resolved again.
const RESOLVE_EVERY: Duration = Duration::from_secs(10);

/// A channel whose calls carry the current trace context.
pub type Channel = chess_telemetry::ClientTrace<Balanced>;

/// Why a channel could not be made.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid service address {0:?}")]
    Address(String),
    #[error(transparent)]
    Transport(#[from] tonic::transport::Error),
}

fn endpoint(uri: String) -> Result<Endpoint, tonic::transport::Error> {
    Ok(Endpoint::from_shared(uri)?
        .connect_timeout(Duration::from_secs(3))
        .tcp_nodelay(true)
        .http2_keep_alive_interval(Duration::from_secs(30))
        .keep_alive_timeout(Duration::from_secs(10))
        .keep_alive_while_idle(true))
}

/// Connections to every address of a service, used in turn.
#[derive(Clone, Debug)]
pub struct Balanced {
    connections: Arc<RwLock<Vec<tonic::transport::Channel>>>,
    next: Arc<AtomicUsize>,
}

impl Balanced {
    fn single(channel: tonic::transport::Channel) -> Self {
        Self {
            connections: Arc::new(RwLock::new(vec![channel])),
            next: Arc::default(),
        }
    }

    fn pick(&self) -> Option<tonic::transport::Channel> {
        let connections = self.connections.read().unwrap_or_else(|p| p.into_inner());
        if connections.is_empty() {
            return None;
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed) % connections.len();
        Some(connections[i].clone())
    }
}

type ResponseFuture = Pin<
    Box<
        dyn Future<Output = Result<http::Response<tonic::body::Body>, tonic::transport::Error>>
            + Send,
    >,
>;

impl tower::Service<http::Request<tonic::body::Body>> for Balanced {
    type Response = http::Response<tonic::body::Body>;
    type Error = Box<dyn std::error::Error + Send + Sync>;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // Each connection buffers its own calls; readiness is decided there.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        match self.pick() {
            Some(channel) => {
                let call: ResponseFuture = Box::pin(channel.oneshot(request));
                Box::pin(async move { call.await.map_err(Into::into) })
            }
            None => {
                Box::pin(async { Err("no address of the service could be resolved yet".into()) })
            }
        }
    }
}

/// A channel to `addr`: `host:port`, optionally with an `http://` prefix,
/// or `unix:PATH` (also `unix://` and an absolute path, as gRPC writes it).
/// Connecting happens on first use and again after failures, so a service can
/// start before the services it calls. Must be called within a Tokio runtime
/// when `addr` names a host.
pub fn channel(addr: &str) -> Result<Channel, Error> {
    let authority = addr.strip_prefix("http://").unwrap_or(addr);
    let balanced = match (unix_path(addr)?, authority.parse::<SocketAddr>()) {
        (Some(path), _) => Balanced::single(unix_channel(path)?),
        (None, Ok(socket)) => {
            Balanced::single(endpoint(format!("http://{socket}"))?.connect_lazy())
        }
        (None, Err(_)) => {
            let (host, port) = authority
                .rsplit_once(':')
                .and_then(|(h, p)| Some((h.to_owned(), p.parse::<u16>().ok()?)))
                .ok_or_else(|| Error::Address(addr.to_owned()))?;
            // Checked now so that a bad address fails at start-up.
            endpoint(format!("http://{host}:{port}"))?;
            let balanced = Balanced {
                connections: Arc::default(),
                next: Arc::default(),
            };
            tokio::spawn(follow(host, port, balanced.clone()));
            balanced
        }
    };
    Ok(tower::Layer::layer(
        &chess_telemetry::ClientTraceLayer,
        balanced,
    ))
}

/// The socket path of a `unix:` address; `None` for any other address.
fn unix_path(addr: &str) -> Result<Option<PathBuf>, Error> {
    let Some(rest) = addr.strip_prefix("unix:") else {
        return Ok(None);
    };
    // `unix:///run/x.sock` (an empty authority) is `unix:/run/x.sock`.
    let path = rest.strip_prefix("//").unwrap_or(rest);
    if path.is_empty() || (rest.starts_with("//") && !path.starts_with('/')) {
        return Err(Error::Address(addr.to_owned()));
    }
    Ok(Some(PathBuf::from(path)))
}

/// One lazily connected channel over the Unix socket at `path`.
fn unix_channel(path: PathBuf) -> Result<tonic::transport::Channel, Error> {
    let path = Arc::new(path);
    let connector = tower::service_fn(move |_: http::Uri| {
        let path = Arc::clone(&path);
        async move {
            tokio::net::UnixStream::connect(path.as_path())
                .await
                .map(hyper_util::rt::TokioIo::new)
        }
    });
    // The authority only names the service in each request.
    Ok(endpoint("http://localhost".to_owned())?.connect_with_connector_lazy(connector))
}

/// Keeps `balanced` holding one connection per address `host` resolves to
/// (IPv4 ones if there are any, so `localhost` means 127.0.0.1).
async fn follow(host: String, port: u16, balanced: Balanced) {
    let mut current: BTreeMap<IpAddr, tonic::transport::Channel> = BTreeMap::new();
    loop {
        // Only the last handle keeps following the name.
        if Arc::strong_count(&balanced.connections) == 1 {
            return;
        }
        match tokio::net::lookup_host((host.as_str(), port)).await {
            Ok(found) => {
                let found: Vec<IpAddr> = found.map(|s| s.ip()).collect();
                let v4: Vec<IpAddr> = found.iter().copied().filter(IpAddr::is_ipv4).collect();
                let wanted = if v4.is_empty() { found } else { v4 };
                if !wanted.is_empty() {
                    current.retain(|ip, _| wanted.contains(ip));
                    for ip in wanted {
                        if current.contains_key(&ip) {
                            continue;
                        }
                        if let Ok(endpoint) =
                            endpoint(format!("http://{}", SocketAddr::new(ip, port)))
                        {
                            current.insert(ip, endpoint.connect_lazy());
                        }
                    }
                    let mut connections = balanced
                        .connections
                        .write()
                        .unwrap_or_else(|p| p.into_inner());
                    *connections = current.values().cloned().collect();
                }
            }
            Err(e) => tracing::warn!(host, error = %e, "cannot resolve a service address"),
        }
        let wait = if current.is_empty() {
            Duration::from_millis(500)
        } else {
            RESOLVE_EVERY
        };
        tokio::time::sleep(wait).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn addresses() {
        assert!(channel("127.0.0.1:50053").is_ok());
        assert!(channel("http://127.0.0.1:50053").is_ok());
        assert!(channel("localhost:50053").is_ok());
        assert!(matches!(channel("no-port"), Err(Error::Address(_))));
        assert!(matches!(channel("host:notaport"), Err(Error::Address(_))));
        assert!(channel("unix:/run/chess/game.sock").is_ok());
        assert!(channel("unix:game.sock").is_ok());
        assert!(channel("unix:///run/chess/game.sock").is_ok());
        assert!(matches!(channel("unix:"), Err(Error::Address(_))));
        assert!(matches!(
            channel("unix://host/x.sock"),
            Err(Error::Address(_))
        ));
    }

    #[test]
    fn unix_addresses_name_their_socket() {
        let path = |a: &str| unix_path(a).unwrap().unwrap();
        assert_eq!(path("unix:/run/x.sock"), PathBuf::from("/run/x.sock"));
        assert_eq!(path("unix:///run/x.sock"), PathBuf::from("/run/x.sock"));
        assert_eq!(path("unix:x.sock"), PathBuf::from("x.sock"));
        assert!(unix_path("127.0.0.1:1").unwrap().is_none());
    }

    #[tokio::test]
    async fn host_names_resolve_to_one_connection_per_address() {
        let Balanced { connections, .. } = channel("localhost:50053").unwrap().into_inner();
        for _ in 0..100 {
            if !connections.read().unwrap().is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // localhost: IPv4 only.
        assert_eq!(connections.read().unwrap().len(), 1);
    }
}
