//! The streams across games (WatchPlayer, WatchDailyGames, WatchLiveGames): each replica
//! sends the events of the games it serves, so the stream is opened on
//! every replica serving games and the streams are merged into one.
//!
//! When one of them breaks or ends (its replica died or stopped), or a
//! replica starts serving games, the merged stream waits until every shard
//! is served again and opens what it needs: a player's stream is opened
//! again on every replica, resuming after what it forwarded ([`Seen`]),
//! each replacing the one before once all are open; the daily games' stream
//! has nothing to resume, so only the missing ones are opened. If that
//! cannot be done within [`REOPEN_WITHIN`], the merged stream ends with
//! UNAVAILABLE. With one replica, one stream is all there is.

use std::{collections::HashSet, pin::Pin, sync::Arc, time::Duration};

use chess_domain::PlayerId;
use chess_proto::{
    common::v1 as common,
    game::v1::{self as pb, game_service_client::GameServiceClient},
};
use chess_runtime::Signer;
use futures::{
    FutureExt as _, Stream, StreamExt as _,
    future::{BoxFuture, try_join_all},
};
use tokio::{sync::watch, time::Instant};
use tokio_stream::StreamMap;
use tonic::{Status, Streaming};

use super::{
    EventStream,
    router::{Endpoint, FIRST_PAUSE, MAX_PAUSE, Router, View},
    watch::{REOPEN_WITHIN, Seen, broken},
};

/// How long a replica may take to open its stream.
const OPEN_TIMEOUT: Duration = Duration::from_secs(5);

/// One replica's stream; `None` last, when it ended.
type Sub<T> = Pin<Box<dyn Stream<Item = Option<Result<T, Status>>> + Send>>;
/// Streams opened, each with the key of its replica.
type Opened<T> = Vec<(Arc<str>, Sub<T>)>;

/// Cursors to resume after, if it resumes.
type Resume = Option<Vec<common::GameCursor>>;
/// A replica's stream being opened.
type Opening<T> = BoxFuture<'static, Result<Streaming<T>, Status>>;

/// A stream across games, as each replica serves it.
pub(crate) trait Feed: Send + Sync + 'static {
    type Item: Carries + Send + 'static;
    /// Whether it resumes: opened again on every replica after what was
    /// forwarded, rather than only where it is missing.
    const RESUMES: bool;

    /// Opens it on `endpoint`, resuming after `cursors` when given.
    fn open(&self, endpoint: &Endpoint, cursors: Resume) -> Opening<Self::Item>;
}

/// A message of a stream across games, which may carry a game's event.
pub(crate) trait Carries {
    fn event(&self) -> Option<&common::GameEvent>;
}

macro_rules! carries {
    ($($message:ty),+) => {
        $(impl Carries for $message {
            fn event(&self) -> Option<&common::GameEvent> {
                self.event.as_ref()
            }
        })+
    };
}

carries!(
    pb::WatchPlayerResponse,
    pb::WatchDailyGamesResponse,
    pb::WatchLiveGamesResponse
);

/// The events of every game of a player.
#[derive(Debug)]
pub(crate) struct PlayerFeed {
    pub(crate) signer: Signer,
    pub(crate) player_id: PlayerId,
}

impl Feed for PlayerFeed {
    type Item = pb::WatchPlayerResponse;
    const RESUMES: bool = true;

    fn open(&self, endpoint: &Endpoint, cursors: Resume) -> Opening<Self::Item> {
        let mut client = GameServiceClient::new(self.signer.channel(
            endpoint.channel.clone(),
            Some(self.player_id.as_str()),
            None,
        ));
        let request = pb::WatchPlayerRequest {
            player_id: self.player_id.to_string(),
            resume: cursors.is_some(),
            games: cursors.unwrap_or_default(),
        };
        async move { Ok(client.watch_player(request).await?.into_inner()) }.boxed()
    }
}

/// The events of every daily game.
#[derive(Debug)]
pub(crate) struct DailyFeed {
    pub(crate) signer: Signer,
}

impl Feed for DailyFeed {
    type Item = pb::WatchDailyGamesResponse;
    const RESUMES: bool = false;

