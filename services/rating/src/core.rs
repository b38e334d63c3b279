//! The service's core: what each call does, in domain values. Accounts are
//! registered and checked here (with the login throttle), sessions ended,
//! games applied once and ratings, history and leaderboards read, over the
//! [`Store`] and the password [`Hasher`]. Nothing here knows the wire: the
//! gRPC edge ([`crate::api`]) converts requests into these calls and their
//! answers back.

use chess_domain::{GameId, PlayerId, SpeedCategory, Timestamp};
use chess_ratings::System;
use chess_runtime::throttle::{Policy, Throttle};
use opentelemetry::{
    KeyValue,
    metrics::{Counter, Histogram},
};

use crate::{
    accounts::{EMAIL_MAX, Email, Hasher, NostrKey, Password, Username},
    error::Error,
    model::{
        CategoryRating, ChatStanding, DirectoryCursor, DirectoryOrder, DirectorySort,
        GameRatingChange, GameReport, HistoryEntry, LeaderboardCursor, LeaderboardRow, Player,
        Recorded, SessionState,
    },
    store::{
        DirectoryRow, Field, Store,
        community::{MAX_PERSONAL_MUTES, StandingChange},
    },
};

/// Longest server-wide mute a moderator may give: a year.
pub const MAX_MUTE_SECS: u32 = 366 * 24 * 3600;

/// Most accounts (and unknown logins) whose failures are remembered.
const MAX_THROTTLED_ACCOUNTS: usize = 100_000;

/// How a player is looked up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlayerKey {
    Id(PlayerId),
    /// A name in any case; one that breaks the username rules names nobody.
    Username(String),
    NostrKey(NostrKey),
}

/// A player with their ratings in every rated category, as read at `at`
/// (a Glicko-2 deviation grows while the player is away, so showing a rating
/// needs the moment it stands for).
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    pub player: Player,
    pub ratings: Vec<CategoryRating>,
    pub at: Timestamp,
}

/// One page of rows, and where the next one starts (None on the last page).
#[derive(Clone, Debug, PartialEq)]
pub struct Page<T, C> {
    pub rows: Vec<T>,
    pub next: Option<C>,
}

impl<T, C> Page<T, C> {
    /// The first `size` of `rows`, read one further than a page so that a
    /// next page shows; its start is the cursor of the page's last row.
    fn cut(mut rows: Vec<T>, size: u32, cursor: impl FnOnce(&T) -> C) -> Self {
        let size = size as usize;
        let next = if rows.len() > size {
            rows.truncate(size);
            rows.last().map(cursor)
        } else {
            None
        };
        Self { rows, next }
    }
}

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

    fn login(&self, outcome: &'static str) {
        self.logins.add(1, &[KeyValue::new("outcome", outcome)]);
    }
}

/// The rating service's core; one per process, shared by every call.
#[derive(Debug)]
pub struct Core {
    store: Store,
    hasher: Hasher,
    /// Failed password checks per account (per lower-cased login for names
    /// nobody owns, so that the answers do not tell which names exist).
    /// Here rather than in the gateways so that every replica of those
    /// counts towards the same account.
    logins: Throttle<String>,
    metrics: Metrics,
}

impl Core {
    pub fn new(store: Store, hasher: Hasher, logins: Policy) -> Self {
        Self {
            store,
            hasher,
            logins: Throttle::new(logins, MAX_THROTTLED_ACCOUNTS),
            metrics: Metrics::new(),
        }
    }

    /// The rating system games are rated in.
    pub fn system(&self) -> &System {
        self.store.system()
    }

    /// Registers a player, with the starting rating in every category.
    pub async fn register(
        &self,
        username: &Username,
        email: &Email,
        password: &Password,
    ) -> Result<Profile, Error> {
        // Spares the hashing for the common duplicate; the unique indexes
        // decide races.
        if self.store.player_named(username.as_str()).await?.is_some() {
            return Err(Error::Taken(Field::Username));
        }
        if let Some((existing, _)) = self.store.account_for_login(email.as_str()).await? {
            tracing::debug!(player_id = %existing.id, "email already registered");
            return Err(Error::Taken(Field::Email));
        }
        let hash = self.hasher.hash(password).await?;
        let now = Timestamp::now();
        let player = self.store.register(username, email, &hash, now).await?;
        self.metrics.registrations.add(1, &[]);
        tracing::debug!(player_id = %player.id, "registered");
        let ratings = self.store.ratings_of(&player.id).await?;
        Ok(Profile {
            player,
            ratings,
            at: now,
        })
    }

