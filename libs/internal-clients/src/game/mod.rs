//! The game service: creating games, the calls about one game or many,
//! and the event streams, wherever the games are served.
//!
//! The service may run as several replicas, each serving the games of some
//! of the shards games are spread over (`chess_shards::shard_of`). Callers
//! never see that: every call made through a [`GameClient`] goes to the
//! replica serving its game, and the event streams follow games across
//! replicas. What lives where:
//!
//! - `mod.rs` (here): [`GameClient`], the generated clients it hands out
//!   ([`GameRpc`]), the typed calls, and [`NewGame`].
//! - [`chess_shards::map`]: the shard map (`GetShardMap`), checked once so that finding a
//!   shard's owner is an index.
//! - `router`: the map kept fresh, one channel per replica, and
//!   [`Routed`], the channel under the generated client that sends each
//!   call to its game's replica and follows refusals (FAILED_PRECONDITION
//!   naming the owner, UNAVAILABLE while a shard moves:
//!   [`chess_shards::routing`]). A call that cannot be routed, or whose
//!   replica cannot be reached, fails UNAVAILABLE and is not sent again:
//!   it may have been done.
//! - `moves`: moves sent over PlayMoves, one long-lived stream per replica
//!   shared by every clone of the client ([`GameClient::make_move`]), a
//!   message each way instead of a call each.
//! - `merge`: WatchPlayer and WatchDailyGames, which each replica answers
//!   for its own games, opened on every replica and merged.
//! - `watch`: WatchGame followed across a move of its game or the death of
//!   its replica, and what keeps a stream opened again from repeating
//!   itself.
//!
//! With one replica (the default, on SQLite) the map says it serves every
//! shard, every call goes where it went before, and each stream is the one
//! stream there is; the cost per call is a read lock and a copy of the
//! request's few bytes, which a refusal needs to send it again.
//!
//! Each redirect, each read of the map, and each stream opened again is
//! logged at `debug` (`--log-filter info,chess_internal_clients=debug`);
//! a changed map at `info`.

mod merge;
mod moves;
mod router;
mod watch;

use std::{pin::Pin, sync::Arc};

use chess_domain::{GameId, PlayerId, RuleSet, TimeControl};
use chess_proto::{
    common::v1 as common,
    game::v1::{self as pb, game_service_client::GameServiceClient},
};
use chess_runtime::{Channel, Signer, identity::Mint};
use chess_shards::routing;
use futures::Stream;
use tonic::{Status, service::interceptor::InterceptedService};

pub use moves::refusal_of;
pub use router::Routed;
use router::{Endpoint, Router, Target};
pub use watch::ChatRooms;

use crate::{CALL_TIMEOUT, timed, within};

/// The generated client of the game service, each call routed to the
/// replica serving its game and signed.
pub type GameRpc = GameServiceClient<InterceptedService<Routed, Mint>>;

/// A stream of events, followed across the replicas of the game service.
pub type EventStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// A game to create.
#[derive(Clone, Debug)]
pub struct NewGame {
    pub white: common::Player,
    pub black: common::Player,
    pub time_control: TimeControl,
    pub rules: RuleSet,
    pub rated: bool,
    pub allow_hints: bool,
    /// The starting position; `None` for the standard one.
    pub initial_fen: Option<String>,
    /// Names the game: creating it again with the same key returns the
    /// first one instead of a second game.
    pub idempotency_key: Option<String>,
}

impl NewGame {
    /// A casual game of standard chess from the usual start: untimed unless
    /// `time_control` says otherwise.
    pub fn casual(white: common::Player, black: common::Player, time_control: TimeControl) -> Self {
        Self {
            white,
            black,
            time_control,
            rules: RuleSet::Standard,
            rated: false,
            allow_hints: false,
            initial_fen: None,
            idempotency_key: None,
        }
    }

    /// A game of the uqchess protocol: untimed, unrated, its own rules, and
    /// hints allowed, as the protocol has them.
    pub fn uqchess(white: common::Player, black: common::Player) -> Self {
        Self {
            rules: RuleSet::Uqchess,
            allow_hints: true,
            ..Self::casual(white, black, TimeControl::Untimed)
        }
    }

