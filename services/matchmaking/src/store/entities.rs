//! The lobby's tables as sea-orm entities: `seeks` (correspondence tables),
//! `seek_requests` and `challenges`.

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
