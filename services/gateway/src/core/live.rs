//! The games in play that anyone may watch, kept up to date for the live
//! list and the featured game ("TV").
//!
//! Each gateway keeps its own index. It starts from the games the database
//! holds in progress (the game service's ListLiveGames, any replica), then
//! follows the events of every game on every replica (WatchLiveGames,
//! opened on each and merged, following the replicas as they come and go).
//! A replica's stream that breaks is opened again, but what happened
//! meanwhile is not sent again; so the index checks itself against the
//! database again every [`RECHECK`] and whenever the merged stream has to be
//! opened anew: a game it missed is read whole (GetGame, at the replica
//! serving it), one that ended is removed. So a replica's failover costs
//! the list at most a few seconds of staleness, never a game for good.
//!
//! The featured game is the highest-ranked game in play ([`rank`]); it is
//! kept until it ends, as lichess does, and only then replaced.

use std::{cmp::Reverse, collections::HashMap, sync::Arc, time::Duration};

use chess_domain::{GameId, PlayerId, SpeedCategory};
use chess_internal_clients::EventStream;
use chess_proto::{
    common::v1::{self as common, game_event::Kind},
    game::v1 as game_pb,
};
use chess_runtime::Shutdown;
use tokio::sync::{RwLock, broadcast};
use tokio_stream::StreamExt as _;

use super::clients::Backends;

/// How often the index is checked against the database.
const RECHECK: Duration = Duration::from_secs(10);
/// How long to wait before opening the game events again after a failure.
const RETRY: Duration = Duration::from_secs(1);
/// Changes a slow subscriber may fall behind before it is cut off.
const CAPACITY: usize = 1024;

/// A side of a live game.
#[derive(Clone, Debug, PartialEq)]
pub struct LiveSide {
    pub player: common::Player,
    /// In the game's category; 0 when there is none (guest, engine, unread).
    pub rating: i32,
    pub provisional: bool,
}

/// A game in play, as the list shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct LiveGame {
    pub id: GameId,
    pub white: LiveSide,
    pub black: LiveSide,
    pub time_control: Option<common::TimeControl>,
    /// A `common::SpeedCategory`.
    pub speed: i32,
    pub rated: bool,
    pub ply: u32,
    pub fen: String,
    /// UCI; empty before the first move.
    pub last_move: String,
    pub clock: Option<common::ClockState>,
    pub spectators: u32,
    pub created_at: Option<prost_types::Timestamp>,
}

impl LiveGame {
    /// The game `state` describes, with its players' ratings still unknown.
    fn of(state: common::GameState) -> Option<Self> {
        let side = |player: Option<common::Player>| LiveSide {
            player: player.unwrap_or_default(),
            rating: 0,
            provisional: false,
        };
        Some(Self {
            id: GameId::parse(&state.game_id).ok()?,
            white: side(state.white),
            black: side(state.black),
            time_control: state.time_control,
            speed: state.speed,
            rated: state.rated,
            ply: state.ply,
            fen: state.fen,
            last_move: state
                .moves
                .last()
                .map(|m| m.uci.clone())
                .unwrap_or_default(),
            clock: state.clock,
            spectators: state.spectators,
            created_at: state.created_at,
        })
    }

    /// Whether it is a correspondence game.
    fn daily(&self) -> bool {
        self.speed == common::SpeedCategory::Correspondence as i32
    }
}

/// Registered player ids of `side`.
fn account(side: &LiveSide) -> Option<PlayerId> {
    match &side.player.kind {
        Some(common::player::Kind::Registered(r)) => PlayerId::parse(&r.player_id).ok(),
        _ => None,
    }
}

/// How games are ordered, best first: the two ratings added, then the
/// higher of the two, then the one under way longest, then by id.
pub fn rank(game: &LiveGame) -> impl Ord + use<> {
    let (white, black) = (game.white.rating, game.black.rating);
    let started = game
        .created_at
        .map_or((i64::MAX, i32::MAX), |t| (t.seconds, t.nanos));
    (
        Reverse(i64::from(white) + i64::from(black)),
        Reverse(white.max(black)),
        started,
        game.id.to_string(),
    )
}

