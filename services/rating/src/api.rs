//! The gRPC face of the service, the only room that sees the wire's
//! requests and statuses: each call's caller is checked, its request turned
//! into domain values ([`convert`]), handed to the [`Core`], and the answer
//! turned back into its response.

use chess_domain::{GameId, PlayerId, SpeedCategory, Timestamp};
use chess_proto::rating::v1::{self as pb, rating_service_server};
use chess_runtime::{Claims, throttle::Policy};
use tonic::{Request, Response, Status};
use tracing::instrument;

use crate::{
    accounts::{Email, Hasher, NostrKey, Password, Username},
    convert::{self, ShownProfile},
    core::{Core, Profile},
    error::Error,
    model::{GameRatingChange, GameReport, SessionState},
    store::{Store, StoreError},
};

/// Implements `chess.rating.v1.RatingService`.
#[derive(Debug)]
pub struct RatingApi {
    core: Core,
}

impl RatingApi {
    pub fn new(store: Store, hasher: Hasher, logins: Policy) -> Self {
        Self {
            core: Core::new(store, hasher, logins),
        }
    }
}

/// A call's check of its assertion, before its request is read.
type Admission<T> = fn(&Request<T>) -> Result<(), Status>;

/// Admits every service: reads of sessions, players and ratings, and the
/// session changes a signed-in player asks for through the gateway.
fn any_service<T>(_: &Request<T>) -> Result<(), Status> {
    Ok(())
}

/// Admits only the gateway: accounts are its alone, it signs players in.
fn gateway<T>(request: &Request<T>) -> Result<(), Status> {
    Claims::of(request)?.check_caller(&["gateway"])
}

/// Admits only an operator's tool (`chess-stack moderator`, with an
/// assertion signed by the internal key).
fn operator<T>(request: &Request<T>) -> Result<(), Status> {
    Claims::of(request)?.check_caller(&["ops"])
}

/// A request acting for one player.
trait ForPlayer {
    fn player_id(&self) -> &str;
}

impl ForPlayer for pb::LinkNostrKeyRequest {
    fn player_id(&self) -> &str {
        &self.player_id
    }
}

impl ForPlayer for pb::SetPersonalMuteRequest {
    fn player_id(&self) -> &str {
        &self.player_id
    }
}

impl ForPlayer for pb::SetChatOffRequest {
    fn player_id(&self) -> &str {
        &self.player_id
    }
}

impl ForPlayer for pb::MuteAccountRequest {
    fn player_id(&self) -> &str {
        &self.moderator_id
    }
}

impl ForPlayer for pb::UnlinkNostrKeyRequest {
    fn player_id(&self) -> &str {
        &self.player_id
    }
}

/// Admits the gateway acting for the request's player (a Nostr key is
/// linked only after the gateway checked the proof of its ownership).
fn gateway_for_player<T: ForPlayer>(request: &Request<T>) -> Result<(), Status> {
    let player_id = request.get_ref().player_id();
    bound_caller(request, "gateway", player_id, Claims::check_player)
}

/// Admits only the game service, each result reported by the game it is of.
fn game_reporting(request: &Request<pb::RecordResultRequest>) -> Result<(), Status> {
    let game_id = &request.get_ref().game_id;
    bound_caller(request, "game", game_id, Claims::check_game)
}

/// Refuses a request unless it comes from `caller` with an assertion that
/// `check` finds bound to `id`. A request naming nothing (an empty id) is
/// refused as invalid further on.
fn bound_caller<T>(
    request: &Request<T>,
    caller: &str,
    id: &str,
    check: fn(&Claims, &str) -> Result<(), Status>,
) -> Result<(), Status> {
    let claims = Claims::of(request)?;
    claims.check_caller(&[caller])?;
    if id.is_empty() {
        return Ok(());
    }
    check(&claims, id)
}

/// Logs faults (bad input is the caller's business) and converts to a status.
fn status(error: Error) -> Status {
    if matches!(error, Error::Store(_) | Error::Hash(_)) {
        tracing::warn!(error = %error, "call failed");
    }
    if let Error::Store(StoreError::Corrupt(_)) = &error {
        tracing::error!(error = %error, "stored data is inconsistent");
    }
    Status::from(error)
}