    /// The player whose username or email is `login`, if `password` is
    /// theirs, with their session state.
    pub async fn authenticate(
        &self,
        login: &str,
        password: &str,
    ) -> Result<(Player, SessionState), Error> {
        let account = if login.is_empty() {
            None
        } else {
            self.store.account_for_login(login).await?
        };
        let (player, stored) = match account {
            Some((player, hash)) => (Some(player), Some(hash)),
            None => (None, None),
        };
        let key = match &player {
            Some(player) => throttle_key(player),
            // No login longer than an email address names an account; cut
            // there, a remembered name costs little memory however long the
            // one sent.
            None => format!(
                "login:{}",
                login
                    .chars()
                    .take(EMAIL_MAX)
                    .collect::<String>()
                    .to_lowercase()
            ),
        };
        let matches = self.check_password(key, password, stored).await?;
        match player {
            Some(player) if matches => {
                let state = self.session_state(&player.id).await?;
                Ok((player, state))
            }
            _ => Err(Error::Unauthenticated),
        }
    }

    /// Replaces the password of `player_id` if `old_password` is theirs,
    /// ending every session; the player and their new session state.
    pub async fn change_password(
        &self,
        player_id: &PlayerId,
        old_password: &str,
        new_password: &Password,
    ) -> Result<(Player, SessionState), Error> {
        let (player, old_hash) = self
            .store
            .account(player_id)
            .await?
            .ok_or_else(|| not_found(player_id))?;
        if !self
            .check_password(throttle_key(&player), old_password, Some(old_hash.clone()))
            .await?
        {
            return Err(Error::WrongPassword);
        }
        let new_hash = self.hasher.hash(new_password).await?;
        let state = self
            .store
            .change_password(&player.id, &old_hash, &new_hash, Timestamp::now().secs())
            .await?
            // Changed (or removed) meanwhile: the old password is no more.
            .ok_or(Error::WrongPassword)?;
        tracing::info!(player_id = %player.id, "password changed; every session ended");
        Ok((player, state))
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
            self.metrics.login("throttled");
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
        self.metrics.login(if matches { "ok" } else { "refused" });
        Ok(matches)
    }

    /// The session state of `player_id`.
    pub async fn session_state(&self, player_id: &PlayerId) -> Result<SessionState, Error> {
        self.store
            .session_state(player_id, Timestamp::now().secs())
            .await?
            .ok_or_else(|| not_found(player_id))
    }

    /// The session states of those of `player_ids` who exist.
    pub async fn session_states(
        &self,
        player_ids: &[PlayerId],
    ) -> Result<Vec<(PlayerId, SessionState)>, Error> {
        let states = self
            .store
            .session_states(player_ids, Timestamp::now().secs())
            .await?;
        Ok(states.into_iter().collect())
    }

    /// Ends session `session_id` of `player_id`, remembered until
    /// `expires_at_s` (Unix seconds), when it would have expired anyway.
    pub async fn revoke_session(
        &self,
        player_id: &PlayerId,
        session_id: &str,
        expires_at_s: i64,
    ) -> Result<SessionState, Error> {
        let state = self
            .store
            .revoke_session(player_id, session_id, expires_at_s, Timestamp::now().secs())
            .await?
            .ok_or_else(|| not_found(player_id))?;
        tracing::debug!(player_id = %player_id, "session ended");
        Ok(state)
    }

    /// Ends every session of `player_id`.
    pub async fn revoke_all_sessions(&self, player_id: &PlayerId) -> Result<SessionState, Error> {
        let state = self
            .store
            .revoke_all_sessions(player_id, Timestamp::now().secs())
            .await?
            .ok_or_else(|| not_found(player_id))?;
        tracing::info!(player_id = %player_id, "every session ended");
        Ok(state)
    }

    /// The player `key` names, with their ratings.
    pub async fn player(&self, key: PlayerKey) -> Result<Profile, Error> {
        let player = match key {
            PlayerKey::Id(id) => self
                .store
                .player(&id)
                .await?
                .ok_or_else(|| not_found(&id))?,
            PlayerKey::Username(name) => self
                .store
                .player_named(&name)
                .await?
                .ok_or(Error::NotFound(name))?,
            PlayerKey::NostrKey(key) => {
                self.store
                    .player_with_nostr_key(&key)
                    .await?
                    .ok_or_else(|| {
                        Error::NotFound(format!("with Nostr public key {}", key.as_str()))
                    })?
            }
        };
        self.profile(player).await
    }

    /// Links `key` to `player_id`, in place of any key linked before.
    pub async fn link_nostr_key(
        &self,
        player_id: &PlayerId,
        key: &NostrKey,
    ) -> Result<Profile, Error> {
        let player = self
            .store
            .link_nostr_key(player_id, key)
            .await?
            .ok_or_else(|| not_found(player_id))?;
        tracing::info!(player_id = %player.id, "Nostr public key linked");
        self.profile(player).await
    }

