//! Durable games: the tables, their migrations, and the single writer.
//!
//! Every change to a game goes through [`Store::write`], which hands it to one
//! writer task. The writer commits whatever has queued up while the previous
//! commit was on its way to disk in one transaction (group commit), so many
//! games' moves share one `fsync` while each caller still learns that *its*
//! change is durable before it acknowledges or publishes anything.

mod entities;
pub mod migration;

use std::collections::HashMap;

use chess_domain::{RuleSet, SpeedCategory, TimeControl};
use sea_orm::{
    ColumnTrait as _, Condition, DatabaseConnection, DbErr, EntityTrait as _, QueryFilter as _,
    QueryOrder as _, QuerySelect as _, Set, TransactionTrait as _, sea_query::Query,
};
use sea_orm_migration::MigratorTrait as _;
use shakmaty::Color;
use tokio::{
    runtime::{Handle, RuntimeFlavor},
    sync::{mpsc, oneshot},
};

pub use entities::{games, moves, results_outbox};

use crate::model::{
    Ending, Event, Game, GameResult, GameSetup, Participant, PlayedMove, Termination,
};

/// Largest number of callers' changes committed in one transaction.
const MAX_BATCH: usize = 256;

/// A storage failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(transparent)]
    Open(#[from] chess_storage::Error),
    #[error("database error: {0}")]
    Db(#[from] DbErr),
    #[error("the database writer has stopped")]
    WriterGone,
    #[error("stored game {id} is unreadable: {reason}")]
    Corrupt { id: String, reason: String },
}

/// One change, part of a caller's atomic set.
#[derive(Debug)]
pub enum WriteOp {
    InsertGame(Box<games::ActiveModel>),
    InsertMove(moves::Model),
    UpdateGame(Box<games::ActiveModel>),
    InsertResult(results_outbox::ActiveModel),
    DeleteResult(String),
}

struct Job {
    ops: Vec<WriteOp>,
    done: oneshot::Sender<Result<(), DbErr>>,
}

/// Which games a listing includes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListFilter {
    All,
    Active,
    Finished,
}

/// A finished game waiting for the rating service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingResult {
    pub game_id: String,
    pub white_id: String,
    pub black_id: String,
    pub result: GameResult,
    pub speed: SpeedCategory,
    pub rated: bool,
    pub finished_at: i64,
}

/// The game database.
#[derive(Clone, Debug)]
pub struct Store {
    db: DatabaseConnection,
    writer: mpsc::Sender<Job>,
}