    fn open(&self, endpoint: &Endpoint, _cursors: Resume) -> Opening<Self::Item> {
        let mut client =
            GameServiceClient::new(self.signer.channel(endpoint.channel.clone(), None, None));
        async move {
            Ok(client
                .watch_daily_games(pb::WatchDailyGamesRequest {})
                .await?
                .into_inner())
        }
        .boxed()
    }
}

/// The events of every game.
#[derive(Debug)]
pub(crate) struct LiveFeed {
    pub(crate) signer: Signer,
}

impl Feed for LiveFeed {
    type Item = pb::WatchLiveGamesResponse;
    const RESUMES: bool = false;

    fn open(&self, endpoint: &Endpoint, _cursors: Resume) -> Opening<Self::Item> {
        let mut client =
            GameServiceClient::new(self.signer.channel(endpoint.channel.clone(), None, None));
        async move {
            Ok(client
                .watch_live_games(pb::WatchLiveGamesRequest {})
                .await?
                .into_inner())
        }
        .boxed()
    }
}

/// `feed` opened on every replica serving games (resuming after `cursors`
/// when given) and merged. Fails as the first replica refuses, as one
/// stream would.
pub(crate) async fn open<F: Feed>(
    router: Arc<Router>,
    feed: F,
    cursors: Option<Vec<common::GameCursor>>,
) -> Result<EventStream<F::Item>, Status> {
    let views = router.views();
    let view = router.settled(Instant::now() + REOPEN_WITHIN).await?;
    let seen = F::RESUMES.then(|| Seen::after(cursors.as_deref().unwrap_or_default()));
    let feed = Arc::new(feed);
    let opened = open_on(&*feed, &view.serving(), cursors).await?;
    let mut merged = Merged {
        router,
        feed,
        subs: StreamMap::new(),
        seen,
        views,
        reopening: None,
        done: false,
    };
    merged.adopt(opened);
    Ok(Box::pin(futures::stream::unfold(
        merged,
        |mut merged| async move {
            let item = merged.next().await?;
            Some((item, merged))
        },
    )))
}

/// Opens `feed` on each of `targets`, all or none.
async fn open_on<F: Feed>(
    feed: &F,
    targets: &[(Arc<str>, Endpoint)],
    cursors: Option<Vec<common::GameCursor>>,
) -> Result<Opened<F::Item>, Status> {
    try_join_all(targets.iter().map(|(key, endpoint)| {
        let opening = feed.open(endpoint, cursors.clone());
        let key = Arc::clone(key);
        async move {
            match tokio::time::timeout(OPEN_TIMEOUT, opening).await {
                Ok(Ok(stream)) => {
                    let sub: Sub<F::Item> = Box::pin(
                        stream
                            .map(Some)
                            .chain(futures::stream::once(async { None })),
                    );
                    Ok((key, sub))
                }
                Ok(Err(status)) => Err(status),
                Err(_) => Err(Status::unavailable(
                    "a replica of the game service did not open its event stream in time",
                )),
            }
        }
    }))
    .await
}

/// Opens again what a merged stream misses: every stream but those of
/// `keep`, once every shard is served, trying until [`REOPEN_WITHIN`].
async fn reopen<F: Feed>(
    router: Arc<Router>,
    feed: Arc<F>,
    cursors: Option<Vec<common::GameCursor>>,
    keep: HashSet<Arc<str>>,
) -> Result<Opened<F::Item>, Status> {
    let deadline = Instant::now() + REOPEN_WITHIN;
    let mut pause = FIRST_PAUSE;
    loop {
        let view = router.settled(deadline).await?;
        let targets: Vec<(Arc<str>, Endpoint)> = view
            .serving()
            .into_iter()
            .filter(|(key, _)| !keep.contains(key))
            .collect();
        match open_on(&*feed, &targets, cursors.clone()).await {
            Ok(opened) => {
                let replicas: Vec<&str> = opened.iter().map(|(key, _)| &**key).collect();
                tracing::debug!(
                    replicas = %replicas.join(", "),
                    resumed = cursors.as_ref().map(Vec::len),
                    "game event streams opened again"
                );
                return Ok(opened);
            }
            Err(status) if !broken(&status) => return Err(status),
            Err(status) => tracing::debug!(
                error = status.message(),
                "cannot open the game event streams again yet"
            ),
        }
        if Instant::now() + pause >= deadline {
            return Err(Status::unavailable(
                "the game events cannot be followed now; open the stream again",
            ));
        }
        router.refresh();
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(MAX_PAUSE);
    }
}

