//! Table rows.

pub mod games {
    use sea_orm::entity::prelude::*;

    /// One game; the moves are in `moves`.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "games")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        /// `registered`, `guest` or `engine`.
        pub white_kind: String,
        /// Player or guest id; empty for the engine.
        pub white_id: String,
        pub white_name: String,
        /// Engine level (engine only).
        pub white_level: i32,
        pub black_kind: String,
        pub black_id: String,
        pub black_name: String,
        pub black_level: i32,
        /// Stored by `TimeControl::storage_name`.
        pub time_control: String,
        pub speed: String,
        /// `standard` or `uqchess`.
        pub rules: String,
        pub rated: bool,
        /// Whether the players may ask for hints; fixed at creation.
        pub hints_allowed: bool,
        pub initial_fen: String,
        /// Position and ply count as of the last change of status or draw
        /// offer, for listings of finished games; the moves table is the
        /// record of play, and live games are listed from their actors.
        pub fen: String,
        pub ply: i32,
        /// `active` or `finished`.
        pub status: String,
        /// `white`, `black` or `draw`; none while active or when aborted.
        pub result: Option<String>,
        pub termination: Option<String>,
        /// `white` or `black` while a draw offer stands.
        pub draw_offer: Option<String>,
        pub created_at: i64,
        pub updated_at: i64,
        pub finished_at: Option<i64>,
        #[sea_orm(unique)]
        pub idempotency_key: Option<String>,
        /// `chess_shards::shard_of(id)`: which replica serves the game.
        pub shard: i32,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod moves {
    use sea_orm::entity::prelude::*;

    /// One move of one game.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "moves")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub game_id: String,
        #[sea_orm(primary_key, auto_increment = false)]
        pub ply: i32,
        pub uci: String,
        pub san: String,
        pub submitted: String,
        pub played_at: i64,
        pub clock_after_ms: Option<i64>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod results_outbox {
    use sea_orm::entity::prelude::*;

    /// A finished game between registered players not yet acknowledged by the
    /// rating service.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "results_outbox")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub game_id: String,
        pub white_id: String,
        pub black_id: String,
        /// `white`, `black` or `draw`.
        pub result: String,
        pub speed: String,
        pub rated: bool,
        pub finished_at: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod clock_credits {
    use sea_orm::entity::prelude::*;

    /// Time given back to the side to move at `ply`, because the game's
    /// shard had no replica serving it for that long (its replica died, or
    /// handed it over): the clock did not run for the player meanwhile.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "clock_credits")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub game_id: String,
        /// When the replica that took the shard over gave it (wall-clock ms).
        #[sea_orm(primary_key, auto_increment = false)]
        pub granted_at: i64,
        pub ply: i32,
        pub credit_ms: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod takebacks {
    use sea_orm::entity::prelude::*;

    /// The clocks a takeback back to `ply` left: each side's time at that
    /// instant (`taken_at`), the side to move's clock running from then.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "takebacks")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub game_id: String,
        #[sea_orm(primary_key, auto_increment = false)]
        pub ply: i32,
        pub taken_at: i64,
        pub white_ms: i64,
        pub black_ms: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}
