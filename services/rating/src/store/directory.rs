//! The players directory: every registered player, found by username
//! prefix, in one of a few orders, a page at a time.
//!
//! Every player has a `ratings` row per rated category from registration on
//! (and from start-up on after the rating system changed), so the directory
//! joins players with their row in the category it is sorted by; the
//! `(system, category, rating)` and `(system, category, games_played)`
//! indexes serve those orders, the unique username key the order by name.

use std::collections::HashMap;

use chess_domain::SpeedCategory;
use sea_orm::{
    ColumnTrait as _, Condition, EntityTrait as _, IntoSimpleExpr as _, JoinType, Order,
    QueryFilter as _, QueryOrder as _, QuerySelect as _, RelationTrait as _, Value,
    sea_query::{ExprTrait as _, LikeExpr, SimpleExpr},
};

use super::{Store, StoreError, players, ratings, reads::category_rating};
use crate::model::{CategoryRating, DirectoryCursor, DirectoryOrder, DirectorySort, Player};

/// One directory row: the player and their ratings in every rated category,
/// fastest first.
#[derive(Clone, Debug, PartialEq)]
pub struct DirectoryRow {
    pub player: Player,
    pub ratings: Vec<CategoryRating>,
}

/// `prefix` as a LIKE pattern matching keys that start with it (`_` is a
/// username character and a LIKE wildcard, so it is escaped).
fn prefix_pattern(prefix: &str) -> LikeExpr {
    let mut pattern = String::with_capacity(prefix.len() + 1);
    for c in prefix.chars() {
        if matches!(c, '\\' | '%' | '_') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    LikeExpr::new(pattern).escape('\\')
}

impl Store {
    /// Up to `limit` players whose username key starts with `prefix_key`
    /// (lower-cased), in `order`, after `after` if given. Equal sort values
    /// are ordered by username key, in the same direction, so that a cursor
    /// is one point in a total order.
    pub async fn directory(
        &self,
        prefix_key: &str,
        order: &DirectoryOrder,
        after: Option<&DirectoryCursor>,
        limit: u64,
    ) -> Result<Vec<DirectoryRow>, StoreError> {
        let descending = order.descending;
        let direction = || if descending { Order::Desc } else { Order::Asc };
        let beyond = |column: SimpleExpr, value: Value| {
            if descending {
                column.lt(value)
            } else {
                column.gt(value)
            }
        };
        let key = || players::Column::UsernameKey.into_simple_expr();
        let mut query = players::Entity::find();
        if !prefix_key.is_empty() {
            query = query.filter(players::Column::UsernameKey.like(prefix_pattern(prefix_key)));
        }
        let sort_column = match order.sort {
            DirectorySort::Name => None,
            DirectorySort::Rating => Some(ratings::Column::Rating),
            DirectorySort::Games => Some(ratings::Column::GamesPlayed),
        };
        if let Some(column) = sort_column {
            query = query
                .join(JoinType::InnerJoin, ratings::Relation::Player.def().rev())
                .filter(ratings::Column::System.eq(self.system_name()))
                .filter(ratings::Column::Category.eq(order.category.as_str()));
            if let Some(cursor) = after {
                let at: Value = match order.sort {
                    // Games are counted in whole numbers: compare as such.
                    DirectorySort::Games => (cursor.value as i64).into(),
                    _ => cursor.value.into(),
                };
                query = query.filter(
                    Condition::any()
                        .add(beyond(column.into_simple_expr(), at.clone()))
                        .add(
                            Condition::all()
                                .add(column.eq(at))
                                .add(beyond(key(), cursor.username_key.clone().into())),
                        ),
                );
            }
            query = query.order_by(column, direction());
        } else if let Some(cursor) = after {
            query = query.filter(beyond(key(), cursor.username_key.clone().into()));
        }
        let found = query
            .order_by(players::Column::UsernameKey, direction())
            .limit(limit)
            .all(&self.db)
            .await?;
        let mut stored = self
            .ratings_of_many(found.iter().map(|p| p.id.clone()).collect())
            .await?;
        Ok(found
            .into_iter()
            .map(|row| {
                let mine = stored.remove(&row.id).unwrap_or_default();
                let ratings = SpeedCategory::RATED
                    .into_iter()
                    .map(|category| {
                        mine.get(&category)
                            .copied()
                            .unwrap_or_else(|| self.newcomer(category))
                    })
                    .collect();
                DirectoryRow {
                    player: Player::from(row),
                    ratings,
                }
            })
            .collect())
    }

    /// The stored ratings of `player_ids` in every category, in one read.
    async fn ratings_of_many(
        &self,
        ids: Vec<String>,
    ) -> Result<HashMap<String, HashMap<SpeedCategory, CategoryRating>>, StoreError> {
        let mut by_player: HashMap<String, HashMap<SpeedCategory, CategoryRating>> = HashMap::new();
        if ids.is_empty() {
            return Ok(by_player);
        }
        for row in ratings::Entity::find()
            .filter(ratings::Column::PlayerId.is_in(ids))
            .filter(ratings::Column::System.eq(self.system_name()))
            .all(&self.db)
            .await?
        {
            let rating = category_rating(&row)?;
            by_player
                .entry(row.player_id)
                .or_default()
                .insert(rating.category, rating);
        }
        Ok(by_player)
    }
}