    fn into_request(self) -> pb::CreateGameRequest {
        pb::CreateGameRequest {
            white: Some(self.white),
            black: Some(self.black),
            time_control: Some(self.time_control.into()),
            rules: common::RuleSet::from(self.rules) as i32,
            rated: self.rated,
            allow_hints: self.allow_hints,
            initial_fen: self.initial_fen.unwrap_or_default(),
            idempotency_key: self.idempotency_key.unwrap_or_default(),
        }
    }
}

/// The game service, on however many replicas.
#[derive(Clone, Debug)]
pub struct GameClient {
    router: Arc<Router>,
    signer: Signer,
    lanes: Arc<moves::Lanes>,
}

impl GameClient {
    /// Calls over `channel` (to any replica of the service), each signed
    /// by `signer`.
    pub fn new(channel: Channel, signer: Signer) -> Self {
        let router = Router::new(vec![Endpoint::new("", channel)], signer.clone());
        Self::over(router, signer)
    }

    /// A client of the game service at `addrs`: one address, or several
    /// separated by commas, of replicas that tell where the others are.
    /// Connected on first use.
    pub fn connect(addrs: &str, signer: Signer) -> Result<Self, chess_runtime::client::Error> {
        let mut bootstrap = Vec::new();
        for addr in addrs.split(',').map(str::trim).filter(|a| !a.is_empty()) {
            bootstrap.push(Endpoint::new(addr, chess_runtime::channel(addr)?));
        }
        if bootstrap.is_empty() {
            return Err(chess_runtime::client::Error::Address(addrs.to_owned()));
        }
        let router = Router::new(bootstrap, signer.clone());
        Ok(Self::over(router, signer))
    }

    fn over(router: Arc<Router>, signer: Signer) -> Self {
        Self {
            router,
            signer,
            lanes: Arc::default(),
        }
    }

    fn client(&self, target: Target, player: Option<&str>, game: Option<&str>) -> GameRpc {
        let routed = Routed::new(Arc::clone(&self.router), target);
        GameServiceClient::new(InterceptedService::new(
            routed,
            self.signer.bound(player, game),
        ))
    }

    /// The replica that serves game `game_id`, for calls that read it:
    /// each call's assertion names the game and no player.
    pub fn for_game(&self, game_id: &GameId) -> GameRpc {
        let shard = chess_shards::shard_of(game_id.as_str());
        self.client(Target::Shard(shard), None, Some(game_id.as_str()))
    }

    /// The replica that serves game `game_id`, for calls that act for
    /// `player_id` in it (moves, resigning, draws, hints): each call's
    /// assertion names both, and the service refuses any other pair.
    pub fn acting(&self, player_id: &PlayerId, game_id: &GameId) -> GameRpc {
        let shard = chess_shards::shard_of(game_id.as_str());
        self.client(
            Target::Shard(shard),
            Some(player_id.as_str()),
            Some(game_id.as_str()),
        )
    }

    /// Any replica, for calls across games that act for `player_id`:
    /// their list of games. Their events: [`Self::watch_player`].
    pub fn for_player(&self, player_id: &PlayerId) -> GameRpc {
        self.client(Target::Any, Some(player_id.as_str()), None)
    }

    /// Any replica, for calls across games for nobody in particular
    /// (creating a game). The daily games' events:
    /// [`Self::watch_daily_games`].
    pub fn across_games(&self) -> GameRpc {
        self.client(Target::Any, None, None)
    }

    /// Creates `game` and returns it as the game service sees it.
    pub async fn create_game(&self, game: NewGame) -> Result<common::GameState, Status> {
        let request = timed(game.into_request(), CALL_TIMEOUT);
        within(
            "game",
            CALL_TIMEOUT,
            self.across_games().create_game(request),
        )
        .await?
        .game
        .ok_or_else(|| Status::internal("the game service sent no game"))
    }