impl Store {
    /// Opens the database at `url`, applies the migrations and starts the
    /// writer.
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        let db = chess_storage::connect(url, 8).await?;
        // Replicas starting together take turns.
        chess_storage::migrate_exclusively(&db, 0x4348_4553_5347, || {
            migration::Migrator::up(&db, None)
        })
        .await?;
        let direct = chess_storage::connect_sqlite_direct(url)?.map(|conn| DirectMoves { conn });
        let (writer, jobs) = mpsc::channel(4096);
        tokio::spawn(write_loop(db.clone(), direct, jobs));
        Ok(Self { db, writer })
    }

    /// Commits `ops` atomically; returns once they are durable.
    pub async fn write(&self, ops: Vec<WriteOp>) -> Result<(), StoreError> {
        if ops.is_empty() {
            return Ok(());
        }
        let (done, result) = oneshot::channel();
        self.writer
            .send(Job { ops, done })
            .await
            .map_err(|_| StoreError::WriterGone)?;
        result
            .await
            .map_err(|_| StoreError::WriterGone)?
            .map_err(StoreError::from)
    }

    /// The id of the game created with `key`, if any.
    pub async fn game_for_key(&self, key: &str) -> Result<Option<String>, StoreError> {
        Ok(games::Entity::find()
            .filter(games::Column::IdempotencyKey.eq(key))
            .one(&self.db)
            .await?
            .map(|g| g.id))
    }

    /// The stored game `id`, rebuilt.
    pub async fn load(&self, id: &str) -> Result<Option<Game>, StoreError> {
        let Some(row) = games::Entity::find_by_id(id.to_owned())
            .one(&self.db)
            .await?
        else {
            return Ok(None);
        };
        let moves = moves::Entity::find()
            .filter(moves::Column::GameId.eq(id))
            .order_by_asc(moves::Column::Ply)
            .all(&self.db)
            .await?;
        restore(row, moves).map(Some)
    }

    /// Every game still in progress, rebuilt (at start-up).
    pub async fn load_active(&self) -> Result<Vec<Game>, StoreError> {
        let rows = games::Entity::find()
            .filter(games::Column::Status.eq("active"))
            .all(&self.db)
            .await?;
        let mut moves_by_game: HashMap<String, Vec<moves::Model>> = HashMap::new();
        let active_ids = Query::select()
            .column(games::Column::Id)
            .from(games::Entity)
            .and_where(games::Column::Status.eq("active"))
            .to_owned();
        for m in moves::Entity::find()
            .filter(moves::Column::GameId.in_subquery(active_ids))
            .order_by_asc(moves::Column::GameId)
            .order_by_asc(moves::Column::Ply)
            .all(&self.db)
            .await?
        {
            moves_by_game.entry(m.game_id.clone()).or_default().push(m);
        }
        rows.into_iter()
            .map(|row| {
                let moves = moves_by_game.remove(&row.id).unwrap_or_default();
                restore(row, moves)
            })
            .collect()
    }

    /// A page of `player_id`'s games, newest first, and the token of the next
    /// page.
    pub async fn list(
        &self,
        player_id: &str,
        filter: ListFilter,
        page_size: u64,
        page_token: &str,
    ) -> Result<(Vec<games::Model>, String), StoreError> {
        let mut query = games::Entity::find().filter(
            Condition::any()
                .add(games::Column::WhiteId.eq(player_id))
                .add(games::Column::BlackId.eq(player_id)),
        );
        match filter {
            ListFilter::All => {}
            ListFilter::Active => query = query.filter(games::Column::Status.eq("active")),
            ListFilter::Finished => query = query.filter(games::Column::Status.eq("finished")),
        }
        if let Some((created, id)) = parse_token(page_token) {
            query = query.filter(
                Condition::any()
                    .add(games::Column::CreatedAt.lt(created))
                    .add(
                        Condition::all()
                            .add(games::Column::CreatedAt.eq(created))
                            .add(games::Column::Id.lt(id)),
                    ),
            );
        }
        let mut rows = query
            .order_by_desc(games::Column::CreatedAt)
            .order_by_desc(games::Column::Id)
            .limit(page_size + 1)
            .all(&self.db)
            .await?;
        let next = if rows.len() as u64 > page_size {
            rows.truncate(page_size as usize);
            rows.last()
                .map(|r| format!("{}:{}", r.created_at, r.id))
                .unwrap_or_default()
        } else {
            String::new()
        };
        Ok((rows, next))
    }

    /// Results the rating service has not acknowledged yet.
    pub async fn pending_results(&self) -> Result<Vec<PendingResult>, StoreError> {
        results_outbox::Entity::find()
            .order_by_asc(results_outbox::Column::FinishedAt)
            .all(&self.db)
            .await?
            .into_iter()
            .map(|row| {
                let corrupt = |what: &str| StoreError::Corrupt {
                    id: row.game_id.clone(),
                    reason: format!("bad {what} in the results outbox"),
                };
                Ok(PendingResult {
                    result: decode_result(&row.result).ok_or_else(|| corrupt("result"))?,
                    speed: SpeedCategory::from_name(&row.speed).ok_or_else(|| corrupt("speed"))?,
                    game_id: row.game_id,
                    white_id: row.white_id,
                    black_id: row.black_id,
                    rated: row.rated,
                    finished_at: row.finished_at,
                })
            })
            .collect()
    }
}

/// Commits queued jobs, batching those that arrive during a commit.
async fn write_loop(
    db: DatabaseConnection,
    mut direct: Option<DirectMoves>,
    mut jobs: mpsc::Receiver<Job>,
) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while jobs.recv_many(&mut batch, MAX_BATCH).await > 0 {
        let ops: Vec<&WriteOp> = batch.iter().flat_map(|j| j.ops.iter()).collect();
        match commit_any(&db, direct.as_mut(), &ops).await {
            Ok(()) => {
                for job in batch.drain(..) {
                    // A caller that stopped waiting no longer needs the answer.
                    let _ = job.done.send(Ok(()));
                }
            }
            Err(e) if batch.len() == 1 => {
                if let Some(job) = batch.pop() {
                    let _ = job.done.send(Err(e));
                }
            }
            Err(_) => {
                // One job's failure must not fail the others: commit each
                // on its own.
                for job in batch.drain(..) {
                    let ops: Vec<&WriteOp> = job.ops.iter().collect();
                    let result = commit_any(&db, direct.as_mut(), &ops).await;
                    let _ = job.done.send(result);
                }
            }
        }
    }
}

