//! Ratings, rating history and leaderboards as read, and their rows turned
//! into domain values.

use std::collections::HashMap;

use chess_domain::{GameId, PlayerId, SpeedCategory, Timestamp, Username};
use chess_ratings::{Rating, Standing};
use sea_orm::{
    ColumnTrait as _, Condition, EntityTrait as _, QueryFilter as _, QueryOrder as _,
    QuerySelect as _,
};

use super::{Store, StoreError, players, rating_history, ratings};
use crate::model::{CategoryRating, HistoryEntry, LeaderboardCursor, LeaderboardRow};

impl Store {
    /// `player_id`'s ratings in every rated category, fastest first (the
    /// starting rating where they have not played).
    pub async fn ratings_of(
        &self,
        player_id: &PlayerId,
    ) -> Result<Vec<CategoryRating>, StoreError> {
        let rows: HashMap<SpeedCategory, CategoryRating> = ratings::Entity::find()
            .filter(ratings::Column::PlayerId.eq(player_id.as_str()))
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
        player_ids: &[PlayerId],
    ) -> Result<HashMap<PlayerId, CategoryRating>, StoreError> {
        let known: Vec<String> = players::Entity::find()
            .select_only()
            .column(players::Column::Id)
            .filter(players::Column::Id.is_in(player_ids.iter().map(PlayerId::as_str)))
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
                (PlayerId::trusted(id), rating)
            })
            .collect())
    }

    pub(super) fn newcomer(&self, category: SpeedCategory) -> CategoryRating {
        CategoryRating {
            category,
            standing: self.system.newcomer(),
            wins: 0,
            losses: 0,
            draws: 0,
        }
    }

    /// Up to `limit` of `player_id`'s history rows in the current system,
    /// newest first, older than row `before` if given; in `category` or all.
    pub async fn history(
        &self,
        player_id: &PlayerId,
        category: Option<SpeedCategory>,
        before: Option<i64>,
        limit: u64,
    ) -> Result<Vec<HistoryEntry>, StoreError> {
        let mut query = rating_history::Entity::find()
            .filter(rating_history::Column::PlayerId.eq(player_id.as_str()))
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
                    game_id: GameId::trusted(row.game_id),
                    category: category_named(&row.category)?,
                    opponent_id: PlayerId::trusted(row.opponent_id),
                    score: row.score,
                    rating_before: row.rating_before,
                    rating_after: row.rating_after,
                    deviation_after: row.deviation_after,
                    recorded_at: Timestamp::from_millis(row.recorded_at),
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
                player_id: PlayerId::trusted(player.id),
                username: Username::trusted(player.username),
                rating: category_rating(&rating)?,
            });
        }
        Ok(board)
    }
}

pub(super) fn category_named(name: &str) -> Result<SpeedCategory, StoreError> {
    SpeedCategory::from_name(name)
        .ok_or_else(|| StoreError::Corrupt(format!("unknown speed category {name:?}")))
}

fn count(value: i32) -> u32 {
    u32::try_from(value).unwrap_or(0)
}

pub(super) fn category_rating(row: &ratings::Model) -> Result<CategoryRating, StoreError> {
    Ok(CategoryRating {
        category: category_named(&row.category)?,
        standing: Standing {
            rating: Rating {
                rating: row.rating,
                deviation: row.deviation,
                volatility: row.volatility,
            },
            games_played: count(row.games_played),
            last_played: row.last_played_at.map(Timestamp::from_millis),
        },
        wins: count(row.wins),
        losses: count(row.losses),
        draws: count(row.draws),
    })
}
