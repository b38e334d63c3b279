//! Durable accounts, ratings and results: the tables, their migrations, and
//! the transactions that keep them consistent.
//!
//! A game is applied in one transaction that first inserts its `results` row
//! (keyed by game id), then updates both players' ratings and adds their
//! history rows. The key makes every later delivery of the same game a
//! repeat, even across restarts and replicas; the transaction makes the
//! rating changes all-or-nothing with it.
//!
//! Concurrent games of one player must not lose updates:
//! - SQLite: write transactions start with `BEGIN IMMEDIATE`, which takes the
//!   database's write lock before anything is read. (A deferred transaction
//!   would read first and fail to upgrade to a writer once another one
//!   committed.) Writers of this process also queue on a gate so they wait in
//!   line rather than in SQLite's busy handler.
//! - PostgreSQL: both rating rows are read `FOR UPDATE`, in player-id order,
//!   so a second game of the same player waits for the first and then reads
//!   its result. Serialization failures and deadlocks are retried.

mod entities;
pub mod migration;

use std::{collections::HashMap, sync::Arc, time::Duration};

use chess_domain::SpeedCategory;
use chess_ratings::{Rating, Score, Standing, System};
use chess_storage::Backend;
use sea_orm::{
    ColumnTrait as _, Condition, ConnectionTrait as _, DatabaseConnection, DatabaseTransaction,
    DbErr, EntityTrait as _, QueryFilter as _, QueryOrder as _, QuerySelect as _, RuntimeErr, Set,
    SqlErr, SqliteTransactionMode, TransactionOptions, TransactionTrait as _, TryInsertResult,
    sea_query::{Expr, OnConflict, Query},
};
use sea_orm_migration::MigratorTrait as _;
use tokio::sync::Mutex;

pub use entities::{players, rating_history, ratings, results};

use crate::accounts::{Email, Username, email_key, username_key};

/// Attempts at a transaction that keeps failing for transient reasons.
const MAX_ATTEMPTS: u32 = 12;

/// A storage failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(transparent)]
    Open(#[from] chess_storage::Error),
    #[error("database error: {0}")]
    Db(#[from] DbErr),
    #[error("the {0} is already registered")]
    Taken(Field),
    #[error("stored data is inconsistent: {0}")]
    Corrupt(String),
}

/// An account field that must be unique.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Username,
    Email,
}

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Username => "username",
            Self::Email => "email",
        })
    }
}

/// A registered player.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Player {
    pub id: String,
    pub username: String,
    pub email: String,
    pub registered_at_ms: i64,
}

impl From<players::Model> for Player {
    fn from(row: players::Model) -> Self {
        Self {
            id: row.id,
            username: row.username,
            email: row.email,
            registered_at_ms: row.registered_at,
        }
    }
}

/// A player's rating in one category, as stored.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CategoryRating {
    pub category: SpeedCategory,
    pub standing: Standing,
    pub wins: u32,
    pub losses: u32,
    pub draws: u32,
}

/// Final result of a game.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GameResult {
    WhiteWins,
    BlackWins,
    Draw,
}

impl GameResult {
    fn as_str(self) -> &'static str {
        match self {
            Self::WhiteWins => "white",
            Self::BlackWins => "black",
            Self::Draw => "draw",
        }
    }

    fn white_score(self) -> Score {
        match self {
            Self::WhiteWins => Score::Win,
            Self::BlackWins => Score::Loss,
            Self::Draw => Score::Draw,
        }
    }
}

/// A finished game as reported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GameReport {
    pub game_id: String,
    pub white_id: String,
    pub black_id: String,
    pub result: GameResult,
    pub category: SpeedCategory,
    pub rated: bool,
    /// Milliseconds since the epoch, if the reporter said.
    pub finished_at_ms: Option<i64>,
}

/// One player's rating change from one game.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    pub player_id: String,
    pub category: SpeedCategory,
    pub rating_before: f64,
    pub rating_after: f64,
    pub deviation_before: f64,
    pub deviation_after: f64,
}

