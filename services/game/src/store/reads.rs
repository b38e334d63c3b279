//! Reading games back: one game, every game in play (whole, or listed), a
//! player's games page by page, and the results still owed to the rating service.

use std::collections::HashMap;

use chess_domain::{
    GameId, GameResult, GameStatus, PlayerId, ResultReport, SpeedCategory, Timestamp,
};
use sea_orm::{
    ColumnTrait as _, Condition, EntityTrait as _, QueryFilter as _, QueryOrder as _,
    QuerySelect as _, sea_query::Query,
};

use tokio_stream::StreamExt as _;

use super::{
    ListFilter, Store, StoreError, clock_credits, games, moves, results_outbox, rows::restore,
    sqlite, takebacks,
};
use crate::model::Game;

impl Store {
    /// The id of the game created with `key`, if any.
    pub async fn game_for_key(&self, key: &str) -> Result<Option<GameId>, StoreError> {
        Ok(games::Entity::find()
            .filter(games::Column::IdempotencyKey.eq(key))
            .one(&self.db)
            .await?
            .map(|g| GameId::trusted(g.id)))
    }

    /// The stored game `id`, rebuilt.
    pub async fn load(&self, id: &GameId) -> Result<Option<Game>, StoreError> {
        self.fold_log(Some(id)).await?;
        let Some(row) = games::Entity::find_by_id(id.as_str()).one(&self.db).await? else {
            return Ok(None);
        };
        let moves = moves::Entity::find()
            .filter(moves::Column::GameId.eq(id.as_str()))
            .order_by_asc(moves::Column::Ply)
            .all(&self.db)
            .await?;
        let credits = clock_credits::Entity::find()
            .filter(clock_credits::Column::GameId.eq(id.as_str()))
            .all(&self.db)
            .await?;
        let rewinds = takebacks::Entity::find()
            .filter(takebacks::Column::GameId.eq(id.as_str()))
            .all(&self.db)
            .await?;
        restore(row, moves, credits, rewinds).map(Some)
    }

    /// Every game still in progress, rebuilt: all of them (`None`, at the
    /// start of a lone replica), or those of some shards (a replica taking
    /// them over).
    pub async fn load_active(&self, shards: Option<&[u16]>) -> Result<Vec<Game>, StoreError> {
        self.fold_log(None).await?;
        let mut active =
            Condition::all().add(games::Column::Status.eq(GameStatus::Active.as_str()));
        if let Some(shards) = shards {
            if shards.is_empty() {
                return Ok(Vec::new());
            }
            active = active.add(games::Column::Shard.is_in(shards.iter().map(|&s| i32::from(s))));
        }
        let rows = games::Entity::find()
            .filter(active.clone())
            .all(&self.db)
            .await?;
        let active_ids = || {
            Query::select()
                .column(games::Column::Id)
                .from(games::Entity)
                .cond_where(active.clone())
                .to_owned()
        };
        let mut moves_by_game = match (&self.sqlite_file, shards) {
            (Some(url), None) => sqlite::active_moves(std::sync::Arc::clone(url)).await?,
            _ => {
                // Row by row rather than all at once: SQLite copies each
                // value it hands out with the C allocator, which keeps the
                // memory of a bulk read for good once freed; streamed, only
                // a few rows are in flight.
                let mut moves_by_game = HashMap::new();
                let mut stream = moves::Entity::find()
                    .filter(moves::Column::GameId.in_subquery(active_ids()))
                    .order_by_asc(moves::Column::GameId)
                    .order_by_asc(moves::Column::Ply)
                    .stream(&self.db)
                    .await?;
                while let Some(m) = stream.next().await {
                    sqlite::group(&mut moves_by_game, m?);
                }
                moves_by_game
            }
        };
        let mut credits_by_game: HashMap<String, Vec<clock_credits::Model>> = HashMap::new();
        for c in clock_credits::Entity::find()
            .filter(clock_credits::Column::GameId.in_subquery(active_ids()))
            .all(&self.db)
            .await?
        {
            credits_by_game
                .entry(c.game_id.clone())
                .or_default()
                .push(c);
        }
        let mut rewinds_by_game: HashMap<String, Vec<takebacks::Model>> = HashMap::new();
        for r in takebacks::Entity::find()
            .filter(takebacks::Column::GameId.in_subquery(active_ids()))
            .all(&self.db)
            .await?
        {
            rewinds_by_game
                .entry(r.game_id.clone())
                .or_default()
                .push(r);
        }
        rows.into_iter()
            .map(|row| {
                let moves = moves_by_game.remove(&row.id).unwrap_or_default();
                let credits = credits_by_game.remove(&row.id).unwrap_or_default();
                let rewinds = rewinds_by_game.remove(&row.id).unwrap_or_default();
                restore(row, moves, credits, rewinds)
            })
            .collect()
    }

