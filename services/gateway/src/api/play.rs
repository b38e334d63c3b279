//! PlayService: play in any number of games, reads, and the live streams.
//!
//! Actions carry the session's player id to the game service, which refuses
//! (PERMISSION_DENIED, `chess-reason: not-a-player`) anyone who is not a
//! player of the game. `StreamEvents` merges the player's lobby events from
//! matchmaking with the events of all their games from the game service into
//! one stream per session.

use std::{pin::Pin, sync::Arc, time::Duration};

use chess_domain::GameId;
use chess_internal_clients::{EventStream as GameEvents, GameRpc};
use chess_proto::{
    game::v1 as game,
    gateway::v1::{self as pb, play_service_server::PlayService, stream_events_response::Event},
    matchmaking::v1 as mm,
};
use tokio::time::{self, Instant, Interval, MissedTickBehavior};
use tokio_stream::{Stream, StreamExt as _};
use tonic::{Request, Response, Status, Streaming};

use super::{
    Answer, Shared,
    convert::{self, require},
    custom,
    edge::CallerOf as _,
    forward, public_service, relay, with_retries,
};
use crate::core::{auth::Session, sessions::SessionError};

// A player's history, its PGN export and a game's rating changes.
#[path = "history.rs"]
mod history;

type EventStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

impl Play {
    /// What the service shares with the others.
    pub(super) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The game service holding `game_id`, for reading it.
    fn game(&self, game_id: &GameId) -> GameRpc {
        self.shared.backends.game.for_game(game_id)
    }

    /// The caller's seat in the game `request` names: the game service
    /// holding it, acting for the caller, with the game's and the caller's
    /// ids for the internal request.
    fn seat<T>(
        &self,
        request: Request<T>,
        game_id: impl FnOnce(T) -> String,
    ) -> Result<(GameRpc, String, String), Status> {
        let (session, message) = request.signed_in()?;
        let game_id = convert::game_id(&game_id(message))?;
        let rpc = self
            .shared
            .backends
            .game
            .acting(&session.player_id, &game_id);
        Ok((rpc, game_id.into_string(), session.player_id.into_string()))
    }

    /// A read of the game `game_id`, retried while its service restarts.
    async fn read<Q: Clone, A, Fut>(
        &self,
        game_id: String,
        request: impl FnOnce(String) -> Q,
        call: impl Fn(GameRpc, Q) -> Fut,
    ) -> Result<A, Status>
    where
        Fut: Future<Output = Result<Response<A>, Status>>,
    {
        let rpc = self.game(&convert::game_id(&game_id)?);
        with_retries(rpc, request(game_id), call).await
    }
}

/// A game action of the caller's: their seat in the game, sent on, with
/// the answer's fields copied back.
macro_rules! seat {
    ($this:ident, $request:ident, $method:ident, $name:ident, [$($response:ident)::+],
        ($($answer:ident),+)) => {{
        let (mut game, game_id, player_id) = $this.seat($request, |r| r.game_id)?;
        let done = forward(game.$method(game::$name { game_id, player_id })).await?;
        $($response)::+ { $($answer: done.$answer),+ }
    }};
}

/// A read of the game the request names, with the answer's fields copied
/// back.
macro_rules! read {
    ($this:ident, $request:ident, $method:ident, $name:ident, [$($response:ident)::+],
        ($($answer:ident),+)) => {{
        let internal = |game_id| game::$name { game_id };
        let call = |mut game: GameRpc, request| async move { game.$method(request).await };
        let game_id = $request.into_inner().game_id;
        let read = $this.read(game_id, internal, call).await?;
        $($response)::+ { $($answer: read.$answer),+ }
    }};
}

