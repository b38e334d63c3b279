//! The gRPC face of the service: requests are checked and converted here,
//! then handed to the store and the password hasher.

use chess_domain::{SpeedCategory, now_ms};
use chess_proto::rating::v1::{self as pb, get_player_request::Key, rating_service_server};
use chess_runtime::{
    Claims,
    throttle::{Policy, Throttle},
};
use opentelemetry::{
    KeyValue,
    metrics::{Counter, Histogram},
};
use tonic::{Request, Response, Status};
use tracing::instrument;

use crate::{
    accounts::{Email, Hasher, NostrKey, Password, Username},
    convert,
    error::Error,
    model::{GameReport, LeaderboardCursor, Player, SessionState},
    store::{Field, Store, StoreError},
};

/// Most player ids one `GetRatings` or `GetSessionStates` may ask for.
const MAX_PLAYERS_PER_CALL: usize = 1000;
/// Longest session id accepted.
const MAX_SESSION_ID: usize = 64;
/// Most accounts (and unknown logins) whose failures are remembered.
const MAX_THROTTLED_ACCOUNTS: usize = 100_000;

/// The service's metrics.
#[derive(Clone, Debug)]
struct Metrics {
    results: Counter<u64>,
    registrations: Counter<u64>,
    logins: Counter<u64>,
    record_seconds: Histogram<f64>,
}

impl Metrics {
    fn new() -> Self {
        let meter = chess_telemetry::meter("chess-rating");
        Self {
            results: meter
                .u64_counter("chess.rating.results")
                .with_description("Game results received, by whether they were new")
                .build(),
            registrations: meter
                .u64_counter("chess.rating.registrations")
                .with_description("Accounts created")
                .build(),
            logins: meter
                .u64_counter("chess.rating.logins")
                .with_description("Authentication attempts, by outcome")
                .build(),
            record_seconds: meter
                .f64_histogram("chess.rating.record_result.duration")
                .with_unit("s")
                .with_description("Time to apply a game result, retries included")
                .build(),
        }
    }
}

/// Implements `chess.rating.v1.RatingService`.
#[derive(Debug)]
pub struct RatingApi {
    store: Store,
    hasher: Hasher,
    /// Failed password checks per account (per lower-cased login for names
    /// nobody owns, so that the answers do not tell which names exist).
    /// Here rather than in the gateways so that every replica of those
    /// counts towards the same account.
    logins: Throttle<String>,
    metrics: Metrics,
}

impl RatingApi {
    pub fn new(store: Store, hasher: Hasher, logins: Policy) -> Self {
        Self {
            store,
            hasher,
            logins: Throttle::new(logins, MAX_THROTTLED_ACCOUNTS),
            metrics: Metrics::new(),
        }
    }

    /// Checks `password` against `stored` under the account throttle of
    /// `key`: a waiting account is refused without hashing, a failure
    /// counts, a success forgives.
    async fn check_password(
        &self,
        key: String,
        password: &str,
        stored: Option<String>,
    ) -> Result<bool, Error> {
        if let Err(wait) = self.logins.check(&key) {
            self.metrics
                .logins
                .add(1, &[KeyValue::new("outcome", "throttled")]);
            return Err(Error::Throttled(wait));
        }
        let matches = self.hasher.verify(password, stored).await?;
        if matches {
            self.logins.forgive(&key);
        } else {
            let wait = self.logins.fail(key);
            if !wait.is_zero() {
                tracing::info!(
                    wait_secs = wait.as_secs_f64(),
                    "logins of an account throttled"
                );
            }
        }
        let outcome = if matches { "ok" } else { "refused" };
        self.metrics
            .logins
            .add(1, &[KeyValue::new("outcome", outcome)]);
        Ok(matches)
    }

    async fn session_state_of(&self, player_id: &str) -> Result<SessionState, Error> {
        self.store
            .session_state(player_id, now_ms() / 1000)
            .await?
            .ok_or_else(|| Error::NotFound(player_id.to_owned()))
    }

