//! The gRPC face of the service: requests are checked and converted here
//! (with [`crate::convert`]), then handed to the core, the registry of
//! game actors. The watchers' streams are in `api/watch.rs`, a player's
//! history in `api/history.rs`, and whom a
//! request acts for is checked in `api/seat.rs`; PlayMoves'
//! flow of many moves over one stream is [`crate::relay`], which this
//! feeds the stream's messages and answers. The chat calls, and the chat
//! parts of the streams, are in `api/chat.rs`.

use std::sync::Arc;

use chess_domain::{GameId, GameStatus, Participant, PlayerId, RuleSet, TimeControl, require};
use chess_internal_clients::game;
use chess_proto::{
    common::v1 as common,
    game::v1::{self as pb, game_service_server::GameService},
};
use chess_runtime::{Claims, InternalKey, Reason, identity};
use tokio_stream::{StreamExt as _, wrappers::ReceiverStream};
use tonic::{Code, Request, Response, Status, Streaming};
use tracing::{Instrument as _, instrument};

use crate::{
    convert,
    error::Error,
    model::{Game, GameSetup, pgn},
    registry::{Acted, Action, HintKind, Registry},
    relay,
    store::ListFilter,
};

mod chat;
mod history;
mod seat;
mod watch;

use seat::{check_seat, known_game, players_own};
use watch::{ChatSent, EventStream, Sent, Watch, forward};

/// What a method answers, before the service wraps it in a response.
type Answer<T> = Result<T, Status>;

/// Implements `chess.game.v1.GameService`.
#[derive(Debug)]
pub struct GameApi {
    registry: Arc<Registry>,
    /// Shown in PGN `Site` tags.
    site: String,
    /// Checks the assertions PlayMoves' messages carry.
    key: InternalKey,
    /// Each game's live chat lines.
    chat: crate::chat::ChatFeed,
}

impl GameApi {
    pub fn new(registry: Arc<Registry>, site: String, key: InternalKey) -> Self {
        Self {
            registry,
            site,
            key,
            chat: crate::chat::ChatFeed::default(),
        }
    }

    fn now(&self) -> chess_domain::Timestamp {
        self.registry.context().time.now()
    }

    /// The game `game_id` names, as its actor has it.
    async fn viewed(&self, game_id: &str) -> Answer<Game> {
        require("game_id", game_id).map_err(Error::from)?;
        Ok(self.registry.view(&known_game(game_id)?).await?)
    }

    /// Runs `action` for the player and in the game `request` names, if
    /// the caller's assertion acts for that player in that game.
    async fn act_on<R: PlayerAction>(
        &self,
        request: Request<R>,
        action: Action,
    ) -> Result<Acted, Status> {
        let claims = Claims::of(&request)?;
        let (game_id, player_id) = request.get_ref().ids();
        act(&self.registry, &claims, game_id, player_id, action).await
    }

    /// [`Self::act_on`], for an action that may end the game: the ending,
    /// as sent.
    async fn end_on<R: PlayerAction>(
        &self,
        request: Request<R>,
        action: Action,
    ) -> Result<Option<common::GameEnded>, Status> {
        let acted = self.act_on(request, action).await?;
        Ok(convert::ended_among(&acted.events))
    }

    /// Creates and starts a game, or returns the one made earlier with the
    /// same idempotency key.
    async fn create(&self, request: pb::CreateGameRequest) -> Result<Game, Error> {
        let setup = GameSetup {
            white: Participant::from_pb(request.white.as_ref())?,
            black: Participant::from_pb(request.black.as_ref())?,
            time_control: TimeControl::try_from(request.time_control.as_ref())?,
            rules: RuleSet::try_from(request.rules)?,
            rated: request.rated,
            allow_hints: request.allow_hints,
            initial_fen: Some(request.initial_fen).filter(|f| !f.is_empty()),
        };
        let key = Some(request.idempotency_key).filter(|k| !k.is_empty());
        self.registry.create_game(setup, key).await
    }
}

