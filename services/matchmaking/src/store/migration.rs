//! Schema migrations, applied at start-up; the same on SQLite and PostgreSQL.
//!
//! Their names are what the migrations table of existing databases holds:
//! never rename or reorder them.

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
impl MigrationName for CreateLobby {
    fn name(&self) -> &str {
        "store"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for CreateLobby {
    // Each migration is all or nothing on SQLite too, so a crash during
    // one leaves it to be applied again whole.
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

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

// Named by hand, so that no two migrations share a name.
impl MigrationName for AllowHints {
    fn name(&self) -> &str {
        "m20261123_000001_allow_hints"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for AllowHints {
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

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
