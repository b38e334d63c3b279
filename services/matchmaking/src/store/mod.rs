//! What survives a restart: seeks (real-time ones and correspondence
//! tables), the requests to play them, and challenges. A real-time seek
//! still lapses when its poster is gone: after a restart, unless their
//! stream is back within the presence grace.
//!
//! Rows are never deleted: a table or challenge that is over keeps its final
//! status, which is what a later look-up of it finds.

pub mod entities;
pub mod migration;

use chess_domain::{ColorChoice, GameId, PlayerId, TimeControl, Timestamp, Username};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, DatabaseConnection, EntityTrait,
    QueryFilter as _, Value, sea_query::Expr,
};
use sea_orm_migration::MigratorTrait as _;

use self::entities::{challenges, seek_requests, seeks};
use crate::lobby::model::{
    AcceptMode, Challenge, ChallengeStatus, Member, RequestStatus, Seek, SeekRequest, Shown,
};

chess_storage::store_error! {
    /// A storage failure.
    pub enum StoreError {
        #[error("stored {what} {id} is unreadable")]
        Corrupt { what: &'static str, id: String },
    }
}

/// What a restarted lobby starts from.
#[derive(Debug, Default)]
pub struct Loaded {
    pub seeks: Vec<Seek>,
    pub requests: Vec<SeekRequest>,
    pub challenges: Vec<Challenge>,
}

/// The lobby's database.
#[derive(Clone, Debug)]
pub struct Store {
    db: DatabaseConnection,
}

impl Store {
    /// Opens the database at `url` and applies the migrations.
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        let db = chess_storage::connect(url, 4).await?;
        // Replicas starting together take turns.
        chess_storage::migrate_exclusively(&db, 0x4348_4553_534d, || {
            migration::Migrator::up(&db, None)
        })
        .await?;
        Ok(Self { db })
    }

    /// Closes the database for good (see [`chess_storage::close`]).
    pub async fn close(&self) {
        chess_storage::close(&self.db).await;
    }

    /// Open tables, the pending requests to them and pending challenges.
    pub async fn load(&self) -> Result<Loaded, StoreError> {
        let seeks = self.rows(seeks::Column::Status, "open", seek_from_row);
        let pending = RequestStatus::Pending.as_str();
        let requests = self.rows(seek_requests::Column::Status, pending, request_from_row);
        let pending = ChallengeStatus::Pending.as_str();
        let challenges = self.rows(challenges::Column::Status, pending, challenge_from_row);
        Ok(Loaded {
            seeks: seeks.await?,
            requests: requests.await?,
            challenges: challenges.await?,
        })
    }

    pub async fn insert_seek(&self, seek: &Seek) -> Result<(), StoreError> {
        self.insert(seeks::ActiveModel {
            id: Set(seek.id.clone()),
            poster_id: Set(seek.poster.id.to_string()),
            poster_username: Set(seek.poster.username.to_string()),
            time_control: Set(seek.time_control.storage_name()),
            color: Set(seek.color.as_str().to_owned()),
            rated: Set(seek.rated),
            min_rating: Set(seek.min_rating),
            max_rating: Set(seek.max_rating),
            show_name: Set(seek.show_name),
            accept_mode: Set(seek.accept.as_str().to_owned()),
            allow_hints: Set(seek.allow_hints),
            poster_rating: Set(seek.poster_rating.rating),
            poster_provisional: Set(seek.poster_rating.provisional),
            status: Set("open".to_owned()),
            created_at: Set(seek.created_at.millis()),
            closed_at: Set(None),
        })
        .await
    }

    pub async fn insert_request(&self, request: &SeekRequest) -> Result<(), StoreError> {
        self.insert(seek_requests::ActiveModel {
            id: Set(request.id.clone()),
            seek_id: Set(request.seek_id.clone()),
            requester_id: Set(request.requester.id.to_string()),
            requester_username: Set(request.requester.username.to_string()),
            requester_rating: Set(request.requester_rating),
            status: Set(request.status.as_str().to_owned()),
            game_id: Set(stored(&request.game_id)),
            created_at: Set(request.created_at.millis()),
            updated_at: Set(request.created_at.millis()),
        })
        .await
    }

    pub async fn insert_challenge(&self, challenge: &Challenge) -> Result<(), StoreError> {
        self.insert(challenges::ActiveModel {
            id: Set(challenge.id.clone()),
            challenger_id: Set(challenge.challenger.id.to_string()),
            challenger_username: Set(challenge.challenger.username.to_string()),
            challenged_id: Set(challenge.challenged.id.to_string()),
            challenged_username: Set(challenge.challenged.username.to_string()),
            time_control: Set(challenge.time_control.storage_name()),
            color: Set(challenge.color.as_str().to_owned()),
            rated: Set(challenge.rated),
            allow_hints: Set(challenge.allow_hints),
            status: Set(challenge.status.as_str().to_owned()),
            decline_reason: Set(challenge.decline_reason.clone()),
            game_id: Set(stored(&challenge.game_id)),
            created_at: Set(challenge.created_at.millis()),
            expires_at: Set(challenge.expires_at.millis()),
            updated_at: Set(challenge.created_at.millis()),
        })
        .await
    }

    /// Marks a table `taken` or `cancelled`.
    pub async fn close_seek(
        &self,
        id: &str,
        status: &str,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        use seeks::Column;
        let columns = [
            (Column::Status, status.into()),
            (Column::ClosedAt, now.millis().into()),
        ];
        self.update(Column::Id, id, columns).await
    }

    /// Records a request's final status (and game).
    pub async fn settle_request(
        &self,
        request: &SeekRequest,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        use seek_requests::Column;
        let columns = [
            (Column::Status, request.status.as_str().into()),
            (Column::GameId, stored(&request.game_id).into()),
            (Column::UpdatedAt, now.millis().into()),
        ];
        self.update(Column::Id, &request.id, columns).await
    }

    /// Records a challenge's final status (with its reason or game).
    pub async fn settle_challenge(
        &self,
        challenge: &Challenge,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        use challenges::Column;
        let columns = [
            (Column::Status, challenge.status.as_str().into()),
            (
                Column::DeclineReason,
                challenge.decline_reason.clone().into(),
            ),
            (Column::GameId, stored(&challenge.game_id).into()),
            (Column::UpdatedAt, now.millis().into()),
        ];
        self.update(Column::Id, &challenge.id, columns).await
    }

    /// The rows of `column`'s table whose `column` is `value`, read with
    /// `read`.
    async fn rows<C: ColumnTrait, T>(
        &self,
        column: C,
        value: &str,
        read: fn(Row<C>) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError>
    where
        C::EntityName: EntityTrait<Column = C>,
    {
        let rows = C::EntityName::find()
            .filter(column.eq(value))
            .all(&self.db)
            .await?;
        rows.into_iter().map(read).collect()
    }

    /// Adds a row.
    async fn insert<A: ActiveModelTrait>(&self, row: A) -> Result<(), StoreError> {
        A::Entity::insert(row).exec(&self.db).await?;
        Ok(())
    }

    /// Sets `columns` of the row whose `key` is `id`.
    async fn update<C: ColumnTrait>(
        &self,
        key: C,
        id: &str,
        columns: impl IntoIterator<Item = (C, Value)>,
    ) -> Result<(), StoreError>
    where
        C::EntityName: EntityTrait<Column = C>,
    {
        let mut update = C::EntityName::update_many().filter(key.eq(id));
        for (column, value) in columns {
            update = update.col_expr(column, Expr::value(value));
        }
        update.exec(&self.db).await?;
        Ok(())
    }
}

fn seek_from_row(row: seeks::Model) -> Result<Seek, StoreError> {
    let corrupt = corrupt("seek", &row.id);
    Ok(Seek {
        time_control: TimeControl::from_storage(&row.time_control).ok_or_else(&corrupt)?,
        color: ColorChoice::from_name(&row.color).ok_or_else(&corrupt)?,
        accept: AcceptMode::from_name(&row.accept_mode).ok_or_else(&corrupt)?,
        poster: member(row.poster_id, row.poster_username),
        rated: row.rated,
        allow_hints: row.allow_hints,
        min_rating: row.min_rating,
        max_rating: row.max_rating,
        show_name: row.show_name,
        poster_rating: Shown {
            rating: row.poster_rating,
            provisional: row.poster_provisional,
        },
        created_at: Timestamp::from_millis(row.created_at),
        id: row.id,
    })
}

fn request_from_row(row: seek_requests::Model) -> Result<SeekRequest, StoreError> {
    let corrupt = corrupt("seek request", &row.id);
    let status = RequestStatus::from_name(&row.status).ok_or_else(&corrupt)?;
    Ok(SeekRequest {
        id: row.id,
        seek_id: row.seek_id,
        requester: member(row.requester_id, row.requester_username),
        requester_rating: row.requester_rating,
        status,
        game_id: row.game_id.map(GameId::trusted),
        created_at: Timestamp::from_millis(row.created_at),
    })
}

fn challenge_from_row(row: challenges::Model) -> Result<Challenge, StoreError> {
    let corrupt = corrupt("challenge", &row.id);
    Ok(Challenge {
        time_control: TimeControl::from_storage(&row.time_control).ok_or_else(&corrupt)?,
        color: ColorChoice::from_name(&row.color).ok_or_else(&corrupt)?,
        status: ChallengeStatus::from_name(&row.status).ok_or_else(&corrupt)?,
        challenger: member(row.challenger_id, row.challenger_username),
        challenged: member(row.challenged_id, row.challenged_username),
        rated: row.rated,
        allow_hints: row.allow_hints,
        decline_reason: row.decline_reason,
        game_id: row.game_id.map(GameId::trusted),
        created_at: Timestamp::from_millis(row.created_at),
        expires_at: Timestamp::from_millis(row.expires_at),
        id: row.id,
    })
}

/// Why a stored `what` `id` cannot be read: a name in it that this version
/// does not know.
fn corrupt(what: &'static str, id: &str) -> impl Fn() -> StoreError + use<> {
    let id = id.to_owned();
    move || StoreError::Corrupt {
        what,
        id: id.clone(),
    }
}

/// A member as stored: both were checked when the row was written.
fn member(id: String, username: String) -> Member {
    Member {
        id: PlayerId::trusted(id),
        username: Username::trusted(username),
    }
}

/// A game id as its column holds it.
fn stored(game_id: &Option<GameId>) -> Option<String> {
    game_id.clone().map(String::from)
}

/// A row of `C`'s table.
type Row<C> = <<C as ColumnTrait>::EntityName as EntityTrait>::Model;

#[cfg(test)]
mod tests {
    use chess_domain::{ColorChoice, TimeControl};

    use super::*;

    #[tokio::test]
    async fn open_things_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let url = chess_storage::sqlite_url(&dir.path().join("lobby.sqlite"));
        let store = Store::open(&url).await.unwrap();
        let alice = member("a".into(), "alice".into());
        let bob = member("b".into(), "bob".into());
        let seek = Seek {
            id: "s1".into(),
            poster: alice.clone(),
            time_control: TimeControl::Daily { turn_hours: 72 },
            color: ColorChoice::Black,
            rated: true,
            min_rating: None,
            max_rating: Some(1500),
            show_name: false,
            accept: AcceptMode::Manual,
            allow_hints: false,
            poster_rating: Shown {
                rating: 1200,
                provisional: true,
            },
            created_at: Timestamp::from_millis(10),
        };
        store.insert_seek(&seek).await.unwrap();
        let closed = Seek {
            id: "s2".into(),
            ..seek.clone()
        };
        store.insert_seek(&closed).await.unwrap();
        store
            .close_seek("s2", "cancelled", Timestamp::from_millis(11))
            .await
            .unwrap();
        let mut request = SeekRequest {
            id: "r1".into(),
            seek_id: "s1".into(),
            requester: bob.clone(),
            requester_rating: 1300,
            status: RequestStatus::Pending,
            game_id: None,
            created_at: Timestamp::from_millis(12),
        };
        store.insert_request(&request).await.unwrap();
        let mut challenge = Challenge {
            id: "c1".into(),
            challenger: alice,
            challenged: bob,
            time_control: TimeControl::Incremental {
                initial_secs: 300,
                increment_secs: 0,
            },
            color: ColorChoice::Either,
            rated: false,
            allow_hints: true,
            status: ChallengeStatus::Pending,
            decline_reason: String::new(),
            game_id: None,
            created_at: Timestamp::from_millis(13),
            expires_at: Timestamp::from_millis(1000),
        };
        store.insert_challenge(&challenge).await.unwrap();
        drop(store);

        let store = Store::open(&url).await.unwrap();
        let loaded = store.load().await.unwrap();
        assert_eq!(loaded.seeks, vec![seek]);
        assert_eq!(loaded.requests, vec![request.clone()]);
        assert_eq!(loaded.challenges, vec![challenge.clone()]);

        request.status = RequestStatus::Accepted;
        request.game_id = Some(GameId::trusted("g"));
        store
            .settle_request(&request, Timestamp::from_millis(20))
            .await
            .unwrap();
        challenge.status = ChallengeStatus::Declined;
        challenge.decline_reason = "later".into();
        store
            .settle_challenge(&challenge, Timestamp::from_millis(21))
            .await
            .unwrap();
        store
            .close_seek("s1", "taken", Timestamp::from_millis(22))
            .await
            .unwrap();
        let loaded = store.load().await.unwrap();
        assert!(loaded.seeks.is_empty() && loaded.requests.is_empty());
        assert!(loaded.challenges.is_empty());
    }
}