/// Runs `action` for `player_id` in `game_id`, if `claims` act for that
/// player in that game.
async fn act(
    registry: &Arc<Registry>,
    claims: &Claims,
    game_id: &str,
    player_id: &str,
    action: Action,
) -> Result<Acted, Status> {
    let (game, player) = check_seat(claims, game_id, player_id)?;
    Ok(registry.act(&game, &player, action).await?)
}

/// MakeMove, once the caller's claims are known: over its own call or
/// over PlayMoves.
pub(crate) async fn make_move(
    registry: &Arc<Registry>,
    claims: &Claims,
    request: pb::MakeMoveRequest,
) -> Result<pb::MakeMoveResponse, Status> {
    let pb::MakeMoveRequest {
        game_id,
        player_id,
        r#move,
        ply,
    } = request;
    if r#move.is_empty() || r#move.len() > 16 {
        return Err(Error::Invalid("move must be 1 to 16 characters".to_owned()).into());
    }
    let action = Action::Move { input: r#move, ply };
    let acted = act(registry, claims, &game_id, &player_id, action).await?;
    Ok(pb::MakeMoveResponse {
        move_made: convert::move_made_among(&acted.events),
        game_ended: convert::ended_among(&acted.events),
        clock: Some(convert::clock(&acted.clock, acted.timed)),
        ply: acted.ply,
    })
}

/// One move of a PlayMoves stream, checked and done as a MakeMove call
/// would be, and its answer.
async fn play(
    registry: &Arc<Registry>,
    key: &InternalKey,
    request: pb::PlayMovesRequest,
) -> pb::PlayMovesResponse {
    let pb::PlayMovesRequest {
        id,
        assertion,
        r#move,
        trace_context,
    } = request;
    let span = chess_telemetry::span_from("GameService/PlayMoves.move", &trace_context);
    let answer = async {
        let claims = identity::verify_now(key, &assertion)?;
        let request = r#move.ok_or_else(|| Error::Invalid("move must be given".to_owned()))?;
        make_move(registry, &claims, request).await
    }
    .instrument(span)
    .await;
    let result = match answer {
        Ok(made) => pb::play_moves_response::Result::Made(made),
        Err(status) => pb::play_moves_response::Result::Refused(game::refusal_of(&status)),
    };
    pb::PlayMovesResponse {
        id,
        result: Some(result),
    }
}

/// A request to act for a player in a game.
trait PlayerAction {
    /// The game, and the player acted for.
    fn ids(&self) -> (&str, &str);
}

macro_rules! player_actions {
    ($($request:ty),* $(,)?) => {
        $(impl PlayerAction for $request {
            fn ids(&self) -> (&str, &str) {
                (&self.game_id, &self.player_id)
            }
        })*
    };
}

player_actions!(
    pb::ResignRequest,
    pb::OfferDrawRequest,
    pb::AcceptDrawRequest,
    pb::DeclineDrawRequest,
    pb::ClaimDrawRequest,
    pb::AbortRequest,
    pb::ProposeTakebackRequest,
    pb::AcceptTakebackRequest,
    pb::DeclineTakebackRequest,
    pb::CancelTakebackRequest,
);

/// The methods written out, and the answers of those that read a game (see
/// [`game_service!`] below for the rest).
impl GameApi {
    #[instrument(level = "debug", skip_all)]
    async fn create_game(
        &self,
        request: Request<pb::CreateGameRequest>,
    ) -> Answer<pb::CreateGameResponse> {
        // Games are created for players by the lobby and the gateway only.
        Claims::of(&request)?.check_caller(&["gateway", "matchmaking"])?;
        let game = self.create(request.into_inner()).await?;
        Ok(pb::CreateGameResponse {
            game: Some(convert::game_state(&game, self.now(), true)),
        })
    }

    fn get_game(&self, game: &Game) -> pb::GetGameResponse {
        pb::GetGameResponse {
            game: Some(convert::game_state(game, self.now(), true)),
        }
    }

    #[instrument(level = "debug", skip_all, fields(game_id = %request.get_ref().game_id))]
    async fn make_move(
        &self,
        request: Request<pb::MakeMoveRequest>,
    ) -> Answer<pb::MakeMoveResponse> {
        make_move(&self.registry, &Claims::of(&request)?, request.into_inner()).await
    }

