//! Schema migrations, applied at start-up. The same migrations run on SQLite
//! and PostgreSQL.
//!
//! Uniqueness that the service promises is the database's job: lower-cased
//! usernames and emails carry unique indexes, a game id is the primary key of
//! `results`, and `(game_id, player_id)` is unique in `rating_history`.
//!
//! Sessions: a player's `session_generation` is advanced to end all their
//! sessions at once; `revoked_sessions` lists sessions ended one by one,
//! each until its token would have expired anyway.
//!
//! Nostr: a player may link one Nostr public key (`nostr_public_key`, null
//! when none); a unique index lets no two players hold the same key.

use chess_storage::{
    migration,
    migration::{alter_table, cascade, create_index, create_table, drop_tables, index},
};
use sea_orm_migration::{prelude::*, schema::*};

/// Every migration, oldest first.
#[derive(Debug)]
pub struct Migrator;

impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(CreateRatingTables),
            Box::new(AddSessions),
            Box::new(AddNostrKeys),
            Box::new(AddPlayersCommunity),
        ]
    }
}

#[derive(DeriveMigrationName)]
struct CreateRatingTables;

migration!(CreateRatingTables);

impl CreateRatingTables {
    async fn up(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
        create_players(manager).await?;
        create_ratings(manager).await?;
        create_results(manager).await?;
        create_rating_history(manager).await
    }

    async fn down(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
        drop_tables(
            manager,
            &["rating_history", "results", "ratings", "players"],
        )
        .await
    }
}

struct AddSessions;

migration!(AddSessions, "m0002_add_sessions");

impl AddSessions {
    async fn up(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
        alter_table(manager, "players", |t| {
            t.add_column(big_integer("session_generation").default(0))
        })
        .await?;
        create_table(manager, "revoked_sessions", |t| {
            t.col(string("session_id").primary_key())
                .col(string("player_id"))
                .col(big_integer("expires_at"))
                .foreign_key(&mut cascade(
                    ("revoked_sessions", "player_id"),
                    ("players", "id"),
                ))
        })
        .await?;
        create_index(
            manager,
            "revoked_sessions_player_idx",
            "revoked_sessions",
            &["player_id"],
        )
        .await
    }

    async fn down(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
        drop_tables(manager, &["revoked_sessions"]).await?;
        alter_table(manager, "players", |t| t.drop_column("session_generation")).await
    }
}

struct AddNostrKeys;

migration!(AddNostrKeys, "m0003_add_nostr_keys");

/// The unique index on linked Nostr keys; its name is how a violation is
/// told from the others.
const NOSTR_KEY_INDEX: &str = "players_nostr_public_key_unique";

impl AddNostrKeys {
    async fn up(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
        // SQLite cannot add a UNIQUE column: the column, then its index.
        alter_table(manager, "players", |t| {
            t.add_column(string_null("nostr_public_key"))
        })
        .await?;
        // Nulls are distinct in a unique index on both databases, so any
        // number of players may have no key.
        manager
            .create_index(
                index(NOSTR_KEY_INDEX, "players", &["nostr_public_key"])
                    .unique()
                    .to_owned(),
            )
            .await
    }

    async fn down(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
        manager
            .drop_index(
                Index::drop()
                    .if_exists()
                    .name(NOSTR_KEY_INDEX)
                    .table("players")
                    .to_owned(),
            )
            .await?;
        alter_table(manager, "players", |t| t.drop_column("nostr_public_key")).await
    }
}

struct AddPlayersCommunity;

migration!(AddPlayersCommunity, "m0004_players_community");

/// The players directory sorts by games in a category as the leaderboard
/// sorts by rating; chat standing and personal mutes live in tables of
/// their own (see [`super::community`]).
impl AddPlayersCommunity {
    async fn up(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
        create_index(
            manager,
            "ratings_games_idx",
            "ratings",
            &["system", "category", "games_played"],
        )
        .await?;
        create_table(manager, "chat_standings", |t| {
            t.col(string("player_id").primary_key())
                .col(boolean("moderator").default(false))
                .col(boolean("chat_off").default(false))
                .col(big_integer_null("muted_until"))
                .foreign_key(&mut cascade(
                    ("chat_standings", "player_id"),
                    ("players", "id"),
                ))
        })
        .await?;
        create_table(manager, "personal_mutes", |t| {
            t.col(string("player_id"))
                .col(string("muted_id"))
                .col(big_integer("created_at"))
                .primary_key(Index::create().col("player_id").col("muted_id"))
                .foreign_key(&mut cascade(
                    ("personal_mutes", "player_id"),
                    ("players", "id"),
                ))
                .foreign_key(&mut cascade(
                    ("personal_mutes", "muted_id"),
                    ("players", "id"),
                ))
        })
        .await
    }

    async fn down(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
        drop_tables(manager, &["personal_mutes", "chat_standings"]).await?;
        manager
            .drop_index(
                Index::drop()
                    .if_exists()
                    .name("ratings_games_idx")
                    .table("ratings")
                    .to_owned(),
            )
            .await
    }
}

/// `players`, with its unique username and email keys.
async fn create_players(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    create_table(manager, "players", |t| {
        t.col(string("id").primary_key())
            .col(string("username"))
            .col(string("username_key"))
            .col(string("email"))
            .col(string("email_key"))
            .col(text("password_hash"))
            .col(big_integer("registered_at"))
    })
    .await?;
    for (name, column) in [
        ("players_username_key_unique", "username_key"),
        ("players_email_key_unique", "email_key"),
    ] {
        manager
            .create_index(index(name, "players", &[column]).unique().to_owned())
            .await?;
    }
    Ok(())
}