    /// Unlinks the Nostr key of `player_id`, if any.
    pub async fn unlink_nostr_key(&self, player_id: &PlayerId) -> Result<Profile, Error> {
        let player = self
            .store
            .unlink_nostr_key(player_id)
            .await?
            .ok_or_else(|| not_found(player_id))?;
        tracing::info!(player_id = %player.id, "Nostr public key unlinked");
        self.profile(player).await
    }

    /// `player` with their current ratings.
    async fn profile(&self, player: Player) -> Result<Profile, Error> {
        let ratings = self.store.ratings_of(&player.id).await?;
        Ok(Profile {
            player,
            ratings,
            at: Timestamp::now(),
        })
    }

    /// The ratings in `category` of those of `player_ids` who are
    /// registered, in the order asked.
    pub async fn ratings(
        &self,
        category: SpeedCategory,
        player_ids: &[PlayerId],
    ) -> Result<Vec<(PlayerId, CategoryRating)>, Error> {
        let found = self.store.ratings_in(category, player_ids).await?;
        Ok(player_ids
            .iter()
            .filter_map(|id| found.get(id).map(|rating| (id.clone(), *rating)))
            .collect())
    }

    /// Applies a finished game, once however often it is reported.
    pub async fn record(&self, report: &GameReport) -> Result<Recorded, Error> {
        let started = std::time::Instant::now();
        let recorded = self.store.record(report, Timestamp::now()).await?;
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
        Ok(recorded)
    }

    /// A page of `player_id`'s rating history (in `category`, or every
    /// one), newest first, after row `before`; the next page starts after
    /// the row id it gives.
    pub async fn history(
        &self,
        player_id: &PlayerId,
        category: Option<SpeedCategory>,
        before: Option<i64>,
        size: u32,
    ) -> Result<Page<HistoryEntry, i64>, Error> {
        if self.store.player(player_id).await?.is_none() {
            return Err(not_found(player_id));
        }
        let rows = self
            .store
            .history(player_id, category, before, u64::from(size) + 1)
            .await?;
        Ok(Page::cut(rows, size, |last| last.id))
    }

    /// A page of the leaderboard of `category`, after `after`.
    pub async fn leaderboard(
        &self,
        category: SpeedCategory,
        after: Option<&LeaderboardCursor>,
        size: u32,
    ) -> Result<Page<LeaderboardRow, LeaderboardCursor>, Error> {
        let rows = self
            .store
            .leaderboard(category, after, u64::from(size) + 1)
            .await?;
        Ok(Page::cut(rows, size, |last| LeaderboardCursor {
            rating: last.rating.standing.rating.rating,
            username_key: last.username.key(),
            rank: last.rank,
        }))
    }
}

/// The players directory and chat standing.
impl Core {
    /// A page of every registered player whose username starts with
    /// `prefix` (any case), in `order`, after `after`; each with their
    /// ratings as of now.
    pub async fn list_players(
        &self,
        prefix: &str,
        order: &DirectoryOrder,
        after: Option<&DirectoryCursor>,
        size: u32,
    ) -> Result<(Page<DirectoryRow, DirectoryCursor>, Timestamp), Error> {
        let allowed = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
        if prefix.len() > crate::accounts::USERNAME_MAX || !prefix.chars().all(allowed) {
            return Err(Error::Invalid(format!(
                "a username prefix is at most {} letters, digits, `_` or `-`",
                crate::accounts::USERNAME_MAX
            )));
        }
        let key = crate::accounts::username_key(prefix);
        let rows = self
            .store
            .directory(&key, order, after, u64::from(size) + 1)
            .await?;
        let sort = order.sort;
        let category = order.category;
        let page = Page::cut(rows, size, |last| DirectoryCursor {
            value: last.ratings.iter().find(|r| r.category == category).map_or(
                0.0,
                |r| match sort {
                    DirectorySort::Name => 0.0,
                    DirectorySort::Rating => r.standing.rating.rating,
                    DirectorySort::Games => f64::from(r.standing.games_played),
                },
            ),
            username_key: last.player.username.key(),
        });
        Ok((page, Timestamp::now()))
    }

    /// The chat standing of `player_id`.
    pub async fn chat_standing(&self, player_id: &PlayerId) -> Result<ChatStanding, Error> {
        self.store
            .chat_standing(player_id, Timestamp::now())
            .await?
            .ok_or_else(|| not_found(player_id))
    }

