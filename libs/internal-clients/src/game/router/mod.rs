//! Routing each call to the replica that serves its game.
//!
//! A [`Router`] holds the shard map and one channel per replica. The map is
//! read (`GetShardMap`) by one task per router, started on the router's
//! first call: at once, then every [`REFRESH_EVERY`], and whenever a call
//! asks for it (a refusal, an unreachable replica), never two reads at a
//! time. Until a map has been read, and if none can be, calls go to the
//! addresses the caller was given, whose refusals still say where to go.
//!
//! [`Routed`] is the tower service under the generated client: per call
//! it buffers the request (one small message), sends it to the owner of
//! the call's shard or to any replica, and reads the response's headers.
//! A refusal comes before anything was done, in the headers of a
//! trailers-only response, so the call can be sent again: to the owner
//! the refusal names, or after a pause while the shard moves. A replica
//! that cannot be reached may have done the call already, so that call
//! fails UNAVAILABLE and the caller decides whether to repeat it.
//!
//! One call's way through refusals, pauses and its deadline is
//! `router/route.rs`.

use std::{
    pin::Pin,
    sync::{
        Arc, Mutex, OnceLock, Weak,
        atomic::{AtomicUsize, Ordering},
    },
    task::{Context, Poll},
    time::Duration,
};

use bytes::Bytes;
use chess_proto::game::v1::{self as pb, game_service_client::GameServiceClient};
use chess_runtime::{Channel, Signer};
use http_body_util::BodyExt as _;
use tokio::{
    sync::{Notify, watch},
    time::Instant,
};
use tonic::{Code, Status, service::interceptor::InterceptedService};
use tower::ServiceExt as _;

use chess_shards::ShardMap;

mod route;

pub(crate) use route::{FIRST_PAUSE, MAX_PAUSE};
use route::{Next, Route, grpc_timeout, refusal, set_grpc_timeout};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How often the map is read again while nothing asks for it: as often as
/// the replicas renew their leases, so that a takeover (or a replica added)
/// is seen within about a second, even when the replica that lost its
/// shards gives no sign (a paused process neither answers nor refuses).
pub(crate) const REFRESH_EVERY: Duration = Duration::from_secs(1);
/// How soon the map is read again after a read failed.
const RETRY_EVERY: Duration = Duration::from_secs(1);
/// The least time between two reads of the map, however many calls ask.
const MIN_GAP: Duration = Duration::from_millis(100);
/// How long a replica has to send the map.
const READ_TIMEOUT: Duration = Duration::from_secs(2);

/// Where a call goes.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Target {
    /// The replica serving this shard.
    Shard(u16),
    /// Any replica, in turn.
    Any,
}

/// The connection to a replica, or to an address the caller gave.
#[derive(Clone, Debug)]
pub(crate) struct Endpoint {
    /// As given or advertised; empty when not known.
    pub(crate) address: Arc<str>,
    pub(crate) channel: Channel,
}

impl Endpoint {
    pub(crate) fn new(address: &str, channel: Channel) -> Self {
        Self {
            address: address.into(),
            channel,
        }
    }

    fn is_at(&self, address: &str) -> bool {
        !address.is_empty() && bare(&self.address) == bare(address)
    }
}

/// `address` without its optional scheme.
fn bare(address: &str) -> &str {
    address.strip_prefix("http://").unwrap_or(address)
}

/// What the router knows at one moment.
#[derive(Debug)]
pub(crate) struct View {
    /// Reads of the map tried so far, whether they succeeded or not.
    pub(crate) attempts: u64,
    /// The last map read; `None` until one is.
    pub(crate) map: Option<ShardMap>,
    /// One per replica of `map`, in its order; the addresses given while
    /// there is no map.
    endpoints: Vec<Endpoint>,
    /// Indexes of `endpoints` that calls for any replica go to.
    any: Vec<usize>,
}

impl View {
    fn new(attempts: u64, map: Option<ShardMap>, endpoints: Vec<Endpoint>) -> Self {
        let any = match &map {
            Some(map) if !map.serving().is_empty() => map.serving().to_vec(),
            _ => (0..endpoints.len()).collect(),
        };
        Self {
            attempts,
            map,
            endpoints,
            any,
        }
    }

    /// The endpoint of replica `id`.
    fn endpoint_of(&self, id: &str) -> Option<&Endpoint> {
        let i = self.map.as_ref()?.position(id)?;
        self.endpoints.get(i)
    }