/// The trait's implementation from the table of its methods, grouped by
/// who may call them (an [`Admission`]: a function of the request) and by
/// what their spans record. Once its admission let the call in, a method
/// `name(Request -> Response)` is answered by the inherent method of the
/// same name, and one `name(Request -> Response) = core_method(field)` by
/// the core's method given the player that the request's field names
/// ([`convert::player_to_find`]) alone; either answers with the response or
/// a value that converts into it.
///
/// The whole `impl` is written by the macro because `#[tonic::async_trait]`
/// rewrites only the methods it sees.
macro_rules! rating_service {
    ($request:ident => $(
        by $admit:ident, fields $fields:tt:
            $($method:ident($req:ident -> $resp:ident) $(= $core:ident($field:ident))?),+;
    )+) => {
        #[tonic::async_trait]
        impl rating_service_server::RatingService for RatingApi {
            $($(
                #[instrument(level = "debug", skip_all, fields $fields)]
                async fn $method(
                    &self,
                    $request: Request<pb::$req>,
                ) -> Result<Response<pb::$resp>, Status> {
                    let admission: Admission<pb::$req> = $admit;
                    admission(&$request)?;
                    let request = $request.into_inner();
                    rating_service!(@answer self, request, $method $(= $core($field))?)
                        .await
                        .map(|answer| Response::new(answer.into()))
                        .map_err(status)
                }
            )+)+
        }
    };
    (@answer $api:ident, $request:ident, $method:ident) => {
        RatingApi::$method($api, $request)
    };
    (@answer $api:ident, $request:ident, $method:ident = $core:ident($field:ident)) => {
        async {
            let player_id = convert::player_to_find(&$request.$field)?;
            $api.core.$core(&player_id).await
        }
    };
}

rating_service! { request =>
    by gateway, fields(username = %request.get_ref().username):
        register(RegisterRequest -> RegisterResponse);
    by gateway, fields(): authenticate(AuthenticateRequest -> AuthenticateResponse);
    by any_service, fields(player_id = %request.get_ref().player_id):
        change_password(ChangePasswordRequest -> ChangePasswordResponse),
        get_session_state(GetSessionStateRequest -> GetSessionStateResponse)
            = session_state(player_id),
        revoke_session(RevokeSessionRequest -> RevokeSessionResponse),
        revoke_all_sessions(RevokeAllSessionsRequest -> RevokeAllSessionsResponse)
            = revoke_all_sessions(player_id),
        get_rating_history(GetRatingHistoryRequest -> GetRatingHistoryResponse);
    by any_service, fields(players = request.get_ref().player_ids.len()):
        get_session_states(GetSessionStatesRequest -> GetSessionStatesResponse),
        get_ratings(GetRatingsRequest -> GetRatingsResponse);
    by any_service, fields(): get_player(GetPlayerRequest -> GetPlayerResponse);
    by any_service, fields(games = request.get_ref().game_ids.len()):
        get_game_rating_changes(GetGameRatingChangesRequest -> GetGameRatingChangesResponse);
    by any_service, fields(category = request.get_ref().category):
        leaderboard(LeaderboardRequest -> LeaderboardResponse);
    by gateway_for_player, fields(player_id = %request.get_ref().player_id):
        link_nostr_key(LinkNostrKeyRequest -> LinkNostrKeyResponse),
        unlink_nostr_key(UnlinkNostrKeyRequest -> UnlinkNostrKeyResponse),
        set_personal_mute(SetPersonalMuteRequest -> SetPersonalMuteResponse),
        set_chat_off(SetChatOffRequest -> SetChatOffResponse);
    by gateway_for_player, fields(moderator_id = %request.get_ref().moderator_id):
        mute_account(MuteAccountRequest -> MuteAccountResponse);
    by any_service, fields(prefix = %request.get_ref().username_prefix.len()):
        list_players(ListPlayersRequest -> ListPlayersResponse);
    by any_service, fields(player_id = %request.get_ref().player_id):
        get_chat_standing(GetChatStandingRequest -> GetChatStandingResponse);
    by operator, fields(moderator = request.get_ref().moderator):
        set_moderator(SetModeratorRequest -> SetModeratorResponse);
    by game_reporting, fields(
        game_id = %request.get_ref().game_id,
        white_id = %request.get_ref().white_id,
        black_id = %request.get_ref().black_id,
    ): record_result(RecordResultRequest -> RecordResultResponse);
}