/// The game to feature among `games`: a real-time one if there is any
/// (a correspondence game may not move for a day), the best ranked.
pub fn choose_featured<'a>(games: impl Iterator<Item = &'a LiveGame>) -> Option<&'a LiveGame> {
    games.min_by_key(|g| (g.daily(), rank(g)))
}

/// Which games a list or a stream carries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LiveFilter {
    /// A `common::SpeedCategory`; `None` for all.
    pub speed: Option<i32>,
    pub rated: Option<bool>,
}

impl LiveFilter {
    pub fn admits(&self, game: &LiveGame) -> bool {
        self.speed.is_none_or(|s| s == game.speed) && self.rated.is_none_or(|r| r == game.rated)
    }
}

/// A change of the index, as subscribers get it.
#[derive(Clone, Debug)]
pub enum LiveChange {
    Added(Arc<LiveGame>),
    /// A move, its clocks, its spectators.
    Updated(Arc<LiveGame>),
    Removed(GameId),
    /// A new featured game, or a move of the one featured.
    Featured(Option<Arc<LiveGame>>),
    /// Games in play, when it changes.
    InPlay(u32),
}

/// The index as it stands: what a list shows.
#[derive(Clone, Debug, Default)]
pub struct LiveView {
    /// Those matching the filter, best first.
    pub games: Vec<Arc<LiveGame>>,
    pub in_play: u32,
    pub featured: Option<Arc<LiveGame>>,
}

#[derive(Debug, Default)]
struct Index {
    games: HashMap<GameId, Arc<LiveGame>>,
    featured: Option<GameId>,
}

impl Index {
    fn view(&self, filter: &LiveFilter) -> LiveView {
        let mut games: Vec<Arc<LiveGame>> = self
            .games
            .values()
            .filter(|g| filter.admits(g))
            .cloned()
            .collect();
        games.sort_by_cached_key(|g| rank(g));
        LiveView {
            games,
            in_play: self.in_play(),
            featured: self.featured_game(),
        }
    }

    fn in_play(&self) -> u32 {
        u32::try_from(self.games.len()).unwrap_or(u32::MAX)
    }

    fn featured_game(&self) -> Option<Arc<LiveGame>> {
        self.featured
            .as_ref()
            .and_then(|id| self.games.get(id))
            .cloned()
    }

    /// Puts `game` in (new or changed), with the changes to announce.
    fn put(&mut self, game: LiveGame, changes: &mut Vec<LiveChange>) {
        let game = Arc::new(game);
        let old = self.games.insert(game.id.clone(), Arc::clone(&game));
        match old {
            Some(old) if *old == *game => return,
            Some(_) => changes.push(LiveChange::Updated(Arc::clone(&game))),
            None => {
                changes.push(LiveChange::Added(Arc::clone(&game)));
                changes.push(LiveChange::InPlay(self.in_play()));
            }
        }
        if self.featured.as_ref() == Some(&game.id) {
            changes.push(LiveChange::Featured(Some(game)));
        } else {
            self.feature(changes);
        }
    }

    /// Takes game `id` out (it ended).
    fn remove(&mut self, id: &GameId, changes: &mut Vec<LiveChange>) {
        if self.games.remove(id).is_none() {
            return;
        }
        changes.push(LiveChange::Removed(id.clone()));
        changes.push(LiveChange::InPlay(self.in_play()));
        if self.featured.as_ref() == Some(id) {
            self.featured = None;
        }
        self.feature(changes);
    }

    /// Chooses a featured game if none is (the last one ended, or none
    /// was in play).
    fn feature(&mut self, changes: &mut Vec<LiveChange>) {
        if self.featured.is_some() {
            return;
        }
        let chosen = choose_featured(self.games.values().map(|g| &**g)).map(|g| g.id.clone());
        if chosen.is_some() {
            self.featured = chosen;
            changes.push(LiveChange::Featured(self.featured_game()));
        } else if !changes.is_empty() {
            // The last game ended: nothing is featured now.
            changes.push(LiveChange::Featured(None));
        }
    }
}