    async fn register(&self, request: pb::RegisterRequest) -> Result<pb::RegisterResponse, Error> {
        let username = Username::parse(&request.username)?;
        let email = Email::parse(&request.email)?;
        let password = Password::parse(&request.password)?;
        // Spares the hashing for the common duplicate; the unique indexes
        // decide races.
        if self.store.player_named(username.as_str()).await?.is_some() {
            return Err(Error::Taken(Field::Username));
        }
        if let Some((existing, _)) = self.store.account_for_login(email.as_str()).await? {
            tracing::debug!(player_id = %existing.id, "email already registered");
            return Err(Error::Taken(Field::Email));
        }
        let hash = self.hasher.hash(&password).await?;
        let now = now_ms();
        let player = self.store.register(&username, &email, &hash, now).await?;
        self.metrics.registrations.add(1, &[]);
        tracing::debug!(player_id = %player.id, "registered");
        let ratings = self.store.ratings_of(&player.id).await?;
        Ok(pb::RegisterResponse {
            profile: Some(convert::profile_pb(
                self.store.system(),
                &player,
                &ratings,
                now,
            )),
            email: player.email,
        })
    }

    async fn authenticate(
        &self,
        request: pb::AuthenticateRequest,
    ) -> Result<pb::AuthenticateResponse, Error> {
        let account = if request.login.is_empty() {
            None
        } else {
            self.store.account_for_login(&request.login).await?
        };
        let (player, stored) = match account {
            Some((player, hash)) => (Some(player), Some(hash)),
            None => (None, None),
        };
        let key = match &player {
            Some(player) => format!("id:{}", player.id),
            // No login longer than an email address names an account; cut
            // there, a remembered name costs little memory however long the
            // one sent.
            None => format!(
                "login:{}",
                request
                    .login
                    .chars()
                    .take(crate::accounts::EMAIL_MAX)
                    .collect::<String>()
                    .to_lowercase()
            ),
        };
        let matches = self.check_password(key, &request.password, stored).await?;
        match player {
            Some(player) if matches => {
                let state = self.session_state_of(&player.id).await?;
                Ok(pb::AuthenticateResponse {
                    player_id: player.id,
                    username: player.username,
                    session_generation: state.generation,
                })
            }
            _ => Err(Error::Unauthenticated),
        }
    }

    async fn change_password(
        &self,
        request: pb::ChangePasswordRequest,
    ) -> Result<pb::ChangePasswordResponse, Error> {
        let new_password = Password::parse(&request.new_password)?;
        let (player, old_hash) = self
            .store
            .account(&request.player_id)
            .await?
            .ok_or_else(|| Error::NotFound(request.player_id.clone()))?;
        let key = format!("id:{}", player.id);
        if !self
            .check_password(key, &request.old_password, Some(old_hash.clone()))
            .await?
        {
            return Err(Error::WrongPassword);
        }
        let new_hash = self.hasher.hash(&new_password).await?;
        let state = self
            .store
            .change_password(&player.id, &old_hash, &new_hash, now_ms() / 1000)
            .await?
            // Changed (or removed) meanwhile: the old password is no more.
            .ok_or(Error::WrongPassword)?;
        tracing::info!(player_id = %player.id, "password changed; every session ended");
        Ok(pb::ChangePasswordResponse {
            state: Some(convert::session_state_pb(state)),
            username: player.username,
        })
    }

    async fn get_session_state(
        &self,
        request: pb::GetSessionStateRequest,
    ) -> Result<pb::GetSessionStateResponse, Error> {
        let state = self.session_state_of(&request.player_id).await?;
        Ok(pb::GetSessionStateResponse {
            state: Some(convert::session_state_pb(state)),
        })
    }

    async fn get_session_states(
        &self,
        request: pb::GetSessionStatesRequest,
    ) -> Result<pb::GetSessionStatesResponse, Error> {
        at_most_players_per_call(&request.player_ids)?;
        let states = self
            .store
            .session_states(&request.player_ids, now_ms() / 1000)
            .await?;
        Ok(pb::GetSessionStatesResponse {
            states: states
                .into_iter()
                .map(|(player_id, state)| pb::PlayerSessionState {
                    player_id,
                    state: Some(convert::session_state_pb(state)),
                })
                .collect(),
        })
    }