    async fn play_moves(
        &self,
        request: Request<Streaming<pb::PlayMovesRequest>>,
    ) -> Answer<EventStream<pb::PlayMovesResponse>> {
        // Each move's own assertion is checked as it is done.
        Claims::of(&request)?;
        let (registry, key) = (Arc::clone(&self.registry), self.key.clone());
        // A message that cannot be read ends the reading, as the end of the
        // stream does: the moves already read are still answered.
        let moves = request.into_inner().map_while(Result::ok);
        let answers = relay::serve(
            self.registry.context().shutdown.clone(),
            moves,
            move |request| {
                let (registry, key) = (Arc::clone(&registry), key.clone());
                async move { Ok(play(&registry, &key, request).await) }
            },
        );
        Ok(Box::pin(ReceiverStream::new(answers)))
    }

    #[instrument(level = "debug", skip_all, fields(game_id = %request.get_ref().game_id))]
    async fn decline_draw(
        &self,
        request: Request<pb::DeclineDrawRequest>,
    ) -> Answer<pb::DeclineDrawResponse> {
        let acted = self.act_on(request, Action::DeclineDraw).await?;
        Ok(pb::DeclineDrawResponse {
            offered_by: chess_domain::color_to_pb(!acted.side) as i32,
        })
    }

    #[instrument(level = "debug", skip_all, fields(game_id = %request.get_ref().game_id))]
    async fn propose_takeback(
        &self,
        request: Request<pb::ProposeTakebackRequest>,
    ) -> Answer<pb::ProposeTakebackResponse> {
        let acted = self.act_on(request, Action::ProposeTakeback).await?;
        Ok(pb::ProposeTakebackResponse {
            offered: convert::takeback_offered_among(&acted.events),
            taken_back: self.taken_back(&acted),
        })
    }

    #[instrument(level = "debug", skip_all, fields(game_id = %request.get_ref().game_id))]
    async fn accept_takeback(
        &self,
        request: Request<pb::AcceptTakebackRequest>,
    ) -> Answer<pb::AcceptTakebackResponse> {
        let acted = self.act_on(request, Action::AcceptTakeback).await?;
        Ok(pb::AcceptTakebackResponse {
            taken_back: self.taken_back(&acted),
        })
    }

    #[instrument(level = "debug", skip_all, fields(game_id = %request.get_ref().game_id))]
    async fn decline_takeback(
        &self,
        request: Request<pb::DeclineTakebackRequest>,
    ) -> Answer<pb::DeclineTakebackResponse> {
        self.act_on(request, Action::DeclineTakeback).await?;
        Ok(pb::DeclineTakebackResponse {})
    }

    #[instrument(level = "debug", skip_all, fields(game_id = %request.get_ref().game_id))]
    async fn cancel_takeback(
        &self,
        request: Request<pb::CancelTakebackRequest>,
    ) -> Answer<pb::CancelTakebackResponse> {
        self.act_on(request, Action::CancelTakeback).await?;
        Ok(pb::CancelTakebackResponse {})
    }

    /// The takeback an action made, as sent.
    fn taken_back(&self, acted: &Acted) -> Option<common::TakenBack> {
        let game = acted.taken_back.as_deref()?;
        convert::taken_back_among(game, &acted.events, self.now())
    }

