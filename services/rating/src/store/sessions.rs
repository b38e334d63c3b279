//! Sessions: a player's session generation, the sessions ended one by one,
//! and password changes (which end every session).
//!
//! Tokens are issued and checked by the gateways; what lives here is only
//! what a stateless token cannot say about itself: whether it was revoked.
//! Advancing the generation ends every session at once and makes the list of
//! individually revoked ones moot, so it is cleared then.

use std::collections::HashMap;

use chess_domain::PlayerId;
use sea_orm::{
    ColumnTrait as _, ConnectionTrait, DatabaseTransaction, EntityTrait as _, QueryFilter as _,
    QuerySelect as _, Set, UpdateMany,
    sea_query::{Expr, ExprTrait as _, OnConflict},
};

use super::{Store, StoreError, open::transact, players, revoked_sessions};
use crate::model::{Player, SessionState};

impl Store {
    /// The session state of player `id`; None if there is no such player.
    /// Revocations that expired by `now_s` (Unix seconds) are left out.
    pub async fn session_state(
        &self,
        id: &PlayerId,
        now_s: i64,
    ) -> Result<Option<SessionState>, StoreError> {
        state_in(&self.db, id, now_s).await
    }

    /// The session states of the players among `ids` who exist, by id; as
    /// [`Store::session_state`] for each, in two queries.
    pub async fn session_states(
        &self,
        ids: &[PlayerId],
        now_s: i64,
    ) -> Result<HashMap<PlayerId, SessionState>, StoreError> {
        states_in(&self.db, ids, now_s).await
    }

    /// The player with id `id`, with their password hash.
    pub async fn account(&self, id: &PlayerId) -> Result<Option<(Player, String)>, StoreError> {
        Ok(players::Entity::find_by_id(id.to_string())
            .one(&self.db)
            .await?
            .map(|row| {
                let hash = row.password_hash.clone();
                (Player::from(row), hash)
            }))
    }

    /// Records session `session_id` of player `id` as ended until
    /// `expires_at_s`, dropping the player's revocations that have expired
    /// by `now_s`. None if there is no such player.
    pub async fn revoke_session(
        &self,
        id: &PlayerId,
        session_id: &str,
        expires_at_s: i64,
        now_s: i64,
    ) -> Result<Option<SessionState>, StoreError> {
        transact!(self, |txn| revoke_in(
            txn,
            id,
            session_id,
            expires_at_s,
            now_s
        ))
        .await
    }

    /// Ends every session of player `id`. None if there is no such player.
    pub async fn revoke_all_sessions(
        &self,
        id: &PlayerId,
        now_s: i64,
    ) -> Result<Option<SessionState>, StoreError> {
        let update = players::Entity::update_many();
        transact!(self, |txn| end_all_in(txn, id, update.clone(), now_s)).await
    }

    /// Replaces player `id`'s password hash `old_hash` (the one the old
    /// password was checked against) with `new_hash` and ends every session,
    /// in one transaction. None if the player is gone or the hash changed
    /// meanwhile (another change won): the old password no longer holds.
    pub async fn change_password(
        &self,
        id: &PlayerId,
        old_hash: &str,
        new_hash: &str,
        now_s: i64,
    ) -> Result<Option<SessionState>, StoreError> {
        let update = players::Entity::update_many()
            .col_expr(players::Column::PasswordHash, Expr::value(new_hash))
            .filter(players::Column::PasswordHash.eq(old_hash));
        transact!(self, |txn| end_all_in(txn, id, update.clone(), now_s)).await
    }
}

async fn exists(db: &impl ConnectionTrait, id: &PlayerId) -> Result<bool, StoreError> {
    Ok(players::Entity::find_by_id(id.to_string())
        .select_only()
        .column(players::Column::Id)
        .into_tuple::<String>()
        .one(db)
        .await?
        .is_some())
}