/// Commits `ops` in one transaction: moves alone straight into SQLite when
/// the database is a SQLite file, everything else through sea-orm.
async fn commit_any(
    db: &DatabaseConnection,
    direct: Option<&mut DirectMoves>,
    ops: &[&WriteOp],
) -> Result<(), DbErr> {
    match direct {
        Some(direct) if only_moves(ops) => {
            // The write blocks this thread for the flush; on a multi-threaded
            // runtime the thread's other tasks move to another one meanwhile.
            // (A single-threaded runtime, as in some tests, simply waits.)
            let mut write = || direct.insert(ops).map_err(direct_error);
            match Handle::current().runtime_flavor() {
                RuntimeFlavor::MultiThread => tokio::task::block_in_place(write),
                _ => write(),
            }
        }
        _ => commit(db, ops).await,
    }
}

fn only_moves(ops: &[&WriteOp]) -> bool {
    ops.iter().all(|op| matches!(op, WriteOp::InsertMove(_)))
}

/// Moves inserted per statement; SQLite allows 32766 bound values, seven a
/// move.
const MOVES_PER_INSERT: usize = 1000;

/// Commits `ops` in one transaction. Moves are written with one multi-row
/// insert per batch rather than a statement each: under load, one commit
/// carries the moves of hundreds of games.
async fn commit(db: &DatabaseConnection, ops: &[&WriteOp]) -> Result<(), DbErr> {
    if ops.is_empty() {
        return Ok(());
    }
    // The common case, moves and nothing else, is one statement: it commits
    // on its own, all or nothing, without the two extra trips to the
    // database that BEGIN and COMMIT cost.
    if ops.len() <= MOVES_PER_INSERT && only_moves(ops) {
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
    // Games first: their moves refer to them.
    for op in ops {
        if let WriteOp::InsertGame(game) = op {
            games::Entity::insert((**game).clone())
                .exec_without_returning(&txn)
                .await?;
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
        moves::Entity::insert_many(chunk.to_vec())
            .exec_without_returning(&txn)
            .await?;
    }
    for op in ops {
        match op {
            WriteOp::InsertGame(_) | WriteOp::InsertMove(_) => {}
            WriteOp::UpdateGame(game) => {
                let game = (**game).clone();
                let id = match &game.id {
                    sea_orm::ActiveValue::Set(id) | sea_orm::ActiveValue::Unchanged(id) => {
                        id.clone()
                    }
                    sea_orm::ActiveValue::NotSet => {
                        return Err(DbErr::Custom("game update without an id".to_owned()));
                    }
                };
                let updated = games::Entity::update_many()
                    .set(game)
                    .filter(games::Column::Id.eq(id.clone()))
                    .exec(&txn)
                    .await?;
                if updated.rows_affected != 1 {
                    return Err(DbErr::RecordNotUpdated);
                }
            }
            WriteOp::InsertResult(result) => {
                results_outbox::Entity::insert(result.clone())
                    .on_conflict(
                        sea_orm::sea_query::OnConflict::column(results_outbox::Column::GameId)
                            .do_nothing()
                            .to_owned(),
                    )
                    .exec_without_returning(&txn)
                    .await?;
            }
            WriteOp::DeleteResult(game_id) => {
                results_outbox::Entity::delete_by_id(game_id.clone())
                    .exec(&txn)
                    .await?;
            }
        }
    }
    txn.commit().await
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

/// The SQLite moves table, written straight from the writer's thread. A
/// commit through sqlx hands each statement to sqlx's worker thread and back;
/// on the one write every move makes, that cost about as much as the write
/// itself (see BENCHMARKS.md). Every other write and every read goes through
/// sea-orm; the single writer keeps the two connections from contending.
struct DirectMoves {
    conn: rusqlite::Connection,
}

impl DirectMoves {
    const INSERT: &str = "INSERT INTO moves \
        (game_id, ply, uci, san, submitted, played_at, clock_after_ms) \
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";

    /// Inserts the moves of `ops` in one transaction; durable on return.
    fn insert(&mut self, ops: &[&WriteOp]) -> rusqlite::Result<()> {
        let txn = self.conn.transaction()?;
        {
            let mut insert = txn.prepare_cached(Self::INSERT)?;
            for op in ops {
                let WriteOp::InsertMove(mv) = op else {
                    continue;
                };
                insert.execute(rusqlite::params![
                    mv.game_id,
                    mv.ply,
                    mv.uci,
                    mv.san,
                    mv.submitted,
                    mv.played_at,
                    mv.clock_after_ms,
                ])?;
            }
        }
        txn.commit()
    }
}

impl std::fmt::Debug for DirectMoves {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectMoves").finish_non_exhaustive()
    }
}

fn direct_error(e: rusqlite::Error) -> DbErr {
    DbErr::Custom(format!("sqlite: {e}"))
}

fn parse_token(token: &str) -> Option<(i64, String)> {
    let (created, id) = token.split_once(':')?;
    Some((created.parse().ok()?, id.to_owned()))
}

/// Stored name of a colour.
pub fn encode_color(color: Color) -> &'static str {
    match color {
        Color::White => "white",
        Color::Black => "black",
    }
}

fn decode_color(s: &str) -> Option<Color> {
    match s {
        "white" => Some(Color::White),
        "black" => Some(Color::Black),
        _ => None,
    }
}

fn encode_result(result: GameResult) -> &'static str {
    match result {
        GameResult::WhiteWins => "white",
        GameResult::BlackWins => "black",
        GameResult::Draw => "draw",
    }
}