    /// Every game in progress, oldest first, each with the ply of its last
    /// stored move (the row's own ply is only kept at changes of status).
    pub async fn live_games(&self) -> Result<Vec<(games::Model, u32)>, StoreError> {
        self.fold_log(None).await?;
        let active = Condition::all().add(games::Column::Status.eq(GameStatus::Active.as_str()));
        let rows = games::Entity::find()
            .filter(active.clone())
            .order_by_asc(games::Column::CreatedAt)
            .order_by_asc(games::Column::Id)
            .all(&self.db)
            .await?;
        let plies: HashMap<String, i32> = moves::Entity::find()
            .select_only()
            .column(moves::Column::GameId)
            .column_as(moves::Column::Ply.max(), "ply")
            .filter(
                moves::Column::GameId.in_subquery(
                    Query::select()
                        .column(games::Column::Id)
                        .from(games::Entity)
                        .cond_where(active)
                        .to_owned(),
                ),
            )
            .group_by(moves::Column::GameId)
            .into_tuple::<(String, i32)>()
            .all(&self.db)
            .await?
            .into_iter()
            .collect();
        Ok(rows
            .into_iter()
            .map(|row| {
                let ply = plies.get(&row.id).copied().unwrap_or(row.ply);
                (row, u32::try_from(ply).unwrap_or(0))
            })
            .collect())
    }

    /// When a lone replica was last known alive (its last heartbeat), or the
    /// epoch.
    pub async fn last_heartbeat(&self) -> Result<Timestamp, StoreError> {
        use sea_orm::ConnectionTrait as _;
        let row = self
            .db
            .query_one(
                &Query::select()
                    .expr_as(
                        sea_orm::sea_query::Func::max(sea_orm::sea_query::Expr::col("renewed_at")),
                        "last",
                    )
                    .from("game_shards")
                    .to_owned(),
            )
            .await?;
        let last = row.and_then(|r| r.try_get::<Option<i64>>("", "last").ok().flatten());
        Ok(last.map_or(Timestamp::EPOCH, Timestamp::from_millis))
    }

    /// A page of `player_id`'s games, newest first, and the token of the next
    /// page.
    pub async fn list(
        &self,
        player_id: &PlayerId,
        filter: ListFilter,
        page_size: u64,
        page_token: &str,
    ) -> Result<(Vec<games::Model>, String), StoreError> {
        let mut query = games::Entity::find().filter(
            Condition::any()
                .add(games::Column::WhiteId.eq(player_id.as_str()))
                .add(games::Column::BlackId.eq(player_id.as_str())),
        );
        match filter {
            ListFilter::All => {}
            ListFilter::Active => {
                query = query.filter(games::Column::Status.eq(GameStatus::Active.as_str()))
            }
            ListFilter::Finished => {
                query = query.filter(games::Column::Status.eq(GameStatus::Finished.as_str()))
            }
        }
        if let Some((created, id)) = parse_token(page_token) {
            query = query.filter(
                Condition::any()
                    .add(games::Column::CreatedAt.lt(created))
                    .add(
                        Condition::all()
                            .add(games::Column::CreatedAt.eq(created))
                            .add(games::Column::Id.lt(id)),
                    ),
            );
        }
        let mut rows = query
            .order_by_desc(games::Column::CreatedAt)
            .order_by_desc(games::Column::Id)
            .limit(page_size + 1)
            .all(&self.db)
            .await?;
        let next = if rows.len() as u64 > page_size {
            rows.truncate(page_size as usize);
            rows.last()
                .map(|r| format!("{}:{}", r.created_at, r.id))
                .unwrap_or_default()
        } else {
            String::new()
        };
        Ok((rows, next))
    }

    /// Results the rating service has not acknowledged yet.
    pub async fn pending_results(&self) -> Result<Vec<ResultReport>, StoreError> {
        results_outbox::Entity::find()
            .order_by_asc(results_outbox::Column::FinishedAt)
            .all(&self.db)
            .await?
            .into_iter()
            .map(|row| {
                let corrupt = |what: &str| StoreError::Corrupt {
                    id: row.game_id.clone(),
                    reason: format!("bad {what} in the results outbox"),
                };
                Ok(ResultReport {
                    result: GameResult::from_name(&row.result).ok_or_else(|| corrupt("result"))?,
                    speed: SpeedCategory::from_name(&row.speed).ok_or_else(|| corrupt("speed"))?,
                    game_id: GameId::trusted(row.game_id),
                    white_id: PlayerId::trusted(row.white_id),
                    black_id: PlayerId::trusted(row.black_id),
                    rated: row.rated,
                    finished_at: Timestamp::from_millis(row.finished_at),
                })
            })
            .collect()
    }
}

pub(super) fn parse_token(token: &str) -> Option<(i64, String)> {
    let (created, id) = token.split_once(':')?;
    Some((created.parse().ok()?, id.to_owned()))
}