    #[instrument(level = "debug", skip_all, fields(player_id = %request.get_ref().player_id))]
    async fn list_games(
        &self,
        request: Request<pb::ListGamesRequest>,
    ) -> Answer<pb::ListGamesResponse> {
        let (r, player) = players_own(request, |r| &r.player_id)?;
        let filter = match pb::GameFilter::try_from(r.filter) {
            Ok(pb::GameFilter::Active) => ListFilter::Active,
            Ok(pb::GameFilter::Finished) => ListFilter::Finished,
            _ => ListFilter::All,
        };
        let page_size = match r.page_size {
            0 => 20,
            n => u64::from(n.min(100)),
        };
        let ctx = self.registry.context();
        let (rows, next_page_token) = ctx
            .store
            .list(&player, filter, page_size, &r.page_token)
            .await
            .map_err(Error::from)?;
        let now = self.now();
        let mut games = Vec::with_capacity(rows.len());
        for row in rows {
            // Live games come from their actors, so clocks and draw offers
            // are current.
            let state = if GameStatus::from_name(&row.status) == Some(GameStatus::Active) {
                let id = GameId::trusted(row.id.clone());
                match self.registry.view(&id).await {
                    Ok(game) => convert::game_state(&game, now, false),
                    // Served by another replica (or moving): as stored,
                    // which is all its replica holds too.
                    Err(Error::NotServed { .. }) => match ctx.store.load(&id).await {
                        Ok(Some(game)) => convert::game_state(&game, now, false),
                        _ => convert::row_state(&row).map_err(Error::from)?,
                    },
                    Err(_) => convert::row_state(&row).map_err(Error::from)?,
                }
            } else {
                convert::row_state(&row).map_err(Error::from)?
            };
            games.push(state);
        }
        Ok(pb::ListGamesResponse {
            games,
            next_page_token,
        })
    }

    fn board(&self, game: &Game) -> pb::BoardResponse {
        pb::BoardResponse {
            board: crate::model::board::draw(shakmaty::Position::board(game.position())),
        }
    }

    fn legal_moves(&self, game: &Game) -> pb::LegalMovesResponse {
        let moves = game
            .legal_moves()
            .into_iter()
            .map(|(uci, san)| pb::LegalMove { uci, san })
            .collect();
        pb::LegalMovesResponse { moves }
    }

    #[instrument(level = "debug", skip_all, fields(game_id = %request.get_ref().game_id))]
    async fn hint(&self, request: Request<pb::HintRequest>) -> Answer<pb::HintResponse> {
        let claims = Claims::of(&request)?;
        let r = request.into_inner();
        let (game, player) = check_seat(&claims, &r.game_id, &r.player_id)?;
        let kind = pb::HintKind::try_from(r.kind).unwrap_or(pb::HintKind::Unspecified);
        if kind == pb::HintKind::Unspecified {
            return Err(Status::invalid_argument("hint kind must be best or all"));
        }
        let kind = if kind == pb::HintKind::Best {
            HintKind::Best
        } else {
            HintKind::AllMoves
        };
        let moves = self.registry.hint(&game, &player, kind).await?;
        Ok(pb::HintResponse { moves })
    }

    fn export_pgn(&self, game: &Game) -> pb::ExportPgnResponse {
        pb::ExportPgnResponse {
            pgn: pgn::export(game, &self.site),
        }
    }