/// What recording a game did.
#[derive(Clone, Debug, PartialEq)]
pub struct Recorded {
    /// False if the game had been recorded before.
    pub first_time: bool,
    /// None when the game changed no rating.
    pub white: Option<Change>,
    pub black: Option<Change>,
}

/// One row of a player's rating history.
#[derive(Clone, Debug, PartialEq)]
pub struct HistoryEntry {
    pub id: i64,
    pub game_id: String,
    pub category: SpeedCategory,
    pub opponent_id: String,
    pub score: f64,
    pub rating_before: f64,
    pub rating_after: f64,
    pub deviation_after: f64,
    pub recorded_at_ms: i64,
}

/// Where a leaderboard page starts: after this rating and username.
#[derive(Clone, Debug, PartialEq)]
pub struct LeaderboardCursor {
    pub rating: f64,
    pub username_key: String,
    /// Rank of that last row.
    pub rank: u32,
}

/// One leaderboard row.
#[derive(Clone, Debug, PartialEq)]
pub struct LeaderboardRow {
    pub rank: u32,
    pub player_id: String,
    pub username: String,
    pub rating: CategoryRating,
}

/// The rating database, for one rating system.
#[derive(Clone, Debug)]
pub struct Store {
    db: DatabaseConnection,
    backend: Backend,
    system: System,
    /// SQLite only: this process's writers take turns here.
    write_gate: Option<Arc<Mutex<()>>>,
}

impl Store {
    /// Opens the database at `url`, applies the migrations and gives every
    /// player rows for `system` (players registered under another system, or
    /// before this one was chosen, start at its initial rating).
    pub async fn open(url: &str, connections: u32, system: System) -> Result<Self, StoreError> {
        let backend = Backend::of(url)?;
        let db = chess_storage::connect(url, connections).await?;
        // Replicas starting together take turns.
        chess_storage::migrate_exclusively(&db, 0x4348_4553_5352, || {
            migration::Migrator::up(&db, None)
        })
        .await?;
        let store = Self {
            db,
            backend,
            system,
            write_gate: (backend == Backend::Sqlite).then(|| Arc::new(Mutex::new(()))),
        };
        store.backfill_ratings().await?;
        Ok(store)
    }

    /// The rating system ratings are kept in.
    pub fn system(&self) -> &System {
        &self.system
    }

