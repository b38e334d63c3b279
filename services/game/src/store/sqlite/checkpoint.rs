//! WAL checkpoints of a SQLite file, kept off its writer's commits.
//!
//! In WAL mode SQLite copies the log back into the database file (a
//! checkpoint) inside whichever commit takes the log past
//! `wal_autocheckpoint` pages, and that commit does not return until the
//! pages are copied and the database file is flushed. For a writer that
//! commits continuously (the game service's moves) that is a stall of
//! several milliseconds every few hundred commits, and every write queued
//! behind it waits it out.
//!
//! [`WalCheckpoints`] takes the checkpoints over from such a writer:
//! - the writer's connection no longer checkpoints when it commits;
//! - each time the log has grown by [`Limits::start`] pages, a thread of
//!   its own copies them back on a connection of its own (a passive
//!   checkpoint, which does not block the writer: only the flush of the
//!   database file at its end can delay a flush of the log that the writer
//!   makes at the same time);
//! - the log only starts over from its beginning once every page in it has
//!   been copied back, and a writer that never pauses always has a few
//!   more. So once the log reaches [`Limits::bound`] pages, the thread
//!   copies it back once more and then the writer, between two of its
//!   commits, copies back the few pages it committed meanwhile: a short
//!   checkpoint, once per bound instead of a long one every thousand pages;
//! - if the thread cannot keep up, the writer checkpoints all the same a
//!   little past the bound, as SQLite would have; if the thread is still
//!   making a checkpoint then, the writer tries again after each commit
//!   until the thread's ends, without asking it for another (which would
//!   keep it busy as long as the writer kept asking).
//!
//! Durability is SQLite's own: a checkpoint marks pages copied only after
//! the database file is flushed (`synchronous` is `FULL` on both
//! connections), so the log is never overwritten before the database holds
//! what it held.

use std::{
    cell::Cell,
    os::raw::c_int,
    sync::{Arc, Condvar, Mutex, PoisonError},
    time::{Duration, Instant},
};

use rusqlite::{Connection, hooks::Wal};
use sea_orm::DbErr;

use super::super::StoreError;

/// When checkpoints start and when the writer steps in, in log pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Limits {
    /// Pages added to the log after which the checkpoint thread is asked
    /// to copy them back.
    pub(super) start: i64,
    /// Pages in the log at which the writer has it start over.
    pub(super) bound: i64,
    /// How long the checkpoint thread waits for the writer to ask before it
    /// checkpoints anyway: the log also grows through connections other
    /// than the writer's (and so unseen by it), and a checkpoint of a log
    /// already copied back costs nothing.
    pub(super) unasked: Duration,
}

impl Default for Limits {
    /// A checkpoint every 8,000 pages (32 MiB of 4 KiB pages); the log
    /// starts over at 32,000 (128 MiB). SQLite's own default checkpoints
    /// at 1,000: a longer interval copies each of the busiest pages (an
    /// index leaf that every move of a game writes) back fewer times.
    fn default() -> Self {
        Self {
            start: 8_000,
            bound: 32_000,
            unasked: Duration::from_secs(10),
        }
    }
}

thread_local! {
    /// Pages in the log after the last commit on this thread's writer
    /// connection, as SQLite's WAL hook reports them.
    static LOG_PAGES: Cell<i64> = const { Cell::new(0) };
}

fn note_log_pages(_wal: &Wal, pages: c_int) -> rusqlite::Result<()> {
    LOG_PAGES.with(|p| p.set(i64::from(pages)));
    Ok(())
}

/// What the checkpoint thread and the writer share.
#[derive(Debug, Default)]
struct State {
    /// The writer asked for a checkpoint the thread has not begun.
    asked: bool,
    /// Checkpoints the thread has begun.
    begun: u64,
    /// Checkpoints the thread has finished.
    finished: u64,
    stop: bool,
}
#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The checkpoints of one SQLite file, taken over from its writer's
/// connection. Used on the writer's thread, after its commits.
#[derive(Debug)]
pub(super) struct WalCheckpoints {
    shared: Arc<Shared>,
    limits: Limits,
    /// Pages in the log when the thread was last asked for a checkpoint.
    asked_at: i64,
    /// The log has reached its bound: the thread has been asked for one
    /// more checkpoint, the one it begins as this one.
    ending: Option<u64>,
    /// Checkpoints of the writer's put off because the thread was making
    /// one.
    deferred: u64,
    /// The thread, joined on drop: its connection must be closed before the
    /// file's last one closes, which deletes the log only if it is alone.
    thread: Option<std::thread::JoinHandle<()>>,
}

