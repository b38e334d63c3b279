//! Nostr public keys linked to players: at most one per player, and no key
//! held by two players.
//!
//! The key is a nullable column of `players` with a unique index: the index,
//! not an earlier read, decides who gets a key two players link at once.

use chess_domain::PlayerId;
use sea_orm::{
    ColumnTrait as _, DatabaseTransaction, EntityTrait as _, QueryFilter as _,
    sea_query::{Expr, SimpleExpr},
};

use super::{Store, StoreError, accounts::taken, open::transact, players};
use crate::{accounts::NostrKey, model::Player};

impl Store {
    /// The player whose linked Nostr key is `key`.
    pub async fn player_with_nostr_key(
        &self,
        key: &NostrKey,
    ) -> Result<Option<Player>, StoreError> {
        self.player_where(players::Column::NostrPublicKey.eq(key.as_str()))
            .await
    }

    /// Links `key` to player `id`, replacing their earlier key, and returns
    /// the player as now stored. None if there is no such player;
    /// [`StoreError::Taken`] if another player holds the key. Linking the
    /// key a player holds already changes nothing.
    pub async fn link_nostr_key(
        &self,
        id: &PlayerId,
        key: &NostrKey,
    ) -> Result<Option<Player>, StoreError> {
        self.set_nostr_key(id, Expr::value(key.as_str())).await
    }

    /// Removes player `id`'s linked Nostr key, if any, and returns the player
    /// as now stored. None if there is no such player.
    pub async fn unlink_nostr_key(&self, id: &PlayerId) -> Result<Option<Player>, StoreError> {
        self.set_nostr_key(id, Expr::value(Option::<String>::None))
            .await
    }

    async fn set_nostr_key(
        &self,
        id: &PlayerId,
        value: SimpleExpr,
    ) -> Result<Option<Player>, StoreError> {
        transact!(self, |txn| set_in(txn, id, value.clone())).await
    }
}

async fn set_in(
    txn: &DatabaseTransaction,
    id: &PlayerId,
    value: SimpleExpr,
) -> Result<Option<Player>, StoreError> {
    let updated = players::Entity::update_many()
        .col_expr(players::Column::NostrPublicKey, value)
        .filter(players::Column::Id.eq(id.as_str()))
        .exec(txn)
        .await
        .map_err(taken)?;
    if updated.rows_affected == 0 {
        return Ok(None);
    }
    Ok(players::Entity::find_by_id(id.to_string())
        .one(txn)
        .await?
        .map(Player::from))
}
