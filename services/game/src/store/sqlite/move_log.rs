//! The SQLite writer's log of moves.
//!
//! A game's moves are read from `moves`, whose key is (game, ply). An
//! insert there writes the index page of its game, so with a thousand
//! games in play a commit of a few moves dirties as many scattered pages,
//! and SQLite writes each whole into its log, flushes it, and later copies
//! it back into the file: most of what a move cost the disk. So the writer of a SQLite file appends each move to
//! `move_log`, a table with no index whose rows go in order of arrival into
//! its last page, and copies a game's moves into `moves` later, many
//! together:
//! - when the game has [`GROUP`] moves in the log;
//! - when its oldest there is [`WINDOW`] rows behind the newest;
//! - when a move of the game is written with other changes (one that ends
//!   it), and when the game is read;
//! - when the writer stops, and when the file is opened.
//!
//! Each copy is made in one of the writer's commits, so a move is in
//! `moves` or in the log, never in neither. The rows copied are deleted
//! from the front of the log, [`TRIM`] or more at a time.
//!
//! A move is durable once appended. A crash leaves the moves not yet copied
//! in the log, and opening the file copies all of it into `moves`
//! ([`MoveLog::recover`]) before any game is read; reads ask the writer to
//! copy the moves of the game they read first (`WriteOp::FoldLog`). The
//! log also keeps the rule the key of `moves` keeps: a ply stored once is
//! refused again.

use std::collections::{BTreeMap, HashMap, HashSet};

use rusqlite::{Connection, OptionalExtension as _, Transaction};
use sea_orm::DbErr;

use super::{super::moves, sqlite};

/// A game's moves are copied into `moves` once it has this many in the log.
pub(crate) const GROUP: usize = 64;
/// ... or once its oldest there is this many rows behind the newest: the
/// log of a game played slowly, or no longer, does not stay for good.
pub(crate) const WINDOW: i64 = 65_536;
/// Rows already copied are deleted from the front of the log once there
/// are this many.
const TRIM: i64 = 1_024;

const COLUMNS: &str = "game_id, ply, uci, san, submitted, played_at, clock_after_ms";

/// What the writer keeps of the log: the moves in it not yet in `moves`.
#[derive(Debug, Default)]
pub(super) struct MoveLog {
    /// Each game's rows in the log not yet copied, oldest first.
    games: HashMap<String, Waiting>,
    /// The games of `games` by their oldest row.
    by_oldest: BTreeMap<i64, String>,
    /// The games of `games` with [`GROUP`] rows or more.
    full: HashSet<String>,
    /// The newest row of the log.
    newest: i64,
    /// Every row below this one is deleted.
    trimmed: i64,
}

#[derive(Debug)]
struct Waiting {
    seqs: Vec<i64>,
    last_ply: i32,
}

/// What one transaction did to the log; applied to [`MoveLog`] once it
/// commits, and dropped with it if it fails.
#[derive(Debug, Default)]
pub(super) struct Change {
    /// (game, ply, row) of each move appended.
    appended: Vec<(String, i32, i64)>,
    /// The games whose waiting rows were copied into `moves`.
    copied: HashSet<String>,
    /// The rows below this one were deleted.
    trimmed: Option<i64>,
}

impl MoveLog {
    /// Copies whatever the log of the file holds into `moves` and empties
    /// it, in one transaction: what a crash left, or a stop. Returns an
    /// empty log.
    pub(super) fn recover(conn: &mut Connection) -> Result<Self, DbErr> {
        let txn = conn.transaction().map_err(sqlite)?;
        drain(&txn)?;
        txn.commit().map_err(sqlite)?;
        Ok(Self::default())
    }

    /// Whether moves of `game` wait in the log.
    pub(super) fn waits(&self, game: &str) -> bool {
        self.games.contains_key(game)
    }