impl WalCheckpoints {
    /// Takes the checkpoints of the SQLite file at `url` over from
    /// `writer`, a connection to it: from now on it no longer checkpoints
    /// when it commits. It is then to be used on one thread only, the one
    /// that calls [`Self::after_commit`] after its commits.
    pub(super) fn take_over(
        url: &str,
        writer: &Connection,
        limits: Limits,
    ) -> Result<Self, StoreError> {
        let checkpointer = super::connect(url)?.ok_or_else(|| {
            DbErr::Custom(format!(
                "{} names no SQLite file",
                chess_storage::redact(url)
            ))
        })?;
        // The hook replaces SQLite's automatic checkpoints on `writer`.
        writer.wal_hook(Some(note_log_pages));
        let shared = Arc::new(Shared::default());
        let thread_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("wal-checkpoint".to_owned())
            .spawn(move || checkpoint_loop(&checkpointer, &thread_shared, limits.unasked))
            .map_err(|e| DbErr::Custom(format!("cannot start the checkpoint thread: {e}")))?;
        Ok(Self {
            shared,
            limits,
            asked_at: 0,
            ending: None,
            deferred: 0,
            thread: Some(thread),
        })
    }

    /// Pages in the log after the writer's last commit.
    pub(super) fn log_pages(&self) -> i64 {
        LOG_PAGES.with(Cell::get)
    }

    /// After a commit on the writer (once its callers are answered): asks
    /// the thread for a checkpoint each time the log has grown by
    /// [`Limits::start`] pages; once it reaches [`Limits::bound`], asks once
    /// more and then, when the writer has nothing `waiting`, copies back on
    /// `writer` the pages committed during that checkpoint, so that the
    /// next commit starts the log over. If the thread cannot keep up, the
    /// writer checkpoints all the same a little past the bound.
    pub(super) fn after_commit(&mut self, writer: &Connection, waiting: bool) {
        let pages = self.log_pages();
        if pages < self.asked_at {
            // The log has started over.
            self.asked_at = 0;
            self.ending = None;
        }
        if pages >= self.limits.bound {
            match self.ending {
                None => self.ending = Some(self.ask(pages)),
                Some(asked) => {
                    let copied = self.shared.lock().finished >= asked;
                    if (copied && !waiting) || pages >= self.limits.bound + self.limits.start {
                        if checkpoint(writer, "writer") == Checkpoint::Busy {
                            // The thread is in a checkpoint of its own.
                            // Asking it for another would keep it there,
                            // each one ending just as the writer tried
                            // again: try after the next commit instead.
                            self.deferred += 1;
                        } else {
                            self.ending = None;
                            self.asked_at = pages;
                        }
                    }
                }
            }
        } else if pages >= self.asked_at + self.limits.start {
            self.ask(pages);
        }
    }

    /// Asks the thread for a checkpoint; returns its number (the count of
    /// checkpoints begun once it has begun).
    fn ask(&mut self, pages: i64) -> u64 {
        self.asked_at = pages;
        let mut state = self.shared.lock();
        state.asked = true;
        self.shared.wake.notify_one();
        state.begun + 1
    }
}

impl Drop for WalCheckpoints {
    /// Stops the thread and waits for it (at most the checkpoint it is
    /// making), so that its connection is closed on return.
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.wake.notify_one();
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            tracing::warn!("the checkpoint thread panicked");
        }
    }
}

/// What became of a checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Checkpoint {
    /// Made: every page no reader still needs is copied back.
    Made,
    /// Not begun: another connection was making one.
    Busy,
    /// SQLite refused it (logged).
    Failed,
}

/// A passive checkpoint on `conn`: copies back what no reader still needs
/// in the log, without waiting for anyone.
fn checkpoint(conn: &Connection, by: &'static str) -> Checkpoint {
    let started = Instant::now();
    let outcome = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
        Ok((
            row.get::<_, i64>(0)?,
            row.get::<_, i64>(1)?,
            row.get::<_, i64>(2)?,
        ))
    });
    let ms = started.elapsed().as_millis() as u64;
    match outcome {
        Ok((busy, ..)) if busy != 0 => {
            tracing::trace!(by, ms, "checkpoint put off: another is being made");
            Checkpoint::Busy
        }
        // On the writer, a slow one holds up every write queued meanwhile.
        Ok((_, log, copied)) => {
            if ms >= SLOW_CHECKPOINT_MS {
                tracing::warn!(by, ms, log, copied, "slow checkpoint");
            } else {
                tracing::trace!(by, ms, log, copied, "checkpoint");
            }
            Checkpoint::Made
        }
        Err(e) => {
            tracing::warn!(by, error = %e, "checkpoint failed");
            Checkpoint::Failed
        }
    }
}

/// A checkpoint taking this long (milliseconds) is logged.
const SLOW_CHECKPOINT_MS: u64 = 100;

