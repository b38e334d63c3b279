//! What some games did to their players' ratings: the history rows of those
//! games (by the unique `(game_id, player_id)` of `rating_history`), for a
//! player's list of games or a game's end.

use chess_domain::{GameId, PlayerId};
use sea_orm::{ColumnTrait as _, EntityTrait as _, QueryFilter as _, QueryOrder as _};

use super::{Store, StoreError, rating_history, reads::category_named};
use crate::model::GameRatingChange;

impl Store {
    /// The rating changes of `games` in the current system: `player`'s
    /// only, or every player's.
    pub async fn game_changes(
        &self,
        games: &[GameId],
        player: Option<&PlayerId>,
    ) -> Result<Vec<GameRatingChange>, StoreError> {
        if games.is_empty() {
            return Ok(Vec::new());
        }
        let mut query = rating_history::Entity::find()
            .filter(rating_history::Column::GameId.is_in(games.iter().map(GameId::as_str)))
            .filter(rating_history::Column::System.eq(self.system_name()));
        if let Some(player) = player {
            query = query.filter(rating_history::Column::PlayerId.eq(player.as_str()));
        }
        query
            .order_by_asc(rating_history::Column::Id)
            .all(&self.db)
            .await?
            .into_iter()
            .map(|row| {
                Ok(GameRatingChange {
                    category: category_named(&row.category)?,
                    game_id: GameId::trusted(row.game_id),
                    player_id: PlayerId::trusted(row.player_id),
                    rating_before: row.rating_before,
                    rating_after: row.rating_after,
                })
            })
            .collect()
    }
}