    /// Makes a move (MakeMove) for `request.player_id` in `request.game_id`,
    /// sent with the moves of every other caller of this client over one
    /// stream per replica (PlayMoves), and answered as MakeMove answers.
    /// Fails as MakeMove would, after at most [`CALL_TIMEOUT`].
    pub async fn make_move(
        &self,
        request: pb::MakeMoveRequest,
    ) -> Result<pb::MakeMoveResponse, Status> {
        let shard = chess_shards::shard_of(&request.game_id);
        let endpoint = self.router.endpoint_for(Target::Shard(shard));
        let assertion = self
            .signer
            .mint(Some(&request.player_id), Some(&request.game_id))?;
        let answer = self
            .lanes
            .make_move(&endpoint, &self.signer, assertion, request.clone())
            .await;
        match answer {
            Err(status) if routing::redirect(status.code(), status.metadata()).is_some() => {
                // Refused before anything was done, by a replica that does
                // not serve the game now: the routed call follows it.
                let mut game = self.client(
                    Target::Shard(shard),
                    Some(&request.player_id),
                    Some(&request.game_id),
                );
                within(
                    "game",
                    CALL_TIMEOUT,
                    game.make_move(timed(request, CALL_TIMEOUT)),
                )
                .await
            }
            answer => answer,
        }
    }

    /// Resigns `player_id`'s side of `game_id`.
    pub async fn resign(&self, game_id: &GameId, player_id: &PlayerId) -> Result<(), Status> {
        let request = timed(
            pb::ResignRequest {
                game_id: game_id.to_string(),
                player_id: player_id.to_string(),
            },
            CALL_TIMEOUT,
        );
        within(
            "game",
            CALL_TIMEOUT,
            self.acting(player_id, game_id).resign(request),
        )
        .await?;
        Ok(())
    }

    /// The events of game `game_id` (WatchGame; `from_ply` as
    /// WatchGameRequest has it), followed across replicas: when its stream
    /// ends before the game does, or breaks, it is opened again after the
    /// last ply forwarded, for up to 10 s. Ends after the game's end.
    pub async fn watch_game(
        &self,
        game_id: &GameId,
        from_ply: Option<u32>,
    ) -> Result<EventStream<pb::WatchGameResponse>, Status> {
        watch::watch_game(
            self.clone(),
            game_id.clone(),
            from_ply,
            None,
            String::new(),
            None,
        )
        .await
    }

    /// The events of game `game_id` as [`Self::watch_game`] follows them,
    /// for `watcher`: counted among the game's spectators unless it is one
    /// of its players.
    pub async fn watch_game_by(
        &self,
        game_id: &GameId,
        from_ply: Option<u32>,
        watcher: &PlayerId,
    ) -> Result<EventStream<pb::WatchGameResponse>, Status> {
        watch::watch_game(
            self.clone(),
            game_id.clone(),
            from_ply,
            None,
            watcher.to_string(),
            None,
        )
        .await
    }

    /// The events of game `game_id` as [`Self::watch_game`] follows them,
    /// for the player of side `me`: its own moves come in the catch-up
    /// after `from_ply` but not live, since its MakeMove answers tell it
    /// of them.
    pub async fn watch_game_as(
        &self,
        game_id: &GameId,
        from_ply: Option<u32>,
        me: chess_domain::Color,
    ) -> Result<EventStream<pb::WatchGameResponse>, Status> {
        watch::watch_game(
            self.clone(),
            game_id.clone(),
            from_ply,
            Some(me),
            String::new(),
            None,
        )
        .await
    }

    /// The events of game `game_id` as [`Self::watch_game`] follows them,
    /// with its chat: the lines of `chat.rooms` changed after
    /// `chat.from_revision` first, then live ones; followed across
    /// replicas from the last line forwarded, and on after the game's end;
    /// for `watcher` (empty: unknown), as [`Self::watch_game_by`].
    pub async fn watch_game_with_chat(
        &self,
        game_id: &GameId,
        from_ply: Option<u32>,
        watcher: String,
        chat: ChatRooms,
    ) -> Result<EventStream<pb::WatchGameResponse>, Status> {
        watch::watch_game(
            self.clone(),
            game_id.clone(),
            from_ply,
            None,
            watcher,
            Some(chat),
        )
        .await
    }

