//! What survives a restart: correspondence tables, the requests to play them,
//! and challenges. Real-time seeks (and requests for them) live only in
//! memory, since they lapse when their poster disconnects anyway.
//!
//! Rows are never deleted: a table or challenge that is over keeps its final
//! status, which is what a later look-up of it finds.

use sea_orm::{
    ActiveValue::Set, ColumnTrait as _, DatabaseConnection, DbErr, EntityTrait as _,
    QueryFilter as _, sea_query::Expr,
};
use sea_orm_migration::MigratorTrait as _;

use super::model::{
    AcceptMode, Challenge, ChallengeStatus, Member, RequestStatus, Seek, SeekRequest, Shown,
    decode_color, decode_time_control, encode_color, encode_time_control,
};

/// A storage failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(transparent)]
    Open(#[from] chess_storage::Error),
    #[error("database error: {0}")]
    Db(#[from] DbErr),
    #[error("stored {what} {id} is unreadable")]
    Corrupt { what: &'static str, id: String },
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

    /// Open tables, the pending requests to them and pending challenges.
    pub async fn load(&self) -> Result<Loaded, StoreError> {
        let seeks = seeks::Entity::find()
            .filter(seeks::Column::Status.eq("open"))
            .all(&self.db)
            .await?
            .into_iter()
            .map(seek_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        let requests = seek_requests::Entity::find()
            .filter(seek_requests::Column::Status.eq(RequestStatus::Pending.as_str()))
            .all(&self.db)
            .await?
            .into_iter()
            .map(request_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        let challenges = challenges::Entity::find()
            .filter(challenges::Column::Status.eq(ChallengeStatus::Pending.as_str()))
            .all(&self.db)
            .await?
            .into_iter()
            .map(challenge_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Loaded {
            seeks,
            requests,
            challenges,
        })
    }

    pub async fn insert_seek(&self, seek: &Seek) -> Result<(), StoreError> {
        seeks::Entity::insert(seeks::ActiveModel {
            id: Set(seek.id.clone()),
            poster_id: Set(seek.poster.id.clone()),
            poster_username: Set(seek.poster.username.clone()),
            time_control: Set(encode_time_control(seek.time_control)),
            color: Set(encode_color(seek.color).to_owned()),
            rated: Set(seek.rated),
            min_rating: Set(seek.min_rating),
            max_rating: Set(seek.max_rating),
            show_name: Set(seek.show_name),
            accept_mode: Set(seek.accept.as_str().to_owned()),
            allow_hints: Set(seek.allow_hints),
            poster_rating: Set(seek.poster_rating.rating),
            poster_provisional: Set(seek.poster_rating.provisional),
            status: Set("open".to_owned()),
            created_at: Set(seek.created_at),
            closed_at: Set(None),
        })
        .exec(&self.db)
        .await?;
        Ok(())
    }

    /// Marks a table `taken` or `cancelled`.
    pub async fn close_seek(&self, id: &str, status: &str, now: i64) -> Result<(), StoreError> {
        seeks::Entity::update_many()
            .col_expr(seeks::Column::Status, Expr::value(status))
            .col_expr(seeks::Column::ClosedAt, Expr::value(now))
            .filter(seeks::Column::Id.eq(id))
            .exec(&self.db)
            .await?;
        Ok(())
    }

    pub async fn insert_request(&self, request: &SeekRequest) -> Result<(), StoreError> {
        seek_requests::Entity::insert(seek_requests::ActiveModel {
            id: Set(request.id.clone()),
            seek_id: Set(request.seek_id.clone()),
            requester_id: Set(request.requester.id.clone()),
            requester_username: Set(request.requester.username.clone()),
            requester_rating: Set(request.requester_rating),
            status: Set(request.status.as_str().to_owned()),
            game_id: Set(request.game_id.clone()),
            created_at: Set(request.created_at),
            updated_at: Set(request.created_at),
        })
        .exec(&self.db)
        .await?;
        Ok(())
    }

    /// Records a request's final status (and game).
    pub async fn settle_request(&self, request: &SeekRequest, now: i64) -> Result<(), StoreError> {
        seek_requests::Entity::update_many()
            .col_expr(
                seek_requests::Column::Status,
                Expr::value(request.status.as_str()),
            )
            .col_expr(
                seek_requests::Column::GameId,
                Expr::value(request.game_id.clone()),
            )
            .col_expr(seek_requests::Column::UpdatedAt, Expr::value(now))
            .filter(seek_requests::Column::Id.eq(request.id.as_str()))
            .exec(&self.db)
            .await?;
        Ok(())
    }

    pub async fn insert_challenge(&self, challenge: &Challenge) -> Result<(), StoreError> {
        challenges::Entity::insert(challenges::ActiveModel {
            id: Set(challenge.id.clone()),
            challenger_id: Set(challenge.challenger.id.clone()),
            challenger_username: Set(challenge.challenger.username.clone()),
            challenged_id: Set(challenge.challenged.id.clone()),
            challenged_username: Set(challenge.challenged.username.clone()),
            time_control: Set(encode_time_control(challenge.time_control)),
            color: Set(encode_color(challenge.color).to_owned()),
            rated: Set(challenge.rated),
            allow_hints: Set(challenge.allow_hints),
            status: Set(challenge.status.as_str().to_owned()),
            decline_reason: Set(challenge.decline_reason.clone()),
            game_id: Set(challenge.game_id.clone()),
            created_at: Set(challenge.created_at),
            expires_at: Set(challenge.expires_at),
            updated_at: Set(challenge.created_at),
        })
        .exec(&self.db)
        .await?;
        Ok(())
    }

    /// Records a challenge's final status (with its reason or game).
    pub async fn settle_challenge(
        &self,
        challenge: &Challenge,
        now: i64,
    ) -> Result<(), StoreError> {
        challenges::Entity::update_many()
            .col_expr(
                challenges::Column::Status,
                Expr::value(challenge.status.as_str()),
            )
            .col_expr(
                challenges::Column::DeclineReason,
                Expr::value(challenge.decline_reason.clone()),
            )
            .col_expr(
                challenges::Column::GameId,
                Expr::value(challenge.game_id.clone()),
            )
            .col_expr(challenges::Column::UpdatedAt, Expr::value(now))
            .filter(challenges::Column::Id.eq(challenge.id.as_str()))
            .exec(&self.db)
            .await?;
        Ok(())
    }
}

fn seek_from_row(row: seeks::Model) -> Result<Seek, StoreError> {
    let corrupt = || StoreError::Corrupt {
        what: "seek",
        id: row.id.clone(),
    };
    Ok(Seek {
        time_control: decode_time_control(&row.time_control).ok_or_else(corrupt)?,
        color: decode_color(&row.color).ok_or_else(corrupt)?,
        accept: AcceptMode::from_name(&row.accept_mode).ok_or_else(corrupt)?,
        poster: Member {
            id: row.poster_id,
            username: row.poster_username,
        },
        rated: row.rated,
        allow_hints: row.allow_hints,
        min_rating: row.min_rating,
        max_rating: row.max_rating,
        show_name: row.show_name,
        poster_rating: Shown {
            rating: row.poster_rating,
            provisional: row.poster_provisional,
        },
        created_at: row.created_at,
        id: row.id,
    })
}

fn request_from_row(row: seek_requests::Model) -> Result<SeekRequest, StoreError> {
    let status = RequestStatus::from_name(&row.status).ok_or_else(|| StoreError::Corrupt {
        what: "seek request",
        id: row.id.clone(),
    })?;
    Ok(SeekRequest {
        id: row.id,
        seek_id: row.seek_id,
        requester: Member {
            id: row.requester_id,
            username: row.requester_username,
        },
        requester_rating: row.requester_rating,
        status,
        game_id: row.game_id,
        created_at: row.created_at,
    })
}

fn challenge_from_row(row: challenges::Model) -> Result<Challenge, StoreError> {
    let corrupt = || StoreError::Corrupt {
        what: "challenge",
        id: row.id.clone(),
    };
    Ok(Challenge {
        time_control: decode_time_control(&row.time_control).ok_or_else(corrupt)?,
        color: decode_color(&row.color).ok_or_else(corrupt)?,
        status: ChallengeStatus::from_name(&row.status).ok_or_else(corrupt)?,
        challenger: Member {
            id: row.challenger_id,
            username: row.challenger_username,
        },
        challenged: Member {
            id: row.challenged_id,
            username: row.challenged_username,
        },
        rated: row.rated,
        allow_hints: row.allow_hints,
        decline_reason: row.decline_reason,
        game_id: row.game_id,
        created_at: row.created_at,
        expires_at: row.expires_at,
        id: row.id,
    })
}

pub mod seeks {
    use sea_orm::entity::prelude::*;

    /// A correspondence table.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "seeks")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub poster_id: String,
        pub poster_username: String,
        pub time_control: String,
        /// `white`, `black` or `either`: the poster's colour.
        pub color: String,
        pub rated: bool,
        pub min_rating: Option<i32>,
        pub max_rating: Option<i32>,
        pub show_name: bool,
        /// `manual` or `automatic`.
        pub accept_mode: String,
        pub allow_hints: bool,
        pub poster_rating: i32,
        pub poster_provisional: bool,
        /// `open`, `taken` or `cancelled`.
        pub status: String,
        pub created_at: i64,
        pub closed_at: Option<i64>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod seek_requests {
    use sea_orm::entity::prelude::*;

    /// A request to play a correspondence table.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "seek_requests")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub seek_id: String,
        pub requester_id: String,
        pub requester_username: String,
        pub requester_rating: i32,
        /// `pending`, `accepted`, `rejected` or `cancelled`.
        pub status: String,
        pub game_id: Option<String>,
        pub created_at: i64,
        pub updated_at: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod challenges {
    use sea_orm::entity::prelude::*;

    /// A direct challenge.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "challenges")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub challenger_id: String,
        pub challenger_username: String,
        pub challenged_id: String,
        pub challenged_username: String,
        pub time_control: String,
        /// The challenger's colour.
        pub color: String,
        pub rated: bool,
        pub allow_hints: bool,
        /// `pending`, `accepted`, `declined`, `cancelled` or `expired`.
        pub status: String,
        pub decline_reason: String,
        pub game_id: Option<String>,
        pub created_at: i64,
        pub expires_at: i64,
        pub updated_at: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// Schema migrations, applied at start-up; the same on SQLite and PostgreSQL.
pub mod migration {
    use sea_orm_migration::{prelude::*, schema::*};

    /// Every migration, oldest first.
    #[derive(Debug)]
    pub struct Migrator;

    impl MigratorTrait for Migrator {
        fn migrations() -> Vec<Box<dyn MigrationTrait>> {
            vec![Box::new(CreateLobby), Box::new(AllowHints)]
        }
    }

    #[derive(DeriveMigrationName)]
    struct CreateLobby;

    #[async_trait::async_trait]
    impl MigrationTrait for CreateLobby {
        async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
            manager
                .create_table(
                    Table::create()
                        .table("seeks")
                        .if_not_exists()
                        .col(string("id").primary_key())
                        .col(string("poster_id"))
                        .col(string("poster_username"))
                        .col(string("time_control"))
                        .col(string("color"))
                        .col(boolean("rated"))
                        .col(integer_null("min_rating"))
                        .col(integer_null("max_rating"))
                        .col(boolean("show_name"))
                        .col(string("accept_mode"))
                        .col(integer("poster_rating"))
                        .col(boolean("poster_provisional"))
                        .col(string("status"))
                        .col(big_integer("created_at"))
                        .col(big_integer_null("closed_at"))
                        .to_owned(),
                )
                .await?;
            manager
                .create_table(
                    Table::create()
                        .table("seek_requests")
                        .if_not_exists()
                        .col(string("id").primary_key())
                        .col(string("seek_id"))
                        .col(string("requester_id"))
                        .col(string("requester_username"))
                        .col(integer("requester_rating"))
                        .col(string("status"))
                        .col(string_null("game_id"))
                        .col(big_integer("created_at"))
                        .col(big_integer("updated_at"))
                        .to_owned(),
                )
                .await?;
            manager
                .create_table(
                    Table::create()
                        .table("challenges")
                        .if_not_exists()
                        .col(string("id").primary_key())
                        .col(string("challenger_id"))
                        .col(string("challenger_username"))
                        .col(string("challenged_id"))
                        .col(string("challenged_username"))
                        .col(string("time_control"))
                        .col(string("color"))
                        .col(boolean("rated"))
                        .col(string("status"))
                        .col(text("decline_reason"))
                        .col(string_null("game_id"))
                        .col(big_integer("created_at"))
                        .col(big_integer("expires_at"))
                        .col(big_integer("updated_at"))
                        .to_owned(),
                )
                .await?;
            // Start-up loads only what is still open.
            for (name, table) in [
                ("seeks_status_idx", "seeks"),
                ("seek_requests_status_idx", "seek_requests"),
                ("challenges_status_idx", "challenges"),
            ] {
                manager
                    .create_index(
                        Index::create()
                            .if_not_exists()
                            .name(name)
                            .table(table)
                            .col("status")
                            .to_owned(),
                    )
                    .await?;
            }
            Ok(())
        }

        async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
            for table in ["challenges", "seek_requests", "seeks"] {
                manager
                    .drop_table(Table::drop().table(table).if_exists().to_owned())
                    .await?;
            }
            Ok(())
        }
    }

    /// Seeks and challenges say whether they allow hints; those made before
    /// did not offer them.
    struct AllowHints;

    // Named by hand: the derived name is the file's, which the first
    // migration already has.
    impl MigrationName for AllowHints {
        fn name(&self) -> &str {
            "m20261123_000001_allow_hints"
        }
    }

    #[async_trait::async_trait]
    impl MigrationTrait for AllowHints {
        async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
            for table in ["seeks", "challenges"] {
                manager
                    .alter_table(
                        Table::alter()
                            .table(table)
                            .add_column(boolean("allow_hints").default(false))
                            .to_owned(),
                    )
                    .await?;
            }
            Ok(())
        }

        async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
            for table in ["challenges", "seeks"] {
                manager
                    .alter_table(
                        Table::alter()
                            .table(table)
                            .drop_column("allow_hints")
                            .to_owned(),
                    )
                    .await?;
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use chess_domain::{ColorChoice, TimeControl};

    use super::*;

    #[tokio::test]
    async fn open_things_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let url = chess_storage::sqlite_url(&dir.path().join("lobby.sqlite"));
        let store = Store::open(&url).await.unwrap();
        let alice = Member {
            id: "a".into(),
            username: "alice".into(),
        };
        let bob = Member {
            id: "b".into(),
            username: "bob".into(),
        };
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
            created_at: 10,
        };
        store.insert_seek(&seek).await.unwrap();
        let closed = Seek {
            id: "s2".into(),
            ..seek.clone()
        };
        store.insert_seek(&closed).await.unwrap();
        store.close_seek("s2", "cancelled", 11).await.unwrap();
        let mut request = SeekRequest {
            id: "r1".into(),
            seek_id: "s1".into(),
            requester: bob.clone(),
            requester_rating: 1300,
            status: RequestStatus::Pending,
            game_id: None,
            created_at: 12,
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
            created_at: 13,
            expires_at: 1000,
        };
        store.insert_challenge(&challenge).await.unwrap();
        drop(store);

        let store = Store::open(&url).await.unwrap();
        let loaded = store.load().await.unwrap();
        assert_eq!(loaded.seeks, vec![seek]);
        assert_eq!(loaded.requests, vec![request.clone()]);
        assert_eq!(loaded.challenges, vec![challenge.clone()]);

        request.status = RequestStatus::Accepted;
        request.game_id = Some("g".into());
        store.settle_request(&request, 20).await.unwrap();
        challenge.status = ChallengeStatus::Declined;
        challenge.decline_reason = "later".into();
        store.settle_challenge(&challenge, 21).await.unwrap();
        store.close_seek("s1", "taken", 22).await.unwrap();
        let loaded = store.load().await.unwrap();
        assert!(loaded.seeks.is_empty() && loaded.requests.is_empty());
        assert!(loaded.challenges.is_empty());
    }
}
