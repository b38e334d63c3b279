//! Schema migrations, applied at start-up; the same on SQLite and PostgreSQL.
//!
//! Their names are what the migrations table of existing databases holds:
//! never rename or reorder them.

use chess_storage::{
    migration,
    migration::{alter_table, create_index, create_table, drop_tables},
};
use sea_orm_migration::{prelude::*, schema::*};

/// Every migration, oldest first.
#[derive(Debug)]
pub struct Migrator;

impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![Box::new(CreateLobby), Box::new(AllowHints)]
    }
}

struct CreateLobby;

// Named by hand: the derived name was the file stem of `lobby/store.rs`,
// which existing databases recorded.
migration!(CreateLobby, "store");

impl CreateLobby {
    async fn up(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
        create_table(manager, "seeks", |t| {
            t.col(string("id").primary_key())
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
        })
        .await?;
        create_table(manager, "seek_requests", |t| {
            t.col(string("id").primary_key())
                .col(string("seek_id"))
                .col(string("requester_id"))
                .col(string("requester_username"))
                .col(integer("requester_rating"))
                .col(string("status"))
                .col(string_null("game_id"))
                .col(big_integer("created_at"))
                .col(big_integer("updated_at"))
        })
        .await?;
        create_table(manager, "challenges", |t| {
            t.col(string("id").primary_key())
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
        })
        .await?;
        // Start-up loads only what is still open.
        for (name, table) in [
            ("seeks_status_idx", "seeks"),
            ("seek_requests_status_idx", "seek_requests"),
            ("challenges_status_idx", "challenges"),
        ] {
            create_index(manager, name, table, &["status"]).await?;
        }
        Ok(())
    }

    async fn down(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
        drop_tables(manager, &["challenges", "seek_requests", "seeks"]).await
    }
}

/// Seeks and challenges say whether they allow hints; those made before
/// did not offer them.
struct AllowHints;

migration!(AllowHints, "m20261123_000001_allow_hints");

impl AllowHints {
    async fn up(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
        for table in ["seeks", "challenges"] {
            alter_table(manager, table, |t| {
                t.add_column(boolean("allow_hints").default(false))
            })
            .await?;
        }
        Ok(())
    }

    async fn down(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
        for table in ["challenges", "seeks"] {
            alter_table(manager, table, |t| t.drop_column("allow_hints")).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_existing_databases() {
        let names: Vec<String> = Migrator::migrations()
            .iter()
            .map(|m| m.name().to_owned())
            .collect();
        assert_eq!(names, ["store", "m20261123_000001_allow_hints"]);
    }
}