    fn system_name(&self) -> &'static str {
        self.system.kind().as_str()
    }

    /// Starts a write transaction; on SQLite it holds the write lock from
    /// the start.
    async fn begin_write(&self) -> Result<DatabaseTransaction, DbErr> {
        match self.backend {
            Backend::Sqlite => {
                self.db
                    .begin_with_options(TransactionOptions {
                        sqlite_transaction_mode: Some(SqliteTransactionMode::Immediate),
                        ..TransactionOptions::default()
                    })
                    .await
            }
            Backend::Postgres => self.db.begin().await,
        }
    }

    /// Runs `attempt` until it succeeds, fails for good, or has failed
    /// transiently too often; this process's SQLite writers take turns.
    async fn write<T, F, Fut>(&self, mut attempt: F) -> Result<T, StoreError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, StoreError>>,
    {
        let mut tries = 0;
        loop {
            let result = {
                let _turn = match &self.write_gate {
                    Some(gate) => Some(gate.lock().await),
                    None => None,
                };
                attempt().await
            };
            match result {
                Err(StoreError::Db(e)) if is_transient(&e) && tries + 1 < MAX_ATTEMPTS => {
                    tries += 1;
                    tracing::debug!(error = %e, tries, "transient database error; retrying");
                    let jitter = rand::random_range(0..=10u64 * u64::from(tries));
                    tokio::time::sleep(Duration::from_millis(5 + jitter)).await;
                }
                other => return other,
            }
        }
    }

    /// Inserts the missing rating rows of the current system for every
    /// player.
    async fn backfill_ratings(&self) -> Result<(), StoreError> {
        // Scoped: its blanket `min`/`max` would shadow the integers' own.
        use sea_orm::sea_query::ExprTrait as _;
        let initial = self.system.initial();
        for category in SpeedCategory::RATED {
            let existing = Query::select()
                .expr(Expr::val(1))
                .from(ratings::Entity)
                .and_where(
                    Expr::col((ratings::Entity, ratings::Column::PlayerId))
                        .equals((players::Entity, players::Column::Id)),
                )
                .and_where(
                    Expr::col((ratings::Entity, ratings::Column::System)).eq(self.system_name()),
                )
                .and_where(
                    Expr::col((ratings::Entity, ratings::Column::Category)).eq(category.as_str()),
                )
                .to_owned();
            let missing = Query::select()
                .column((players::Entity, players::Column::Id))
                .expr(Expr::val(self.system_name()))
                .expr(Expr::val(category.as_str()))
                .expr(Expr::val(initial.rating))
                .expr(Expr::val(initial.deviation))
                .expr(Expr::val(initial.volatility))
                .expr(Expr::val(0i32))
                .expr(Expr::val(0i32))
                .expr(Expr::val(0i32))
                .expr(Expr::val(0i32))
                .from(players::Entity)
                .and_where(Expr::exists(existing).not())
                .to_owned();
            let insert = Query::insert()
                .into_table(ratings::Entity)
                .columns([
                    ratings::Column::PlayerId,
                    ratings::Column::System,
                    ratings::Column::Category,
                    ratings::Column::Rating,
                    ratings::Column::Deviation,
                    ratings::Column::Volatility,
                    ratings::Column::GamesPlayed,
                    ratings::Column::Wins,
                    ratings::Column::Losses,
                    ratings::Column::Draws,
                ])
                .select_from(missing)
                .map_err(|e| StoreError::Corrupt(e.to_string()))?
                .on_conflict(
                    OnConflict::columns([
                        ratings::Column::PlayerId,
                        ratings::Column::System,
                        ratings::Column::Category,
                    ])
                    .do_nothing()
                    .to_owned(),
                )
                .to_owned();
            let insert = &insert;
            let added = self
                .write(|| async move { Ok(self.db.execute(insert).await?.rows_affected()) })
                .await?;
            if added > 0 {
                tracing::info!(%category, system = self.system_name(), added, "added initial ratings");
            }
        }
        Ok(())
    }

    fn initial_row(&self, player_id: &str, category: SpeedCategory) -> ratings::ActiveModel {
        let initial = self.system.initial();
        ratings::ActiveModel {
            player_id: Set(player_id.to_owned()),
            system: Set(self.system_name().to_owned()),
            category: Set(category.as_str().to_owned()),
            rating: Set(initial.rating),
            deviation: Set(initial.deviation),
            volatility: Set(initial.volatility),
            games_played: Set(0),
            wins: Set(0),
            losses: Set(0),
            draws: Set(0),
            last_played_at: Set(None),
        }
    }

    /// Creates an account with the initial rating in every category. A
    /// username or email that differs from an existing one only in case is
    /// [`StoreError::Taken`].
    pub async fn register(
        &self,
        username: &Username,
        email: &Email,
        password_hash: &str,
        now_ms: i64,
    ) -> Result<Player, StoreError> {
        let player = Player {
            id: uuid::Uuid::now_v7().to_string(),
            username: username.as_str().to_owned(),
            email: email.as_str().to_owned(),
            registered_at_ms: now_ms,
        };
        let row = players::ActiveModel {
            id: Set(player.id.clone()),
            username: Set(player.username.clone()),
            username_key: Set(username.key()),
            email: Set(player.email.clone()),
            email_key: Set(email.key()),
            password_hash: Set(password_hash.to_owned()),
            registered_at: Set(now_ms),
        };
        let (row, player_id) = (&row, player.id.as_str());
        self.write(|| async move {
            let txn = self.begin_write().await?;
            let inserted = async {
                players::Entity::insert(row.clone())
                    .exec_without_returning(&txn)
                    .await?;
                let ratings = SpeedCategory::RATED.map(|c| self.initial_row(player_id, c));
                ratings::Entity::insert_many(ratings)
                    .exec_without_returning(&txn)
                    .await
            }
            .await;
            match inserted {
                Ok(_) => Ok(txn.commit().await?),
                Err(e) => {
                    let _already_failing = txn.rollback().await;
                    Err(match taken_field(&e) {
                        Some(field) => StoreError::Taken(field),
                        None => e.into(),
                    })
                }
            }
        })
        .await?;
        Ok(player)
    }

    /// The player with id `id`.
    pub async fn player(&self, id: &str) -> Result<Option<Player>, StoreError> {
        Ok(players::Entity::find_by_id(id.to_owned())
            .one(&self.db)
            .await?
            .map(Player::from))
    }

    /// The player called `name`, in any case.
    pub async fn player_named(&self, name: &str) -> Result<Option<Player>, StoreError> {
        Ok(players::Entity::find()
            .filter(players::Column::UsernameKey.eq(username_key(name)))
            .one(&self.db)
            .await?
            .map(Player::from))
    }

    /// The player whose username or (if `login` has an `@`) email is
    /// `login`, in any case, with their password hash.
    pub async fn account_for_login(
        &self,
        login: &str,
    ) -> Result<Option<(Player, String)>, StoreError> {
        let filter = if login.contains('@') {
            players::Column::EmailKey.eq(email_key(login))
        } else {
            players::Column::UsernameKey.eq(username_key(login))
        };
        Ok(players::Entity::find()
            .filter(filter)
            .one(&self.db)
            .await?
            .map(|row| {
                let hash = row.password_hash.clone();
                (Player::from(row), hash)
            }))
    }

    /// `player_id`'s ratings in every rated category, fastest first (the
    /// starting rating where they have not played).
    pub async fn ratings_of(&self, player_id: &str) -> Result<Vec<CategoryRating>, StoreError> {
        let rows: HashMap<SpeedCategory, CategoryRating> = ratings::Entity::find()
            .filter(ratings::Column::PlayerId.eq(player_id))
            .filter(ratings::Column::System.eq(self.system_name()))
            .all(&self.db)
            .await?
            .into_iter()
            .map(|row| category_rating(&row).map(|r| (r.category, r)))
            .collect::<Result<_, _>>()?;
        Ok(SpeedCategory::RATED
            .into_iter()
            .map(|category| {
                rows.get(&category)
                    .copied()
                    .unwrap_or_else(|| self.newcomer(category))
            })
            .collect())
    }

    /// The ratings in `category` of those of `player_ids` who are registered.
    pub async fn ratings_in(
        &self,
        category: SpeedCategory,
        player_ids: &[String],
    ) -> Result<HashMap<String, CategoryRating>, StoreError> {
        let known: Vec<String> = players::Entity::find()
            .select_only()
            .column(players::Column::Id)
            .filter(players::Column::Id.is_in(player_ids.iter().cloned()))
            .into_tuple()
            .all(&self.db)
            .await?;
        let mut stored: HashMap<String, CategoryRating> = HashMap::new();
        for row in ratings::Entity::find()
            .filter(ratings::Column::PlayerId.is_in(known.iter().cloned()))
            .filter(ratings::Column::System.eq(self.system_name()))
            .filter(ratings::Column::Category.eq(category.as_str()))
            .all(&self.db)
            .await?
        {
            stored.insert(row.player_id.clone(), category_rating(&row)?);
        }
        Ok(known
            .into_iter()
            .map(|id| {
                let rating = stored
                    .get(&id)
                    .copied()
                    .unwrap_or_else(|| self.newcomer(category));
                (id, rating)
            })
            .collect())
    }

    fn newcomer(&self, category: SpeedCategory) -> CategoryRating {
        CategoryRating {
            category,
            standing: self.system.newcomer(),
            wins: 0,
            losses: 0,
            draws: 0,
        }
    }

    /// Applies `report` unless its game id was recorded before, in which
    /// case the original outcome is returned and nothing changes.
    pub async fn record(&self, report: &GameReport, now_ms: i64) -> Result<Recorded, StoreError> {
        let outcome = self
            .write(|| async move {
                let txn = self.begin_write().await?;
                match self.try_record(&txn, report, now_ms).await {
                    Ok(Some(recorded)) => {
                        txn.commit().await?;
                        Ok(Some(recorded))
                    }
                    // Recorded before: nothing to keep.
                    Ok(None) => {
                        txn.rollback().await?;
                        Ok(None)
                    }
                    Err(e) => {
                        let _already_failing = txn.rollback().await;
                        Err(e)
                    }
                }
            })
            .await?;
        match outcome {
            Some(recorded) => Ok(recorded),
            None => self.recorded(&report.game_id).await,
        }
    }

    /// The first attempt's work in `txn`, or None if the game was recorded
    /// already.
    async fn try_record(
        &self,
        txn: &DatabaseTransaction,
        report: &GameReport,
        now_ms: i64,
    ) -> Result<Option<Recorded>, StoreError> {
        let (white_id, black_id) = (&report.white_id, &report.black_id);
        let known: Vec<String> = players::Entity::find()
            .select_only()
            .column(players::Column::Id)
            .filter(players::Column::Id.is_in([white_id.clone(), black_id.clone()]))
            .into_tuple()
            .all(txn)
            .await?;
        let applies = report.rated && white_id != black_id && known.len() == 2;

        // The game's key first: a concurrent delivery of the same game waits
        // here for this transaction and then finds the row.
        let inserted = results::Entity::insert(results::ActiveModel {
            game_id: Set(report.game_id.clone()),
            white_id: Set(white_id.clone()),
            black_id: Set(black_id.clone()),
            result: Set(report.result.as_str().to_owned()),
            category: Set(report.category.as_str().to_owned()),
            rated: Set(report.rated),
            applied: Set(applies),
            system: Set(self.system_name().to_owned()),
            finished_at: Set(report.finished_at_ms),
            recorded_at: Set(now_ms),
        })
        .on_conflict_do_nothing()
        .exec_without_returning(txn)
        .await?;
        if !matches!(inserted, TryInsertResult::Inserted(n) if n > 0) {
            return Ok(None);
        }
        if !applies {
            return Ok(Some(Recorded {
                first_time: true,
                white: None,
                black: None,
            }));
        }

        // Rows for players registered under another system.
        let category = report.category;
        let missing = [
            self.initial_row(white_id, category),
            self.initial_row(black_id, category),
        ];
        ratings::Entity::insert_many(missing)
            .on_conflict_do_nothing()
            .exec_without_returning(txn)
            .await?;
        let rows = ratings::Entity::find()
            .filter(ratings::Column::PlayerId.is_in([white_id.clone(), black_id.clone()]))
            .filter(ratings::Column::System.eq(self.system_name()))
            .filter(ratings::Column::Category.eq(category.as_str()))
            .order_by_asc(ratings::Column::PlayerId)
            .lock_exclusive()
            .all(txn)
            .await?;
        let find = |id: &str| {
            rows.iter()
                .find(|r| r.player_id == id)
                .ok_or_else(|| StoreError::Corrupt(format!("no {category} rating for {id}")))
        };
        let (white_row, black_row) = (find(white_id)?, find(black_id)?);
        let (white, black) = (category_rating(white_row)?, category_rating(black_row)?);

        // Inactivity counts to when the game ended, if that is known and
        // not in the future.
        let at = report.finished_at_ms.map_or(now_ms, |f| f.min(now_ms));
        let score = report.result.white_score();
        let (white_after, black_after) =
            self.system
                .rate_game(&white.standing, &black.standing, score, at);

        let white_change = self
            .apply(
                txn,
                white_row,
                &white,
                white_after,
                score,
                black_id,
                report,
                at,
                now_ms,
            )
            .await?;
        let black_change = self
            .apply(
                txn,
                black_row,
                &black,
                black_after,
                score.opposite(),
                white_id,
                report,
                at,
                now_ms,
            )
            .await?;
        Ok(Some(Recorded {
            first_time: true,
            white: Some(white_change),
            black: Some(black_change),
        }))
    }

    /// Stores one player's new rating and history row.
    #[allow(clippy::too_many_arguments)]
    async fn apply(
        &self,
        txn: &DatabaseTransaction,
        row: &ratings::Model,
        before: &CategoryRating,
        after: Rating,
        score: Score,
        opponent_id: &str,
        report: &GameReport,
        at: i64,
        now_ms: i64,
    ) -> Result<Change, StoreError> {
        let shown_before = self.system.current(&before.standing, at);
        let (wins, losses, draws) = match score {
            Score::Win => (1, 0, 0),
            Score::Loss => (0, 1, 0),
            Score::Draw => (0, 0, 1),
        };
        let mut update: ratings::ActiveModel = row.clone().into();
        update.rating = Set(after.rating);
        update.deviation = Set(after.deviation);
        update.volatility = Set(after.volatility);
        update.games_played = Set(row.games_played.saturating_add(1));
        update.wins = Set(row.wins.saturating_add(wins));
        update.losses = Set(row.losses.saturating_add(losses));
        update.draws = Set(row.draws.saturating_add(draws));
        update.last_played_at = Set(Some(row.last_played_at.map_or(at, |last| last.max(at))));
        ratings::Entity::update(update).exec(txn).await?;

        rating_history::Entity::insert(rating_history::ActiveModel {
            player_id: Set(row.player_id.clone()),
            system: Set(self.system_name().to_owned()),
            category: Set(report.category.as_str().to_owned()),
            game_id: Set(report.game_id.clone()),
            opponent_id: Set(opponent_id.to_owned()),
            score: Set(score.value()),
            rating_before: Set(shown_before.rating),
            rating_after: Set(after.rating),
            deviation_before: Set(shown_before.deviation),
            deviation_after: Set(after.deviation),
            recorded_at: Set(now_ms),
            ..Default::default()
        })
        .exec_without_returning(txn)
        .await?;
        Ok(Change {
            player_id: row.player_id.clone(),
            category: report.category,
            rating_before: shown_before.rating,
            rating_after: after.rating,
            deviation_before: shown_before.deviation,
            deviation_after: after.deviation,
        })
    }

    /// The outcome of the recorded game `game_id`, as a repeat.
    async fn recorded(&self, game_id: &str) -> Result<Recorded, StoreError> {
        let result = results::Entity::find_by_id(game_id.to_owned())
            .one(&self.db)
            .await?
            .ok_or_else(|| StoreError::Corrupt(format!("game {game_id} vanished")))?;
        let mut recorded = Recorded {
            first_time: false,
            white: None,
            black: None,
        };
        for row in rating_history::Entity::find()
            .filter(rating_history::Column::GameId.eq(game_id))
            .all(&self.db)
            .await?
        {
            let change = Change {
                player_id: row.player_id.clone(),
                category: category_named(&row.category)?,
                rating_before: row.rating_before,
                rating_after: row.rating_after,
                deviation_before: row.deviation_before,
                deviation_after: row.deviation_after,
            };
            if row.player_id == result.white_id {
                recorded.white = Some(change);
            } else if row.player_id == result.black_id {
                recorded.black = Some(change);
            }
        }
        Ok(recorded)
    }

    /// Up to `limit` of `player_id`'s history rows in the current system,
    /// newest first, older than row `before` if given; in `category` or all.
    pub async fn history(
        &self,
        player_id: &str,
        category: Option<SpeedCategory>,
        before: Option<i64>,
        limit: u64,
    ) -> Result<Vec<HistoryEntry>, StoreError> {
        let mut query = rating_history::Entity::find()
            .filter(rating_history::Column::PlayerId.eq(player_id))
            .filter(rating_history::Column::System.eq(self.system_name()));
        if let Some(category) = category {
            query = query.filter(rating_history::Column::Category.eq(category.as_str()));
        }
        if let Some(before) = before {
            query = query.filter(rating_history::Column::Id.lt(before));
        }
        query
            .order_by_desc(rating_history::Column::Id)
            .limit(limit)
            .all(&self.db)
            .await?
            .into_iter()
            .map(|row| {
                Ok(HistoryEntry {
                    id: row.id,
                    game_id: row.game_id,
                    category: category_named(&row.category)?,
                    opponent_id: row.opponent_id,
                    score: row.score,
                    rating_before: row.rating_before,
                    rating_after: row.rating_after,
                    deviation_after: row.deviation_after,
                    recorded_at_ms: row.recorded_at,
                })
            })
            .collect()
    }

    /// Up to `limit` players with at least one rated game in `category`,
    /// best first and by username among equals, after `after` if given. A
    /// player who has not played is not ranked: their rating is only the
    /// starting value (every row has one from registration on).
    pub async fn leaderboard(
        &self,
        category: SpeedCategory,
        after: Option<&LeaderboardCursor>,
        limit: u64,
    ) -> Result<Vec<LeaderboardRow>, StoreError> {
        let mut query = ratings::Entity::find()
            .find_also_related(players::Entity)
            .filter(ratings::Column::System.eq(self.system_name()))
            .filter(ratings::Column::Category.eq(category.as_str()))
            .filter(ratings::Column::GamesPlayed.gt(0));
        if let Some(cursor) = after {
            query = query.filter(
                Condition::any()
                    .add(ratings::Column::Rating.lt(cursor.rating))
                    .add(
                        Condition::all()
                            .add(ratings::Column::Rating.eq(cursor.rating))
                            .add(players::Column::UsernameKey.gt(cursor.username_key.clone())),
                    ),
            );
        }
        let first_rank = after.map_or(1, |c| c.rank.saturating_add(1));
        let rows = query
            .order_by_desc(ratings::Column::Rating)
            .order_by_asc(players::Column::UsernameKey)
            .limit(limit)
            .all(&self.db)
            .await?;
        let mut board = Vec::with_capacity(rows.len());
        for (rank, (rating, player)) in (first_rank..).zip(rows) {
            let player = player.ok_or_else(|| {
                StoreError::Corrupt(format!("rating of unknown player {}", rating.player_id))
            })?;
            board.push(LeaderboardRow {
                rank,
                player_id: player.id,
                username: player.username,
                rating: category_rating(&rating)?,
            });
        }
        Ok(board)
    }
}

