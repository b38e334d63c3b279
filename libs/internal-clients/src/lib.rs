//! Typed clients of the internal services: who calls whom, and for what, in
//! one place.
//!
//! | caller       | calls                                                  |
//! |--------------|--------------------------------------------------------|
//! | gateway      | [`GameClient`] (play, reads, event streams), [`MatchmakingClient`], [`RatingClient`] |
//! | matchmaking  | [`GameClient`] (create, resign), [`RatingClient`] (ratings, names) |
//! | game         | [`EngineClient`] (moves, hints), [`RatingClient`] (results) |
//!
//! Calls that several callers assemble — creating a game, resigning,
//! reading ratings, recording a result ([`chess_domain::ResultReport`]), asking the engine — are typed
//! methods taking domain values, so the request is built here once. Calls a
//! caller passes through as they are (the gateway's public API over the
//! internal one) go through the generated client each of these hands out.
//!
//! The game service may run as several replicas, each serving the games of
//! some shards ([`game`] says how calls find them). Its generated client
//! ([`GameRpc`]) sends each call to the replica serving its game
//! ([`GameClient::for_game`], [`GameClient::acting`]) or to any replica
//! ([`GameClient::for_player`], [`GameClient::across_games`]), following
//! the replicas' refusals, so callers never see where a game lives. Moves,
//! the calls made most, go over one stream per replica instead
//! ([`GameClient::make_move`]). Its
//! event streams are typed methods that follow games across replicas:
//! one game ([`GameClient::watch_game`]), a player's games
//! ([`GameClient::watch_player`]) and the daily games
//! ([`GameClient::watch_daily_games`]), the last two merged from every
//! replica.
//!
//! Every call carries a caller assertion ([`chess_runtime::identity`]):
//! each client is made with the [`chess_runtime::Signer`] of its caller, and
//! the assertion of a call that acts for a player names the player (and the
//! game), so the service refuses it for anyone else
//! ([`GameClient::acting`], [`MatchmakingClient::acting`]); the typed
//! methods bind what they know.
//!
//! Every client is cheap to clone: clones share lazily connected channels
//! ([`chess_runtime::channel`]): one per service, and for the game service
//! one per replica, with its shard map. The services' default addresses are
//! [`chess_runtime::addr`].

pub mod engine;
pub mod game;
pub mod matchmaking;
pub mod rating;

use std::time::Duration;

pub use engine::{EngineClient, EngineError, FULL_STRENGTH_SEARCH};
pub use game::{ChatRooms, EventStream, GameClient, GameRpc, NewGame};
pub use matchmaking::MatchmakingClient;
pub use rating::RatingClient;

/// How long a typed call to another service may take before it fails
/// with DEADLINE_EXCEEDED.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs `call` (a request sent with [`timed`]) for at most `timeout`: the
/// server is told the deadline, and the caller stops waiting at it even if
/// the server never answers (DEADLINE_EXCEEDED naming `service`).
async fn within<T>(
    service: &str,
    timeout: Duration,
    call: impl Future<Output = Result<tonic::Response<T>, tonic::Status>>,
) -> Result<T, tonic::Status> {
    match tokio::time::timeout(timeout, call).await {
        Ok(answer) => Ok(answer?.into_inner()),
        Err(_) => Err(tonic::Status::deadline_exceeded(format!(
            "the {service} service did not answer in {} s",
            timeout.as_secs()
        ))),
    }
}

/// `message` as a request telling the server its deadline.
fn timed<T>(message: T, timeout: Duration) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.set_timeout(timeout);
    request
}
