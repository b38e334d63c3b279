//! The sea-orm planner: the statements that write a set of changes, on
//! either back end, and the plain (unfenced) commit of them through the
//! pool. The writer of a SQLite file runs the same statements on its own
//! connection (`sqlite::direct`).

use sea_orm::{
    ColumnTrait as _, ConnectionTrait as _, DatabaseConnection, DatabaseTransaction, DbBackend,
    DbErr, EntityTrait as _, QueryFilter as _, QueryTrait as _, Set, Statement,
    TransactionTrait as _,
};

use super::{WriteOp, clock_credits, games, moves, results_outbox, takebacks};

/// Moves inserted per statement; SQLite allows 32766 bound values, seven a
/// move.
const MOVES_PER_INSERT: usize = 1000;

/// Whether `ops` are moves and nothing else.
pub(super) fn only_moves<'a>(ops: impl IntoIterator<Item = &'a WriteOp>) -> bool {
    ops.into_iter()
        .all(|op| matches!(op, WriteOp::InsertMove(_)))
}

/// Commits `ops` in one transaction. Moves are written with one multi-row
/// insert per batch rather than a statement each: under load, one commit
/// carries the moves of hundreds of games.
pub(super) async fn commit(db: &DatabaseConnection, ops: &[&WriteOp]) -> Result<(), DbErr> {
    if ops.is_empty() {
        return Ok(());
    }
    // The common case, moves and nothing else, is one statement: it commits
    // on its own, all or nothing, without the two extra trips to the
    // database that BEGIN and COMMIT cost.
    if ops.len() <= MOVES_PER_INSERT && only_moves(ops.iter().copied()) {
        let moves = ops.iter().filter_map(|op| match op {
            WriteOp::InsertMove(mv) => Some(move_row(mv)),
            _ => None,
        });
        moves::Entity::insert_many(moves)
            .exec_without_returning(db)
            .await?;
        return Ok(());
    }
    let txn = db.begin().await?;
    write_ops(&txn, ops).await?;
    txn.commit().await
}

/// Writes `ops` within `txn`.
pub(super) async fn write_ops(txn: &DatabaseTransaction, ops: &[&WriteOp]) -> Result<(), DbErr> {
    for planned in plan(ops, txn.get_database_backend())? {
        let done = txn.execute_raw(planned.statement).await?;
        if planned.one_row && done.rows_affected() != 1 {
            return Err(DbErr::RecordNotUpdated);
        }
    }
    Ok(())
}

/// One statement of a commit.
pub(super) struct Planned {
    pub(super) statement: Statement,
    /// It must change exactly one row (a game's update: the game exists).
    pub(super) one_row: bool,
}

/// The statements that write `ops`, in the order they are to run: games
/// first (their moves and credits refer to them), then the moves, then the
/// rest in the order given.
pub(super) fn plan(ops: &[&WriteOp], backend: DbBackend) -> Result<Vec<Planned>, DbErr> {
    let mut planned = Vec::new();
    let mut push = |statement: Statement, one_row: bool| {
        planned.push(Planned { statement, one_row });
    };
    for op in ops {
        if let WriteOp::InsertGame(game) = op {
            push(
                games::Entity::insert((**game).clone()).build(backend),
                false,
            );
        }
    }
    let moves: Vec<moves::ActiveModel> = ops
        .iter()
        .filter_map(|op| match op {
            WriteOp::InsertMove(mv) => Some(move_row(mv)),
            _ => None,
        })
        .collect();
    for chunk in moves.chunks(MOVES_PER_INSERT) {
        push(
            moves::Entity::insert_many(chunk.to_vec()).build(backend),
            false,
        );
    }
    for op in ops {
        match op {
            WriteOp::InsertGame(_) | WriteOp::InsertMove(_) | WriteOp::FoldLog(_) => {}
            WriteOp::UpdateGame(game) => {
                let id = updated_game(game)
                    .ok_or_else(|| DbErr::Custom("game update without an id".to_owned()))?
                    .to_owned();
                let mut game = (**game).clone();
                // The key stays out of the SET list: naming it there would
                // have SQLite look for the rows that refer to the game in
                // every table, the unindexed log of moves included.
                game.id = sea_orm::ActiveValue::NotSet;
                let update = games::Entity::update_many()
                    .set(game)
                    .filter(games::Column::Id.eq(id));
                push(update.build(backend), true);
            }
            WriteOp::InsertResult(result) => {
                let insert = results_outbox::Entity::insert(result.clone()).on_conflict(
                    sea_orm::sea_query::OnConflict::column(results_outbox::Column::GameId)
                        .do_nothing()
                        .to_owned(),
                );
                push(insert.build(backend), false);
            }
            WriteOp::DeleteResult(game_id) => {
                push(
                    results_outbox::Entity::delete_by_id(game_id.as_str()).build(backend),
                    false,
                );
            }
            WriteOp::Heartbeat(at) => {
                let update = sea_orm::sea_query::Query::update()
                    .table("game_shards")
                    .value("renewed_at", at.millis())
                    .to_owned();
                push(backend.build(&update), false);
            }
            WriteOp::TakeBack(rewind) => {
                let game = || rewind.game_id.as_str();
                push(
                    moves::Entity::delete_many()
                        .filter(moves::Column::GameId.eq(game()))
                        .filter(moves::Column::Ply.gt(rewind.ply))
                        .build(backend),
                    false,
                );
                push(
                    clock_credits::Entity::delete_many()
                        .filter(clock_credits::Column::GameId.eq(game()))
                        .filter(clock_credits::Column::Ply.gte(rewind.ply))
                        .build(backend),
                    false,
                );
                push(
                    takebacks::Entity::delete_many()
                        .filter(takebacks::Column::GameId.eq(game()))
                        .filter(takebacks::Column::Ply.gte(rewind.ply))
                        .build(backend),
                    false,
                );
                let insert = takebacks::Entity::insert(takebacks::ActiveModel {
                    game_id: Set(rewind.game_id.clone()),
                    ply: Set(rewind.ply),
                    taken_at: Set(rewind.taken_at),
                    white_ms: Set(rewind.white_ms),
                    black_ms: Set(rewind.black_ms),
                });
                push(insert.build(backend), false);
            }
            WriteOp::InsertCredit(credit) => {
                let insert = clock_credits::Entity::insert(clock_credits::ActiveModel {
                    game_id: Set(credit.game_id.clone()),
                    granted_at: Set(credit.granted_at),
                    ply: Set(credit.ply),
                    credit_ms: Set(credit.credit_ms),
                });
                push(insert.build(backend), false);
            }
        }
    }
    Ok(planned)
}

/// The id of the game an update is of.
fn updated_game(game: &games::ActiveModel) -> Option<&str> {
    match &game.id {
        sea_orm::ActiveValue::Set(id) | sea_orm::ActiveValue::Unchanged(id) => Some(id),
        sea_orm::ActiveValue::NotSet => None,
    }
}

fn move_row(mv: &moves::Model) -> moves::ActiveModel {
    moves::ActiveModel {
        game_id: Set(mv.game_id.clone()),
        ply: Set(mv.ply),
        uci: Set(mv.uci.clone()),
        san: Set(mv.san.clone()),
        submitted: Set(mv.submitted.clone()),
        played_at: Set(mv.played_at),
        clock_after_ms: Set(mv.clock_after_ms),
    }
}
