//! Schema migrations, applied at start-up. The same migrations run on SQLite
//! and PostgreSQL.

use chess_storage::{
    migration,
    migration::{alter_table, cascade, create_index, create_table, drop_tables},
};
use sea_orm_migration::{prelude::*, schema::*};

/// Every migration, oldest first.
#[derive(Debug)]
pub struct Migrator;

impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(CreateGames),
            Box::new(UntimedCategory),
            Box::new(HintsAllowed),
            Box::new(Shards),
            Box::new(MoveLog),
            Box::new(PlayerHistory),
            Box::new(Takebacks),
            Box::new(GameChat),
        ]
    }
}

/// The key from `table`'s `game_id` to its game, whose rows go with it.
fn references_game(table: &'static str) -> ForeignKeyCreateStatement {
    cascade((table, "game_id"), ("games", "id"))
}

#[derive(DeriveMigrationName)]
struct CreateGames;

migration!(CreateGames);

impl CreateGames {
    async fn up(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
        create_table(manager, "games", |t| {
            t.col(string("id").primary_key())
                .col(string("white_kind"))
                .col(string("white_id"))
                .col(string("white_name"))
                .col(integer("white_level"))
                .col(string("black_kind"))
                .col(string("black_id"))
                .col(string("black_name"))
                .col(integer("black_level"))
                .col(string("time_control"))
                .col(string("speed"))
                .col(string("rules"))
                .col(boolean("rated"))
                .col(text("initial_fen"))
                .col(text("fen"))
                .col(integer("ply"))
                .col(string("status"))
                .col(string_null("result"))
                .col(string_null("termination"))
                .col(string_null("draw_offer"))
                .col(big_integer("created_at"))
                .col(big_integer("updated_at"))
                .col(big_integer_null("finished_at"))
                .col(string_null("idempotency_key").unique_key())
        })
        .await?;
        create_index(
            manager,
            "games_white_idx",
            "games",
            &["white_id", "created_at"],
        )
        .await?;
        create_index(
            manager,
            "games_black_idx",
            "games",
            &["black_id", "created_at"],
        )
        .await?;
        create_index(manager, "games_status_idx", "games", &["status"]).await?;
        create_table(manager, "moves", |t| {
            t.col(string("game_id"))
                .col(integer("ply"))
                .col(string("uci"))
                .col(string("san"))
                .col(string("submitted"))
                .col(big_integer("played_at"))
                .col(big_integer_null("clock_after_ms"))
                .primary_key(Index::create().col("game_id").col("ply"))
                .foreign_key(&mut references_game("moves"))
        })
        .await?;
        create_table(manager, "results_outbox", |t| {
            t.col(string("game_id").primary_key())
                .col(string("white_id"))
                .col(string("black_id"))
                .col(string("result"))
                .col(string("speed"))
                .col(boolean("rated"))
                .col(big_integer("finished_at"))
        })
        .await?;
        Ok(())
    }

    async fn down(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
        drop_tables(manager, &["results_outbox", "moves", "games"]).await
    }
}

/// Untimed games were filed under correspondence: they move to a category of
/// their own. Untimed games are never rated: those still in play, and results
/// not yet delivered, become unrated. Finished games keep their rated flag:
/// their ratings were applied.
struct UntimedCategory;

migration!(UntimedCategory, "m20261123_000001_untimed_category");

impl UntimedCategory {
    async fn up(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
        let untimed = || Expr::col("time_control").eq("untimed");
        let statements = [
            Query::update()
                .table("games")
                .value("speed", "untimed")
                .and_where(untimed())
                .to_owned(),
            Query::update()
                .table("games")
                .value("rated", false)
                .and_where(untimed())
                .and_where(Expr::col("status").eq("active"))
                .to_owned(),
            Query::update()
                .table("results_outbox")
                .value("speed", "untimed")
                .value("rated", false)
                .and_where(
                    Expr::col("game_id").in_subquery(
                        Query::select()
                            .column("id")
                            .from("games")
                            .and_where(untimed())
                            .to_owned(),
                    ),
                )
                .to_owned(),
        ];
        let db = manager.get_connection();
        for statement in statements {
            db.execute(&statement).await?;
        }
        Ok(())
    }

    async fn down(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
        let db = manager.get_connection();
        for table in ["games", "results_outbox"] {
            db.execute(
                &Query::update()
                    .table(table)
                    .value("speed", "correspondence")
                    .and_where(Expr::col("speed").eq("untimed"))
                    .to_owned(),
            )
            .await?;
        }
        Ok(())
    }
}