/// The live games index: cloneable, one per gateway.
#[derive(Clone, Debug)]
pub struct LiveGames {
    index: Arc<RwLock<Index>>,
    changes: broadcast::Sender<LiveChange>,
}

impl LiveGames {
    /// Starts keeping the index, until `shutdown`.
    pub fn start(backends: Backends, shutdown: Shutdown) -> Self {
        let live = Self {
            index: Arc::default(),
            changes: broadcast::channel(CAPACITY).0,
        };
        tokio::spawn(live.clone().run(backends, shutdown));
        live
    }

    /// The games matching `filter`, best first, with the count and the
    /// featured game.
    pub async fn view(&self, filter: &LiveFilter) -> LiveView {
        self.index.read().await.view(filter)
    }

    /// The index now and every change after it, with nothing between.
    pub async fn subscribe(
        &self,
        filter: &LiveFilter,
    ) -> (LiveView, broadcast::Receiver<LiveChange>) {
        let index = self.index.read().await;
        (index.view(filter), self.changes.subscribe())
    }

    async fn apply(&self, edit: impl FnOnce(&mut Index, &mut Vec<LiveChange>)) {
        let mut index = self.index.write().await;
        let mut changes = Vec::new();
        edit(&mut index, &mut changes);
        for change in changes {
            // Nobody subscribed is fine.
            let _ = self.changes.send(change);
        }
    }

    async fn run(self, backends: Backends, shutdown: Shutdown) {
        loop {
            let events = tokio::select! {
                events = backends.game.watch_live_games() => events,
                () = shutdown.cancelled() => return,
            };
            match events {
                Ok(events) => {
                    self.recheck(&backends).await;
                    if self.follow(&backends, events, &shutdown).await {
                        return;
                    }
                }
                Err(status) => {
                    tracing::debug!(error = status.message(), "cannot follow the live games yet");
                }
            }
            tokio::select! {
                () = tokio::time::sleep(RETRY) => {}
                () = shutdown.cancelled() => return,
            }
        }
    }

    /// Applies `events` until they end (false) or the gateway stops (true),
    /// checking against the database every [`RECHECK`].
    async fn follow(
        &self,
        backends: &Backends,
        mut events: EventStream<game_pb::WatchLiveGamesResponse>,
        shutdown: &Shutdown,
    ) -> bool {
        let mut recheck = tokio::time::interval(RECHECK);
        recheck.reset();
        loop {
            tokio::select! {
                next = events.next() => match next {
                    Some(Ok(message)) => {
                        if let Some(event) = message.event {
                            self.on_event(backends, event).await;
                        }
                    }
                    Some(Err(status)) => {
                        tracing::debug!(error = status.message(), "the live games' events broke; opening them again");
                        return false;
                    }
                    None => return false,
                },
                _ = recheck.tick() => self.recheck(backends).await,
                () = shutdown.cancelled() => return true,
            }
        }
    }

    async fn on_event(&self, backends: &Backends, event: common::GameEvent) {
        let Ok(id) = GameId::parse(&event.game_id) else {
            return;
        };
        match event.kind {
            Some(Kind::GameStarted(started)) => {
                if let Some(state) = started.game {
                    self.add(backends, state).await;
                }
            }
            Some(Kind::MoveMade(made)) => {
                let known = self.index.read().await.games.get(&id).cloned();
                let Some(known) = known else {
                    // Started before this index knew of it: read it whole.
                    self.read_game(backends, &id).await;
                    return;
                };
                if event.ply <= known.ply {
                    return;
                }
                let mut game = (*known).clone();
                game.ply = event.ply;
                game.fen = made.fen;
                game.last_move = made.r#move.map(|m| m.uci).unwrap_or_default();
                game.clock = event.clock;
                self.apply(|index, changes| index.put(game, changes)).await;
            }
            Some(Kind::GameEnded(_)) => {
                self.apply(|index, changes| index.remove(&id, changes))
                    .await;
            }
            Some(Kind::SpectatorsChanged(seen)) => {
                self.apply(|index, changes| {
                    if let Some(known) = index.games.get(&id) {
                        let mut game = (**known).clone();
                        game.spectators = seen.spectators;
                        index.put(game, changes);
                    }
                })
                .await;
            }
            _ => {}
        }
    }