    /// The replicas an event stream across games is opened on, each with
    /// the key that names it: those serving at least one shard (by id), or
    /// without a map the first address given.
    pub(crate) fn serving(&self) -> Vec<(Arc<str>, Endpoint)> {
        match &self.map {
            Some(map) => map
                .serving()
                .iter()
                .filter_map(|&i| {
                    let endpoint = self.endpoints.get(i)?;
                    Some((map.replicas()[i].id.as_str().into(), endpoint.clone()))
                })
                .collect(),
            None => self
                .endpoints
                .first()
                .map(|e| (Arc::clone(&e.address), e.clone()))
                .into_iter()
                .collect(),
        }
    }

    /// Whether calls and streams can rely on this view: a map where every
    /// shard has an owner, or no map after a read was tried (the addresses
    /// given, as before there were shards).
    pub(crate) fn settled(&self) -> bool {
        match &self.map {
            Some(map) => map.complete(),
            None => self.attempts > 0,
        }
    }
}

/// The shard map, the channels to the replicas, and the task that keeps
/// the map fresh.
#[derive(Debug)]
pub(crate) struct Router {
    /// The addresses given, never empty.
    bootstrap: Vec<Endpoint>,
    signer: Signer,
    /// What it knows; receivers are told when the map changes.
    view: watch::Sender<Arc<View>>,
    /// Reads of the map done, which those waiting for a fresh map follow.
    reads: watch::Sender<u64>,
    /// Asks the reading task for a fresh map.
    wake: Arc<Notify>,
    started: OnceLock<()>,
    turn: AtomicUsize,
    /// Replicas learned from refusals before the map listed them, newest
    /// last, so that calls redirected there share a connection.
    learned: Mutex<Vec<Endpoint>>,
}

/// How many replicas learned from refusals are kept.
const LEARNED: usize = 16;

impl Router {
    /// A router over `bootstrap` (at least one), reading the map with
    /// calls signed by `signer`.
    pub(crate) fn new(bootstrap: Vec<Endpoint>, signer: Signer) -> Arc<Self> {
        assert!(!bootstrap.is_empty(), "a router needs an address");
        let view = View::new(0, None, bootstrap.clone());
        Arc::new(Self {
            bootstrap,
            signer,
            view: watch::Sender::new(Arc::new(view)),
            reads: watch::Sender::new(0),
            wake: Arc::new(Notify::new()),
            started: OnceLock::new(),
            turn: AtomicUsize::new(0),
            learned: Mutex::default(),
        })
    }

    /// Starts the task reading the map, once, if there is a runtime.
    fn start(self: &Arc<Self>) {
        if self.started.get().is_some() {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            self.started.get_or_init(|| {
                runtime.spawn(keep_fresh(Arc::downgrade(self), Arc::clone(&self.wake)));
            });
        }
    }

    /// What the router knows now.
    pub(crate) fn view(&self) -> Arc<View> {
        Arc::clone(&self.view.borrow())
    }

    /// Changes of the map.
    pub(crate) fn views(self: &Arc<Self>) -> watch::Receiver<Arc<View>> {
        self.start();
        self.view.subscribe()
    }

    /// Asks for the map to be read again soon, without waiting for it.
    pub(crate) fn refresh(self: &Arc<Self>) {
        self.start();
        self.wake.notify_one();
    }

    /// Asks for the map to be read again and waits (at most `within`) for
    /// the read to be done; what the router knows then.
    pub(crate) async fn refreshed(self: &Arc<Self>, within: Duration) -> Arc<View> {
        let mut reads = self.reads.subscribe();
        self.refresh();
        // Timing out leaves the view as it is, which the caller handles.
        let _ = tokio::time::timeout(within, reads.changed()).await;
        self.view()
    }

    /// Makes `view` current, telling the receivers of [`Self::views`] if
    /// `changed`, and those waiting for a read in any case.
    fn publish_view(&self, view: View, changed: bool) {
        self.view.send_if_modified(|current| {
            *current = Arc::new(view);
            changed
        });
        self.reads.send_modify(|n| *n += 1);
    }

