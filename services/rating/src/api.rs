//! The gRPC face of the service, the only room that sees the wire's
//! requests and statuses: each call's caller is checked, its request turned
//! into domain values ([`convert`]), handed to the [`Core`], and the answer
//! turned back into its response.

use chess_domain::{SpeedCategory, Timestamp, require};
use chess_proto::rating::v1::{self as pb, rating_service_server};
use chess_runtime::{Claims, throttle::Policy};
use tonic::{Request, Response, Status};
use tracing::instrument;

use crate::{
    accounts::{Email, Hasher, NostrKey, Password, Username},
    convert,
    core::Core,
    error::Error,
    model::GameReport,
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

/// Refuses a request acting for `player_id` unless it comes from the gateway
/// (accounts are its alone: it checked the proof of the key's ownership) and
/// its assertion acts for that player. A request for nobody (an empty id) is
/// refused as invalid further on.
fn gateway_acting_for<T>(request: &Request<T>, player_id: &str) -> Result<(), Status> {
    let claims = Claims::of(request)?;
    claims.check_caller(&["gateway"])?;
    if player_id.is_empty() {
        return Ok(());
    }
    claims.check_player(player_id)
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

/// The response to a call, or its status.
fn answer<T>(result: Result<T, Error>) -> Result<Response<T>, Status> {
    result.map(Response::new).map_err(status)
}

#[tonic::async_trait]
impl rating_service_server::RatingService for RatingApi {
    #[instrument(level = "debug", skip_all, fields(username = %request.get_ref().username))]
    async fn register(
        &self,
        request: Request<pb::RegisterRequest>,
    ) -> Result<Response<pb::RegisterResponse>, Status> {
        // Accounts are the gateway's alone: it signs players in.
        Claims::of(&request)?.check_caller(&["gateway"])?;
        let request = request.into_inner();
        answer(
            async {
                let username = Username::parse(&request.username)?;
                let email = Email::parse(&request.email)?;
                let password = Password::parse(&request.password)?;
                let profile = self.core.register(&username, &email, &password).await?;
                Ok(pb::RegisterResponse {
                    profile: Some(convert::profile_pb(self.core.system(), &profile)),
                    email: profile.player.email,
                })
            }
            .await,
        )
    }

    #[instrument(level = "debug", skip_all)]
    async fn authenticate(
        &self,
        request: Request<pb::AuthenticateRequest>,
    ) -> Result<Response<pb::AuthenticateResponse>, Status> {
        // Accounts are the gateway's alone: it signs players in.
        Claims::of(&request)?.check_caller(&["gateway"])?;
        let request = request.into_inner();
        let signed_in = self
            .core
            .authenticate(&request.login, &request.password)
            .await;
        answer(signed_in.map(|(player, state)| pb::AuthenticateResponse {
            player_id: player.id,
            username: player.username,
            session_generation: state.generation,
        }))
    }

    #[instrument(level = "debug", skip_all, fields(player_id = %request.get_ref().player_id))]
    async fn change_password(
        &self,
        request: Request<pb::ChangePasswordRequest>,
    ) -> Result<Response<pb::ChangePasswordResponse>, Status> {
        let request = request.into_inner();
        answer(
            async {
                let new_password = Password::parse(&request.new_password)?;
                let (player, state) = self
                    .core
                    .change_password(&request.player_id, &request.old_password, &new_password)
                    .await?;
                Ok(pb::ChangePasswordResponse {
                    state: Some(convert::session_state_pb(state)),
                    username: player.username,
                })
            }
            .await,
        )
    }

    #[instrument(level = "debug", skip_all, fields(player_id = %request.get_ref().player_id))]
    async fn get_session_state(
        &self,
        request: Request<pb::GetSessionStateRequest>,
    ) -> Result<Response<pb::GetSessionStateResponse>, Status> {
        let state = self.core.session_state(&request.get_ref().player_id).await;
        answer(state.map(|state| pb::GetSessionStateResponse {
            state: Some(convert::session_state_pb(state)),
        }))
    }

    #[instrument(level = "debug", skip_all, fields(players = request.get_ref().player_ids.len()))]
    async fn get_session_states(
        &self,
        request: Request<pb::GetSessionStatesRequest>,
    ) -> Result<Response<pb::GetSessionStatesResponse>, Status> {
        let states = self
            .core
            .session_states(&request.get_ref().player_ids)
            .await;
        answer(states.map(|states| {
            pb::GetSessionStatesResponse {
                states: states
                    .into_iter()
                    .map(|(player_id, state)| pb::PlayerSessionState {
                        player_id,
                        state: Some(convert::session_state_pb(state)),
                    })
                    .collect(),
            }
        }))
    }

    #[instrument(level = "debug", skip_all, fields(player_id = %request.get_ref().player_id))]
    async fn revoke_session(
        &self,
        request: Request<pb::RevokeSessionRequest>,
    ) -> Result<Response<pb::RevokeSessionResponse>, Status> {
        let request = request.get_ref();
        answer(
            async {
                let (session_id, expires_at_s) = convert::session_to_revoke(request)?;
                let state = self
                    .core
                    .revoke_session(&request.player_id, session_id, expires_at_s)
                    .await?;
                Ok(pb::RevokeSessionResponse {
                    state: Some(convert::session_state_pb(state)),
                })
            }
            .await,
        )
    }

    #[instrument(level = "debug", skip_all, fields(player_id = %request.get_ref().player_id))]
    async fn revoke_all_sessions(
        &self,
        request: Request<pb::RevokeAllSessionsRequest>,
    ) -> Result<Response<pb::RevokeAllSessionsResponse>, Status> {
        let state = self
            .core
            .revoke_all_sessions(&request.get_ref().player_id)
            .await;
        answer(state.map(|state| pb::RevokeAllSessionsResponse {
            state: Some(convert::session_state_pb(state)),
        }))
    }

    #[instrument(level = "debug", skip_all)]
    async fn get_player(
        &self,
        request: Request<pb::GetPlayerRequest>,
    ) -> Result<Response<pb::GetPlayerResponse>, Status> {
        let request = request.into_inner();
        answer(
            async {
                let profile = self.core.player(convert::player_key(request.key)?).await?;
                Ok(pb::GetPlayerResponse {
                    profile: Some(convert::profile_pb(self.core.system(), &profile)),
                    email: profile.player.email,
                })
            }
            .await,
        )
    }

    #[instrument(level = "debug", skip_all, fields(player_id = %request.get_ref().player_id))]
    async fn link_nostr_key(
        &self,
        request: Request<pb::LinkNostrKeyRequest>,
    ) -> Result<Response<pb::LinkNostrKeyResponse>, Status> {
        gateway_acting_for(&request, &request.get_ref().player_id)?;
        let request = request.get_ref();
        answer(
            async {
                let key = NostrKey::parse(&request.public_key)?;
                require("player_id", &request.player_id)?;
                let profile = self.core.link_nostr_key(&request.player_id, &key).await?;
                Ok(pb::LinkNostrKeyResponse {
                    profile: Some(convert::profile_pb(self.core.system(), &profile)),
                })
            }
            .await,
        )
    }

    #[instrument(level = "debug", skip_all, fields(player_id = %request.get_ref().player_id))]
    async fn unlink_nostr_key(
        &self,
        request: Request<pb::UnlinkNostrKeyRequest>,
    ) -> Result<Response<pb::UnlinkNostrKeyResponse>, Status> {
        gateway_acting_for(&request, &request.get_ref().player_id)?;
        let request = request.get_ref();
        answer(
            async {
                require("player_id", &request.player_id)?;
                let profile = self.core.unlink_nostr_key(&request.player_id).await?;
                Ok(pb::UnlinkNostrKeyResponse {
                    profile: Some(convert::profile_pb(self.core.system(), &profile)),
                })
            }
            .await,
        )
    }

    #[instrument(level = "debug", skip_all, fields(players = request.get_ref().player_ids.len()))]
    async fn get_ratings(
        &self,
        request: Request<pb::GetRatingsRequest>,
    ) -> Result<Response<pb::GetRatingsResponse>, Status> {
        let request = request.get_ref();
        answer(
            async {
                let category = SpeedCategory::try_from(request.category)?.rated()?;
                let found = self.core.ratings(category, &request.player_ids).await?;
                let (system, now) = (self.core.system(), Timestamp::now());
                Ok(pb::GetRatingsResponse {
                    ratings: found
                        .into_iter()
                        .map(|(player_id, rating)| pb::PlayerRating {
                            player_id,
                            rating: Some(convert::rating_pb(system, &rating, now)),
                        })
                        .collect(),
                })
            }
            .await,
        )
    }

    #[instrument(level = "debug", skip_all, fields(
        game_id = %request.get_ref().game_id,
        white_id = %request.get_ref().white_id,
        black_id = %request.get_ref().black_id,
    ))]
    async fn record_result(
        &self,
        request: Request<pb::RecordResultRequest>,
    ) -> Result<Response<pb::RecordResultResponse>, Status> {
        // Only the game service reports results, each bound to its game
        // (a report without a game is refused as invalid further on).
        let claims = Claims::of(&request)?;
        claims.check_caller(&["game"])?;
        let game_id = &request.get_ref().game_id;
        if !game_id.is_empty() {
            claims.check_game(game_id)?;
        }
        let request = request.into_inner();
        answer(
            async {
                let recorded = self.core.record(&GameReport::try_from(request)?).await?;
                Ok(pb::RecordResultResponse {
                    first_time: recorded.first_time,
                    white: recorded.white.map(convert::change_pb),
                    black: recorded.black.map(convert::change_pb),
                })
            }
            .await,
        )
    }

    #[instrument(level = "debug", skip_all, fields(player_id = %request.get_ref().player_id))]
    async fn get_rating_history(
        &self,
        request: Request<pb::GetRatingHistoryRequest>,
    ) -> Result<Response<pb::GetRatingHistoryResponse>, Status> {
        let request = request.get_ref();
        answer(
            async {
                let category = convert::optional_category(request.category)?;
                let before = convert::history_cursor(&request.page_token)?;
                let size = convert::page_size(request.page_size);
                let page = self
                    .core
                    .history(&request.player_id, category, before, size)
                    .await?;
                Ok(pb::GetRatingHistoryResponse {
                    entries: page.rows.into_iter().map(convert::history_pb).collect(),
                    next_page_token: page.next.map(convert::history_token).unwrap_or_default(),
                })
            }
            .await,
        )
    }

    #[instrument(level = "debug", skip_all, fields(category = request.get_ref().category))]
    async fn leaderboard(
        &self,
        request: Request<pb::LeaderboardRequest>,
    ) -> Result<Response<pb::LeaderboardResponse>, Status> {
        let request = request.get_ref();
        answer(
            async {
                // No untimed leaderboard: such games are never rated, so an
                // empty list would suggest nobody had played one yet.
                let category = SpeedCategory::try_from(request.category)?.rated()?;
                let after = convert::leaderboard_cursor(&request.page_token)?;
                let size = convert::page_size(request.page_size);
                let page = self
                    .core
                    .leaderboard(category, after.as_ref(), size)
                    .await?;
                Ok(convert::leaderboard_pb(
                    self.core.system(),
                    page,
                    Timestamp::now(),
                ))
            }
            .await,
        )
    }
}
