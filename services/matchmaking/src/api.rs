//! The gRPC edge: `chess.matchmaking.v1.MatchmakingService`. The only room
//! that sees the protocol's messages and `Status`: each call is checked and
//! converted ([`crate::convert`]), then served by [`crate::pairing`] (the
//! uqchess queue) or [`crate::lobby`] (everything else), whose answers are
//! converted back.

use std::pin::Pin;

use chess_domain::{PlayerId, require};
use chess_proto::matchmaking::v1::{self as pb, matchmaking_service_server::MatchmakingService};
use chess_runtime::Claims;
use tokio::sync::mpsc;
use tokio_stream::{Stream, StreamExt as _, wrappers::ReceiverStream};
use tonic::{Request, Response, Status};
use tracing::instrument;

use crate::{
    convert::{Reply as _, act, cursor_token, member, parse_cursor, replies, seeker, speed_filter},
    lobby::{LobbyHandle, NewChallenge, NewSeek, error::LobbyError},
    pairing::PairingHandle,
};

type EventStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// Implements `chess.matchmaking.v1.MatchmakingService`.
#[derive(Debug)]
pub struct MatchmakingApi {
    pub pairing: PairingHandle,
    pub lobby: LobbyHandle,
}

/// Seeks in a page when the caller does not say.
const DEFAULT_PAGE_SIZE: usize = 50;
/// Most seeks in a page.
const MAX_PAGE_SIZE: u32 = 100;

/// The service's trait implementation from the table of its methods, so
/// that the calls served the same way are written once.
///
/// Each method is checked to act for the request's `acting` player and gets
/// a span with the request's `field`. A stream `method(Request -> Stream of
/// Item)` is answered by the service's inherent method of the same name.
/// Every other group, `kind(args) [acting, field]: methods`, is answered by
/// the macro `kind!` below, given the service, the request, the method, the
/// response's name and `(args)`.
///
/// The whole `impl` is written here because `#[tonic::async_trait]`
/// rewrites the methods it sees and would not see ones a macro inside it
/// writes later.
macro_rules! matchmaking_service {
    (streams: $($stream_method:ident($stream_request:ident -> $stream:ident of $item:ident)
            [$stream_acting:ident, $stream_field:ident]),+;
        $($kind:ident $args:tt [$acting:ident, $field:ident]:
            $($method:ident($request:ident -> $response:ident)),+;)+) => {
        #[tonic::async_trait]
        impl MatchmakingService for MatchmakingApi {
            $(
                type $stream = EventStream<pb::$item>;

                #[instrument(level = "debug", skip_all,
                    fields($stream_field = %request.get_ref().$stream_field))]
                async fn $stream_method(
                    &self,
                    request: Request<pb::$stream_request>,
                ) -> Result<Response<Self::$stream>, Status> {
                    acting_for(&request, &request.get_ref().$stream_acting)?;
                    self.$stream_method(request.into_inner()).await.map(Response::new)
                }
            )+
            $($(
                #[instrument(level = "debug", skip_all, fields($field = %request.get_ref().$field))]
                async fn $method(
                    &self,
                    request: Request<pb::$request>,
                ) -> Result<Response<pb::$response>, Status> {
                    acting_for(&request, &request.get_ref().$acting)?;
                    let r = request.into_inner();
                    Ok(Response::new($kind!(self, r, $method, $response, $args)))
                }
            )+)+
        }
    };
}

/// A call that makes a seek or a challenge from the request (`$new`, whose
/// `$party` makes it and is shown the answer), the answer's `$answer` the
/// thing made.
macro_rules! make {
    ($this:ident, $r:ident, $method:ident, $response:ident, ($new:ident.$party:ident -> $answer:ident)) => {{
        let new = $new::try_from($r)?;
        let player_id = new.$party.id.clone();
        let made = $this.lobby.$method(new).await?;
        pb::$response {
            $answer: Some(made.reply(&player_id)?),
        }
    }};
}

/// A call by a player on one seek, request or challenge, named by the
/// request's `$id` (with the request's `$extra` fields passed on), the
/// answer's `$answer` what it became.
macro_rules! one {
    ($this:ident, $r:ident, $method:ident, $response:ident,
        ($id:ident $(, $extra:ident)* -> $answer:ident)) => {{
        let act = act(stringify!($id), $r.$id, &$r.player_id)?;
        let player_id = act.player_id.clone();
        let done = $this.lobby.$method(act $(, &$r.$extra)*).await?;
        pb::$response {
            $answer: Some(done.reply(&player_id)?),
        }
    }};
}

/// A player's own lists, the answer's fields `$list` in the order the
/// lobby gives them.
macro_rules! mine {
    ($this:ident, $r:ident, $method:ident, $response:ident, ($($list:ident),+)) => {{
        let player_id = PlayerId::parse(&$r.player_id).map_err(LobbyError::from)?;
        let ($($list),+) = $this.lobby.$method(player_id.clone()).await?;
        pb::$response {
            $($list: replies(&$list, &player_id)?),+
        }
    }};
}