/// Adds `games.hints_allowed`. Existing games allow hints where the rules
/// always did: against the engine and under the uqchess rules; players of a
/// game between two people were never asked.
struct HintsAllowed;

migration!(HintsAllowed, "m20261123_000002_hints_allowed");

impl HintsAllowed {
    async fn up(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
        alter_table(manager, "games", |t| {
            t.add_column(boolean("hints_allowed").default(false))
        })
        .await?;
        manager
            .get_connection()
            .execute(
                &Query::update()
                    .table("games")
                    .value("hints_allowed", true)
                    .cond_where(
                        Cond::any()
                            .add(Expr::col("white_kind").eq("engine"))
                            .add(Expr::col("black_kind").eq("engine"))
                            .add(Expr::col("rules").eq("uqchess")),
                    )
                    .to_owned(),
            )
            .await?;
        Ok(())
    }

    async fn down(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
        alter_table(manager, "games", |t| t.drop_column("hints_allowed")).await
    }
}

/// Games spread over replicas: each game's shard (`chess_shards::shard_of`
/// of its id, filled in for the games already stored), a lease per shard
/// (`game_shards`: which replica serves it, under which epoch, until when),
/// the live replicas (`game_replicas`), and the clock time given back to
/// players while their game's shard had no replica (`clock_credits`).
struct Shards;

migration!(Shards, "m20261125_000003_shards");

impl Shards {
    async fn up(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
        alter_table(manager, "games", |t| {
            t.add_column(integer("shard").default(0))
        })
        .await?;
        Self::fill_in_shards(manager).await?;
        create_index(
            manager,
            "games_shard_status_idx",
            "games",
            &["shard", "status"],
        )
        .await?;
        create_table(manager, "game_shards", |t| {
            t.col(integer("shard").primary_key())
                .col(string_null("owner"))
                .col(big_integer("epoch").default(0))
                .col(big_integer("expires_at").default(0))
                .col(big_integer("renewed_at").default(0))
        })
        .await?;
        let mut seed = Query::insert()
            .into_table("game_shards")
            .columns(["shard"])
            .to_owned();
        for shard in 0..chess_shards::SHARDS {
            seed.values_panic([i32::from(shard).into()]);
        }
        manager.get_connection().execute(&seed).await?;
        create_table(manager, "game_replicas", |t| {
            t.col(string("id").primary_key())
                .col(string("address"))
                .col(string("instance"))
                .col(big_integer("heartbeat_at"))
        })
        .await?;
        create_table(manager, "clock_credits", |t| {
            t.col(string("game_id"))
                .col(big_integer("granted_at"))
                .col(integer("ply"))
                .col(big_integer("credit_ms"))
                .primary_key(Index::create().col("game_id").col("granted_at"))
                .foreign_key(&mut references_game("clock_credits"))
        })
        .await?;
        Ok(())
    }

    async fn down(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
        drop_tables(manager, &["clock_credits", "game_replicas", "game_shards"]).await?;
        manager
            .drop_index(
                Index::drop()
                    .name("games_shard_status_idx")
                    .table("games")
                    .to_owned(),
            )
            .await?;
        alter_table(manager, "games", |t| t.drop_column("shard")).await
    }

    /// Sets the shard of every game stored before games had one, a shard at
    /// a time so that no statement names more ids than a database takes.
    async fn fill_in_shards(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
        let db = manager.get_connection();
        let rows = db
            .query_all(&Query::select().column("id").from("games").to_owned())
            .await?;
        let mut by_shard: Vec<Vec<String>> = vec![Vec::new(); usize::from(chess_shards::SHARDS)];
        for row in rows {
            let id: String = row.try_get("", "id")?;
            by_shard[usize::from(chess_shards::shard_of(&id))].push(id);
        }
        for (shard, ids) in by_shard.into_iter().enumerate() {
            for chunk in ids.chunks(500) {
                db.execute(
                    &Query::update()
                        .table("games")
                        .value("shard", shard as i32)
                        .and_where(Expr::col("id").is_in(chunk.iter().cloned()))
                        .to_owned(),
                )
                .await?;
            }
        }
        Ok(())
    }
}