/// `ratings`: one row per player, system and category.
async fn create_ratings(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    create_table(manager, "ratings", |t| {
        t.col(string("player_id"))
            .col(string("system"))
            .col(string("category"))
            .col(double("rating"))
            .col(double("deviation"))
            .col(double("volatility"))
            .col(integer("games_played"))
            .col(integer("wins"))
            .col(integer("losses"))
            .col(integer("draws"))
            .col(big_integer_null("last_played_at"))
            .primary_key(
                Index::create()
                    .col("player_id")
                    .col("system")
                    .col("category"),
            )
            .foreign_key(&mut cascade(("ratings", "player_id"), ("players", "id")))
    })
    .await?;
    create_index(
        manager,
        "ratings_leaderboard_idx",
        "ratings",
        &["system", "category", "rating"],
    )
    .await?;
    Ok(())
}

/// `results`: one row per game id, recorded once.
async fn create_results(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    create_table(manager, "results", |t| {
        t.col(string("game_id").primary_key())
            .col(string("white_id"))
            .col(string("black_id"))
            .col(string("result"))
            .col(string("category"))
            .col(boolean("rated"))
            .col(boolean("applied"))
            .col(string("system"))
            .col(big_integer_null("finished_at"))
            .col(big_integer("recorded_at"))
    })
    .await?;
    Ok(())
}

/// `rating_history`: a row per game and player, unique by the pair.
async fn create_rating_history(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    create_table(manager, "rating_history", |t| {
        t.col(big_pk_auto("id"))
            .col(string("player_id"))
            .col(string("system"))
            .col(string("category"))
            .col(string("game_id"))
            .col(string("opponent_id"))
            .col(double("score"))
            .col(double("rating_before"))
            .col(double("rating_after"))
            .col(double("deviation_before"))
            .col(double("deviation_after"))
            .col(big_integer("recorded_at"))
            .foreign_key(&mut cascade(
                ("rating_history", "player_id"),
                ("players", "id"),
            ))
            .foreign_key(&mut cascade(
                ("rating_history", "game_id"),
                ("results", "game_id"),
            ))
    })
    .await?;
    manager
        .create_index(
            index(
                "rating_history_game_player_unique",
                "rating_history",
                &["game_id", "player_id"],
            )
            .unique()
            .to_owned(),
        )
        .await?;
    create_index(
        manager,
        "rating_history_player_idx",
        "rating_history",
        &["player_id", "system", "id"],
    )
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use sea_orm::{ConnectionTrait as _, DatabaseConnection, Statement};

    use super::*;
    use crate::store::{Field, accounts::taken_field};

    async fn keys(db: &DatabaseConnection) -> Vec<(String, Option<String>)> {
        let sql = "SELECT id, nostr_public_key FROM players ORDER BY id";
        db.query_all_raw(Statement::from_string(db.get_database_backend(), sql))
            .await
            .expect("read keys")
            .iter()
            .map(|row| {
                (
                    row.try_get("", "id").expect("id"),
                    row.try_get("", "nostr_public_key").expect("key"),
                )
            })
            .collect()
    }

    /// Players registered before keys existed have none, and keep their
    /// rows; no two can then hold the same key, and the step back works.
    async fn keys_come_to_existing_players(url: &str) {
        let db = chess_storage::connect(url, 2).await.expect("connect");
        Migrator::up(&db, Some(2))
            .await
            .expect("the first two steps");
        for id in ["p1", "p2"] {
            db.execute_unprepared(&format!(
                "INSERT INTO players (id, username, username_key, email, email_key, \
                 password_hash, registered_at, session_generation) \
                 VALUES ('{id}', '{id}', '{id}', '{id}@example.org', '{id}@example.org', \
                 'hash', 0, 0)"
            ))
            .await
            .expect("an old player");
        }
        Migrator::up(&db, None).await.expect("the Nostr step");
        assert_eq!(
            keys(&db).await,
            [("p1".to_owned(), None), ("p2".to_owned(), None)]
        );
        let key = "ab".repeat(32);
        let set =
            |id: &str| format!("UPDATE players SET nostr_public_key = '{key}' WHERE id = '{id}'");
        db.execute_unprepared(&set("p1"))
            .await
            .expect("a first key");
        let error = db
            .execute_unprepared(&set("p2"))
            .await
            .expect_err("one key held twice");
        assert_eq!(taken_field(&error), Some(Field::NostrKey), "{error}");
        // Back past the Nostr step (and the one that came after it).
        Migrator::down(&db, Some(2)).await.expect("the steps back");
        assert!(
            db.execute_unprepared("SELECT nostr_public_key FROM players")
                .await
                .is_err()
        );
        Migrator::up(&db, None).await.expect("the Nostr step again");
        assert_eq!(keys(&db).await[0].1, None);
    }

    #[tokio::test]
    async fn keys_come_to_existing_players_on_sqlite() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let url = chess_storage::sqlite_url(&dir.path().join("rating.sqlite"));
        keys_come_to_existing_players(&url).await;
    }

    #[tokio::test]
    async fn keys_come_to_existing_players_on_postgres() {
        let url = chess_storage::testing::fresh_postgres_database().await;
        keys_come_to_existing_players(&url).await;
    }
}
