//! Registering players and finding them by id, name or login.

use chess_domain::{PlayerId, SpeedCategory, Timestamp};
use sea_orm::{
    ColumnTrait as _, DbErr, EntityTrait as _, QueryFilter as _, Set, SqlErr, sea_query::SimpleExpr,
};

use super::{Field, Store, StoreError, open::transact, players, ratings};
use crate::{
    accounts::{Email, Username, email_key, username_key},
    model::Player,
};

impl From<players::Model> for Player {
    fn from(row: players::Model) -> Self {
        Self {
            id: PlayerId::trusted(row.id),
            username: Username::trusted(row.username),
            email: row.email,
            registered_at: Timestamp::from_millis(row.registered_at),
            nostr_public_key: row.nostr_public_key,
        }
    }
}

impl Store {
    /// Creates an account with the initial rating in every category. A
    /// username or email that differs from an existing one only in case is
    /// [`StoreError::Taken`].
    pub async fn register(
        &self,
        username: &Username,
        email: &Email,
        password_hash: &str,
        now: Timestamp,
    ) -> Result<Player, StoreError> {
        let player = Player {
            id: PlayerId::trusted(uuid::Uuid::now_v7().to_string()),
            username: username.clone(),
            email: email.as_str().to_owned(),
            registered_at: now,
            nostr_public_key: None,
        };
        let row = players::ActiveModel {
            id: Set(player.id.to_string()),
            username: Set(player.username.to_string()),
            username_key: Set(username.key()),
            email: Set(player.email.clone()),
            email_key: Set(email.key()),
            password_hash: Set(password_hash.to_owned()),
            registered_at: Set(now.millis()),
            session_generation: Set(0),
            nostr_public_key: Set(None),
        };
        let (row, player_id) = (&row, &player.id);
        transact!(self, |txn| async {
            players::Entity::insert(row.clone())
                .exec_without_returning(txn)
                .await
                .map_err(taken)?;
            let ratings = SpeedCategory::RATED.map(|c| self.initial_row(player_id, c));
            ratings::Entity::insert_many(ratings)
                .exec_without_returning(txn)
                .await
                .map_err(taken)
        })
        .await?;
        Ok(player)
    }

    /// The player with id `id`.
    pub async fn player(&self, id: &PlayerId) -> Result<Option<Player>, StoreError> {
        self.player_where(players::Column::Id.eq(id.as_str())).await
    }

    /// The player called `name`, in any case.
    pub async fn player_named(&self, name: &str) -> Result<Option<Player>, StoreError> {
        let key = username_key(name);
        self.player_where(players::Column::UsernameKey.eq(key))
            .await
    }

    /// The player whose row `condition` holds for (a unique column's value).
    pub(super) async fn player_where(
        &self,
        condition: SimpleExpr,
    ) -> Result<Option<Player>, StoreError> {
        Ok(players::Entity::find()
            .filter(condition)
            .one(&self.db)
            .await?
            .map(Player::from))
    }

    /// The player whose username or (if `login` has an `@`) email is
    /// `login`, in any case, with their password hash.
    pub async fn account_for_login(
        &self,
        login: &str,
    ) -> Result<Option<(Player, String)>, StoreError> {
        let filter = if login.contains('@') {
            players::Column::EmailKey.eq(email_key(login))
        } else {
            players::Column::UsernameKey.eq(username_key(login))
        };
        Ok(players::Entity::find()
            .filter(filter)
            .one(&self.db)
            .await?
            .map(|row| {
                let hash = row.password_hash.clone();
                (Player::from(row), hash)
            }))
    }
}

/// `error` as [`StoreError::Taken`] if it violated a unique account field.
pub(super) fn taken(error: DbErr) -> StoreError {
    match taken_field(&error) {
        Some(field) => StoreError::Taken(field),
        None => error.into(),
    }
}

/// Which unique account field `error` violated, if it is such a violation.
pub(super) fn taken_field(error: &DbErr) -> Option<Field> {
    match error.sql_err()? {
        SqlErr::UniqueConstraintViolation(message) if message.contains("username_key") => {
            Some(Field::Username)
        }
        SqlErr::UniqueConstraintViolation(message) if message.contains("email_key") => {
            Some(Field::Email)
        }
        SqlErr::UniqueConstraintViolation(message) if message.contains("nostr_public_key") => {
            Some(Field::NostrKey)
        }
        _ => None,
    }
}