/// The SQLite writer's log of moves (see `store::sqlite::move_log`): each
/// move is appended to it, and later copied into `moves` with others of its
/// game. Only a SQLite file has one: on PostgreSQL, moves go straight into
/// `moves`.
struct MoveLog;

migration!(MoveLog, "m20261126_000004_move_log");

impl MoveLog {
    async fn up(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
        if manager.get_database_backend() != sea_orm::DbBackend::Sqlite {
            return Ok(());
        }
        // `seq INTEGER PRIMARY KEY` is the row id: appends go to the end of
        // the table, and no index is kept.
        manager
            .get_connection()
            .execute_unprepared(
                "CREATE TABLE IF NOT EXISTS move_log ( \
                   seq INTEGER PRIMARY KEY, \
                   game_id TEXT NOT NULL REFERENCES games (id), \
                   ply INTEGER NOT NULL, \
                   uci TEXT NOT NULL, \
                   san TEXT NOT NULL, \
                   submitted TEXT NOT NULL, \
                   played_at INTEGER NOT NULL, \
                   clock_after_ms INTEGER)",
            )
            .await?;
        Ok(())
    }

    async fn down(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
        if manager.get_database_backend() != sea_orm::DbBackend::Sqlite {
            return Ok(());
        }
        drop_tables(manager, &["move_log"]).await
    }
}

/// A player's finished games, newest first (`store::history`): each side's
/// games by status and start, so a history reads only finished games.
struct PlayerHistory;

migration!(PlayerHistory, "m20261202_000005_player_history");

impl PlayerHistory {
    async fn up(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
        for (name, column) in [
            ("games_white_history_idx", "white_id"),
            ("games_black_history_idx", "black_id"),
        ] {
            create_index(manager, name, "games", &[column, "status", "created_at"]).await?;
        }
        Ok(())
    }

    async fn down(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
        for name in ["games_white_history_idx", "games_black_history_idx"] {
            manager
                .drop_index(Index::drop().name(name).table("games").to_owned())
                .await?;
        }
        Ok(())
    }
}

/// The clocks as each takeback set them, one row per ply gone back to (see
/// `model::Rewind`): a game's moves after a takeback are replayed from the
/// clocks it left, so a reloaded game has the same clocks as before.
struct Takebacks;

migration!(Takebacks, "m20261202_000006_takebacks");

impl Takebacks {
    async fn up(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
        create_table(manager, "takebacks", |t| {
            t.col(string("game_id"))
                .col(integer("ply"))
                .col(big_integer("taken_at"))
                .col(big_integer("white_ms"))
                .col(big_integer("black_ms"))
                .primary_key(Index::create().col("game_id").col("ply"))
                .foreign_key(&mut references_game("takebacks"))
        })
        .await
    }

    async fn down(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
        drop_tables(manager, &["takebacks"]).await
    }
}

/// Each game's chat (`chat_lines`, numbered per game; `revision` orders
/// their changes for watchers resuming) and the reports of its lines
/// (`chat_reports`).
struct GameChat;

migration!(GameChat, "m20261202_000007_game_chat");

impl GameChat {
    async fn up(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
        create_table(manager, "chat_lines", |t| {
            t.col(string("game_id"))
                .col(big_integer("seq"))
                .col(string("room"))
                .col(string("author_id"))
                .col(string("author_name"))
                .col(text("text"))
                .col(big_integer("posted_at"))
                .col(boolean("hidden").default(false))
                .col(big_integer("revision"))
                .col(string_null("hidden_by"))
                .primary_key(Index::create().col("game_id").col("seq"))
                .foreign_key(&mut references_game("chat_lines"))
        })
        .await?;
        create_index(
            manager,
            "chat_lines_game_revision_idx",
            "chat_lines",
            &["game_id", "revision"],
        )
        .await?;
        create_table(manager, "chat_reports", |t| {
            t.col(string("game_id"))
                .col(big_integer("seq"))
                .col(string("reporter_id"))
                .col(text("reason"))
                .col(big_integer("reported_at"))
                .col(boolean("open").default(true))
                .primary_key(Index::create().col("game_id").col("seq").col("reporter_id"))
                .foreign_key(&mut cascade(("chat_reports", "game_id"), ("games", "id")))
        })
        .await?;
        create_index(
            manager,
            "chat_reports_open_idx",
            "chat_reports",
            &["open", "reported_at"],
        )
        .await
    }

    async fn down(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
        drop_tables(manager, &["chat_reports", "chat_lines"]).await
    }
}