fn category_named(name: &str) -> Result<SpeedCategory, StoreError> {
    SpeedCategory::from_name(name)
        .ok_or_else(|| StoreError::Corrupt(format!("unknown speed category {name:?}")))
}

fn count(value: i32) -> u32 {
    u32::try_from(value).unwrap_or(0)
}

fn category_rating(row: &ratings::Model) -> Result<CategoryRating, StoreError> {
    Ok(CategoryRating {
        category: category_named(&row.category)?,
        standing: Standing {
            rating: Rating {
                rating: row.rating,
                deviation: row.deviation,
                volatility: row.volatility,
            },
            games_played: count(row.games_played),
            last_played_ms: row.last_played_at,
        },
        wins: count(row.wins),
        losses: count(row.losses),
        draws: count(row.draws),
    })
}

/// Which unique account field `error` violated, if it is such a violation.
fn taken_field(error: &DbErr) -> Option<Field> {
    match error.sql_err()? {
        SqlErr::UniqueConstraintViolation(message) if message.contains("username_key") => {
            Some(Field::Username)
        }
        SqlErr::UniqueConstraintViolation(message) if message.contains("email_key") => {
            Some(Field::Email)
        }
        _ => None,
    }
}

/// Whether `error` is worth retrying: SQLite busy or locked, a PostgreSQL
/// serialization failure or deadlock.
fn is_transient(error: &DbErr) -> bool {
    let (DbErr::Exec(RuntimeErr::SqlxError(e))
    | DbErr::Query(RuntimeErr::SqlxError(e))
    | DbErr::Conn(RuntimeErr::SqlxError(e))) = error
    else {
        return false;
    };
    let sea_orm::sqlx::Error::Database(db) = &**e else {
        return false;
    };
    matches!(
        db.code().as_deref(),
        // SQLite: BUSY, BUSY_RECOVERY, BUSY_SNAPSHOT, LOCKED, LOCKED_SHAREDCACHE.
        Some("5" | "261" | "517" | "6" | "262")
        // PostgreSQL: serialization_failure, deadlock_detected.
        | Some("40001" | "40P01")
    )
}