public_service! {
    /// Implements `chess.gateway.v1.PlayService`.
    pub struct Play: PlayService;
    type StreamEventsStream = EventStream<pb::StreamEventsResponse>;
    type WatchGameStream = EventStream<pb::WatchGameResponse>;
    type ExportPlayerGamesStream = EventStream<pb::ExportPlayerGamesResponse>;
    type WatchLiveGamesStream = EventStream<pb::WatchLiveGamesResponse>;
    custom() [game_id]: make_move(MakeMoveRequest -> pb::MakeMoveResponse),
        hint(HintRequest -> pb::HintResponse),
        legal_moves(LegalMovesRequest -> pb::LegalMovesResponse),
        watch_game(WatchGameRequest -> Self::WatchGameStream);
    custom() []: list_my_games(ListMyGamesRequest -> pb::ListMyGamesResponse),
        stream_events(StreamEventsRequest -> Self::StreamEventsStream),
        list_live_games(ListLiveGamesRequest -> pb::ListLiveGamesResponse),
        watch_live_games(WatchLiveGamesRequest -> Self::WatchLiveGamesStream),
        list_chat_reports(ListChatReportsRequest -> pb::ListChatReportsResponse);
    custom() [game_id]: send_chat(SendChatRequest -> pb::SendChatResponse),
        list_chat(ListChatRequest -> pb::ListChatResponse),
        report_chat(ReportChatRequest -> pb::ReportChatResponse),
        hide_chat(HideChatRequest -> pb::HideChatResponse);
    seat(game_ended) [game_id]: resign(ResignRequest -> pb::ResignResponse),
        offer_draw(OfferDrawRequest -> pb::OfferDrawResponse),
        accept_draw(AcceptDrawRequest -> pb::AcceptDrawResponse),
        claim_draw(ClaimDrawRequest -> pb::ClaimDrawResponse),
        abort(AbortRequest -> pb::AbortResponse);
    seat(offered_by) [game_id]: decline_draw(DeclineDrawRequest -> pb::DeclineDrawResponse);
    seat(offered, taken_back) [game_id]:
        propose_takeback(ProposeTakebackRequest -> pb::ProposeTakebackResponse);
    seat(taken_back) [game_id]: accept_takeback(AcceptTakebackRequest -> pb::AcceptTakebackResponse);
    custom() [game_id]: decline_takeback(DeclineTakebackRequest -> pb::DeclineTakebackResponse),
        cancel_takeback(CancelTakebackRequest -> pb::CancelTakebackResponse);
    read(board) [game_id]: board(BoardRequest -> pb::BoardResponse);
    read(game) [game_id]: get_game(GetGameRequest -> pb::GetGameResponse);
    read(pgn) [game_id]: export_pgn(ExportPgnRequest -> pb::ExportPgnResponse);
    custom() [username]: list_player_games(ListPlayerGamesRequest -> pb::ListPlayerGamesResponse),
        export_player_games(ExportPlayerGamesRequest -> Self::ExportPlayerGamesStream);
    custom() [game_id]: get_rating_changes(GetRatingChangesRequest -> pb::GetRatingChangesResponse);
}

/// The methods written out: those that do more than forward a call.
impl Play {
    async fn decline_takeback(
        &self,
        request: Request<pb::DeclineTakebackRequest>,
    ) -> Answer<pb::DeclineTakebackResponse> {
        let (mut game, game_id, player_id) = self.seat(request, |r| r.game_id)?;
        let request = game::DeclineTakebackRequest { game_id, player_id };
        forward(game.decline_takeback(request)).await?;
        Ok(pb::DeclineTakebackResponse {})
    }

    async fn cancel_takeback(
        &self,
        request: Request<pb::CancelTakebackRequest>,
    ) -> Answer<pb::CancelTakebackResponse> {
        let (mut game, game_id, player_id) = self.seat(request, |r| r.game_id)?;
        let request = game::CancelTakebackRequest { game_id, player_id };
        forward(game.cancel_takeback(request)).await?;
        Ok(pb::CancelTakebackResponse {})
    }