/// A stream across games, merged over the replicas.
struct Merged<F: Feed> {
    router: Arc<Router>,
    feed: Arc<F>,
    /// By replica.
    subs: StreamMap<Arc<str>, Sub<F::Item>>,
    /// For a stream that resumes.
    seen: Option<Seen>,
    views: watch::Receiver<Arc<View>>,
    reopening: Option<BoxFuture<'static, Result<Opened<F::Item>, Status>>>,
    done: bool,
}

/// What woke a merged stream.
enum Woke<T> {
    Sub(Arc<str>, Option<Result<T, Status>>),
    Reopened(Result<Opened<T>, Status>),
    Changed,
}

impl<F: Feed> Merged<F> {
    async fn next(&mut self) -> Option<Result<F::Item, Status>> {
        loop {
            if self.done {
                return None;
            }
            if self.subs.is_empty() && self.reopening.is_none() {
                self.reopen();
            }
            let woke = {
                let Self {
                    subs,
                    reopening,
                    views,
                    ..
                } = self;
                let reopened = async {
                    match reopening.as_mut() {
                        Some(reopening) => reopening.await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    Some((key, item)) = subs.next(), if !subs.is_empty() => Woke::Sub(key, item),
                    reopened = reopened => Woke::Reopened(reopened),
                    Ok(()) = views.changed() => Woke::Changed,
                }
            };
            match woke {
                Woke::Sub(_, Some(Ok(item))) => {
                    if let (Some(seen), Some(event)) = (self.seen.as_mut(), item.event())
                        && !seen.admit(event)
                    {
                        continue;
                    }
                    return Some(Ok(item));
                }
                Woke::Sub(_, Some(Err(status))) if !broken(&status) => {
                    self.done = true;
                    return Some(Err(status));
                }
                Woke::Sub(key, ended) => {
                    tracing::debug!(
                        replica = %key,
                        error = ended.and_then(Result::err).map(|s| s.message().to_owned()),
                        "a game event stream from a replica ended; opening it again"
                    );
                    self.subs.remove(&key);
                    self.reopen();
                }
                Woke::Reopened(Ok(opened)) => {
                    self.reopening = None;
                    self.adopt(opened);
                    if self.missing() {
                        self.reopen();
                    }
                }
                Woke::Reopened(Err(status)) => {
                    tracing::debug!(
                        error = status.message(),
                        "gave up opening the game event streams again"
                    );
                    self.done = true;
                    return Some(Err(status));
                }
                Woke::Changed => {
                    if self.reopening.is_none() && self.missing() {
                        tracing::debug!("a replica serves games now; opening its event stream");
                        self.reopen();
                    }
                }
            }
        }
    }

    /// Starts opening what is missing, unless that is under way.
    fn reopen(&mut self) {
        if self.reopening.is_some() {
            return;
        }
        let cursors = self.seen.as_ref().map(Seen::cursors);
        let keep = if F::RESUMES {
            HashSet::new()
        } else {
            self.subs.keys().cloned().collect()
        };
        self.reopening = Some(
            reopen(
                Arc::clone(&self.router),
                Arc::clone(&self.feed),
                cursors,
                keep,
            )
            .boxed(),
        );
    }

    /// Takes streams just opened: in place of every stream for one that
    /// resumes, beside those kept otherwise.
    fn adopt(&mut self, opened: Opened<F::Item>) {
        if F::RESUMES {
            self.subs.clear();
        }
        for (key, sub) in opened {
            self.subs.insert(key, sub);
        }
    }

    /// Whether a replica serving games has no stream here.
    fn missing(&self) -> bool {
        let view = self.router.view();
        view.serving()
            .iter()
            .any(|(key, _)| !self.subs.contains_key(key))
    }
}
