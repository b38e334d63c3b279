//! The gRPC face of the service: requests are checked and converted here,
//! then handed to the game actors.

use std::{collections::HashMap, pin::Pin, sync::Arc};

use chess_domain::{GameStatus, RuleSet, TimeControl};
use chess_proto::{
    common::v1 as common,
    game::v1::{self as pb, game_service_server::GameService},
};
use chess_runtime::{Claims, InternalKey, Reason};
use tokio::sync::broadcast;
use tokio_stream::{Stream, wrappers::ReceiverStream};
use tonic::{Code, Request, Response, Status, Streaming};
use tracing::instrument;

use crate::{
    convert,
    error::Error,
    model::{Event, Game, GameSetup, pgn},
    registry::{Acted, Action, HintKind, Registry},
    store::ListFilter,
};

type EventStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// Implements `chess.game.v1.GameService`.
#[derive(Debug)]
pub struct GameApi {
    registry: Arc<Registry>,
    /// Shown in PGN `Site` tags.
    site: String,
    /// Checks the assertions PlayMoves' messages carry.
    key: InternalKey,
}

impl GameApi {
    pub fn new(registry: Arc<Registry>, site: String, key: InternalKey) -> Self {
        Self {
            registry,
            site,
            key,
        }
    }

    fn now(&self) -> i64 {
        self.registry.context().time.now()
    }

    /// Runs `action` for `player_id` in `game_id`, if the caller's
    /// assertion acts for that player in that game.
    async fn act(
        &self,
        claims: &Claims,
        game_id: &str,
        player_id: &str,
        action: Action,
    ) -> Result<Acted, Status> {
        act(&self.registry, claims, game_id, player_id, action).await
    }