    #[instrument(level = "debug", skip_all, fields(game_id = %request.get_ref().game_id))]
    async fn watch_game(
        &self,
        request: Request<pb::WatchGameRequest>,
    ) -> Answer<EventStream<pb::WatchGameResponse>> {
        let r = request.into_inner();
        require("game_id", &r.game_id).map_err(Error::from)?;
        if let Some(color) = r.without_moves_of
            && chess_domain::color_from_pb(color).is_none()
        {
            return Err(Status::invalid_argument(
                "without_moves_of must be white or black",
            ));
        }
        let game_id = known_game(&r.game_id)?;
        let chat_rooms = match r.from_chat_revision {
            Some(_) => Some(chat::rooms_of(&r.chat_rooms)?),
            None if r.chat_rooms.is_empty() => None,
            None => {
                return Err(Status::invalid_argument(
                    "chat_rooms needs from_chat_revision",
                ));
            }
        };
        // Subscribed before the chat is read, so no line falls between.
        let chat_live = chat_rooms.as_ref().map(|_| self.chat.subscribe(&game_id));
        // An id too long to be anyone's is nobody's: the watch is counted.
        let watcher = (!r.watcher_id.is_empty())
            .then(|| PlayerId::parse(&r.watcher_id).ok())
            .flatten();
        let watching = self
            .registry
            .watch(&game_id, watcher, r.without_moves_of.is_some())
            .await?;
        let (game, events) = (watching.game, watching.events);
        let now = self.now();
        let wrap = |event| pb::WatchGameResponse { event: Some(event) };
        // A new watcher starts from the whole state; one resuming gets only
        // what it missed, so nothing it already applied comes again.
        let first = match r.from_ply {
            None => {
                let mut state = convert::game_state(&game, now, true);
                state.spectators = watching.spectators;
                vec![wrap(convert::notice(
                    &game,
                    now,
                    common::game_event::Kind::Snapshot(state),
                ))]
            }
            Some(from) => game
                .catch_up(from)
                .ok_or_else(|| {
                    Reason::InvalidRequest.status(
                        Code::OutOfRange,
                        format!(
                            "from_ply {from} is beyond the game's last ply ({})",
                            game.ply()
                        ),
                    )
                })?
                .iter()
                .map(|e| wrap(convert::event(&game, e, now)))
                .collect(),
        };
        let mut first = first;
        let mut chat_sent = ChatSent::new();
        if let (Some(rooms), Some(from)) = (&chat_rooms, r.from_chat_revision) {
            let lines = self.chat_catch_up(&game_id, rooms, from).await?;
            let last = lines.iter().filter_map(chat::chat_of).map(|(_, r)| r).max();
            chat_sent.insert(game_id.clone(), last.unwrap_or(from));
            first.extend(lines.into_iter().map(wrap));
        }
        let live = game.is_active().then_some(events);
        let shutdown = self.registry.context().shutdown.clone();
        Ok(forward(Watch {
            first: first.into_iter(),
            events: live,
            shutdown,
            wrap,
            stop_at_end: true,
            sent: Sent::new(),
            without_moves_of: r.without_moves_of,
            _spectating: watching.spectating,
            chat: chat_live,
            chat_rooms: chat_rooms.map(|rooms| {
                rooms
                    .into_iter()
                    .map(|room| chat::room_pb(room) as i32)
                    .collect()
            }),
            chat_sent,
        }))
    }

    #[instrument(level = "debug", skip_all, fields(player_id = %request.get_ref().player_id))]
    async fn watch_player(
        &self,
        request: Request<pb::WatchPlayerRequest>,
    ) -> Answer<EventStream<pb::WatchPlayerResponse>> {
        let (r, player) = players_own(request, |r| &r.player_id)?;
        let ctx = self.registry.context();
        // Subscribed first, so nothing that happens from here on is missed.
        let events = ctx.hub.subscribe(&player);
        let wrap = |event| pb::WatchPlayerResponse { event: Some(event) };
        let mut first = Vec::new();
        let mut sent = Sent::new();
        let mut chat_sent = ChatSent::new();
        if r.resume {
            // A cursor whose id names no game has nothing to catch up on.
            let chat_cursors: Vec<(GameId, u64)> = r
                .games
                .iter()
                .filter_map(|c| Some((GameId::parse(&c.game_id).ok()?, c.chat_revision?)))
                .collect();
            let cursors = r
                .games
                .into_iter()
                .filter_map(|c| Some((GameId::parse(&c.game_id).ok()?, c.ply)))
                .collect();
            let now = self.now();
            for (game, missed) in self.registry.missed(&player, &cursors).await? {
                sent.insert(game.id().clone(), (game.ply(), !game.is_active()));
                match missed {
                    Some(events) => {
                        first.extend(events.iter().map(|e| wrap(convert::event(&game, e, now))))
                    }
                    None => first.push(wrap(convert::notice(
                        &game,
                        now,
                        common::game_event::Kind::Snapshot(convert::game_state(&game, now, true)),
                    ))),
                }
                // The players' room lines missed, of the games whose
                // cursor says where their chat stood.
                if let Some((_, from)) = chat_cursors.iter().find(|(id, _)| id == game.id()) {
                    let lines = self
                        .chat_catch_up(game.id(), &[crate::chat::Room::Players], *from)
                        .await?;
                    let last = lines.iter().filter_map(chat::chat_of).map(|(_, r)| r).max();
                    chat_sent.insert(game.id().clone(), last.unwrap_or(*from));
                    first.extend(lines.into_iter().map(wrap));
                }
            }
        }
        Ok(forward(Watch {
            first: first.into_iter(),
            events: Some(events),
            shutdown: ctx.shutdown.clone(),
            wrap,
            stop_at_end: false,
            sent,
            without_moves_of: None,
            _spectating: None,
            chat: None,
            chat_rooms: None,
            chat_sent,
        }))
    }