    async fn make_move(
        &self,
        request: Request<pb::MakeMoveRequest>,
    ) -> Answer<pb::MakeMoveResponse> {
        let (session, r) = request.signed_in()?;
        require("game_id", &r.game_id)?;
        let request = game::MakeMoveRequest {
            game_id: r.game_id,
            player_id: session.player_id.into_string(),
            r#move: r.r#move,
            ply: r.ply,
        };
        let game = self.shared.backends.game.clone();
        // A move with its ply is safe to send again: at worst it is
        // answered as already made.
        let made = if request.ply.is_some() {
            with_retries(game, request, |game, request| async move {
                game.make_move(request).await.map(Response::new)
            })
            .await?
        } else {
            game.make_move(request).await.map_err(relay)?
        };
        Ok(pb::MakeMoveResponse {
            move_made: made.move_made,
            game_ended: made.game_ended,
            clock: made.clock,
            ply: made.ply,
        })
    }

    async fn hint(&self, request: Request<pb::HintRequest>) -> Answer<pb::HintResponse> {
        let (mut game, game_id, player_id) = self.seat(request, |r| r.game_id)?;
        let kind = game::HintKind::Best as i32;
        let request = game::HintRequest {
            game_id,
            player_id,
            kind,
        };
        let best_move = forward(game.hint(request))
            .await?
            .moves
            .into_iter()
            .next()
            .ok_or_else(|| Status::unavailable("the engine gave no move"))?;
        Ok(pb::HintResponse { best_move })
    }

    async fn legal_moves(
        &self,
        request: Request<pb::LegalMovesRequest>,
    ) -> Answer<pb::LegalMovesResponse> {
        let internal = |game_id| game::LegalMovesRequest { game_id };
        let call = |mut game: GameRpc, request| async move { game.legal_moves(request).await };
        let moves = self
            .read(request.into_inner().game_id, internal, call)
            .await?
            .moves
            .into_iter()
            .map(|m| pb::LegalMove {
                uci: m.uci,
                san: m.san,
            })
            .collect();
        Ok(pb::LegalMovesResponse { moves })
    }

    async fn list_my_games(
        &self,
        request: Request<pb::ListMyGamesRequest>,
    ) -> Answer<pb::ListMyGamesResponse> {
        let (session, r) = request.signed_in()?;
        let filter = convert::game_filter(r.filter);
        let client = self.shared.backends.game.for_player(&session.player_id);
        let request = game::ListGamesRequest {
            player_id: session.player_id.into_string(),
            filter: filter as i32,
            page_size: r.page_size,
            page_token: r.page_token,
        };
        let page = with_retries(client, request, |mut client, request| async move {
            client.list_games(request).await
        })
        .await?;
        Ok(pb::ListMyGamesResponse {
            games: page.games,
            next_page_token: page.next_page_token,
        })
    }

    async fn stream_events(
        &self,
        request: Request<pb::StreamEventsRequest>,
    ) -> Answer<EventStream<pb::StreamEventsResponse>> {
        let (session, r) = request.signed_in()?;
        // Both internal streams are open (so the player counts as present in
        // the lobby) before the client's stream starts.
        let lobby = self
            .shared
            .backends
            .matchmaking
            .acting(&session.player_id)
            .watch_player(mm::WatchPlayerRequest {
                player_id: session.player_id.to_string(),
            })
            .await
            .map_err(relay)?
            .into_inner();
        let games = self
            .shared
            .backends
            .game
            .watch_player(&session.player_id, r.resume, r.games)
            .await
            .map_err(relay)?;
        tracing::debug!(player_id = %session.player_id, "event stream opened");
        Ok(Merge::new(lobby, games, Arc::clone(&self.shared), session).stream())
    }

