//! Table rows.

pub mod players {
    use sea_orm::entity::prelude::*;

    /// A registered player.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "players")]
    pub struct Model {
        /// A UUID.
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        /// As registered.
        pub username: String,
        /// Lower-cased, unique.
        #[sea_orm(unique)]
        pub username_key: String,
        pub email: String,
        /// Lower-cased, unique.
        #[sea_orm(unique)]
        pub email_key: String,
        /// Argon2id, in PHC string form.
        pub password_hash: String,
        /// Milliseconds since the epoch.
        pub registered_at: i64,
        /// Advanced to end every session at once; tokens carry the
        /// generation they were issued in.
        pub session_generation: i64,
        /// The linked Nostr public key (64 lowercase hexadecimal digits),
        /// unique; none when no key is linked.
        #[sea_orm(unique)]
        pub nostr_public_key: Option<String>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod ratings {
    use sea_orm::entity::prelude::*;

    /// A player's rating in one system and speed category.
    #[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
    #[sea_orm(table_name = "ratings")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub player_id: String,
        /// `club-elo`, `logistic-elo` or `glicko2`.
        #[sea_orm(primary_key, auto_increment = false)]
        pub system: String,
        /// `bullet` … `correspondence`.
        #[sea_orm(primary_key, auto_increment = false)]
        pub category: String,
        pub rating: f64,
        /// Glicko-2 only; 0 for the Elo systems.
        pub deviation: f64,
        /// Glicko-2 only; 0 for the Elo systems.
        pub volatility: f64,
        pub games_played: i32,
        pub wins: i32,
        pub losses: i32,
        pub draws: i32,
        /// When the last rated game was applied, milliseconds since the epoch.
        pub last_played_at: Option<i64>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {
        #[sea_orm(
            belongs_to = "super::players::Entity",
            from = "Column::PlayerId",
            to = "super::players::Column::Id"
        )]
        Player,
    }

    impl Related<super::players::Entity> for Entity {
        fn to() -> RelationDef {
            Relation::Player.def()
        }
    }

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod results {
    use sea_orm::entity::prelude::*;

    /// A game result as first recorded; its key makes every later delivery a
    /// repeat.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "results")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub game_id: String,
        pub white_id: String,
        pub black_id: String,
        /// `white`, `black` or `draw`.
        pub result: String,
        pub category: String,
        pub rated: bool,
        /// Whether ratings changed (rated, between two distinct registered
        /// players); the changes are the game's `rating_history` rows.
        pub applied: bool,
        /// The rating system the game was applied in.
        pub system: String,
        pub finished_at: Option<i64>,
        pub recorded_at: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod rating_history {
    use sea_orm::entity::prelude::*;

    /// One player's rating change from one game.
    #[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
    #[sea_orm(table_name = "rating_history")]
    pub struct Model {
        /// Ascending in insertion order; pages run newest first by it.
        #[sea_orm(primary_key)]
        pub id: i64,
        pub player_id: String,
        pub system: String,
        pub category: String,
        pub game_id: String,
        pub opponent_id: String,
        /// 1 win, 0.5 draw, 0 loss.
        pub score: f64,
        pub rating_before: f64,
        pub rating_after: f64,
        pub deviation_before: f64,
        pub deviation_after: f64,
        pub recorded_at: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod revoked_sessions {
    use sea_orm::entity::prelude::*;

    /// A session ended on its own (sign-out), refused until it expires.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "revoked_sessions")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub session_id: String,
        pub player_id: String,
        /// When the session's token expires, Unix seconds; the row may go
        /// after that.
        pub expires_at: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}