    #[instrument(level = "debug", skip_all)]
    async fn watch_daily_games(
        &self,
        _request: Request<pb::WatchDailyGamesRequest>,
    ) -> Answer<EventStream<pb::WatchDailyGamesResponse>> {
        let ctx = self.registry.context();
        let wrap = |event| pb::WatchDailyGamesResponse { event: Some(event) };
        Ok(forward(Watch::feed(
            ctx.hub.subscribe_daily(),
            ctx.shutdown.clone(),
            wrap,
        )))
    }

    #[instrument(level = "debug", skip_all)]
    async fn list_live_games(
        &self,
        _request: Request<pb::ListLiveGamesRequest>,
    ) -> Answer<pb::ListLiveGamesResponse> {
        let rows = self
            .registry
            .context()
            .store
            .live_games()
            .await
            .map_err(Error::from)?;
        let mut games = Vec::with_capacity(rows.len());
        for (row, ply) in rows {
            let mut state = convert::row_state(&row).map_err(Error::from)?;
            state.ply = ply;
            games.push(state);
        }
        Ok(pb::ListLiveGamesResponse { games })
    }

    #[instrument(level = "debug", skip_all)]
    async fn watch_live_games(
        &self,
        _request: Request<pb::WatchLiveGamesRequest>,
    ) -> Answer<EventStream<pb::WatchLiveGamesResponse>> {
        let ctx = self.registry.context();
        let wrap = |event| pb::WatchLiveGamesResponse { event: Some(event) };
        Ok(forward(Watch::feed(
            ctx.hub.subscribe_live(),
            ctx.shutdown.clone(),
            wrap,
        )))
    }

    #[instrument(level = "debug", skip_all)]
    async fn get_shard_map(
        &self,
        _request: Request<pb::GetShardMapRequest>,
    ) -> Answer<pb::GetShardMapResponse> {
        let shards = self.registry.shards();
        let view = shards.view();
        let owners = view
            .owners
            .iter()
            .map(|owner| {
                owner
                    .and_then(|i| view.replicas.get(i))
                    .map(|r| r.id.clone())
                    .unwrap_or_default()
            })
            .collect();
        Ok(pb::GetShardMapResponse {
            shard_count: u32::from(chess_shards::SHARDS),
            replicas: view
                .replicas
                .iter()
                .map(|r| pb::GameReplica {
                    id: r.id.clone(),
                    address: r.address.clone(),
                })
                .collect(),
            owners,
            replica_id: shards.me().id.clone(),
        })
    }
}

/// `GameService` for [`GameApi`], from a table: each `answered` method is
/// the inherent method of that name, its answer wrapped in a response; each
/// `viewing` method answers with the inherent method of that name applied
/// to the game its request names, as its actor has it; each `ending` method runs its action for the player and in the game its
/// request names, and answers with the ending the action caused, if any.
///
/// The whole `impl` is written here because `#[tonic::async_trait]`
/// rewrites the methods it sees, and would not see those a macro inside it
/// wrote later.
macro_rules! game_service {
    (
        streams { $($stream:ident = $stream_ty:ty;)* }
        answered { $($method:ident($request:ty) -> $response:ty;)* }
        viewing { $($viewer:ident($view_request:ident) -> $view:ident;)* }
        ending { $($ending:ident($ending_request:ident -> $ended:ident) = $action:expr;)* }
    ) => {
        #[tonic::async_trait]
        impl GameService for GameApi {
            $(type $stream = $stream_ty;)*

            $(#[instrument(level = "debug", skip_all, fields(game_id = %request.get_ref().game_id))]
            async fn $viewer(
                &self,
                request: Request<pb::$view_request>,
            ) -> Result<Response<pb::$view>, Status> {
                let game = self.viewed(&request.into_inner().game_id).await?;
                Ok(Response::new(GameApi::$viewer(self, &game)))
            })*

            $(async fn $method(
                &self,
                request: Request<$request>,
            ) -> Result<Response<$response>, Status> {
                GameApi::$method(self, request).await.map(Response::new)
            })*

            $(#[instrument(level = "debug", skip_all, fields(game_id = %request.get_ref().game_id))]
            async fn $ending(
                &self,
                request: Request<pb::$ending_request>,
            ) -> Result<Response<pb::$ended>, Status> {
                let game_ended = self.end_on(request, $action).await?;
                Ok(Response::new(pb::$ended { game_ended }))
            })*
        }
    };
}