    async fn watch_game(
        &self,
        request: Request<pb::WatchGameRequest>,
    ) -> Answer<EventStream<pb::WatchGameResponse>> {
        let viewer = request.viewer();
        let r = request.into_inner();
        let game_id = convert::game_id(&r.game_id)?;
        let game = &self.shared.backends.game;
        // A signed-in watcher who is not a player counts as a spectator;
        // a player watching their own game does not.
        let upstream = match (r.from_chat_revision, viewer) {
            (Some(from), viewer) => {
                self.watch_with_chat(viewer.map(|s| s.player_id), &game_id, r.from_ply, from)
                    .await?
            }
            (None, Some(session)) => game
                .watch_game_by(&game_id, r.from_ply, &session.player_id)
                .await
                .map_err(relay)?,
            (None, None) => game.watch_game(&game_id, r.from_ply).await.map_err(relay)?,
        };
        let shutdown = self.shared.shutdown.clone();
        // The events are read as the client's stream is written: no task or
        // queue between the two. The stream ends after an error.
        let events = futures::stream::unfold(Some(upstream), move |upstream| {
            let shutdown = shutdown.clone();
            async move {
                let mut upstream = upstream?;
                let next = tokio::select! {
                    next = upstream.next() => next?,
                    () = shutdown.cancelled() => return None,
                };
                Some(match next {
                    Ok(m) => (Ok(pb::WatchGameResponse { event: m.event }), Some(upstream)),
                    Err(status) => (Err(relay(status)), None),
                })
            }
        });
        Ok(Box::pin(events))
    }
}

/// How often an open event stream checks that its session has not ended
/// (the session cache keeps states about as long).
const SESSION_RECHECK: Duration = Duration::from_secs(5);

/// One client's event stream: both internal streams forwarded into one, read
/// as the client's stream is written (no task or queue between them: a
/// client that does not read leaves the internal streams unread, and they
/// cut it off). It ends when the client leaves, the gateway shuts down,
/// either internal stream ends (then the client is told to reconnect, as it
/// would miss that half of its events), or the session ends (Logout,
/// LogoutEverywhere, a password change: the stream closes with
/// UNAUTHENTICATED).
struct Merge {
    lobby: Streaming<mm::WatchPlayerResponse>,
    games: GameEvents<game::WatchPlayerResponse>,
    shared: Arc<Shared>,
    session: Session,
    recheck: Interval,
    /// Set by an error, which is the stream's last item.
    ended: bool,
}

impl Merge {
    fn new(
        lobby: Streaming<mm::WatchPlayerResponse>,
        games: GameEvents<game::WatchPlayerResponse>,
        shared: Arc<Shared>,
        session: Session,
    ) -> Self {
        // The session was just checked.
        let mut recheck = time::interval_at(Instant::now() + SESSION_RECHECK, SESSION_RECHECK);
        recheck.set_missed_tick_behavior(MissedTickBehavior::Delay);
        Self {
            lobby,
            games,
            shared,
            session,
            recheck,
            ended: false,
        }
    }

    fn stream(self) -> EventStream<pb::StreamEventsResponse> {
        Box::pin(futures::stream::unfold(self, |mut merge| async move {
            let item = merge.next().await?;
            Some((item, merge))
        }))
    }

    async fn next(&mut self) -> Option<Result<pb::StreamEventsResponse, Status>> {
        if self.ended {
            return None;
        }
        loop {
            let item = tokio::select! {
                _ = self.recheck.tick() => match self.shared.sessions.check(self.session.clone()).await {
                    Err(ended @ SessionError::Token(_)) => Some(Err(ended.into())),
                    // Ended or not, it cannot be told now: the next check will.
                    _ => None,
                },
                next = self.lobby.message() => match next {
                    Ok(Some(m)) => m.event.map(|e| Ok(Event::Lobby(e))),
                    Ok(None) => Some(Err(Status::unavailable("the lobby stream ended; open the event stream again"))),
                    Err(status) => Some(Err(relay(status))),
                },
                next = self.games.next() => match next {
                    Some(Ok(m)) => m.event.map(|e| Ok(Event::Game(e))),
                    None => Some(Err(Status::unavailable("the game stream ended; open the event stream again"))),
                    Some(Err(status)) => Some(Err(relay(status))),
                },
                () = self.shared.shutdown.cancelled() => return None,
            };
            let Some(item) = item else { continue };
            self.ended = item.is_err();
            return Some(item.map(|event| pb::StreamEventsResponse { event: Some(event) }));
        }
    }
}