/// A stored result.
pub fn decode_result(s: &str) -> Option<GameResult> {
    match s {
        "white" => Some(GameResult::WhiteWins),
        "black" => Some(GameResult::BlackWins),
        "draw" => Some(GameResult::Draw),
        _ => None,
    }
}

/// A time control as stored: `untimed`, `incremental:<s>:<s>`,
/// `moves:<n>:<s>`, `daily:<h>`.
pub fn encode_time_control(tc: TimeControl) -> String {
    match tc {
        TimeControl::Untimed => "untimed".to_owned(),
        TimeControl::Incremental {
            initial_secs,
            increment_secs,
        } => {
            format!("incremental:{initial_secs}:{increment_secs}")
        }
        TimeControl::MovesInPeriod { moves, period_secs } => format!("moves:{moves}:{period_secs}"),
        TimeControl::Daily { turn_hours } => format!("daily:{turn_hours}"),
    }
}

/// The time control stored as `s`.
pub fn decode_time_control(s: &str) -> Option<TimeControl> {
    let mut parts = s.split(':');
    let kind = parts.next()?;
    let mut num = || parts.next().and_then(|p| p.parse::<u32>().ok());
    Some(match kind {
        "untimed" => TimeControl::Untimed,
        "incremental" => TimeControl::Incremental {
            initial_secs: num()?,
            increment_secs: num()?,
        },
        "moves" => TimeControl::MovesInPeriod {
            moves: num()?,
            period_secs: num()?,
        },
        "daily" => TimeControl::Daily { turn_hours: num()? },
        _ => return None,
    })
}

fn encode_participant(p: &Participant) -> (&'static str, String, String, i32) {
    match p {
        Participant::Registered { id, username } => ("registered", id.clone(), username.clone(), 0),
        Participant::Guest { id, name } => ("guest", id.clone(), name.clone(), 0),
        Participant::Engine { level } => {
            ("engine", String::new(), String::new(), i32::from(*level))
        }
    }
}

fn decode_participant(kind: &str, id: String, name: String, level: i32) -> Option<Participant> {
    match kind {
        "registered" => Some(Participant::Registered { id, username: name }),
        "guest" => Some(Participant::Guest { id, name }),
        "engine" => u8::try_from(level)
            .ok()
            .map(|level| Participant::Engine { level }),
        _ => None,
    }
}

fn encode_rules(rules: RuleSet) -> &'static str {
    match rules {
        RuleSet::Standard => "standard",
        RuleSet::Uqchess => "uqchess",
    }
}

