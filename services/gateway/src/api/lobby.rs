//! LobbyService: seeks, tables and challenges, served by matchmaking with
//! the caller's identity from their session; games against the engine,
//! created directly by the game service.

use chess_internal_clients::NewGame;
use chess_proto::{
    gateway::v1::{self as pb, lobby_service_server::LobbyService},
    matchmaking::v1 as mm,
};
use chess_runtime::identity::Signed;
use tonic::{Request, Status};

use super::{
    Answer, convert, custom, edge::CallerOf as _, forward, public_service, relay, with_retries,
};
use crate::core::auth::Session;

impl Lobby {
    /// The matchmaking service, acting for `player_id`.
    fn acting(&self, player_id: &str) -> Matchmaking {
        self.shared
            .backends
            .matchmaking
            .acting(&chess_domain::PlayerId::trusted(player_id))
    }

    /// The caller of `request`, with the matchmaking service acting for
    /// them and the request's message.
    fn me<T>(&self, request: Request<T>) -> Result<(Matchmaking, Session, T), Status> {
        let (session, message) = request.signed_in()?;
        Ok((self.acting(session.player_id.as_str()), session, message))
    }
}

type Matchmaking = mm::matchmaking_service_client::MatchmakingServiceClient<Signed>;

/// A call the caller makes in the lobby: the request's fields `$copied`
/// and the caller's `$mine` sent to matchmaking acting for them, and the
/// answer's field `$answer` copied back.
macro_rules! act {
    ($this:ident, $request:ident, $method:ident, $name:ident, [$($response:ident)::+],
        ($($mine:ident),+ | $($copied:ident),+ -> $answer:ident)) => {{
        let (mut matchmaking, me, r) = $this.me($request)?;
        let request = mm::$name { $($mine: me.$mine.into(),)+ $($copied: r.$copied,)+ };
        let done = forward(matchmaking.$method(request)).await?;
        $($response)::+ { $answer: done.$answer }
    }};
}

/// A list of the caller's own, retried while matchmaking restarts, with
/// the answer's fields copied back.
macro_rules! mine {
    ($this:ident, $request:ident, $method:ident, $name:ident, [$($response:ident)::+],
        ($($answer:ident),+)) => {{
        let (matchmaking, me, _) = $this.me($request)?;
        let request = mm::$name { player_id: me.player_id.into() };
        let call = |mut mm: Matchmaking, r| async move { mm.$method(r).await };
        let listed = with_retries(matchmaking, request, call).await?;
        $($response)::+ { $($answer: listed.$answer),+ }
    }};
}

public_service! {
    /// Implements `chess.gateway.v1.LobbyService`.
    pub struct Lobby: LobbyService;
    custom() []: list_seeks(ListSeeksRequest -> pb::ListSeeksResponse);
    custom() [level]: play_engine(PlayEngineRequest -> pb::PlayEngineResponse);
    act(player_id, username | time_control, color, rated, min_rating, max_rating, show_name,
        accept_mode, allow_hints -> seek) []: create_seek(CreateSeekRequest -> pb::CreateSeekResponse);
    act(player_id | seek_id -> seek) [seek_id]: cancel_seek(CancelSeekRequest -> pb::CancelSeekResponse);
    act(player_id, username | seek_id -> request) [seek_id]:
        request_seek(RequestSeekRequest -> pb::RequestSeekResponse);
    act(player_id | request_id -> request) [request_id]:
        accept_seek_request(AcceptSeekRequestRequest -> pb::AcceptSeekRequestResponse),
        reject_seek_request(RejectSeekRequestRequest -> pb::RejectSeekRequestResponse),
        withdraw_seek_request(WithdrawSeekRequestRequest -> pb::WithdrawSeekRequestResponse);
    act(player_id, username | opponent_username, time_control, color, rated, expires_in_seconds,
        allow_hints -> challenge) [opponent_username]:
        create_challenge(CreateChallengeRequest -> pb::CreateChallengeResponse);
    act(player_id | challenge_id -> challenge) [challenge_id]:
        accept_challenge(AcceptChallengeRequest -> pb::AcceptChallengeResponse),
        cancel_challenge(CancelChallengeRequest -> pb::CancelChallengeResponse);
    act(player_id | challenge_id, reason -> challenge) [challenge_id]:
        decline_challenge(DeclineChallengeRequest -> pb::DeclineChallengeResponse);
    mine(received, sent, seeks) []:
        list_seek_requests(ListSeekRequestsRequest -> pb::ListSeekRequestsResponse);
    mine(incoming, outgoing) []: list_challenges(ListChallengesRequest -> pb::ListChallengesResponse);
}

/// The methods written out: those that do more than forward a call.
impl Lobby {
    async fn list_seeks(
        &self,
        request: Request<pb::ListSeeksRequest>,
    ) -> Answer<pb::ListSeeksResponse> {
        // Public, but a signed-in reader sees their own seeks with their name.
        let viewer_id = request
            .viewer()
            .map(|s| s.player_id.into_string())
            .unwrap_or_default();
        let r = request.into_inner();
        // A signed-in reader's call acts for them.
        let client = self.acting(&viewer_id);
        let request = mm::ListSeeksRequest {
            viewer_id,
            speed: r.speed,
            page_size: r.page_size,
            page_token: r.page_token,
        };
        let page = with_retries(client, request, |mut client, request| async move {
            client.list_seeks(request).await
        })
        .await?;
        Ok(pb::ListSeeksResponse {
            seeks: page.seeks,
            next_page_token: page.next_page_token,
        })
    }

    async fn play_engine(
        &self,
        request: Request<pb::PlayEngineRequest>,
    ) -> Answer<pb::PlayEngineResponse> {
        let (session, r) = request.signed_in()?;
        let level = convert::engine_level(r.full_strength, r.level)?;
        let choice = convert::color_choice(r.color)?;
        let white = choice.resolve(rand::random()) == chess_domain::Color::White;
        let me = chess_domain::Participant::Registered {
            id: session.player_id,
            username: session.username,
        }
        .to_pb();
        let engine = chess_domain::engine_player(level);
        let (white, black) = if white { (me, engine) } else { (engine, me) };
        let time_control = convert::time_control(r.time_control.as_ref())?;
        // Games against the engine are casual, and hints are allowed in
        // them.
        let game = NewGame {
            allow_hints: true,
            ..NewGame::casual(white, black, time_control)
        };
        let game = self
            .shared
            .backends
            .game
            .create_game(game)
            .await
            .map_err(relay)?;
        Ok(pb::PlayEngineResponse { game: Some(game) })
    }
}