game_service! {
    streams {
        PlayMovesStream = EventStream<pb::PlayMovesResponse>;
        WatchGameStream = EventStream<pb::WatchGameResponse>;
        WatchPlayerStream = EventStream<pb::WatchPlayerResponse>;
        WatchDailyGamesStream = EventStream<pb::WatchDailyGamesResponse>;
        WatchLiveGamesStream = EventStream<pb::WatchLiveGamesResponse>;
    }
    answered {
        create_game(pb::CreateGameRequest) -> pb::CreateGameResponse;
        make_move(pb::MakeMoveRequest) -> pb::MakeMoveResponse;
        play_moves(Streaming<pb::PlayMovesRequest>) -> Self::PlayMovesStream;
        decline_draw(pb::DeclineDrawRequest) -> pb::DeclineDrawResponse;
        list_games(pb::ListGamesRequest) -> pb::ListGamesResponse;
        hint(pb::HintRequest) -> pb::HintResponse;
        watch_game(pb::WatchGameRequest) -> Self::WatchGameStream;
        watch_player(pb::WatchPlayerRequest) -> Self::WatchPlayerStream;
        watch_daily_games(pb::WatchDailyGamesRequest) -> Self::WatchDailyGamesStream;
        get_shard_map(pb::GetShardMapRequest) -> pb::GetShardMapResponse;
        list_player_history(pb::ListPlayerHistoryRequest) -> pb::ListPlayerHistoryResponse;
        list_live_games(pb::ListLiveGamesRequest) -> pb::ListLiveGamesResponse;
        watch_live_games(pb::WatchLiveGamesRequest) -> Self::WatchLiveGamesStream;
        propose_takeback(pb::ProposeTakebackRequest) -> pb::ProposeTakebackResponse;
        accept_takeback(pb::AcceptTakebackRequest) -> pb::AcceptTakebackResponse;
        decline_takeback(pb::DeclineTakebackRequest) -> pb::DeclineTakebackResponse;
        cancel_takeback(pb::CancelTakebackRequest) -> pb::CancelTakebackResponse;
        post_chat(pb::PostChatRequest) -> pb::PostChatResponse;
        list_chat(pb::ListChatRequest) -> pb::ListChatResponse;
        hide_chat(pb::HideChatRequest) -> pb::HideChatResponse;
        report_chat(pb::ReportChatRequest) -> pb::ReportChatResponse;
        list_chat_reports(pb::ListChatReportsRequest) -> pb::ListChatReportsResponse;
    }
    viewing {
        get_game(GetGameRequest) -> GetGameResponse;
        board(BoardRequest) -> BoardResponse;
        legal_moves(LegalMovesRequest) -> LegalMovesResponse;
        export_pgn(ExportPgnRequest) -> ExportPgnResponse;
    }
    ending {
        resign(ResignRequest -> ResignResponse) = Action::Resign;
        offer_draw(OfferDrawRequest -> OfferDrawResponse) = Action::OfferDraw;
        accept_draw(AcceptDrawRequest -> AcceptDrawResponse) = Action::AcceptDraw;
        claim_draw(ClaimDrawRequest -> ClaimDrawResponse) = Action::ClaimDraw;
        abort(AbortRequest -> AbortResponse) = Action::Abort;
    }
}