/// The checkpoint thread: one checkpoint each time the writer asks, or
/// after `unasked` without, until the writer is gone.
fn checkpoint_loop(conn: &Connection, shared: &Shared, unasked: Duration) {
    loop {
        {
            let mut state = shared.lock();
            let mut waited = Duration::ZERO;
            while !state.asked && !state.stop && waited < unasked {
                let started = Instant::now();
                state = shared
                    .wake
                    .wait_timeout(state, unasked - waited)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
                waited += started.elapsed();
            }
            if state.stop {
                return;
            }
            state.asked = false;
            state.begun += 1;
        }
        checkpoint(conn, "thread");
        shared.lock().finished += 1;
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// A fresh SQLite file in WAL mode with a table of blobs; its URL.
    fn database(dir: &Path) -> String {
        let path = dir.join("db.sqlite");
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        conn.execute_batch("CREATE TABLE blobs (id INTEGER PRIMARY KEY, data BLOB NOT NULL)")
            .unwrap();
        chess_storage::sqlite_url(&path)
    }

    /// Commits one row of about a page.
    fn insert(conn: &Connection) {
        conn.execute("INSERT INTO blobs (data) VALUES (randomblob(3000))", [])
            .unwrap();
    }

    fn file_len(url: &str) -> u64 {
        std::fs::metadata(chess_storage::sqlite_path(url).unwrap())
            .unwrap()
            .len()
    }

    /// A fresh database (in the directory returned, removed when it is
    /// dropped), its URL, and a writer connection whose checkpoints are
    /// taken over with `limits`.
    fn writer(limits: Limits) -> (tempfile::TempDir, String, Connection, WalCheckpoints) {
        let dir = tempfile::tempdir().unwrap();
        let url = database(dir.path());
        let writer = super::super::connect(&url).unwrap().unwrap();
        let checkpoints = WalCheckpoints::take_over(&url, &writer, limits).unwrap();
        (dir, url, writer, checkpoints)
    }

    /// Waits up to 10 s for `done`.
    fn eventually(mut done: impl FnMut() -> bool) -> bool {
        for _ in 0..1000 {
            if done() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    #[test]
    fn the_log_is_copied_back_and_starts_over_within_its_bound() {
        let limits = Limits {
            start: 40,
            bound: 400,
            unasked: Duration::from_secs(600),
        };
        let (_dir, url, writer, mut checkpoints) = writer(limits);
        let (mut longest, mut restarts, mut last, mut step) = (0, 0, 0, 0);
        for _ in 0..3000 {
            insert(&writer);
            checkpoints.after_commit(&writer, false);
            let pages = checkpoints.log_pages();
            longest = longest.max(pages);
            if pages < last {
                restarts += 1;
            } else {
                step = step.max(pages - last);
            }
            last = pages;
        }
        // The writer steps in at the first commit past the bound (plus
        // `start`) at the latest, and after each commit more while the
        // thread is in a checkpoint of its own (put off).
        let deferred = i64::try_from(checkpoints.deferred).unwrap();
        assert!(
            longest <= limits.bound + limits.start + step * (1 + deferred),
            "the log reached {longest} pages, {step} at most a commit, \
             {deferred} checkpoints put off"
        );
        assert!(restarts >= 3, "the log started over {restarts} times");
        // The writer's connection never checkpoints by itself, so the rows
        // in the database file were copied there by these checkpoints.
        assert!(file_len(&url) > 3000 * 3000 / 2, "{}", file_len(&url));
        let count: i64 = writer
            .query_row("SELECT count(*) FROM blobs", [], |row| row.get(0))
            .unwrap();
        assert_eq!(count, 3000);
    }

    #[test]
    fn the_thread_copies_the_log_back_while_the_writer_goes_on() {
        let (_dir, url, writer, mut checkpoints) = writer(Limits {
            start: 100,
            // Never reached: only the thread copies pages back.
            bound: i64::MAX / 2,
            unasked: Duration::from_secs(600),
        });
        let before = file_len(&url);
        for _ in 0..500 {
            insert(&writer);
            checkpoints.after_commit(&writer, true);
        }
        assert!(
            eventually(|| file_len(&url) > before + 400 * 3000),
            "the database file stayed at {} bytes",
            file_len(&url)
        );
    }

    #[test]
    fn writes_the_writer_does_not_see_are_copied_back_unasked() {
        let (_dir, url, _writer, _checkpoints) = writer(Limits {
            start: 100,
            bound: 1000,
            unasked: Duration::from_millis(100),
        });
        // Another connection, with SQLite's own checkpoints off, as the
        // pool's are beside this writer.
        let other = super::super::connect(&url).unwrap().unwrap();
        other.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        let before = file_len(&url);
        for _ in 0..50 {
            insert(&other);
        }
        assert!(
            eventually(|| file_len(&url) > before + 40 * 3000),
            "the database file stayed at {} bytes",
            file_len(&url)
        );
    }
}