    /// Creates and starts a game, or returns the one made earlier with the
    /// same idempotency key.
    async fn create(&self, request: pb::CreateGameRequest) -> Result<Game, Error> {
        let setup = GameSetup {
            white: convert::participant(request.white.as_ref())?,
            black: convert::participant(request.black.as_ref())?,
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
    require("game_id", game_id)?;
    require("player_id", player_id)?;
    claims.check_player_in(player_id, game_id)?;
    Ok(registry.act(game_id, player_id, action).await?)
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
    let move_made = acted.events.iter().find_map(|e| match e {
        Event::MoveMade {
            ply,
            color,
            mv,
            fen,
            check,
        } => Some(convert::move_made(*ply, *color, mv, fen, *check)),
        _ => None,
    });
    Ok(pb::MakeMoveResponse {
        move_made,
        game_ended: ended(&acted.events),
        clock: Some(convert::clock(&acted.clock, acted.timed)),
        ply: acted.ply,
    })
}

fn require(field: &str, value: &str) -> Result<(), Status> {
    if value.is_empty() {
        return Err(Status::invalid_argument(format!("{field} must be given")));
    }
    Ok(())
}

/// The ending among `events`, as sent.
fn ended(events: &[Event]) -> Option<common::GameEnded> {
    events.iter().find_map(|e| match e {
        Event::GameEnded(ending) => Some(convert::ended(ending)),
        _ => None,
    })
}

/// Where a resumed watcher already stands in each game it was sent: the ply
/// it was brought to, and whether the game had ended. Live events it was
/// sent already (moves up to that ply, the ending) are not sent again.
type Sent = HashMap<String, (u32, bool)>;

/// Whether `event` was sent already, by `sent`.
fn already_sent(sent: &Sent, event: &common::GameEvent) -> bool {
    let Some(&(ply, ended)) = sent.get(&event.game_id) else {
        return false;
    };
    match event.kind {
        Some(common::game_event::Kind::MoveMade(_)) => event.ply <= ply,
        Some(common::game_event::Kind::GameEnded(_)) => ended,
        _ => false,
    }
}

/// Whether `event` is a move of the side `color` (a `common::Color`).
fn moved_by(event: &common::GameEvent, color: Option<i32>) -> bool {
    match (&event.kind, color) {
        (Some(common::game_event::Kind::MoveMade(made)), Some(color)) => made.color == color,
        _ => false,
    }
}

/// A watcher's stream: what it is sent first, then the live events.
struct Watch<T> {
    /// Sent before any live event (a snapshot, or what was missed).
    first: std::vec::IntoIter<T>,
    /// The live events; `None` for none (a game already over).
    events: Option<broadcast::Receiver<Arc<common::GameEvent>>>,
    shutdown: chess_runtime::Shutdown,
    /// Makes an event the stream's message.
    wrap: fn(common::GameEvent) -> T,
    /// The stream ends after the game's end (a stream of one game).
    stop_at_end: bool,
    /// Live events not to send again.
    sent: Sent,
    /// The side (a `common::Color`) whose live moves are left out.
    without_moves_of: Option<i32>,
}

/// Forwards live events into a response stream until the game ends, the
/// caller goes away, the service shuts down, or the watcher falls behind.
///
/// The stream reads the game's broadcast itself as the connection polls
/// it: no task of its own and no queue between, so an event costs each
/// watcher one wake-up, of the connection that sends it.
fn forward<T: Send + 'static>(watch: Watch<T>) -> EventStream<T> {
    Box::pin(futures::stream::unfold(Some(watch), |watch| async move {
        let mut watch = watch?;
        if let Some(item) = watch.first.next() {
            return Some((Ok(item), Some(watch)));
        }
        let mut events = watch.events.take()?;
        loop {
            let received = tokio::select! {
                received = events.recv() => received,
                () = watch.shutdown.cancelled() => return None,
            };
            let item = match received {
                Ok(event)
                    if already_sent(&watch.sent, &event)
                        || moved_by(&event, watch.without_moves_of) =>
                {
                    continue;
                }
                Ok(event) => {
                    let last = watch.stop_at_end
                        && matches!(event.kind, Some(common::game_event::Kind::GameEnded(_)));
                    let item = (watch.wrap)((*event).clone());
                    if last {
                        return Some((Ok(item), None));
                    }
                    item
                }
                // Ending right after is the point.
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    let status = Status::aborted(format!(
                        "the watcher fell {missed} events behind; watch again from the last ply seen"
                    ));
                    return Some((Err(status), None));
                }
                Err(broadcast::error::RecvError::Closed) => {
                    // The game's actor stopped before its end: its shard
                    // moved to another replica (or this one stops).
                    let status = Status::unavailable(
                        "this replica stopped serving the game; watch again from the last ply seen",
                    );
                    return Some((Err(status), None));
                }
            };
            watch.events = Some(events);
            return Some((Ok(item), Some(watch)));
        }
    }))
}

#[tonic::async_trait]
impl GameService for GameApi {
    #[instrument(level = "debug", skip_all)]
    async fn create_game(
        &self,
        request: Request<pb::CreateGameRequest>,
    ) -> Result<Response<pb::CreateGameResponse>, Status> {
        // Games are created for players by the lobby and the gateway only.
        Claims::of(&request)?.check_caller(&["gateway", "matchmaking"])?;
        let game = self.create(request.into_inner()).await?;
        Ok(Response::new(pb::CreateGameResponse {
            game: Some(convert::game_state(&game, self.now(), true)),
        }))
    }

    #[instrument(level = "debug", skip_all, fields(game_id = %request.get_ref().game_id))]
    async fn get_game(
        &self,
        request: Request<pb::GetGameRequest>,
    ) -> Result<Response<pb::GetGameResponse>, Status> {
        let id = request.into_inner().game_id;
        require("game_id", &id)?;
        let game = self.registry.view(&id).await?;
        Ok(Response::new(pb::GetGameResponse {
            game: Some(convert::game_state(&game, self.now(), true)),
        }))
    }

    #[instrument(level = "debug", skip_all, fields(game_id = %request.get_ref().game_id))]
    async fn make_move(
        &self,
        request: Request<pb::MakeMoveRequest>,
    ) -> Result<Response<pb::MakeMoveResponse>, Status> {
        let claims = Claims::of(&request)?;
        let answer = make_move(&self.registry, &claims, request.into_inner()).await?;
        Ok(Response::new(answer))
    }