    /// Adds the game `state` describes, with its players' ratings.
    async fn add(&self, backends: &Backends, state: common::GameState) {
        if state.status != common::GameStatus::Active as i32 {
            return;
        }
        let Some(mut game) = LiveGame::of(state) else {
            return;
        };
        rate(backends, &mut game).await;
        self.apply(|index, changes| {
            // What the index holds already (say, a spectator count) stands.
            if let Some(known) = index.games.get(&game.id) {
                game.spectators = known.spectators;
                if known.ply > game.ply {
                    return;
                }
            }
            index.put(game, changes);
        })
        .await;
    }

    /// Reads game `id` from the replica serving it, and adds it.
    async fn read_game(&self, backends: &Backends, id: &GameId) {
        let request = game_pb::GetGameRequest {
            game_id: id.to_string(),
        };
        match backends.game.for_game(id).get_game(request).await {
            Ok(response) => {
                if let Some(state) = response.into_inner().game {
                    self.add(backends, state).await;
                }
            }
            Err(status) => {
                tracing::debug!(game_id = %id, error = status.message(), "a live game could not be read");
            }
        }
    }

    /// Checks the index against the games in progress in the database.
    async fn recheck(&self, backends: &Backends) {
        let stored = match backends.game.list_live_games().await {
            Ok(stored) => stored,
            Err(status) => {
                tracing::debug!(
                    error = status.message(),
                    "the live games could not be checked"
                );
                return;
            }
        };
        let stored: HashMap<GameId, common::GameState> = stored
            .into_iter()
            .filter_map(|s| Some((GameId::parse(&s.game_id).ok()?, s)))
            .collect();
        let (gone, missed): (Vec<GameId>, Vec<GameId>) = {
            let index = self.index.read().await;
            let gone = index
                .games
                .keys()
                .filter(|id| !stored.contains_key(*id))
                .cloned()
                .collect();
            let missed = stored
                .iter()
                .filter(|(id, s)| index.games.get(*id).is_none_or(|g| g.ply < s.ply))
                .map(|(id, _)| id.clone())
                .collect();
            (gone, missed)
        };
        self.apply(|index, changes| {
            for id in &gone {
                index.remove(id, changes);
            }
        })
        .await;
        for id in missed {
            match stored.get(&id) {
                // Not moved yet: the stored row is the whole of it.
                Some(state) if state.ply == 0 => self.add(backends, state.clone()).await,
                _ => self.read_game(backends, &id).await,
            }
        }
    }
}