/// A call answered by the service's inherent method of the same name.
macro_rules! custom {
    ($this:ident, $r:ident, $method:ident, $response:ident, ()) => {
        $this.$method($r).await?
    };
}

matchmaking_service! {
    streams:
        join_pairing_queue(JoinPairingQueueRequest -> JoinPairingQueueStream of JoinPairingQueueResponse)
            [guest_id, guest_id],
        watch_player(WatchPlayerRequest -> WatchPlayerStream of WatchPlayerResponse)
            [player_id, player_id];
    make(NewSeek.poster -> seek) [player_id, player_id]: create_seek(CreateSeekRequest -> CreateSeekResponse);
    make(NewChallenge.challenger -> challenge) [player_id, player_id]:
        create_challenge(CreateChallengeRequest -> CreateChallengeResponse);
    one(seek_id -> seek) [player_id, seek_id]: cancel_seek(CancelSeekRequest -> CancelSeekResponse);
    one(request_id -> request) [player_id, request_id]:
        accept_seek_request(AcceptSeekRequestRequest -> AcceptSeekRequestResponse),
        reject_seek_request(RejectSeekRequestRequest -> RejectSeekRequestResponse),
        withdraw_seek_request(WithdrawSeekRequestRequest -> WithdrawSeekRequestResponse);
    one(challenge_id -> challenge) [player_id, challenge_id]:
        accept_challenge(AcceptChallengeRequest -> AcceptChallengeResponse),
        cancel_challenge(CancelChallengeRequest -> CancelChallengeResponse);
    one(challenge_id, reason -> challenge) [player_id, challenge_id]:
        decline_challenge(DeclineChallengeRequest -> DeclineChallengeResponse);
    mine(received, sent, seeks) [player_id, player_id]:
        list_seek_requests(ListSeekRequestsRequest -> ListSeekRequestsResponse);
    mine(incoming, outgoing) [player_id, player_id]:
        list_challenges(ListChallengesRequest -> ListChallengesResponse);
    custom() [player_id, seek_id]: request_seek(RequestSeekRequest -> RequestSeekResponse);
    custom() [viewer_id, viewer_id]: list_seeks(ListSeeksRequest -> ListSeeksResponse);
}

/// The calls served by more than a table row.
impl MatchmakingApi {
    async fn join_pairing_queue(
        &self,
        r: pb::JoinPairingQueueRequest,
    ) -> Result<EventStream<pb::JoinPairingQueueResponse>, Status> {
        let (updates, rx) = mpsc::channel(4);
        self.pairing.join(seeker(r, updates)?).await?;
        Ok(Box::pin(ReceiverStream::new(rx).map(|update| {
            update
                .map(pb::JoinPairingQueueResponse::from)
                .map_err(Status::from)
        })))
    }

    /// The player's lobby events until the stream closes. The stream counts
    /// as open (for the player's real-time seeks) from when this returns.
    async fn watch_player(
        &self,
        r: pb::WatchPlayerRequest,
    ) -> Result<EventStream<pb::WatchPlayerResponse>, Status> {
        let player_id = PlayerId::parse(&r.player_id).map_err(LobbyError::from)?;
        let events = self.lobby.watch_player(player_id).await?;
        Ok(Box::pin(
            ReceiverStream::new(events).map(|event| Ok(pb::WatchPlayerResponse::from(event))),
        ))
    }

    async fn list_seeks(&self, r: pb::ListSeeksRequest) -> Result<pb::ListSeeksResponse, Status> {
        let speed = speed_filter(r.speed)?;
        let after = if r.page_token.is_empty() {
            None
        } else {
            Some(parse_cursor(&r.page_token)?)
        };
        let limit = match r.page_size {
            0 => DEFAULT_PAGE_SIZE,
            n => n.min(MAX_PAGE_SIZE) as usize,
        };
        let (seeks, next) = self.lobby.list_seeks(speed, after, limit).await?;
        // A guest's view names nobody.
        let viewer = PlayerId::parse(&r.viewer_id).ok();
        Ok(pb::ListSeeksResponse {
            seeks: seeks.iter().map(|s| s.to_pb(viewer.as_ref())).collect(),
            next_page_token: next.as_ref().map(cursor_token).unwrap_or_default(),
        })
    }

    async fn request_seek(
        &self,
        r: pb::RequestSeekRequest,
    ) -> Result<pb::RequestSeekResponse, Status> {
        require("seek_id", &r.seek_id).map_err(LobbyError::from)?;
        let requester = member(&r.player_id, &r.username)?;
        let viewer = requester.id.clone();
        let settled = self.lobby.request_seek(r.seek_id, requester).await?;
        Ok(pb::RequestSeekResponse {
            request: Some(settled.reply(&viewer)?),
        })
    }
}

/// Refuses a request acting for `player_id` unless the caller's assertion
/// acts for that player. A request for nobody (an empty id: a guest's view
/// of the lobby, or a request refused as invalid further on) needs only a
/// valid assertion.
fn acting_for<T>(request: &Request<T>, player_id: &str) -> Result<(), Status> {
    if player_id.is_empty() {
        return Ok(());
    }
    Claims::of(request)?.check_player(player_id)
}