    async fn revoke_session(
        &self,
        request: pb::RevokeSessionRequest,
    ) -> Result<pb::RevokeSessionResponse, Error> {
        if request.session_id.is_empty() || request.session_id.len() > MAX_SESSION_ID {
            return Err(Error::Invalid(format!(
                "a session id is 1 to {MAX_SESSION_ID} characters"
            )));
        }
        let expires_at_s = request
            .expires_at
            .as_ref()
            .ok_or_else(|| Error::Invalid("expires_at must be given".into()))?
            .seconds;
        let state = self
            .store
            .revoke_session(
                &request.player_id,
                &request.session_id,
                expires_at_s,
                now_ms() / 1000,
            )
            .await?
            .ok_or_else(|| Error::NotFound(request.player_id.clone()))?;
        tracing::debug!(player_id = %request.player_id, "session ended");
        Ok(pb::RevokeSessionResponse {
            state: Some(convert::session_state_pb(state)),
        })
    }

    async fn revoke_all_sessions(
        &self,
        request: pb::RevokeAllSessionsRequest,
    ) -> Result<pb::RevokeAllSessionsResponse, Error> {
        let state = self
            .store
            .revoke_all_sessions(&request.player_id, now_ms() / 1000)
            .await?
            .ok_or_else(|| Error::NotFound(request.player_id.clone()))?;
        tracing::info!(player_id = %request.player_id, "every session ended");
        Ok(pb::RevokeAllSessionsResponse {
            state: Some(convert::session_state_pb(state)),
        })
    }

    async fn get_player(
        &self,
        request: pb::GetPlayerRequest,
    ) -> Result<pb::GetPlayerResponse, Error> {
        let player = match request.key {
            Some(Key::PlayerId(id)) => self.store.player(&id).await?.ok_or(Error::NotFound(id))?,
            Some(Key::Username(name)) => self
                .store
                .player_named(&name)
                .await?
                .ok_or(Error::NotFound(name))?,
            Some(Key::NostrPublicKey(key)) => self
                .store
                .player_with_nostr_key(&NostrKey::parse(&key)?)
                .await?
                .ok_or_else(|| Error::NotFound(format!("with Nostr public key {key}")))?,
            None => {
                return Err(Error::Invalid(
                    "a player id, username or Nostr public key must be given".into(),
                ));
            }
        };
        self.player_response(player).await
    }

    async fn link_nostr_key(
        &self,
        request: pb::LinkNostrKeyRequest,
    ) -> Result<pb::LinkNostrKeyResponse, Error> {
        let key = NostrKey::parse(&request.public_key)?;
        let player_id = required_player(&request.player_id)?;
        let player = self
            .store
            .link_nostr_key(player_id, &key)
            .await?
            .ok_or_else(|| Error::NotFound(request.player_id.clone()))?;
        tracing::info!(player_id = %player.id, "Nostr public key linked");
        Ok(pb::LinkNostrKeyResponse {
            profile: Some(self.profile(&player).await?),
        })
    }

    async fn unlink_nostr_key(
        &self,
        request: pb::UnlinkNostrKeyRequest,
    ) -> Result<pb::UnlinkNostrKeyResponse, Error> {
        let player_id = required_player(&request.player_id)?;
        let player = self
            .store
            .unlink_nostr_key(player_id)
            .await?
            .ok_or_else(|| Error::NotFound(request.player_id.clone()))?;
        tracing::info!(player_id = %player.id, "Nostr public key unlinked");
        Ok(pb::UnlinkNostrKeyResponse {
            profile: Some(self.profile(&player).await?),
        })
    }

    /// `player`'s public profile with their current ratings.
    async fn profile(
        &self,
        player: &Player,
    ) -> Result<chess_proto::common::v1::PlayerProfile, Error> {
        let ratings = self.store.ratings_of(&player.id).await?;
        Ok(convert::profile_pb(
            self.store.system(),
            player,
            &ratings,
            now_ms(),
        ))
    }

    async fn player_response(&self, player: Player) -> Result<pb::GetPlayerResponse, Error> {
        Ok(pb::GetPlayerResponse {
            profile: Some(self.profile(&player).await?),
            email: player.email,
        })
    }

    async fn get_ratings(
        &self,
        request: pb::GetRatingsRequest,
    ) -> Result<pb::GetRatingsResponse, Error> {
        let category = SpeedCategory::try_from(request.category)?.rated()?;
        at_most_players_per_call(&request.player_ids)?;
        let found = self.store.ratings_in(category, &request.player_ids).await?;
        let now = now_ms();
        Ok(pb::GetRatingsResponse {
            ratings: request
                .player_ids
                .iter()
                .filter_map(|id| {
                    found.get(id).map(|rating| pb::PlayerRating {
                        player_id: id.clone(),
                        rating: Some(convert::rating_pb(self.store.system(), rating, now)),
                    })
                })
                .collect(),
        })
    }