/// What each call does once admitted: its request into domain values, the
/// core's answer back into its response.
impl RatingApi {
    fn shown(&self, profile: Profile) -> ShownProfile<'_> {
        let system = self.core.system();
        ShownProfile { system, profile }
    }

    async fn register(&self, request: pb::RegisterRequest) -> Result<ShownProfile<'_>, Error> {
        let username = Username::parse(&request.username)?;
        let email = Email::parse(&request.email)?;
        let password = Password::parse(&request.password)?;
        let profile = self.core.register(&username, &email, &password).await?;
        Ok(self.shown(profile))
    }

    async fn authenticate(
        &self,
        request: pb::AuthenticateRequest,
    ) -> Result<pb::AuthenticateResponse, Error> {
        let (player, state) = self
            .core
            .authenticate(&request.login, &request.password)
            .await?;
        Ok(pb::AuthenticateResponse {
            player_id: player.id.into(),
            username: player.username.into(),
            session_generation: state.generation,
        })
    }

    async fn change_password(
        &self,
        request: pb::ChangePasswordRequest,
    ) -> Result<pb::ChangePasswordResponse, Error> {
        let new_password = Password::parse(&request.new_password)?;
        let player_id = convert::player_to_find(&request.player_id)?;
        let (player, state) = self
            .core
            .change_password(&player_id, &request.old_password, &new_password)
            .await?;
        Ok(pb::ChangePasswordResponse {
            state: Some(convert::session_state_pb(state)),
            username: player.username.into(),
        })
    }

    async fn get_session_states(
        &self,
        request: pb::GetSessionStatesRequest,
    ) -> Result<pb::GetSessionStatesResponse, Error> {
        let player_ids = convert::players_to_find(&request.player_ids)?;
        let states = self.core.session_states(&player_ids).await?;
        let state_pb = |(player_id, state): (PlayerId, _)| pb::PlayerSessionState {
            player_id: player_id.into(),
            state: Some(convert::session_state_pb(state)),
        };
        Ok(pb::GetSessionStatesResponse {
            states: states.into_iter().map(state_pb).collect(),
        })
    }

    async fn revoke_session(
        &self,
        request: pb::RevokeSessionRequest,
    ) -> Result<SessionState, Error> {
        let (session_id, expires_at_s) = convert::session_to_revoke(&request)?;
        let player_id = convert::player_to_find(&request.player_id)?;
        self.core
            .revoke_session(&player_id, session_id, expires_at_s)
            .await
    }

    async fn get_player(&self, request: pb::GetPlayerRequest) -> Result<ShownProfile<'_>, Error> {
        let profile = self.core.player(convert::player_key(request.key)?).await?;
        Ok(self.shown(profile))
    }

    async fn link_nostr_key(
        &self,
        request: pb::LinkNostrKeyRequest,
    ) -> Result<ShownProfile<'_>, Error> {
        let key = NostrKey::parse(&request.public_key)?;
        let player_id = PlayerId::parse(&request.player_id)?;
        let profile = self.core.link_nostr_key(&player_id, &key).await?;
        Ok(self.shown(profile))
    }

    async fn unlink_nostr_key(
        &self,
        request: pb::UnlinkNostrKeyRequest,
    ) -> Result<ShownProfile<'_>, Error> {
        let player_id = PlayerId::parse(&request.player_id)?;
        let profile = self.core.unlink_nostr_key(&player_id).await?;
        Ok(self.shown(profile))
    }

    async fn get_ratings(
        &self,
        request: pb::GetRatingsRequest,
    ) -> Result<pb::GetRatingsResponse, Error> {
        let category = SpeedCategory::try_from(request.category)?.rated()?;
        let player_ids = convert::players_to_find(&request.player_ids)?;
        let found = self.core.ratings(category, &player_ids).await?;
        let (system, now) = (self.core.system(), Timestamp::now());
        let rating_pb = |(player_id, rating): (PlayerId, _)| pb::PlayerRating {
            player_id: player_id.into(),
            rating: Some(convert::rating_pb(system, &rating, now)),
        };
        Ok(pb::GetRatingsResponse {
            ratings: found.into_iter().map(rating_pb).collect(),
        })
    }

    async fn record_result(
        &self,
        request: pb::RecordResultRequest,
    ) -> Result<pb::RecordResultResponse, Error> {
        let recorded = self.core.record(&GameReport::try_from(request)?).await?;
        Ok(pb::RecordResultResponse {
            first_time: recorded.first_time,
            white: recorded.white.map(convert::change_pb),
            black: recorded.black.map(convert::change_pb),
        })
    }

    async fn get_rating_history(
        &self,
        request: pb::GetRatingHistoryRequest,
    ) -> Result<pb::GetRatingHistoryResponse, Error> {
        let category = convert::optional_category(request.category)?;
        let before = convert::history_cursor(&request.page_token)?;
        let size = convert::page_size(request.page_size);
        let player_id = convert::player_to_find(&request.player_id)?;
        let page = self
            .core
            .history(&player_id, category, before, size)
            .await?;
        Ok(pb::GetRatingHistoryResponse {
            entries: page.rows.into_iter().map(convert::history_pb).collect(),
            next_page_token: page.next.map(convert::history_token).unwrap_or_default(),
        })
    }

    async fn get_game_rating_changes(
        &self,
        request: pb::GetGameRatingChangesRequest,
    ) -> Result<pb::GetGameRatingChangesResponse, Error> {
        if request.game_ids.len() > crate::core::MAX_GAMES_PER_CALL {
            return Err(Error::Invalid(format!(
                "at most {} games per call",
                crate::core::MAX_GAMES_PER_CALL
            )));
        }
        // An id that is no game's has no changes.
        let games: Vec<GameId> = request
            .game_ids
            .iter()
            .filter_map(|id| GameId::parse(id).ok())
            .collect();
        let player = match request.player_id.as_str() {
            "" => None,
            id => Some(convert::player_to_find(id)?),
        };
        let changes = self.core.game_changes(&games, player.as_ref()).await?;
        let change_pb = |c: GameRatingChange| pb::GameRatingChange {
            game_id: c.game_id.into(),
            player_id: c.player_id.into(),
            category: chess_proto::common::v1::SpeedCategory::from(c.category) as i32,
            rating_before: c.rating_before,
            rating_after: c.rating_after,
        };
        Ok(pb::GetGameRatingChangesResponse {
            changes: changes.into_iter().map(change_pb).collect(),
        })
    }

    async fn leaderboard(
        &self,
        request: pb::LeaderboardRequest,
    ) -> Result<pb::LeaderboardResponse, Error> {
        // No untimed leaderboard: such games are never rated, so an empty
        // list would suggest nobody had played one yet.
        let category = SpeedCategory::try_from(request.category)?.rated()?;
        let after = convert::leaderboard_cursor(&request.page_token)?;
        let size = convert::page_size(request.page_size);
        let page = self
            .core
            .leaderboard(category, after.as_ref(), size)
            .await?;
        let system = self.core.system();
        Ok(convert::leaderboard_pb(system, page, Timestamp::now()))
    }

    async fn list_players(
        &self,
        request: pb::ListPlayersRequest,
    ) -> Result<pb::ListPlayersResponse, Error> {
        let order = convert::directory_order(&request)?;
        let after = convert::directory_cursor(&request.page_token)?;
        let size = convert::page_size(request.page_size);
        let (page, at) = self
            .core
            .list_players(&request.username_prefix, &order, after.as_ref(), size)
            .await?;
        Ok(convert::directory_pb(self.core.system(), page, at))
    }

    async fn get_chat_standing(
        &self,
        request: pb::GetChatStandingRequest,
    ) -> Result<pb::GetChatStandingResponse, Error> {
        let player_id = convert::player_to_find(&request.player_id)?;
        let standing = self.core.chat_standing(&player_id).await?;
        Ok(pb::GetChatStandingResponse {
            standing: Some(convert::standing_pb(standing)),
        })
    }

    async fn set_moderator(
        &self,
        request: pb::SetModeratorRequest,
    ) -> Result<pb::SetModeratorResponse, Error> {
        let (player_id, standing) = self
            .core
            .set_moderator(&request.username, request.moderator)
            .await?;
        Ok(pb::SetModeratorResponse {
            player_id: player_id.into(),
            standing: Some(convert::standing_pb(standing)),
        })
    }

    async fn set_personal_mute(
        &self,
        request: pb::SetPersonalMuteRequest,
    ) -> Result<pb::SetPersonalMuteResponse, Error> {
        let player_id = PlayerId::parse(&request.player_id)?;
        let (muted_id, standing) = self
            .core
            .set_personal_mute(&player_id, &request.username, request.muted)
            .await?;
        Ok(pb::SetPersonalMuteResponse {
            standing: Some(convert::standing_pb(standing)),
            muted_player_id: muted_id.into(),
        })
    }

    async fn set_chat_off(
        &self,
        request: pb::SetChatOffRequest,
    ) -> Result<pb::SetChatOffResponse, Error> {
        let player_id = PlayerId::parse(&request.player_id)?;
        let standing = self.core.set_chat_off(&player_id, request.chat_off).await?;
        Ok(pb::SetChatOffResponse {
            standing: Some(convert::standing_pb(standing)),
        })
    }

    async fn mute_account(
        &self,
        request: pb::MuteAccountRequest,
    ) -> Result<pb::MuteAccountResponse, Error> {
        let moderator_id = PlayerId::parse(&request.moderator_id)?;
        let (player_id, standing) = self
            .core
            .mute_account(&moderator_id, &request.username, request.duration_seconds)
            .await?;
        Ok(pb::MuteAccountResponse {
            player_id: player_id.into(),
            standing: Some(convert::standing_pb(standing)),
        })
    }
}
