//! Applying a finished game once: its `results` row, both ratings and their
//! history rows in one transaction.

use chess_domain::{GameId, PlayerId, SpeedCategory, Timestamp};
use chess_ratings::{Rating, Score};
use sea_orm::{
    ColumnTrait as _, DatabaseTransaction, EntityTrait as _, QueryFilter as _, QueryOrder as _,
    QuerySelect as _, Set, TryInsertResult,
};

use super::{
    Store, StoreError,
    open::transact,
    players, rating_history, ratings,
    reads::{category_named, category_rating},
    results,
};
use crate::model::{CategoryRating, Change, GameReport, Recorded};

impl Store {
    /// Applies `report` unless its game id was recorded before, in which
    /// case the original outcome is returned and nothing changes.
    pub async fn record(
        &self,
        report: &GameReport,
        now: Timestamp,
    ) -> Result<Recorded, StoreError> {
        // Recorded before, the game's transaction wrote nothing: committing
        // it keeps nothing.
        let outcome = transact!(self, |txn| self.try_record(txn, report, now)).await?;
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
        now: Timestamp,
    ) -> Result<Option<Recorded>, StoreError> {
        let (white_id, black_id) = (&report.white_id, &report.black_id);
        let known: Vec<String> = players::Entity::find()
            .select_only()
            .column(players::Column::Id)
            .filter(players::Column::Id.is_in([white_id.as_str(), black_id.as_str()]))
            .into_tuple()
            .all(txn)
            .await?;
        let applies = report.rated && white_id != black_id && known.len() == 2;

        // The game's key first: a concurrent delivery of the same game waits
        // here for this transaction and then finds the row.
        if !self.claim_game(txn, report, applies, now).await? {
            return Ok(None);
        }
        if !applies {
            return Ok(Some(Recorded {
                first_time: true,
                white: None,
                black: None,
            }));
        }

        let category = report.category;
        let rows = self
            .locked_ratings(txn, white_id, black_id, category)
            .await?;
        let find = |id: &PlayerId| {
            rows.iter()
                .find(|r| id == r.player_id.as_str())
                .ok_or_else(|| StoreError::Corrupt(format!("no {category} rating for {id}")))
        };
        let (white_row, black_row) = (find(white_id)?, find(black_id)?);
        let (white, black) = (category_rating(white_row)?, category_rating(black_row)?);

        // Inactivity counts to when the game ended, if that is known and
        // not in the future.
        let at = report.finished_at.map_or(now, |f| f.min(now));
        let score = crate::model::white_score(report.result);
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
                now,
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
                now,
            )
            .await?;
        Ok(Some(Recorded {
            first_time: true,
            white: Some(white_change),
            black: Some(black_change),
        }))
    }

    /// Inserts the game's results row; false if the game was recorded
    /// before.
    async fn claim_game(
        &self,
        txn: &DatabaseTransaction,
        report: &GameReport,
        applies: bool,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let inserted = results::Entity::insert(results::ActiveModel {
            game_id: Set(report.game_id.to_string()),
            white_id: Set(report.white_id.to_string()),
            black_id: Set(report.black_id.to_string()),
            result: Set(report.result.as_str().to_owned()),
            category: Set(report.category.as_str().to_owned()),
            rated: Set(report.rated),
            applied: Set(applies),
            system: Set(self.system_name().to_owned()),
            finished_at: Set(report.finished_at.map(Timestamp::millis)),
            recorded_at: Set(now.millis()),
        })
        .on_conflict_do_nothing()
        .exec_without_returning(txn)
        .await?;
        Ok(matches!(inserted, TryInsertResult::Inserted(n) if n > 0))
    }

    /// Both players' rating rows in `category` of this store's system,
    /// created at the initial rating where missing (players registered
    /// under another system), locked for this transaction in a fixed order.
    async fn locked_ratings(
        &self,
        txn: &DatabaseTransaction,
        white_id: &PlayerId,
        black_id: &PlayerId,
        category: SpeedCategory,
    ) -> Result<Vec<ratings::Model>, StoreError> {
        let missing = [
            self.initial_row(white_id, category),
            self.initial_row(black_id, category),
        ];
        ratings::Entity::insert_many(missing)
            .on_conflict_do_nothing()
            .exec_without_returning(txn)
            .await?;
        Ok(ratings::Entity::find()
            .filter(ratings::Column::PlayerId.is_in([white_id.as_str(), black_id.as_str()]))
            .filter(ratings::Column::System.eq(self.system_name()))
            .filter(ratings::Column::Category.eq(category.as_str()))
            .order_by_asc(ratings::Column::PlayerId)
            .lock_exclusive()
            .all(txn)
            .await?)
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
        opponent_id: &PlayerId,
        report: &GameReport,
        at: Timestamp,
        now: Timestamp,
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
        let last_played = row.last_played_at.map(Timestamp::from_millis);
        let last_played = last_played.map_or(at, |last| last.max(at));
        update.last_played_at = Set(Some(last_played.millis()));
        ratings::Entity::update(update).exec(txn).await?;

        rating_history::Entity::insert(rating_history::ActiveModel {
            player_id: Set(row.player_id.clone()),
            system: Set(self.system_name().to_owned()),
            category: Set(report.category.as_str().to_owned()),
            game_id: Set(report.game_id.to_string()),
            opponent_id: Set(opponent_id.to_string()),
            score: Set(score.value()),
            rating_before: Set(shown_before.rating),
            rating_after: Set(after.rating),
            deviation_before: Set(shown_before.deviation),
            deviation_after: Set(after.deviation),
            recorded_at: Set(now.millis()),
            ..Default::default()
        })
        .exec_without_returning(txn)
        .await?;
        Ok(Change {
            player_id: PlayerId::trusted(row.player_id.clone()),
            category: report.category,
            rating_before: shown_before.rating,
            rating_after: after.rating,
            deviation_before: shown_before.deviation,
            deviation_after: after.deviation,
        })
    }

    /// The outcome of the recorded game `game_id`, as a repeat.
    async fn recorded(&self, game_id: &GameId) -> Result<Recorded, StoreError> {
        let result = results::Entity::find_by_id(game_id.to_string())
            .one(&self.db)
            .await?
            .ok_or_else(|| StoreError::Corrupt(format!("game {game_id} vanished")))?;
        let mut recorded = Recorded {
            first_time: false,
            white: None,
            black: None,
        };
        for row in rating_history::Entity::find()
            .filter(rating_history::Column::GameId.eq(game_id.as_str()))
            .all(&self.db)
            .await?
        {
            let change = Change {
                player_id: PlayerId::trusted(row.player_id.clone()),
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
}
