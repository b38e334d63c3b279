//! Which signed-in sessions have ended: the token check of [`crate::core::auth`]
//! plus the player's session state from the rating service, cached.
//!
//! A token names its session and the player's session generation at
//! sign-in. The rating service keeps each player's current generation
//! (advanced by "log out everywhere" and password changes) and the sessions
//! ended one by one (Logout) until they expire. A token is refused when its
//! generation is older than the player's or its session is listed.
//!
//! The state is cached per player for `ttl` (`--session-cache-secs`); an
//! ending made through this replica updates its cache at once, one made
//! through another replica is seen here within `ttl`. The states of the
//! players in play are kept fresh in the background ([`Sessions::keep_fresh`]),
//! many to a call: a busy player's calls never wait for their state, and
//! the rating service answers one call per thousand players every quarter
//! of `ttl` instead of one per player every `ttl`. While the rating
//! service cannot be reached, a state fetched within [`STALE_GRACE`] is
//! still used, so play goes on through a rating restart; with none, the
//! call is UNAVAILABLE (never let in unchecked).

use std::{
    collections::{HashMap, HashSet, hash_map::Entry},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use chess_domain::PlayerId;
use chess_internal_clients::RatingClient;
use chess_proto::rating::v1 as rating;
use chess_runtime::Shutdown;
use http::HeaderMap;
use tonic::Code;

use crate::core::auth::{Session, TokenError, Tokens};

/// Why a call's session is not let in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    /// No valid token, or its session has ended.
    #[error(transparent)]
    Token(#[from] TokenError),
    /// Whether the session has ended cannot be told now.
    #[error("cannot check the session now; try again shortly")]
    Unavailable,
}

/// How long a cached state may stand in while the rating service is
/// unreachable.
pub const STALE_GRACE: Duration = Duration::from_secs(300);
/// Most players whose state is cached.
const MAX_CACHED: usize = 100_000;
/// Most players whose states one background call fetches (the rating
/// service's limit).
const REFRESH_BATCH: usize = 1000;

/// A player's session state as last fetched.
#[derive(Clone, Debug)]
struct Cached {
    fetched: Instant,
    /// When a token of the player was last checked against it.
    used: Instant,
    generation: i64,
    revoked: HashSet<String>,
}

impl Cached {
    fn new(state: rating::SessionState, fetched: Instant) -> Self {
        Self {
            fetched,
            used: fetched,
            generation: state.generation,
            revoked: state.revoked_session_ids.into_iter().collect(),
        }
    }

    /// Whether `session` has ended by this state.
    fn ends(&self, session: &Session) -> bool {
        session.generation < self.generation || self.revoked.contains(&session.session_id)
    }
}

/// Checks tokens and whether their sessions still live. Shared by every
/// handler of the public API.
#[derive(Debug)]
pub struct Sessions {
    tokens: Tokens,
    rating: RatingClient,
    ttl: Duration,
    cache: Mutex<HashMap<PlayerId, Cached>>,
}

impl Sessions {
    pub fn new(tokens: Tokens, rating: RatingClient, ttl: Duration) -> Self {
        Self {
            tokens,
            rating,
            ttl,
            cache: Mutex::new(HashMap::new()),
        }
    }

    pub fn tokens(&self) -> &Tokens {
        &self.tokens
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<PlayerId, Cached>> {
        // Entries are replaced whole; a panic elsewhere leaves none half-done.
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The live session of a call that must be signed in, by its
    /// `authorization` metadata.
    pub async fn authenticate(&self, headers: &HeaderMap) -> Result<Session, SessionError> {
        let session = self.tokens.authenticate(headers)?;
        self.check(session).await
    }

    /// The live session of a public call, if it carries a token; an invalid
    /// or ended one is refused.
    pub async fn optional(&self, headers: &HeaderMap) -> Result<Option<Session>, SessionError> {
        match self.tokens.optional(headers)? {
            Some(session) => self.check(session).await.map(Some),
            None => Ok(None),
        }
    }

    /// `session` if it has not ended.
    pub async fn check(&self, session: Session) -> Result<Session, SessionError> {
        let now = Instant::now();
        let cached = self
            .cache()
            .get_mut(&session.player_id)
            .filter(|c| now.duration_since(c.fetched) < self.ttl)
            .map(|c| {
                c.used = now;
                c.clone()
            });
        let state = match cached {
            // A token newer than the cached state: the state is out of date.
            Some(state) if session.generation <= state.generation => state,
            _ => self.fetch(&session.player_id).await?,
        };
        if state.ends(&session) {
            return Err(TokenError::Ended.into());
        }
        Ok(session)
    }

    /// Fetches and caches the player's state; falls back on a recent one
    /// while the rating service is unreachable.
    async fn fetch(&self, player_id: &PlayerId) -> Result<Cached, SessionError> {
        let asked = Instant::now();
        let fetched = self
            .rating
            .rpc()
            .get_session_state(rating::GetSessionStateRequest {
                player_id: player_id.to_string(),
            })
            .await;
        match fetched {
            Ok(response) => {
                let state = response.into_inner().state.unwrap_or_default();
                Ok(self.remember(player_id, state, asked))
            }
            // The account is gone, and its sessions with it.
            Err(status) if status.code() == Code::NotFound => Err(TokenError::Ended.into()),
            Err(status) => {
                let stale = self
                    .cache()
                    .get(player_id)
                    .filter(|c| c.fetched.elapsed() < STALE_GRACE)
                    .cloned();
                match stale {
                    Some(state) => {
                        tracing::warn!(error = %status.message(), "rating service unreachable; using a recent session state");
                        Ok(state)
                    }
                    None => Err(SessionError::Unavailable),
                }
            }
        }
    }

    /// Caches `state` for the player, as the rating service answered a call
    /// made at `asked` (see [`keep`]), and returns what is cached now. The
    /// player is in play: their call is why the state was asked for.
    fn remember(
        &self,
        player_id: &PlayerId,
        state: rating::SessionState,
        asked: Instant,
    ) -> Cached {
        let now = Instant::now();
        let mut cache = self.cache();
        if cache.len() >= MAX_CACHED && !cache.contains_key(player_id) {
            cache.retain(|_, c| now.duration_since(c.fetched) < STALE_GRACE);
            if cache.len() >= MAX_CACHED {
                cache.clear();
            }
        }
        let kept = keep(&mut cache, player_id, state, asked);
        kept.used = now;
        kept.clone()
    }

    /// When a token of `player_id` was last checked here, if it is still
    /// remembered (what [`super::presence`] calls online).
    pub fn last_seen(&self, player_id: &PlayerId) -> Option<Instant> {
        self.cache().get(player_id).map(|c| c.used)
    }

    /// How many players had a token checked here within `window`.
    pub fn seen_within(&self, window: Duration) -> usize {
        let now = Instant::now();
        self.cache()
            .values()
            .filter(|c| now.duration_since(c.used) < window)
            .count()
    }

    /// Keeps the states of the players in play fresh until `shutdown`:
    /// every quarter of `ttl`, the states older than half of it, of players
    /// whose tokens were checked within `ttl`, are fetched again, many to a
    /// call. An ending made through another replica is then seen here
    /// within three quarters of `ttl` for those players. A player not seen
    /// for `ttl` is left alone; their next call fetches their state as
    /// before, as does any call while the rating service cannot answer.
    pub fn keep_fresh(self: &Arc<Self>, shutdown: Shutdown) {
        let sessions = Arc::clone(self);
        tokio::spawn(async move {
            let mut every =
                tokio::time::interval((sessions.ttl / 4).max(Duration::from_millis(10)));
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = every.tick() => sessions.refresh().await,
                    () = shutdown.cancelled() => return,
                }
            }
        });
    }

    /// One round of [`Sessions::keep_fresh`].
    async fn refresh(&self) {
        let asked = Instant::now();
        let due: Vec<PlayerId> = self
            .cache()
            .iter()
            .filter(|(_, c)| {
                asked.duration_since(c.used) < self.ttl
                    && asked.duration_since(c.fetched) >= self.ttl / 2
            })
            .map(|(id, _)| id.clone())
            .collect();
        for batch in due.chunks(REFRESH_BATCH) {
            let fetched = self
                .rating
                .rpc()
                .get_session_states(rating::GetSessionStatesRequest {
                    player_ids: batch.iter().map(PlayerId::to_string).collect(),
                })
                .await;
            let mut states: HashMap<String, rating::SessionState> = match fetched {
                Ok(response) => response
                    .into_inner()
                    .states
                    .into_iter()
                    .filter_map(|s| Some((s.player_id, s.state?)))
                    .collect(),
                Err(status) => {
                    tracing::debug!(error = %status.message(), "cannot refresh session states now");
                    return;
                }
            };
            let mut cache = self.cache();
            for id in batch {
                match states.remove(id.as_str()) {
                    Some(state) => {
                        keep(&mut cache, id, state, asked);
                    }
                    // No account any more: the next call asks on its own
                    // and is refused (unless the entry was written since).
                    None => {
                        if cache.get(id).is_some_and(|c| c.fetched <= asked) {
                            cache.remove(id);
                        }
                    }
                }
            }
        }
    }

    /// Records a state the rating service returned after an ending made
    /// through this replica, so it holds here at once.
    pub fn ended(&self, player_id: &PlayerId, state: Option<rating::SessionState>) {
        if let Some(state) = state {
            self.remember(player_id, state, Instant::now());
        } else {
            self.cache().remove(player_id);
        }
    }
}

/// Caches `state` for the player, as the rating service answered a call
/// made at `asked`, unless what is cached is newer: written since that call
/// (by an ending through this replica, or another fetch), or of a newer
/// generation. A replaced entry keeps when the player was last seen. The
/// entry now cached.
fn keep<'a>(
    cache: &'a mut HashMap<PlayerId, Cached>,
    player_id: &PlayerId,
    state: rating::SessionState,
    asked: Instant,
) -> &'a mut Cached {
    let fresh = Cached::new(state, Instant::now());
    match cache.entry(player_id.clone()) {
        Entry::Occupied(entry) => {
            let existing = entry.into_mut();
            if existing.fetched <= asked && existing.generation <= fresh.generation {
                *existing = Cached {
                    used: existing.used,
                    ..fresh
                };
            }
            existing
        }
        Entry::Vacant(entry) => entry.insert(fresh),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(id: &str, generation: i64) -> Session {
        Session {
            player_id: PlayerId::trusted("p"),
            username: chess_domain::Username::trusted("u"),
            expires_at: i64::MAX,
            session_id: id.into(),
            generation,
        }
    }

    #[test]
    fn older_generations_and_listed_sessions_have_ended() {
        let state = Cached::new(
            rating::SessionState {
                generation: 2,
                revoked_session_ids: vec!["gone".into()],
            },
            Instant::now(),
        );
        assert!(state.ends(&session("a", 1)));
        assert!(state.ends(&session("gone", 2)));
        assert!(!state.ends(&session("a", 2)));
        // Issued after a change this state has not seen yet.
        assert!(!state.ends(&session("a", 3)));
    }

    #[test]
    fn an_answer_does_not_replace_a_newer_entry() {
        let state = |generation: i64, revoked: &[&str]| rating::SessionState {
            generation,
            revoked_session_ids: revoked.iter().map(|s| (*s).to_owned()).collect(),
        };
        let mut cache = HashMap::new();
        let p = PlayerId::trusted("p");
        let asked = Instant::now();
        keep(&mut cache, &p, state(1, &[]), asked);
        let seen = cache["p"].used;

        // Written after the call was made: an ending through this replica.
        let slow = Instant::now() - Duration::from_secs(1);
        keep(&mut cache, &p, state(1, &["gone"]), Instant::now());
        keep(&mut cache, &p, state(1, &[]), slow);
        assert!(cache["p"].revoked.contains("gone"));
        // A newer generation stays.
        keep(&mut cache, &p, state(2, &[]), Instant::now());
        keep(&mut cache, &p, state(1, &[]), Instant::now());
        assert_eq!(cache["p"].generation, 2);
        // A newer answer replaces the state and keeps when the player was seen.
        keep(&mut cache, &p, state(2, &["later"]), Instant::now());
        assert!(cache["p"].revoked.contains("later"));
        assert_eq!(cache["p"].used, seen);
    }
}