    /// The events of every game of `player_id` (WatchPlayer; `resume` and
    /// `cursors` as WatchPlayerRequest has them), from every replica
    /// serving games, merged; a replica's stream that breaks is opened
    /// again resuming after what was forwarded. Fails as the first replica
    /// refuses; ends with UNAVAILABLE if it cannot be followed again
    /// within 10 s.
    pub async fn watch_player(
        &self,
        player_id: &PlayerId,
        resume: bool,
        cursors: Vec<common::GameCursor>,
    ) -> Result<EventStream<pb::WatchPlayerResponse>, Status> {
        let feed = merge::PlayerFeed {
            signer: self.signer.clone(),
            player_id: player_id.clone(),
        };
        merge::open(Arc::clone(&self.router), feed, resume.then_some(cursors)).await
    }

    /// The events of every daily game (WatchDailyGames), from every replica
    /// serving games, merged; what is missed while a replica's stream is
    /// opened again is not sent. Ends with UNAVAILABLE if it cannot be
    /// followed again within 10 s.
    pub async fn watch_daily_games(
        &self,
    ) -> Result<EventStream<pb::WatchDailyGamesResponse>, Status> {
        let feed = merge::DailyFeed {
            signer: self.signer.clone(),
        };
        merge::open(Arc::clone(&self.router), feed, None).await
    }

    /// The events of every game (WatchLiveGames), from every replica
    /// serving games, merged as [`Self::watch_daily_games`] merges its
    /// own: what is missed while a replica's stream is opened again is not
    /// sent, so a caller checks itself against [`Self::list_live_games`].
    pub async fn watch_live_games(
        &self,
    ) -> Result<EventStream<pb::WatchLiveGamesResponse>, Status> {
        let feed = merge::LiveFeed {
            signer: self.signer.clone(),
        };
        merge::open(Arc::clone(&self.router), feed, None).await
    }

    /// Every game in progress as committed (ListLiveGames), from any
    /// replica.
    pub async fn list_live_games(&self) -> Result<Vec<common::GameState>, Status> {
        let request = timed(pb::ListLiveGamesRequest {}, CALL_TIMEOUT);
        Ok(within(
            "game",
            CALL_TIMEOUT,
            self.across_games().list_live_games(request),
        )
        .await?
        .games)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uqchess_game_is_untimed_unrated_with_hints() {
        let white = chess_domain::guest_player("g1", "");
        let black = chess_domain::engine_player(chess_domain::FULL_STRENGTH);
        let request = NewGame::uqchess(white.clone(), black.clone()).into_request();
        assert_eq!(request.white, Some(white));
        assert_eq!(request.black, Some(black));
        assert_eq!(request.rules, common::RuleSet::Uqchess as i32);
        assert!(!request.rated);
        assert!(request.allow_hints);
        assert_eq!(request.time_control, Some(TimeControl::Untimed.into()));
        assert!(request.initial_fen.is_empty());
        assert!(request.idempotency_key.is_empty());
    }

    #[test]
    fn a_key_and_a_position_are_passed_on() {
        let player = chess_domain::registered_player("p1", "ann");
        let game = NewGame {
            rated: true,
            initial_fen: Some("8/8/8/8/8/8/8/K1k5 w - - 0 1".to_owned()),
            idempotency_key: Some("seek:1".to_owned()),
            ..NewGame::casual(player.clone(), player, TimeControl::Untimed)
        };
        let request = game.into_request();
        assert_eq!(request.rules, common::RuleSet::Standard as i32);
        assert!(request.rated);
        assert_eq!(request.initial_fen, "8/8/8/8/8/8/8/K1k5 w - - 0 1");
        assert_eq!(request.idempotency_key, "seek:1");
    }
}