/// Fills in the ratings of `game`'s registered players in its category.
async fn rate(backends: &Backends, game: &mut LiveGame) {
    let Ok(category) = SpeedCategory::try_from(game.speed) else {
        return;
    };
    if !category.is_rated() {
        return;
    }
    let ids: Vec<PlayerId> = [&game.white, &game.black]
        .into_iter()
        .filter_map(account)
        .collect();
    if ids.is_empty() {
        return;
    }
    match backends.rating.ratings(ids, category).await {
        Ok(ratings) => {
            for side in [&mut game.white, &mut game.black] {
                let Some(id) = account(side) else { continue };
                if let Some((_, rating)) = ratings.iter().find(|(p, _)| *p == id) {
                    side.rating = rating.rating.round() as i32;
                    side.provisional = rating.provisional;
                }
            }
        }
        Err(status) => {
            tracing::debug!(game_id = %game.id, error = status.message(), "live game without ratings");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn game(id: &str, white: i32, black: i32, speed: common::SpeedCategory) -> LiveGame {
        let side = |rating| LiveSide {
            player: common::Player::default(),
            rating,
            provisional: false,
        };
        LiveGame {
            id: GameId::trusted(id),
            white: side(white),
            black: side(black),
            time_control: None,
            speed: speed as i32,
            rated: white > 0,
            ply: 0,
            fen: String::new(),
            last_move: String::new(),
            clock: None,
            spectators: 0,
            created_at: Some(prost_types::Timestamp {
                seconds: i64::from(id.as_bytes()[0]),
                nanos: 0,
            }),
        }
    }

    use common::SpeedCategory::{Blitz, Correspondence, Rapid, Untimed};

    #[test]
    fn games_are_ranked_by_both_ratings_then_the_higher_then_age() {
        let mut games = [
            game("a", 1500, 1500, Blitz),
            game("b", 1800, 1200, Blitz),
            game("c", 1600, 1500, Rapid),
            game("d", 0, 0, Untimed),
            game("e", 1500, 1500, Blitz),
        ];
        games.sort_by_key(rank);
        let order: Vec<&str> = games.iter().map(|g| g.id.as_str()).collect();
        // c: 3100; b: 3000 with a 1800; a and e: 3000, a began first.
        assert_eq!(order, ["c", "b", "a", "e", "d"]);
    }

    #[test]
    fn the_featured_game_is_a_real_time_one_when_there_is_any() {
        let games = [
            game("a", 2000, 2000, Correspondence),
            game("b", 1200, 1200, Blitz),
        ];
        assert_eq!(choose_featured(games.iter()).unwrap().id.as_str(), "b");
        assert_eq!(choose_featured(games[..1].iter()).unwrap().id.as_str(), "a");
        assert!(choose_featured([].iter()).is_none());
    }

    #[test]
    fn the_featured_game_stays_until_it_ends() {
        let mut index = Index::default();
        let mut changes = Vec::new();
        index.put(game("a", 1200, 1200, Blitz), &mut changes);
        assert_eq!(index.featured.as_ref().map(GameId::as_str), Some("a"));
        // A higher game starting does not take the board…
        index.put(game("b", 1900, 1900, Blitz), &mut changes);
        assert_eq!(index.featured.as_ref().map(GameId::as_str), Some("a"));
        // …until the featured one ends.
        changes.clear();
        index.remove(&GameId::trusted("a"), &mut changes);
        assert_eq!(index.featured.as_ref().map(GameId::as_str), Some("b"));
        assert!(matches!(&changes[..], [
            LiveChange::Removed(_),
            LiveChange::InPlay(1),
            LiveChange::Featured(Some(g)),
        ] if g.id.as_str() == "b"));
        changes.clear();
        index.remove(&GameId::trusted("b"), &mut changes);
        assert!(index.featured.is_none());
        assert!(matches!(changes.last(), Some(LiveChange::Featured(None))));
    }

    #[test]
    fn a_move_of_the_featured_game_is_told_as_featured_too() {
        let mut index = Index::default();
        let mut changes = Vec::new();
        index.put(game("a", 1200, 1200, Blitz), &mut changes);
        changes.clear();
        let mut moved = game("a", 1200, 1200, Blitz);
        moved.ply = 1;
        index.put(moved, &mut changes);
        assert!(
            matches!(&changes[..], [LiveChange::Updated(_), LiveChange::Featured(Some(g))] if g.ply == 1)
        );
        // The same state again changes nothing.
        changes.clear();
        let mut same = game("a", 1200, 1200, Blitz);
        same.ply = 1;
        index.put(same, &mut changes);
        assert!(changes.is_empty());
    }

    #[test]
    fn the_filter_takes_speed_and_rated() {
        let mut index = Index::default();
        let mut changes = Vec::new();
        index.put(game("a", 1200, 1200, Blitz), &mut changes);
        index.put(game("b", 1300, 1300, Rapid), &mut changes);
        index.put(game("d", 0, 0, Untimed), &mut changes);
        let ids = |filter: LiveFilter| -> Vec<String> {
            index
                .view(&filter)
                .games
                .iter()
                .map(|g| g.id.to_string())
                .collect()
        };
        assert_eq!(ids(LiveFilter::default()), ["b", "a", "d"]);
        let blitz = LiveFilter {
            speed: Some(Blitz as i32),
            rated: None,
        };
        assert_eq!(ids(blitz), ["a"]);
        let casual = LiveFilter {
            speed: None,
            rated: Some(false),
        };
        assert_eq!(ids(casual), ["d"]);
        assert_eq!(index.view(&blitz).in_play, 3);
    }
}