async fn clear_revoked(txn: &DatabaseTransaction, id: &PlayerId) -> Result<(), StoreError> {
    revoked_sessions::Entity::delete_many()
        .filter(revoked_sessions::Column::PlayerId.eq(id.as_str()))
        .exec(txn)
        .await?;
    Ok(())
}

/// The session state of player `id` as `db` sees it; None if there is no
/// such player. Revocations that expired by `now_s` are left out.
async fn state_in(
    db: &impl ConnectionTrait,
    id: &PlayerId,
    now_s: i64,
) -> Result<Option<SessionState>, StoreError> {
    Ok(states_in(db, std::slice::from_ref(id), now_s)
        .await?
        .remove(id))
}

/// The session states of the players among `ids` who exist, by id, as `db`
/// sees them, in two queries.
async fn states_in(
    db: &impl ConnectionTrait,
    ids: &[PlayerId],
    now_s: i64,
) -> Result<HashMap<PlayerId, SessionState>, StoreError> {
    let mut states: HashMap<PlayerId, SessionState> = players::Entity::find()
        .select_only()
        .column(players::Column::Id)
        .column(players::Column::SessionGeneration)
        .filter(players::Column::Id.is_in(ids.iter().map(PlayerId::as_str)))
        .into_tuple::<(String, i64)>()
        .all(db)
        .await?
        .into_iter()
        .map(|(id, generation)| {
            let state = SessionState {
                generation,
                revoked: Vec::new(),
            };
            (PlayerId::trusted(id), state)
        })
        .collect();
    if states.is_empty() {
        return Ok(states);
    }
    let revoked: Vec<(String, String)> = revoked_sessions::Entity::find()
        .select_only()
        .column(revoked_sessions::Column::PlayerId)
        .column(revoked_sessions::Column::SessionId)
        .filter(revoked_sessions::Column::PlayerId.is_in(states.keys().map(PlayerId::as_str)))
        .filter(revoked_sessions::Column::ExpiresAt.gt(now_s))
        .into_tuple()
        .all(db)
        .await?;
    for (player_id, session_id) in revoked {
        if let Some(state) = states.get_mut(player_id.as_str()) {
            state.revoked.push(session_id);
        }
    }
    Ok(states)
}

async fn revoke_in(
    txn: &DatabaseTransaction,
    id: &PlayerId,
    session_id: &str,
    expires_at_s: i64,
    now_s: i64,
) -> Result<Option<SessionState>, StoreError> {
    if !exists(txn, id).await? {
        return Ok(None);
    }
    revoked_sessions::Entity::delete_many()
        .filter(revoked_sessions::Column::PlayerId.eq(id.as_str()))
        .filter(revoked_sessions::Column::ExpiresAt.lte(now_s))
        .exec(txn)
        .await?;
    if expires_at_s > now_s {
        revoked_sessions::Entity::insert(revoked_sessions::ActiveModel {
            session_id: Set(session_id.to_owned()),
            player_id: Set(id.to_string()),
            expires_at: Set(expires_at_s),
        })
        .on_conflict(
            OnConflict::column(revoked_sessions::Column::SessionId)
                .do_nothing()
                .to_owned(),
        )
        .exec_without_returning(txn)
        .await?;
    }
    state_in(txn, id, now_s).await
}

/// Applies `update` to player `id`'s row, advancing their session
/// generation with it (which ends every session, so the sessions revoked one
/// by one are forgotten). None if no row was updated: no such player, or
/// `update`'s own condition did not hold.
async fn end_all_in(
    txn: &DatabaseTransaction,
    id: &PlayerId,
    update: UpdateMany<players::Entity>,
    now_s: i64,
) -> Result<Option<SessionState>, StoreError> {
    let advanced = update
        .col_expr(
            players::Column::SessionGeneration,
            Expr::col(players::Column::SessionGeneration).add(1),
        )
        .filter(players::Column::Id.eq(id.as_str()))
        .exec(txn)
        .await?;
    if advanced.rows_affected == 0 {
        return Ok(None);
    }
    clear_revoked(txn, id).await?;
    state_in(txn, id, now_s).await
}