    type PlayMovesStream = EventStream<pb::PlayMovesResponse>;

    async fn play_moves(
        &self,
        request: Request<Streaming<pb::PlayMovesRequest>>,
    ) -> Result<Response<Self::PlayMovesStream>, Status> {
        // Each move's own assertion is checked as it is done.
        Claims::of(&request)?;
        let answers = crate::relay::serve(
            Arc::clone(&self.registry),
            self.key.clone(),
            self.registry.context().shutdown.clone(),
            request.into_inner(),
        );
        Ok(Response::new(Box::pin(ReceiverStream::new(answers))))
    }

    #[instrument(level = "debug", skip_all, fields(game_id = %request.get_ref().game_id))]
    async fn resign(
        &self,
        request: Request<pb::ResignRequest>,
    ) -> Result<Response<pb::ResignResponse>, Status> {
        let claims = Claims::of(&request)?;
        let r = request.into_inner();
        let acted = self
            .act(&claims, &r.game_id, &r.player_id, Action::Resign)
            .await?;
        Ok(Response::new(pb::ResignResponse {
            game_ended: ended(&acted.events),
        }))
    }

    #[instrument(level = "debug", skip_all, fields(game_id = %request.get_ref().game_id))]
    async fn offer_draw(
        &self,
        request: Request<pb::OfferDrawRequest>,
    ) -> Result<Response<pb::OfferDrawResponse>, Status> {
        let claims = Claims::of(&request)?;
        let r = request.into_inner();
        let acted = self
            .act(&claims, &r.game_id, &r.player_id, Action::OfferDraw)
            .await?;
        Ok(Response::new(pb::OfferDrawResponse {
            game_ended: ended(&acted.events),
        }))
    }

    #[instrument(level = "debug", skip_all, fields(game_id = %request.get_ref().game_id))]
    async fn accept_draw(
        &self,
        request: Request<pb::AcceptDrawRequest>,
    ) -> Result<Response<pb::AcceptDrawResponse>, Status> {
        let claims = Claims::of(&request)?;
        let r = request.into_inner();
        let acted = self
            .act(&claims, &r.game_id, &r.player_id, Action::AcceptDraw)
            .await?;
        Ok(Response::new(pb::AcceptDrawResponse {
            game_ended: ended(&acted.events),
        }))
    }

    #[instrument(level = "debug", skip_all, fields(game_id = %request.get_ref().game_id))]
    async fn decline_draw(
        &self,
        request: Request<pb::DeclineDrawRequest>,
    ) -> Result<Response<pb::DeclineDrawResponse>, Status> {
        let claims = Claims::of(&request)?;
        let r = request.into_inner();
        let acted = self
            .act(&claims, &r.game_id, &r.player_id, Action::DeclineDraw)
            .await?;
        Ok(Response::new(pb::DeclineDrawResponse {
            offered_by: chess_domain::color_to_pb(!acted.side) as i32,
        }))
    }

    #[instrument(level = "debug", skip_all, fields(game_id = %request.get_ref().game_id))]
    async fn claim_draw(
        &self,
        request: Request<pb::ClaimDrawRequest>,
    ) -> Result<Response<pb::ClaimDrawResponse>, Status> {
        let claims = Claims::of(&request)?;
        let r = request.into_inner();
        let acted = self
            .act(&claims, &r.game_id, &r.player_id, Action::ClaimDraw)
            .await?;
        Ok(Response::new(pb::ClaimDrawResponse {
            game_ended: ended(&acted.events),
        }))
    }

    #[instrument(level = "debug", skip_all, fields(game_id = %request.get_ref().game_id))]
    async fn abort(
        &self,
        request: Request<pb::AbortRequest>,
    ) -> Result<Response<pb::AbortResponse>, Status> {
        let claims = Claims::of(&request)?;
        let r = request.into_inner();
        let acted = self
            .act(&claims, &r.game_id, &r.player_id, Action::Abort)
            .await?;
        Ok(Response::new(pb::AbortResponse {
            game_ended: ended(&acted.events),
        }))
    }

