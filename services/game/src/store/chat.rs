//! A game's chat, stored beside the game: its lines, numbered per game, and
//! the reports of them. Written straight through the pool (not the group
//! committing writer): a line is one small insert, and its ordering is the
//! chat feed's turn (`crate::chat::feed`).

use chess_domain::{GameId, PlayerId, Timestamp};
use sea_orm::{
    ActiveValue::Set, ColumnTrait as _, Condition, EntityTrait as _, QueryFilter as _,
    QueryOrder as _, QuerySelect as _, TransactionTrait as _, sea_query::Expr,
};

use super::{Store, StoreError};
use crate::chat::{Line, Report, Room};

pub mod chat_lines {
    use sea_orm::entity::prelude::*;

    /// One line of a game's chat.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "chat_lines")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub game_id: String,
        #[sea_orm(primary_key, auto_increment = false)]
        pub seq: i64,
        /// `players` or `spectators`.
        pub room: String,
        pub author_id: String,
        pub author_name: String,
        pub text: String,
        pub posted_at: i64,
        pub hidden: bool,
        /// The game's chat revision of the line's last change.
        pub revision: i64,
        /// Who hid it.
        pub hidden_by: Option<String>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod chat_reports {
    use sea_orm::entity::prelude::*;

    /// A report of a line; open until the line is hidden.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "chat_reports")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub game_id: String,
        #[sea_orm(primary_key, auto_increment = false)]
        pub seq: i64,
        #[sea_orm(primary_key, auto_increment = false)]
        pub reporter_id: String,
        pub reason: String,
        pub reported_at: i64,
        pub open: bool,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// A line to store.
#[derive(Clone, Debug)]
pub struct NewLine {
    pub room: Room,
    pub author: PlayerId,
    pub author_name: String,
    pub text: String,
    pub posted_at: Timestamp,
}

fn line_of(row: chat_lines::Model) -> Result<Line, StoreError> {
    let room = Room::from_name(&row.room).ok_or_else(|| StoreError::Corrupt {
        id: row.game_id.clone(),
        reason: format!("chat line {} is in no room ({:?})", row.seq, row.room),
    })?;
    Ok(Line {
        seq: u64::try_from(row.seq).unwrap_or_default(),
        room,
        author: PlayerId::trusted(row.author_id),
        author_name: row.author_name,
        text: row.text,
        posted_at: Timestamp::from_millis(row.posted_at),
        hidden: row.hidden,
        revision: u64::try_from(row.revision).unwrap_or_default(),
    })
}

fn as_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn in_rooms(rooms: &[Room]) -> Condition {
    rooms.iter().fold(Condition::any(), |any, room| {
        any.add(chat_lines::Column::Room.eq(room.as_str()))
    })
}

impl Store {
    /// The game's latest chat revision (0 before any line).
    async fn chat_revision(
        db: &impl sea_orm::ConnectionTrait,
        game: &GameId,
    ) -> Result<i64, StoreError> {
        let latest: Option<Option<i64>> = chat_lines::Entity::find()
            .select_only()
            .column_as(chat_lines::Column::Revision.max(), "latest")
            .filter(chat_lines::Column::GameId.eq(game.as_str()))
            .into_tuple()
            .one(db)
            .await?;
        Ok(latest.flatten().unwrap_or(0))
    }

    /// Stores `line` as `game`'s next line, and returns it numbered. The
    /// caller holds the game's chat turn.
    pub async fn post_chat(&self, game: &GameId, line: NewLine) -> Result<Line, StoreError> {
        let txn = self.db.begin().await?;
        let next = Self::chat_revision(&txn, game).await? + 1;
        let row = chat_lines::Model {
            game_id: game.to_string(),
            seq: next,
            room: line.room.as_str().to_owned(),
            author_id: line.author.to_string(),
            author_name: line.author_name,
            text: line.text,
            posted_at: line.posted_at.millis(),
            hidden: false,
            revision: next,
            hidden_by: None,
        };
        chat_lines::Entity::insert(chat_lines::ActiveModel::from(row.clone()))
            .exec_without_returning(&txn)
            .await?;
        txn.commit().await?;
        line_of(row)
    }

    /// `game`'s lines in `rooms` changed after `revision`, in the order of
    /// their changes, at most `limit`.
    pub async fn chat_since(
        &self,
        game: &GameId,
        rooms: &[Room],
        revision: u64,
        limit: u64,
    ) -> Result<Vec<Line>, StoreError> {
        chat_lines::Entity::find()
            .filter(chat_lines::Column::GameId.eq(game.as_str()))
            .filter(chat_lines::Column::Revision.gt(as_i64(revision)))
            .filter(in_rooms(rooms))
            .order_by_asc(chat_lines::Column::Revision)
            .limit(limit)
            .all(&self.db)
            .await?
            .into_iter()
            .map(line_of)
            .collect()
    }

    /// A page of `game`'s lines in `rooms`: those numbered after `after`,
    /// oldest first, at most `limit`.
    pub async fn chat_page(
        &self,
        game: &GameId,
        rooms: &[Room],
        after: u64,
        limit: u64,
    ) -> Result<Vec<Line>, StoreError> {
        chat_lines::Entity::find()
            .filter(chat_lines::Column::GameId.eq(game.as_str()))
            .filter(chat_lines::Column::Seq.gt(as_i64(after)))
            .filter(in_rooms(rooms))
            .order_by_asc(chat_lines::Column::Seq)
            .limit(limit)
            .all(&self.db)
            .await?
            .into_iter()
            .map(line_of)
            .collect()
    }

    /// Line `seq` of `game`, if there is one.
    pub async fn chat_line(&self, game: &GameId, seq: u64) -> Result<Option<Line>, StoreError> {
        chat_lines::Entity::find_by_id((game.to_string(), as_i64(seq)))
            .one(&self.db)
            .await?
            .map(line_of)
            .transpose()
    }

    /// Hides line `seq` of `game` for `by`, under the game's next revision,
    /// and closes its reports: the line as it is now, or `None` if there is
    /// no such line. A line already hidden is returned as it is. The caller
    /// holds the game's chat turn.
    pub async fn hide_chat(
        &self,
        game: &GameId,
        seq: u64,
        by: &PlayerId,
    ) -> Result<Option<Line>, StoreError> {
        let txn = self.db.begin().await?;
        let key = (game.to_string(), as_i64(seq));
        let Some(row) = chat_lines::Entity::find_by_id(key).one(&txn).await? else {
            return Ok(None);
        };
        if row.hidden {
            return line_of(row).map(Some);
        }
        let next = Self::chat_revision(&txn, game).await? + 1;
        let mut hidden: chat_lines::ActiveModel = row.clone().into();
        hidden.hidden = Set(true);
        hidden.revision = Set(next);
        hidden.hidden_by = Set(Some(by.to_string()));
        chat_lines::Entity::update(hidden).exec(&txn).await?;
        chat_reports::Entity::update_many()
            .col_expr(chat_reports::Column::Open, Expr::value(false))
            .filter(chat_reports::Column::GameId.eq(game.as_str()))
            .filter(chat_reports::Column::Seq.eq(as_i64(seq)))
            .exec(&txn)
            .await?;
        txn.commit().await?;
        line_of(chat_lines::Model {
            hidden: true,
            revision: next,
            hidden_by: Some(by.to_string()),
            ..row
        })
        .map(Some)
    }

    /// Files `reporter`'s report of line `seq` of `game`; a second report
    /// of the same line by the same player replaces the first. False if
    /// there is no such line.
    pub async fn report_chat(
        &self,
        game: &GameId,
        seq: u64,
        reporter: &PlayerId,
        reason: &str,
        at: Timestamp,
    ) -> Result<bool, StoreError> {
        let Some(line) = self.chat_line(game, seq).await? else {
            return Ok(false);
        };
        let row = chat_reports::Model {
            game_id: game.to_string(),
            seq: as_i64(seq),
            reporter_id: reporter.to_string(),
            reason: reason.to_owned(),
            reported_at: at.millis(),
            open: !line.hidden,
        };
        let on_conflict = sea_orm::sea_query::OnConflict::columns([
            chat_reports::Column::GameId,
            chat_reports::Column::Seq,
            chat_reports::Column::ReporterId,
        ])
        .update_columns([
            chat_reports::Column::Reason,
            chat_reports::Column::ReportedAt,
            chat_reports::Column::Open,
        ])
        .to_owned();
        chat_reports::Entity::insert(chat_reports::ActiveModel::from(row))
            .on_conflict(on_conflict)
            .exec_without_returning(&self.db)
            .await?;
        Ok(true)
    }

    /// The open reports, oldest first, at most `limit`, with their lines.
    pub async fn open_chat_reports(&self, limit: u64) -> Result<Vec<Report>, StoreError> {
        let reports = chat_reports::Entity::find()
            .filter(chat_reports::Column::Open.eq(true))
            .order_by_asc(chat_reports::Column::ReportedAt)
            .limit(limit)
            .all(&self.db)
            .await?;
        let mut out = Vec::with_capacity(reports.len());
        for report in reports {
            let game = GameId::trusted(report.game_id);
            let seq = u64::try_from(report.seq).unwrap_or_default();
            // A report goes with its line (and its game).
            let Some(line) = self.chat_line(&game, seq).await? else {
                continue;
            };
            out.push(Report {
                game_id: game,
                line,
                reporter: PlayerId::trusted(report.reporter_id),
                reason: report.reason,
                reported_at: Timestamp::from_millis(report.reported_at),
            });
        }
        Ok(out)
    }
}