    /// Appends `moves` to the log within `txn`. A move whose ply is not
    /// past the last stored of its game is refused, and with it the
    /// transaction.
    pub(super) fn append<'a>(
        &self,
        txn: &Transaction<'_>,
        moves: impl IntoIterator<Item = &'a moves::Model>,
        change: &mut Change,
    ) -> Result<(), DbErr> {
        let mut insert = txn
            .prepare_cached(
                "INSERT INTO move_log \
                 (game_id, ply, uci, san, submitted, played_at, clock_after_ms) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .map_err(sqlite)?;
        // The last ply of each game appended to in this transaction.
        let mut appended: HashMap<&str, i32> = HashMap::new();
        for mv in moves {
            let last = match appended.get(mv.game_id.as_str()) {
                Some(ply) => Some(*ply),
                None => match self.games.get(&mv.game_id) {
                    Some(waiting) if !change.copied.contains(&mv.game_id) => Some(waiting.last_ply),
                    _ => last_stored_ply(txn, &mv.game_id)?,
                },
            };
            if let Some(last) = last
                && mv.ply <= last
            {
                return Err(DbErr::Custom(format!(
                    "move {} of game {} is stored already",
                    mv.ply, mv.game_id
                )));
            }
            insert
                .execute(rusqlite::params![
                    mv.game_id,
                    mv.ply,
                    mv.uci,
                    mv.san,
                    mv.submitted,
                    mv.played_at,
                    mv.clock_after_ms,
                ])
                .map_err(sqlite)?;
            appended.insert(&mv.game_id, mv.ply);
            change
                .appended
                .push((mv.game_id.clone(), mv.ply, txn.last_insert_rowid()));
        }
        Ok(())
    }

    /// Copies the waiting moves of the games due (full, or old) into
    /// `moves` within `txn`, about `budget` rows at most.
    pub(super) fn copy_due(
        &self,
        txn: &Transaction<'_>,
        budget: usize,
        change: &mut Change,
    ) -> Result<(), DbErr> {
        let old = self
            .by_oldest
            .range(..self.newest - WINDOW)
            .map(|(_, game)| game);
        let mut copied = 0;
        for game in self.full.iter().chain(old) {
            if copied >= budget {
                break;
            }
            copied += self.copy(txn, game, change)?;
        }
        Ok(())
    }

    /// Copies the waiting moves of `games` into `moves` within `txn`.
    pub(super) fn copy_games<'a>(
        &self,
        txn: &Transaction<'_>,
        games: impl IntoIterator<Item = &'a str>,
        change: &mut Change,
    ) -> Result<(), DbErr> {
        for game in games {
            self.copy(txn, game, change)?;
        }
        Ok(())
    }

    /// Copies every move of the log into `moves` and empties it, within
    /// `txn`; nothing may be appended in the same transaction.
    pub(super) fn copy_all(&self, txn: &Transaction<'_>, change: &mut Change) -> Result<(), DbErr> {
        drain(txn)?;
        change.copied.extend(self.games.keys().cloned());
        change.trimmed = Some(i64::MAX);
        Ok(())
    }

    /// Copies one game's waiting moves; returns how many.
    fn copy(&self, txn: &Transaction<'_>, game: &str, change: &mut Change) -> Result<usize, DbErr> {
        let Some(waiting) = self.games.get(game) else {
            return Ok(0);
        };
        if !change.copied.insert(game.to_owned()) {
            return Ok(0);
        }
        // The key of `moves` keeps the game's rows together, in ply order:
        // the index pages written are the game's last one or two.
        let mut copy = txn
            .prepare_cached(&format!(
                "INSERT OR IGNORE INTO moves ({COLUMNS}) \
                 SELECT {COLUMNS} FROM move_log WHERE seq = ?1"
            ))
            .map_err(sqlite)?;
        for seq in &waiting.seqs {
            copy.execute([seq]).map_err(sqlite)?;
        }
        Ok(waiting.seqs.len())
    }

    /// Deletes the front of the log within `txn` once enough of it has been
    /// copied: every row older than the oldest still waiting.
    pub(super) fn trim(&self, txn: &Transaction<'_>, change: &mut Change) -> Result<(), DbErr> {
        if change.trimmed.is_some() {
            return Ok(());
        }
        let oldest_waiting = self
            .by_oldest
            .iter()
            .find(|(_, game)| !change.copied.contains(*game))
            .map(|(seq, _)| *seq);
        let first_appended = change.appended.first().map(|(.., seq)| *seq);
        let below = oldest_waiting.or(first_appended).unwrap_or(self.newest + 1);
        if below - self.trimmed >= TRIM {
            txn.execute("DELETE FROM move_log WHERE seq < ?1", [below])
                .map_err(sqlite)?;
            change.trimmed = Some(below);
        }
        Ok(())
    }

    /// Takes in what a committed transaction did.
    pub(super) fn apply(&mut self, change: Change) {
        for game in &change.copied {
            if let Some(waiting) = self.games.remove(game) {
                self.by_oldest.remove(&waiting.seqs[0]);
            }
            self.full.remove(game);
        }
        for (game, ply, seq) in change.appended {
            self.newest = self.newest.max(seq);
            match self.games.get_mut(&game) {
                Some(waiting) => {
                    waiting.seqs.push(seq);
                    waiting.last_ply = ply;
                    if waiting.seqs.len() == GROUP {
                        self.full.insert(game);
                    }
                }
                None => {
                    self.by_oldest.insert(seq, game.clone());
                    let mut seqs = Vec::with_capacity(GROUP);
                    seqs.push(seq);
                    self.games.insert(
                        game,
                        Waiting {
                            seqs,
                            last_ply: ply,
                        },
                    );
                }
            }
        }
        match change.trimmed {
            // Emptied (by `copy_all`, which appends nothing): SQLite numbers
            // the rows of an empty table afresh from 1.
            Some(i64::MAX) => {
                self.newest = 0;
                self.trimmed = 0;
            }
            Some(trimmed) => self.trimmed = trimmed,
            None => {}
        }
    }
}

/// The last ply of `game` in `moves`.
fn last_stored_ply(txn: &Transaction<'_>, game: &str) -> Result<Option<i32>, DbErr> {
    txn.prepare_cached("SELECT max(ply) FROM moves WHERE game_id = ?1")
        .and_then(|mut s| s.query_row([game], |row| row.get(0)).optional())
        .map(Option::flatten)
        .map_err(sqlite)
}

/// Copies the whole log into `moves`, a game's rows together, and empties
/// it.
fn drain(txn: &Transaction<'_>) -> Result<(), DbErr> {
    txn.execute(
        &format!(
            "INSERT OR IGNORE INTO moves ({COLUMNS}) \
             SELECT {COLUMNS} FROM move_log ORDER BY game_id, ply"
        ),
        [],
    )
    .map_err(sqlite)?;
    txn.execute("DELETE FROM move_log", []).map_err(sqlite)?;
    Ok(())
}