    async fn changed(
        &self,
        player_id: &PlayerId,
        change: StandingChange,
    ) -> Result<ChatStanding, Error> {
        if !self.store.change_standing(player_id, change).await? {
            return Err(not_found(player_id));
        }
        self.chat_standing(player_id).await
    }

    /// The registered player called `name` (any case).
    async fn named(&self, name: &str) -> Result<Player, Error> {
        self.store
            .player_named(name)
            .await?
            .ok_or_else(|| Error::NotFound(name.to_owned()))
    }

    /// Grants or revokes the moderator role of the player called `username`.
    pub async fn set_moderator(
        &self,
        username: &str,
        moderator: bool,
    ) -> Result<(PlayerId, ChatStanding), Error> {
        let player = self.named(username).await?;
        let standing = self
            .changed(&player.id, StandingChange::Moderator(moderator))
            .await?;
        tracing::info!(player_id = %player.id, moderator, "moderator role changed");
        Ok((player.id, standing))
    }

    /// Switches chat off (or on) for `player_id` themselves.
    pub async fn set_chat_off(
        &self,
        player_id: &PlayerId,
        chat_off: bool,
    ) -> Result<ChatStanding, Error> {
        self.changed(player_id, StandingChange::ChatOff(chat_off))
            .await
    }

    /// Mutes (or unmutes) the player called `username` for `player_id`.
    pub async fn set_personal_mute(
        &self,
        player_id: &PlayerId,
        username: &str,
        muted: bool,
    ) -> Result<(PlayerId, ChatStanding), Error> {
        let target = self.named(username).await?;
        if &target.id == player_id {
            return Err(Error::Invalid("a player cannot mute themselves".into()));
        }
        let before = self.chat_standing(player_id).await?;
        if muted
            && !before.muted.iter().any(|(id, _)| id == &target.id)
            && before.muted.len() >= MAX_PERSONAL_MUTES
        {
            return Err(Error::Invalid(format!(
                "at most {MAX_PERSONAL_MUTES} players can be muted; unmute some first"
            )));
        }
        let now = Timestamp::now();
        if !self
            .store
            .set_personal_mute(player_id, &target.id, muted, now)
            .await?
        {
            return Err(not_found(player_id));
        }
        Ok((target.id, self.chat_standing(player_id).await?))
    }

    /// Mutes the chat of the player called `username` server-wide for
    /// `secs` seconds from now (0 lifts a mute), on behalf of moderator
    /// `moderator_id`.
    pub async fn mute_account(
        &self,
        moderator_id: &PlayerId,
        username: &str,
        secs: u32,
    ) -> Result<(PlayerId, ChatStanding), Error> {
        if secs > MAX_MUTE_SECS {
            return Err(Error::Invalid(format!(
                "a mute lasts at most {} days",
                MAX_MUTE_SECS / 86_400
            )));
        }
        if !self.chat_standing(moderator_id).await?.moderator {
            return Err(Error::NotModerator);
        }
        let target = self.named(username).await?;
        let until = (secs > 0).then(|| Timestamp::now().plus_millis(i64::from(secs) * 1000));
        let standing = self
            .changed(&target.id, StandingChange::MutedUntil(until))
            .await?;
        tracing::info!(
            moderator_id = %moderator_id,
            player_id = %target.id,
            secs,
            "account muted server-wide"
        );
        Ok((target.id, standing))
    }
}

impl Core {
    /// The rating changes of `games` (at most [`MAX_GAMES_PER_CALL`]):
    /// `player`'s, or every player's.
    pub async fn game_changes(
        &self,
        games: &[GameId],
        player: Option<&PlayerId>,
    ) -> Result<Vec<GameRatingChange>, Error> {
        if games.len() > MAX_GAMES_PER_CALL {
            return Err(Error::Invalid(format!(
                "at most {MAX_GAMES_PER_CALL} games per call"
            )));
        }
        Ok(self.store.game_changes(games, player).await?)
    }
}

/// The most games one call asks the rating changes of.
pub const MAX_GAMES_PER_CALL: usize = 200;

/// The key the login throttle counts `player`'s failures under.
fn throttle_key(player: &Player) -> String {
    format!("id:{}", player.id)
}

/// The answer for a player who is not registered.
fn not_found(player_id: &PlayerId) -> Error {
    Error::NotFound(player_id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_cut_from_one_row_too_many_names_the_next() {
        let page = Page::cut(vec![5, 4, 3], 2, |last| *last);
        assert_eq!((page.rows, page.next), (vec![5, 4], Some(4)));
        let page = Page::cut(vec![5, 4], 2, |last| *last);
        assert_eq!((page.rows, page.next), (vec![5, 4], None));
    }
}