    async fn record_result(
        &self,
        request: pb::RecordResultRequest,
    ) -> Result<pb::RecordResultResponse, Error> {
        let report = GameReport::try_from(request)?;
        let started = std::time::Instant::now();
        let recorded = self.store.record(&report, now_ms()).await?;
        self.metrics
            .record_seconds
            .record(started.elapsed().as_secs_f64(), &[]);
        self.metrics
            .results
            .add(1, &[KeyValue::new("first_time", recorded.first_time)]);
        if recorded.first_time {
            tracing::debug!(applied = recorded.white.is_some(), "result recorded");
        } else {
            tracing::debug!("result was recorded before");
        }
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
        if self.store.player(&request.player_id).await?.is_none() {
            return Err(Error::NotFound(request.player_id));
        }
        let mut rows = self
            .store
            .history(&request.player_id, category, before, u64::from(size) + 1)
            .await?;
        let next_page_token = if rows.len() > size as usize {
            rows.truncate(size as usize);
            rows.last()
                .map(|last| convert::history_token(last.id))
                .unwrap_or_default()
        } else {
            String::new()
        };
        Ok(pb::GetRatingHistoryResponse {
            entries: rows.into_iter().map(convert::history_pb).collect(),
            next_page_token,
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
        let mut rows = self
            .store
            .leaderboard(category, after.as_ref(), u64::from(size) + 1)
            .await?;
        let next_page_token = if rows.len() > size as usize {
            rows.truncate(size as usize);
            rows.last()
                .map(|last| {
                    convert::leaderboard_token(&LeaderboardCursor {
                        rating: last.rating.standing.rating.rating,
                        username_key: crate::accounts::username_key(&last.username),
                        rank: last.rank,
                    })
                })
                .unwrap_or_default()
        } else {
            String::new()
        };
        let system = self.store.system();
        let now = now_ms();
        Ok(pb::LeaderboardResponse {
            rating_system: convert::system_pb(system.kind()) as i32,
            entries: rows
                .into_iter()
                .map(|row| chess_proto::common::v1::LeaderboardEntry {
                    rank: row.rank,
                    player_id: row.player_id,
                    username: row.username,
                    rating: Some(convert::rating_pb(system, &row.rating, now)),
                })
                .collect(),
            next_page_token,
        })
    }
}

/// `player_id`, unless empty.
fn required_player(player_id: &str) -> Result<&str, Error> {
    if player_id.is_empty() {
        Err(Error::Invalid("player_id must be given".into()))
    } else {
        Ok(player_id)
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

/// Refuses a call about more players than [`MAX_PLAYERS_PER_CALL`].
fn at_most_players_per_call(player_ids: &[String]) -> Result<(), Error> {
    if player_ids.len() > MAX_PLAYERS_PER_CALL {
        return Err(Error::Invalid(format!(
            "at most {MAX_PLAYERS_PER_CALL} players per call"
        )));
    }
    Ok(())
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

#[tonic::async_trait]
impl rating_service_server::RatingService for RatingApi {
    #[instrument(level = "debug", skip_all, fields(username = %request.get_ref().username))]
    async fn register(
        &self,
        request: Request<pb::RegisterRequest>,
    ) -> Result<Response<pb::RegisterResponse>, Status> {
        // Accounts are the gateway's alone: it signs players in.
        Claims::of(&request)?.check_caller(&["gateway"])?;
        self.register(request.into_inner())
            .await
            .map(Response::new)
            .map_err(status)
    }

    #[instrument(level = "debug", skip_all)]
    async fn authenticate(
        &self,
        request: Request<pb::AuthenticateRequest>,
    ) -> Result<Response<pb::AuthenticateResponse>, Status> {
        // Accounts are the gateway's alone: it signs players in.
        Claims::of(&request)?.check_caller(&["gateway"])?;
        self.authenticate(request.into_inner())
            .await
            .map(Response::new)
            .map_err(status)
    }

    #[instrument(level = "debug", skip_all, fields(player_id = %request.get_ref().player_id))]
    async fn change_password(
        &self,
        request: Request<pb::ChangePasswordRequest>,
    ) -> Result<Response<pb::ChangePasswordResponse>, Status> {
        self.change_password(request.into_inner())
            .await
            .map(Response::new)
            .map_err(status)
    }

    #[instrument(level = "debug", skip_all, fields(player_id = %request.get_ref().player_id))]
    async fn get_session_state(
        &self,
        request: Request<pb::GetSessionStateRequest>,
    ) -> Result<Response<pb::GetSessionStateResponse>, Status> {
        self.get_session_state(request.into_inner())
            .await
            .map(Response::new)
            .map_err(status)
    }

    #[instrument(level = "debug", skip_all, fields(players = request.get_ref().player_ids.len()))]
    async fn get_session_states(
        &self,
        request: Request<pb::GetSessionStatesRequest>,
    ) -> Result<Response<pb::GetSessionStatesResponse>, Status> {
        self.get_session_states(request.into_inner())
            .await
            .map(Response::new)
            .map_err(status)
    }

    #[instrument(level = "debug", skip_all, fields(player_id = %request.get_ref().player_id))]
    async fn revoke_session(
        &self,
        request: Request<pb::RevokeSessionRequest>,
    ) -> Result<Response<pb::RevokeSessionResponse>, Status> {
        self.revoke_session(request.into_inner())
            .await
            .map(Response::new)
            .map_err(status)
    }

    #[instrument(level = "debug", skip_all, fields(player_id = %request.get_ref().player_id))]
    async fn revoke_all_sessions(
        &self,
        request: Request<pb::RevokeAllSessionsRequest>,
    ) -> Result<Response<pb::RevokeAllSessionsResponse>, Status> {
        self.revoke_all_sessions(request.into_inner())
            .await
            .map(Response::new)
            .map_err(status)
    }

    #[instrument(level = "debug", skip_all)]
    async fn get_player(
        &self,
        request: Request<pb::GetPlayerRequest>,
    ) -> Result<Response<pb::GetPlayerResponse>, Status> {
        self.get_player(request.into_inner())
            .await
            .map(Response::new)
            .map_err(status)
    }

    #[instrument(level = "debug", skip_all, fields(player_id = %request.get_ref().player_id))]
    async fn link_nostr_key(
        &self,
        request: Request<pb::LinkNostrKeyRequest>,
    ) -> Result<Response<pb::LinkNostrKeyResponse>, Status> {
        gateway_acting_for(&request, &request.get_ref().player_id)?;
        self.link_nostr_key(request.into_inner())
            .await
            .map(Response::new)
            .map_err(status)
    }

    #[instrument(level = "debug", skip_all, fields(player_id = %request.get_ref().player_id))]
    async fn unlink_nostr_key(
        &self,
        request: Request<pb::UnlinkNostrKeyRequest>,
    ) -> Result<Response<pb::UnlinkNostrKeyResponse>, Status> {
        gateway_acting_for(&request, &request.get_ref().player_id)?;
        self.unlink_nostr_key(request.into_inner())
            .await
            .map(Response::new)
            .map_err(status)
    }

    #[instrument(level = "debug", skip_all, fields(players = request.get_ref().player_ids.len()))]
    async fn get_ratings(
        &self,
        request: Request<pb::GetRatingsRequest>,
    ) -> Result<Response<pb::GetRatingsResponse>, Status> {
        self.get_ratings(request.into_inner())
            .await
            .map(Response::new)
            .map_err(status)
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
        self.record_result(request.into_inner())
            .await
            .map(Response::new)
            .map_err(status)
    }

    #[instrument(level = "debug", skip_all, fields(player_id = %request.get_ref().player_id))]
    async fn get_rating_history(
        &self,
        request: Request<pb::GetRatingHistoryRequest>,
    ) -> Result<Response<pb::GetRatingHistoryResponse>, Status> {
        self.get_rating_history(request.into_inner())
            .await
            .map(Response::new)
            .map_err(status)
    }

    #[instrument(level = "debug", skip_all, fields(category = request.get_ref().category))]
    async fn leaderboard(
        &self,
        request: Request<pb::LeaderboardRequest>,
    ) -> Result<Response<pb::LeaderboardResponse>, Status> {
        self.leaderboard(request.into_inner())
            .await
            .map(Response::new)
            .map_err(status)
    }
}
