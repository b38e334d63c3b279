//! Chat standing of accounts: the moderator role, a moderator's server-wide
//! mute, chat switched off by the player, and the players each one muted.
//!
//! Kept apart from `players` (one `chat_standings` row per player who has
//! any standing, one `personal_mutes` row per muted pair), so an account
//! that never touched chat costs nothing; both cascade with the player.

use chess_domain::{PlayerId, Timestamp, Username};
use sea_orm::{
    ColumnTrait as _, DatabaseTransaction, EntityTrait as _, QueryFilter as _, QueryOrder as _,
    Set, sea_query::OnConflict,
};

use super::{Store, StoreError, open::transact, players};
use crate::model::ChatStanding;

pub mod chat_standings {
    use sea_orm::entity::prelude::*;

    /// A player's chat settings and role.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "chat_standings")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub player_id: String,
        pub moderator: bool,
        pub chat_off: bool,
        /// Milliseconds since the epoch; none when not muted.
        pub muted_until: Option<i64>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod personal_mutes {
    use sea_orm::entity::prelude::*;

    /// `player_id` muted `muted_id`.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "personal_mutes")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub player_id: String,
        #[sea_orm(primary_key, auto_increment = false)]
        pub muted_id: String,
        /// Milliseconds since the epoch.
        pub created_at: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// One change to a player's own standing row.
#[derive(Clone, Copy, Debug)]
pub enum StandingChange {
    Moderator(bool),
    ChatOff(bool),
    MutedUntil(Option<Timestamp>),
}

/// Most mutes one player keeps: enough for anyone, bounded for the store.
pub const MAX_PERSONAL_MUTES: usize = 1000;

impl Store {
    /// The chat standing of `player_id` as of `now`; None if no such player.
    pub async fn chat_standing(
        &self,
        player_id: &PlayerId,
        now: Timestamp,
    ) -> Result<Option<ChatStanding>, StoreError> {
        if players::Entity::find_by_id(player_id.as_str())
            .one(&self.db)
            .await?
            .is_none()
        {
            return Ok(None);
        }
        let row = chat_standings::Entity::find_by_id(player_id.as_str())
            .one(&self.db)
            .await?;
        let muted_ids: Vec<String> = personal_mutes::Entity::find()
            .filter(personal_mutes::Column::PlayerId.eq(player_id.as_str()))
            .all(&self.db)
            .await?
            .into_iter()
            .map(|m| m.muted_id)
            .collect();
        let muted = if muted_ids.is_empty() {
            Vec::new()
        } else {
            players::Entity::find()
                .filter(players::Column::Id.is_in(muted_ids))
                .order_by_asc(players::Column::UsernameKey)
                .all(&self.db)
                .await?
                .into_iter()
                .map(|p| (PlayerId::trusted(p.id), Username::trusted(p.username)))
                .collect()
        };
        let mut standing = ChatStanding {
            muted,
            ..ChatStanding::default()
        };
        if let Some(row) = row {
            standing.moderator = row.moderator;
            standing.chat_off = row.chat_off;
            standing.muted_until = row
                .muted_until
                .filter(|&until| until > now.millis())
                .map(Timestamp::from_millis);
        }
        Ok(Some(standing))
    }

    /// Applies `change` to `player_id`'s standing; false if no such player.
    pub async fn change_standing(
        &self,
        player_id: &PlayerId,
        change: StandingChange,
    ) -> Result<bool, StoreError> {
        transact!(self, |txn| change_in(txn, player_id, change)).await
    }

    /// Mutes (or unmutes) `muted_id` for `player_id`, as of `now`. False if
    /// the muting player is unknown; [`StoreError::Corrupt`] never: the
    /// caller checked the muted one exists, and a removed one cascades.
    pub async fn set_personal_mute(
        &self,
        player_id: &PlayerId,
        muted_id: &PlayerId,
        muted: bool,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        transact!(self, |txn| async {
            if players::Entity::find_by_id(player_id.as_str())
                .one(txn)
                .await?
                .is_none()
            {
                return Ok(false);
            }
            if muted {
                let row = personal_mutes::ActiveModel {
                    player_id: Set(player_id.to_string()),
                    muted_id: Set(muted_id.to_string()),
                    created_at: Set(now.millis()),
                };
                personal_mutes::Entity::insert(row)
                    .on_conflict_do_nothing()
                    .exec_without_returning(txn)
                    .await?;
            } else {
                personal_mutes::Entity::delete_many()
                    .filter(personal_mutes::Column::PlayerId.eq(player_id.as_str()))
                    .filter(personal_mutes::Column::MutedId.eq(muted_id.as_str()))
                    .exec(txn)
                    .await?;
            }
            Ok(true)
        })
        .await
    }
}

async fn change_in(
    txn: &DatabaseTransaction,
    player_id: &PlayerId,
    change: StandingChange,
) -> Result<bool, StoreError> {
    if players::Entity::find_by_id(player_id.as_str())
        .one(txn)
        .await?
        .is_none()
    {
        return Ok(false);
    }
    let mut row = match chat_standings::Entity::find_by_id(player_id.as_str())
        .one(txn)
        .await?
    {
        Some(row) => row,
        None => chat_standings::Model {
            player_id: player_id.to_string(),
            moderator: false,
            chat_off: false,
            muted_until: None,
        },
    };
    match change {
        StandingChange::Moderator(on) => row.moderator = on,
        StandingChange::ChatOff(on) => row.chat_off = on,
        StandingChange::MutedUntil(until) => row.muted_until = until.map(Timestamp::millis),
    }
    let active = chat_standings::ActiveModel {
        player_id: Set(row.player_id),
        moderator: Set(row.moderator),
        chat_off: Set(row.chat_off),
        muted_until: Set(row.muted_until),
    };
    chat_standings::Entity::insert(active)
        .on_conflict(
            OnConflict::column(chat_standings::Column::PlayerId)
                .update_columns([
                    chat_standings::Column::Moderator,
                    chat_standings::Column::ChatOff,
                    chat_standings::Column::MutedUntil,
                ])
                .to_owned(),
        )
        .exec_without_returning(txn)
        .await?;
    Ok(true)
}