    /// A settled view ([`View::settled`]), waiting for fresh maps until
    /// `deadline`.
    pub(crate) async fn settled(self: &Arc<Self>, deadline: Instant) -> Result<Arc<View>, Status> {
        self.start();
        loop {
            let view = self.view();
            if view.settled() {
                return Ok(view);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Status::unavailable(
                    "not every game is served by a replica of the game service yet; try again",
                ));
            }
            tracing::debug!(
                served = view.map.as_ref().map_or(0, ShardMap::served),
                "waiting until every shard of games is served"
            );
            self.refreshed((deadline - now).min(READ_TIMEOUT)).await;
        }
    }

    /// The replica for `target`, as [`Self::pick`] finds it, for a caller
    /// that sends there itself.
    pub(crate) fn endpoint_for(self: &Arc<Self>, target: Target) -> Endpoint {
        self.start();
        self.pick(target)
    }

    /// The replica for `target`: the owner of its shard, or any in turn
    /// (also for a shard that has no owner in the map: the replica asked
    /// knows better).
    fn pick(&self, target: Target) -> Endpoint {
        let view = self.view.borrow();
        if let Target::Shard(shard) = target
            && let Some(map) = &view.map
            && let Some(i) = map.owner(shard)
            && let Some(endpoint) = view.endpoints.get(i)
        {
            return endpoint.clone();
        }
        let n = self.turn.fetch_add(1, Ordering::Relaxed);
        let i = view.any[n % view.any.len()];
        view.endpoints[i].clone()
    }

    /// The connection to the replica at `address`: a known one, or a new
    /// one (kept among those learned).
    fn endpoint_at(&self, address: &str, view: &View) -> Option<Endpoint> {
        if let Some(known) = view
            .endpoints
            .iter()
            .chain(&self.bootstrap)
            .find(|e| e.is_at(address))
        {
            return Some(known.clone());
        }
        let mut learned = self.learned.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(known) = learned.iter().find(|e| e.is_at(address)) {
            return Some(known.clone());
        }
        match chess_runtime::channel(address) {
            Ok(channel) => {
                let endpoint = Endpoint::new(address, channel);
                if learned.len() == LEARNED {
                    learned.remove(0);
                }
                learned.push(endpoint.clone());
                Some(endpoint)
            }
            Err(e) => {
                tracing::warn!(address, error = %e, "a game replica has an unusable address");
                None
            }
        }
    }

    /// Reads the map from the first replica that answers, asking the
    /// addresses given first; publishes it (or that no read succeeded).
    async fn read(&self) -> bool {
        let current = self.view();
        let mut asked: Vec<&Endpoint> = Vec::new();
        for endpoint in self.bootstrap.iter().chain(&current.endpoints) {
            if !asked
                .iter()
                .any(|a| a.is_at(&endpoint.address) || Arc::ptr_eq(&a.address, &endpoint.address))
            {
                asked.push(endpoint);
            }
        }
        for endpoint in asked {
            match self.read_from(endpoint).await {
                Ok(map) => {
                    self.publish(map, endpoint, &current);
                    return true;
                }
                Err(e) => tracing::debug!(
                    address = %endpoint.address,
                    error = %e,
                    "cannot read the game shard map there"
                ),
            }
        }
        let view = View::new(
            current.attempts + 1,
            current.map.clone(),
            current.endpoints.clone(),
        );
        self.publish_view(view, false);
        false
    }

    async fn read_from(&self, endpoint: &Endpoint) -> Result<ShardMap, String> {
        // Without the trace layer: a read every few seconds is no part of
        // any request's trace.
        let channel = endpoint.channel.clone().into_inner();
        let mut client = GameServiceClient::new(InterceptedService::new(
            channel,
            self.signer.bound(None, None),
        ));
        let request = crate::timed(pb::GetShardMapRequest {}, READ_TIMEOUT);
        match tokio::time::timeout(READ_TIMEOUT, client.get_shard_map(request)).await {
            Err(_) => Err(format!("no answer in {} s", READ_TIMEOUT.as_secs())),
            // A game service from before shards: it serves every game.
            Ok(Err(status)) if status.code() == Code::Unimplemented => Ok(ShardMap::single()),
            Ok(Err(status)) => Err(format!("{:?}: {}", status.code(), status.message())),
            Ok(Ok(response)) => ShardMap::parse(response.into_inner()).map_err(|e| e.to_string()),
        }
    }

    /// Makes `map`, read through `via`, the current one.
    fn publish(&self, map: ShardMap, via: &Endpoint, current: &View) {
        let endpoints: Vec<Endpoint> = map
            .replicas()
            .iter()
            .enumerate()
            .map(|(i, replica)| {
                let known = if replica.address.is_empty() {
                    // Reached at an address the caller gave: the one that
                    // answered for it, or as before.
                    if map.answered_by() == Some(i) {
                        Some(via.clone())
                    } else {
                        current.endpoint_of(&replica.id).cloned()
                    }
                } else {
                    self.endpoint_at(&replica.address, current)
                };
                known.unwrap_or_else(|| self.bootstrap[0].clone())
            })
            .collect();
        let changed = current.map.as_ref() != Some(&map);
        if changed {
            let replicas: Vec<String> = map
                .replicas()
                .iter()
                .zip(&endpoints)
                .map(|(r, e)| format!("{}@{}", r.id, e.address))
                .collect();
            tracing::info!(
                replicas = %replicas.join(", "),
                served = map.served(),
                shards = chess_shards::SHARDS,
                "game shard map changed"
            );
        } else {
            tracing::debug!(served = map.served(), "game shard map read again");
        }
        self.publish_view(
            View::new(current.attempts + 1, Some(map), endpoints),
            changed,
        );
    }

    /// Sends `request` for `target`, following refusals; see the module
    /// documentation.
    async fn send(
        self: Arc<Self>,
        target: Target,
        request: http::Request<tonic::body::Body>,
    ) -> Result<http::Response<tonic::body::Body>, BoxError> {
        self.start();
        let (mut parts, body) = request.into_parts();
        let body: Bytes = body.collect().await?.to_bytes();
        let deadline = grpc_timeout(&parts.headers).map(|t| Instant::now() + t);
        let mut route = Route::new(target, Instant::now(), deadline);
        let mut endpoint = self.pick(target);
        loop {
            let request = http::Request::from_parts(
                parts.clone(),
                tonic::body::Body::new(http_body_util::Full::new(body.clone())),
            );
            let response = match endpoint.channel.clone().oneshot(request).await {
                Ok(response) => response,
                Err(e) => {
                    tracing::debug!(
                        address = %endpoint.address,
                        ?target,
                        error = %e,
                        "a game replica is unreachable; reading the shard map again"
                    );
                    self.refresh();
                    return Err(
                        Status::unavailable("the game service is unreachable; try again").into(),
                    );
                }
            };
            let Some(redirect) = refusal(response.headers()) else {
                return Ok(response);
            };
            tracing::debug!(
                address = %endpoint.address,
                ?target,
                ?redirect,
                "a game replica refused a call for a game it does not serve"
            );
            let others = self.view().any.len();
            endpoint = match route.after(redirect, Instant::now(), others) {
                Next::Owner(owner) => {
                    self.refresh();
                    let view = self.view();
                    self.endpoint_at(&owner, &view)
                        .unwrap_or_else(|| self.pick(target))
                }
                Next::Reread(within) => {
                    self.refreshed(within).await;
                    self.pick(target)
                }
                Next::Wait(pause) => {
                    self.refresh();
                    tokio::time::sleep(pause).await;
                    self.pick(target)
                }
                Next::Another => self.pick(target),
                Next::GiveUp(status) => {
                    tracing::debug!(?target, "gave up routing a game call");
                    return Err(status.into());
                }
            };
            if let Some(deadline) = deadline {
                let left = deadline.saturating_duration_since(Instant::now());
                set_grpc_timeout(&mut parts.headers, left);
            }
        }
    }
}

/// Reads the map at once, then whenever asked and every
/// [`REFRESH_EVERY`], until the router is gone.
async fn keep_fresh(router: Weak<Router>, wake: Arc<Notify>) {
    loop {
        let Some(router) = router.upgrade() else {
            return;
        };
        let read = router.read().await;
        drop(router);
        tokio::time::sleep(MIN_GAP).await;
        let wait = if read { REFRESH_EVERY } else { RETRY_EVERY };
        tokio::select! {
            () = wake.notified() => {}
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// The channel under a generated client of the game service: each call
/// goes to the replica serving its game (or to any, for calls across
/// games), following refusals. Made by [`super::GameClient`].
#[derive(Clone, Debug)]
pub struct Routed {
    router: Arc<Router>,
    target: Target,
}

impl Routed {
    pub(crate) fn new(router: Arc<Router>, target: Target) -> Self {
        Self { router, target }
    }
}

impl tower::Service<http::Request<tonic::body::Body>> for Routed {
    type Response = http::Response<tonic::body::Body>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // Each replica's channel decides its own readiness.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        Box::pin(Arc::clone(&self.router).send(self.target, request))
    }
}
