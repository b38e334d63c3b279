//! What the services' schema migrations share, so that each `migration.rs`
//! says only its tables: the [`migration!`](crate::migration) declaration
//! and the statements every schema is built from (a table created unless it
//! exists, an index, a cascading key, a change to a table, tables dropped).
//! Every statement is one sea-orm renders for SQLite and PostgreSQL alike.

#[doc(hidden)]
pub use sea_orm_migration;
use sea_orm_migration::prelude::*;

/// Implements `MigrationTrait` for a migration whose `up` and `down` are its
/// own associated functions, each run in a transaction: all or nothing on
/// SQLite too, so that a crash during one leaves it to be applied again
/// whole. Given a name, the migration is also named by hand (without one it
/// derives `DeriveMigrationName`'s, the file's stem, which only one
/// migration of a file can have). A name is stored in every database the
/// migration ran on, so it never changes.
///
/// ```ignore
/// struct AddColumn;
///
/// chess_storage::migration!(AddColumn, "m20260101_000001_add_column");
///
/// impl AddColumn {
///     async fn up(manager: &SchemaManager<'_>) -> Result<(), DbErr> { … }
///     async fn down(manager: &SchemaManager<'_>) -> Result<(), DbErr> { … }
/// }
/// ```
#[macro_export]
macro_rules! migration {
    ($migration:ident, $name:literal) => {
        impl $crate::migration::sea_orm_migration::MigrationName for $migration {
            fn name(&self) -> &str {
                $name
            }
        }

        $crate::migration!($migration);
    };
    ($migration:ident) => {
        #[$crate::migration::sea_orm_migration::async_trait::async_trait]
        impl $crate::migration::sea_orm_migration::MigrationTrait for $migration {
            fn use_transaction(&self) -> Option<bool> {
                Some(true)
            }

            async fn up(
                &self,
                manager: &$crate::migration::sea_orm_migration::SchemaManager,
            ) -> Result<(), $crate::DbErr> {
                Self::up(manager).await
            }

            async fn down(
                &self,
                manager: &$crate::migration::sea_orm_migration::SchemaManager,
            ) -> Result<(), $crate::DbErr> {
                Self::down(manager).await
            }
        }
    };
}

/// Creates the table `name` unless it exists, with the columns and keys
/// `define` gives it.
pub async fn create_table(
    manager: &SchemaManager<'_>,
    name: &'static str,
    define: impl FnOnce(&mut TableCreateStatement) -> &mut TableCreateStatement,
) -> Result<(), DbErr> {
    let mut table = Table::create().table(name).if_not_exists().to_owned();
    define(&mut table);
    manager.create_table(table).await
}

/// The index `name` on `columns` of `table`, created unless it exists.
pub fn index(name: &str, table: &'static str, columns: &[&'static str]) -> IndexCreateStatement {
    let mut index = Index::create();
    index.if_not_exists().name(name).table(table);
    for column in columns {
        index.col(*column);
    }
    index
}

/// Creates [`index`]`(name, table, columns)`.
pub async fn create_index(
    manager: &SchemaManager<'_>,
    name: &str,
    table: &'static str,
    columns: &[&'static str],
) -> Result<(), DbErr> {
    manager.create_index(index(name, table, columns)).await
}

/// A foreign key from `from` (table, column) to `to` whose rows go with the
/// row they point to.
pub fn cascade(
    from: (&'static str, &'static str),
    to: (&'static str, &'static str),
) -> ForeignKeyCreateStatement {
    ForeignKey::create()
        .from(from.0, from.1)
        .to(to.0, to.1)
        .on_delete(ForeignKeyAction::Cascade)
        .to_owned()
}

/// Alters the table `name` by `change`.
pub async fn alter_table(
    manager: &SchemaManager<'_>,
    name: &'static str,
    change: impl FnOnce(&mut TableAlterStatement) -> &mut TableAlterStatement,
) -> Result<(), DbErr> {
    let mut alter = Table::alter().table(name).to_owned();
    change(&mut alter);
    manager.alter_table(alter).await
}

/// Drops `tables`, in that order, those that exist.
pub async fn drop_tables(
    manager: &SchemaManager<'_>,
    tables: &[&'static str],
) -> Result<(), DbErr> {
    for table in tables {
        manager
            .drop_table(Table::drop().table(*table).if_exists().to_owned())
            .await?;
    }
    Ok(())
}