/// The row of a new game.
pub fn new_game_row(game: &Game, idempotency_key: Option<String>) -> games::ActiveModel {
    let (white_kind, white_id, white_name, white_level) = encode_participant(game.white());
    let (black_kind, black_id, black_name, black_level) = encode_participant(game.black());
    games::ActiveModel {
        id: Set(game.id().to_owned()),
        white_kind: Set(white_kind.to_owned()),
        white_id: Set(white_id),
        white_name: Set(white_name),
        white_level: Set(white_level),
        black_kind: Set(black_kind.to_owned()),
        black_id: Set(black_id),
        black_name: Set(black_name),
        black_level: Set(black_level),
        time_control: Set(encode_time_control(game.time_control())),
        speed: Set(game.time_control().speed().as_str().to_owned()),
        rules: Set(encode_rules(game.rules()).to_owned()),
        rated: Set(game.rated()),
        hints_allowed: Set(game.hints_allowed()),
        initial_fen: Set(game.initial_fen().to_owned()),
        fen: Set(game.fen()),
        ply: Set(game.ply() as i32),
        status: Set("active".to_owned()),
        result: Set(None),
        termination: Set(None),
        draw_offer: Set(None),
        created_at: Set(game.created_at()),
        updated_at: Set(game.created_at()),
        finished_at: Set(None),
        idempotency_key: Set(idempotency_key),
    }
}

/// The writes that make `events` (already applied to `game`) durable.
pub fn ops_for(game: &Game, events: &[Event], now: i64) -> Vec<WriteOp> {
    let mut ops = Vec::with_capacity(events.len() + 2);
    let mut changed = false;
    for event in events {
        match event {
            Event::MoveMade { ply, mv, .. } => {
                // The moves table is the record of play; the game's row is
                // only rewritten when its status or draw offer changes.
                ops.push(WriteOp::InsertMove(moves::Model {
                    game_id: game.id().to_owned(),
                    ply: *ply as i32,
                    uci: mv.uci.clone(),
                    san: mv.san.clone(),
                    submitted: mv.submitted.clone(),
                    played_at: mv.at,
                    clock_after_ms: mv.clock_after,
                }));
            }
            Event::DrawOffered { .. } | Event::DrawDeclined { .. } => changed = true,
            Event::FiftyMoveWarning { .. } => {}
            Event::GameEnded(ending) => {
                changed = true;
                if let (
                    Some(result),
                    Participant::Registered { id: white_id, .. },
                    Participant::Registered { id: black_id, .. },
                ) = (ending.result, game.white(), game.black())
                {
                    ops.push(WriteOp::InsertResult(results_outbox::ActiveModel {
                        game_id: Set(game.id().to_owned()),
                        white_id: Set(white_id.clone()),
                        black_id: Set(black_id.clone()),
                        result: Set(encode_result(result).to_owned()),
                        speed: Set(game.time_control().speed().as_str().to_owned()),
                        // An untimed game stored as rated before untimed
                        // games had their category is reported unrated.
                        rated: Set(game.rated() && game.time_control().speed().is_rated()),
                        finished_at: Set(ending.at),
                    }));
                }
            }
        }
    }
    if changed {
        let ending = game.ending();
        ops.push(WriteOp::UpdateGame(Box::new(games::ActiveModel {
            id: Set(game.id().to_owned()),
            fen: Set(game.fen()),
            ply: Set(game.ply() as i32),
            status: Set(if ending.is_some() {
                "finished"
            } else {
                "active"
            }
            .to_owned()),
            result: Set(ending
                .and_then(|e| e.result)
                .map(|r| encode_result(r).to_owned())),
            termination: Set(ending.map(|e| e.termination.as_str().to_owned())),
            draw_offer: Set(game.draw_offer().map(|c| encode_color(c).to_owned())),
            finished_at: Set(ending.map(|e| e.at)),
            updated_at: Set(now),
            ..Default::default()
        })));
    }
    ops
}

/// The setup and ending stored in `row`.
pub fn row_setup(row: &games::Model) -> Result<(GameSetup, Option<Ending>), StoreError> {
    let corrupt = |what: &str| StoreError::Corrupt {
        id: row.id.clone(),
        reason: format!("bad {what}"),
    };
    let white = decode_participant(
        &row.white_kind,
        row.white_id.clone(),
        row.white_name.clone(),
        row.white_level,
    )
    .ok_or_else(|| corrupt("white player"))?;
    let black = decode_participant(
        &row.black_kind,
        row.black_id.clone(),
        row.black_name.clone(),
        row.black_level,
    )
    .ok_or_else(|| corrupt("black player"))?;
    let time_control =
        decode_time_control(&row.time_control).ok_or_else(|| corrupt("time control"))?;
    let rules = match row.rules.as_str() {
        "standard" => RuleSet::Standard,
        "uqchess" => RuleSet::Uqchess,
        _ => return Err(corrupt("rule set")),
    };
    let ending = match (&row.termination, row.finished_at) {
        (Some(termination), Some(at)) => Some(Ending {
            result: row.result.as_deref().and_then(decode_result),
            termination: Termination::from_name(termination)
                .ok_or_else(|| corrupt("termination"))?,
            at,
        }),
        _ => None,
    };
    let setup = GameSetup {
        white,
        black,
        time_control,
        rules,
        rated: row.rated,
        allow_hints: row.hints_allowed,
        initial_fen: Some(row.initial_fen.clone()),
    };
    Ok((setup, ending))
}