    #[instrument(level = "debug", skip_all, fields(player_id = %request.get_ref().player_id))]
    async fn list_games(
        &self,
        request: Request<pb::ListGamesRequest>,
    ) -> Result<Response<pb::ListGamesResponse>, Status> {
        let claims = Claims::of(&request)?;
        let r = request.into_inner();
        require("player_id", &r.player_id)?;
        claims.check_player(&r.player_id)?;
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
            .list(&r.player_id, filter, page_size, &r.page_token)
            .await
            .map_err(Error::from)?;
        let now = self.now();
        let mut games = Vec::with_capacity(rows.len());
        for row in rows {
            // Live games come from their actors, so clocks and draw offers
            // are current.
            let state = if GameStatus::from_name(&row.status) == Some(GameStatus::Active) {
                match self.registry.view(&row.id).await {
                    Ok(game) => convert::game_state(&game, now, false),
                    // Served by another replica (or moving): as stored,
                    // which is all its replica holds too.
                    Err(Error::NotServed { .. }) => match ctx.store.load(&row.id).await {
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
        Ok(Response::new(pb::ListGamesResponse {
            games,
            next_page_token,
        }))
    }

    #[instrument(level = "debug", skip_all, fields(game_id = %request.get_ref().game_id))]
    async fn board(
        &self,
        request: Request<pb::BoardRequest>,
    ) -> Result<Response<pb::BoardResponse>, Status> {
        let id = request.into_inner().game_id;
        require("game_id", &id)?;
        let game = self.registry.view(&id).await?;
        Ok(Response::new(pb::BoardResponse {
            board: crate::model::board::draw(shakmaty::Position::board(game.position())),
        }))
    }

    #[instrument(level = "debug", skip_all, fields(game_id = %request.get_ref().game_id))]
    async fn legal_moves(
        &self,
        request: Request<pb::LegalMovesRequest>,
    ) -> Result<Response<pb::LegalMovesResponse>, Status> {
        let id = request.into_inner().game_id;
        require("game_id", &id)?;
        let game = self.registry.view(&id).await?;
        let moves = game
            .legal_moves()
            .into_iter()
            .map(|(uci, san)| pb::LegalMove { uci, san })
            .collect();
        Ok(Response::new(pb::LegalMovesResponse { moves }))
    }

    #[instrument(level = "debug", skip_all, fields(game_id = %request.get_ref().game_id))]
    async fn hint(
        &self,
        request: Request<pb::HintRequest>,
    ) -> Result<Response<pb::HintResponse>, Status> {
        let claims = Claims::of(&request)?;
        let r = request.into_inner();
        require("game_id", &r.game_id)?;
        require("player_id", &r.player_id)?;
        claims.check_player_in(&r.player_id, &r.game_id)?;
        let kind = pb::HintKind::try_from(r.kind).unwrap_or(pb::HintKind::Unspecified);
        if kind == pb::HintKind::Unspecified {
            return Err(Status::invalid_argument("hint kind must be best or all"));
        }
        let kind = if kind == pb::HintKind::Best {
            HintKind::Best
        } else {
            HintKind::AllMoves
        };
        let moves = self.registry.hint(&r.game_id, &r.player_id, kind).await?;
        Ok(Response::new(pb::HintResponse { moves }))
    }

    #[instrument(level = "debug", skip_all, fields(game_id = %request.get_ref().game_id))]
    async fn export_pgn(
        &self,
        request: Request<pb::ExportPgnRequest>,
    ) -> Result<Response<pb::ExportPgnResponse>, Status> {
        let id = request.into_inner().game_id;
        require("game_id", &id)?;
        let game = self.registry.view(&id).await?;
        Ok(Response::new(pb::ExportPgnResponse {
            pgn: pgn::export(&game, &self.site),
        }))
    }

    type WatchGameStream = EventStream<pb::WatchGameResponse>;

    #[instrument(level = "debug", skip_all, fields(game_id = %request.get_ref().game_id))]
    async fn watch_game(
        &self,
        request: Request<pb::WatchGameRequest>,
    ) -> Result<Response<Self::WatchGameStream>, Status> {
        let r = request.into_inner();
        require("game_id", &r.game_id)?;
        if let Some(color) = r.without_moves_of
            && chess_domain::color_from_pb(color).is_none()
        {
            return Err(Status::invalid_argument(
                "without_moves_of must be white or black",
            ));
        }
        let (game, events) = self.registry.watch(&r.game_id).await?;
        let now = self.now();
        let wrap = |event| pb::WatchGameResponse { event: Some(event) };
        // A new watcher starts from the whole state; one resuming gets only
        // what it missed, so nothing it already applied comes again.
        let first = match r.from_ply {
            None => vec![wrap(convert::notice(
                &game,
                now,
                common::game_event::Kind::Snapshot(convert::game_state(&game, now, true)),
            ))],
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
        let live = game.is_active().then_some(events);
        let shutdown = self.registry.context().shutdown.clone();
        Ok(Response::new(forward(Watch {
            first: first.into_iter(),
            events: live,
            shutdown,
            wrap,
            stop_at_end: true,
            sent: Sent::new(),
            without_moves_of: r.without_moves_of,
        })))
    }

    type WatchPlayerStream = EventStream<pb::WatchPlayerResponse>;

    #[instrument(level = "debug", skip_all, fields(player_id = %request.get_ref().player_id))]
    async fn watch_player(
        &self,
        request: Request<pb::WatchPlayerRequest>,
    ) -> Result<Response<Self::WatchPlayerStream>, Status> {
        let claims = Claims::of(&request)?;
        let r = request.into_inner();
        require("player_id", &r.player_id)?;
        claims.check_player(&r.player_id)?;
        let ctx = self.registry.context();
        // Subscribed first, so nothing that happens from here on is missed.
        let events = ctx.hub.subscribe(&r.player_id);
        let wrap = |event| pb::WatchPlayerResponse { event: Some(event) };
        let mut first = Vec::new();
        let mut sent = Sent::new();
        if r.resume {
            let cursors = r.games.into_iter().map(|c| (c.game_id, c.ply)).collect();
            let now = self.now();
            for (game, missed) in self.registry.missed(&r.player_id, &cursors).await? {
                sent.insert(game.id().to_owned(), (game.ply(), !game.is_active()));
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
            }
        }
        Ok(Response::new(forward(Watch {
            first: first.into_iter(),
            events: Some(events),
            shutdown: ctx.shutdown.clone(),
            wrap,
            stop_at_end: false,
            sent,
            without_moves_of: None,
        })))
    }

    type WatchDailyGamesStream = EventStream<pb::WatchDailyGamesResponse>;

    #[instrument(level = "debug", skip_all)]
    async fn watch_daily_games(
        &self,
        _request: Request<pb::WatchDailyGamesRequest>,
    ) -> Result<Response<Self::WatchDailyGamesStream>, Status> {
        let ctx = self.registry.context();
        let wrap = |event| pb::WatchDailyGamesResponse { event: Some(event) };
        Ok(Response::new(forward(Watch {
            first: Vec::new().into_iter(),
            events: Some(ctx.hub.subscribe_daily()),
            shutdown: ctx.shutdown.clone(),
            wrap,
            stop_at_end: false,
            sent: Sent::new(),
            without_moves_of: None,
        })))
    }

    #[instrument(level = "debug", skip_all)]
    async fn get_shard_map(
        &self,
        _request: Request<pb::GetShardMapRequest>,
    ) -> Result<Response<pb::GetShardMapResponse>, Status> {
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
        Ok(Response::new(pb::GetShardMapResponse {
            shard_count: u32::from(chess_domain::SHARDS),
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
        }))
    }
}