fn restore(row: games::Model, moves: Vec<moves::Model>) -> Result<Game, StoreError> {
    let (setup, ending) = row_setup(&row)?;
    let played = moves
        .into_iter()
        .map(|m| PlayedMove {
            uci: m.uci,
            san: m.san,
            submitted: m.submitted,
            at: m.played_at,
            clock_after: m.clock_after_ms,
        })
        .collect();
    let draw_offer = row.draw_offer.as_deref().and_then(decode_color);
    Game::restore(
        row.id.clone(),
        setup,
        row.created_at,
        played,
        draw_offer,
        ending,
    )
    .map_err(|e| StoreError::Corrupt {
        id: row.id,
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_controls_round_trip() {
        for tc in [
            TimeControl::Untimed,
            TimeControl::Incremental {
                initial_secs: 300,
                increment_secs: 3,
            },
            TimeControl::MovesInPeriod {
                moves: 40,
                period_secs: 7200,
            },
            TimeControl::Daily { turn_hours: 48 },
        ] {
            assert_eq!(decode_time_control(&encode_time_control(tc)), Some(tc));
        }
        assert_eq!(decode_time_control("daily"), None);
        assert_eq!(decode_time_control("sometimes:1"), None);
    }

    fn guest(id: &str) -> Participant {
        Participant::Guest {
            id: id.to_owned(),
            name: id.to_owned(),
        }
    }

    fn new_game(id: &str) -> Game {
        let setup = GameSetup {
            white: guest("w"),
            black: guest("b"),
            time_control: TimeControl::Untimed,
            rules: RuleSet::Standard,
            rated: false,
            allow_hints: false,
            initial_fen: None,
        };
        Game::new(id.to_owned(), setup, 0).unwrap()
    }

    /// A database made before untimed games had their category and games
    /// said whether they allow hints is brought up to date: untimed games are
    /// filed as untimed, those in play and undelivered results become
    /// unrated, and only engine and uqchess games allow hints.
    async fn older_games_are_migrated(url: String) {
        use sea_orm::ConnectionTrait as _;

        let db = chess_storage::connect(&url, 1).await.unwrap();
        migration::Migrator::up(&db, Some(1)).await.unwrap();
        let old_row =
            |id: &str, black_kind: &str, tc: &str, speed: &str, rules: &str, status: &str| {
                Query::insert()
                    .into_table("games")
                    .columns([
                        "id",
                        "white_kind",
                        "white_id",
                        "white_name",
                        "white_level",
                        "black_kind",
                        "black_id",
                        "black_name",
                        "black_level",
                        "time_control",
                        "speed",
                        "rules",
                        "rated",
                        "initial_fen",
                        "fen",
                        "ply",
                        "status",
                        "created_at",
                        "updated_at",
                    ])
                    .values_panic([
                        id.into(),
                        "registered".into(),
                        "a".into(),
                        "alice".into(),
                        0.into(),
                        black_kind.into(),
                        (if black_kind == "engine" { "" } else { "b" }).into(),
                        "bob".into(),
                        (if black_kind == "engine" { 3 } else { 0 }).into(),
                        tc.into(),
                        speed.into(),
                        rules.into(),
                        (black_kind == "registered").into(),
                        crate::model::game::STARTING_FEN.into(),
                        crate::model::game::STARTING_FEN.into(),
                        0.into(),
                        status.into(),
                        1i64.into(),
                        1i64.into(),
                    ])
                    .to_owned()
            };
        for row in [
            old_row(
                "engine",
                "engine",
                "untimed",
                "correspondence",
                "standard",
                "active",
            ),
            old_row(
                "uq",
                "guest",
                "untimed",
                "correspondence",
                "uqchess",
                "active",
            ),
            old_row(
                "casual",
                "registered",
                "untimed",
                "correspondence",
                "standard",
                "active",
            ),
            old_row(
                "done",
                "registered",
                "untimed",
                "correspondence",
                "standard",
                "finished",
            ),
            old_row(
                "blitz",
                "registered",
                "incremental:300:0",
                "blitz",
                "standard",
                "active",
            ),
        ] {
            db.execute(&row).await.unwrap();
        }
        db.execute(
            &Query::insert()
                .into_table("results_outbox")
                .columns([
                    "game_id",
                    "white_id",
                    "black_id",
                    "result",
                    "speed",
                    "rated",
                    "finished_at",
                ])
                .values_panic([
                    "done".into(),
                    "a".into(),
                    "b".into(),
                    "white".into(),
                    "correspondence".into(),
                    true.into(),
                    2i64.into(),
                ])
                .to_owned(),
        )
        .await
        .unwrap();
        drop(db);

        let store = Store::open(&url).await.unwrap();
        let row = |id: &'static str| {
            let db = store.db.clone();
            async move {
                games::Entity::find_by_id(id)
                    .one(&db)
                    .await
                    .unwrap()
                    .unwrap()
            }
        };
        for (id, speed, rated, hints) in [
            ("engine", "untimed", false, true),
            ("uq", "untimed", false, true),
            ("casual", "untimed", false, false),
            ("done", "untimed", true, false),
            ("blitz", "blitz", true, false),
        ] {
            let stored = row(id).await;
            assert_eq!(
                (stored.speed.as_str(), stored.rated, stored.hints_allowed),
                (speed, rated, hints),
                "{id}"
            );
        }
        let pending = store.pending_results().await.unwrap();
        assert_eq!(pending.len(), 1);
        assert_eq!(
            (pending[0].speed, pending[0].rated),
            (SpeedCategory::Untimed, false)
        );
        // Every game still loads: the finished one keeps its rated flag.
        assert_eq!(store.load_active().await.unwrap().len(), 4);
        assert!(store.load("done").await.unwrap().unwrap().rated());
    }

    #[tokio::test]
    async fn older_games_are_migrated_on_sqlite() {
        let dir = tempfile::tempdir().unwrap();
        older_games_are_migrated(chess_storage::sqlite_url(&dir.path().join("game.sqlite"))).await;
    }

    #[tokio::test]
    async fn older_games_are_migrated_on_postgres() {
        older_games_are_migrated(chess_storage::testing::fresh_postgres_database().await).await;
    }

    /// Moves written straight into SQLite by many concurrent callers are
    /// all stored, and a caller whose move cannot be stored fails alone.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_moves_on_sqlite_are_kept_and_a_bad_one_fails_alone() {
        let dir = tempfile::tempdir().unwrap();
        let url = chess_storage::sqlite_url(&dir.path().join("game.sqlite"));
        let store = Store::open(&url).await.unwrap();
        let mut games: Vec<Game> = (0..20).map(|i| new_game(&format!("g{i}"))).collect();
        for game in &games {
            store
                .write(vec![WriteOp::InsertGame(Box::new(new_game_row(
                    game, None,
                )))])
                .await
                .unwrap();
        }
        let line = ["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6"];
        for (ply, uci) in line.iter().enumerate() {
            let side = if ply % 2 == 0 {
                Color::White
            } else {
                Color::Black
            };
            let mut writes = Vec::new();
            for game in &mut games {
                let events = game.play(side, uci, 1_000).unwrap();
                let ops = ops_for(game, &events, 1_000);
                let store = store.clone();
                writes.push(tokio::spawn(async move { store.write(ops).await }));
            }
            // A move of a game that does not exist breaks the foreign key.
            let orphan = WriteOp::InsertMove(moves::Model {
                game_id: "missing".to_owned(),
                ply: ply as i32 + 1,
                uci: (*uci).to_owned(),
                san: String::new(),
                submitted: (*uci).to_owned(),
                played_at: 1_000,
                clock_after_ms: None,
            });
            let bad = {
                let store = store.clone();
                tokio::spawn(async move { store.write(vec![orphan]).await })
            };
            for write in writes {
                write.await.unwrap().unwrap();
            }
            assert!(bad.await.unwrap().is_err());
        }
        drop(store);
        let reopened = Store::open(&url).await.unwrap();
        for game in &games {
            let stored = reopened.load(game.id()).await.unwrap().unwrap();
            assert_eq!(stored.fen(), game.fen());
            assert_eq!(stored.ply() as usize, line.len());
        }
    }
}
