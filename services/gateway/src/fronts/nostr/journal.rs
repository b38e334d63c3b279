//! What the bridge must remember across a restart, in one append-only file:
//! the events it has handled (so a relay's replay or duplicate is not
//! handled again) and the games it announces (so their moves keep being
//! announced, from the last one told).
//!
//! One record per line:
//!
//! - `e <event id> <created_at>`: the event was taken for handling; written
//!   and synced before anything is done for it, so each event is handled at
//!   most once even across a crash.
//! - `g <game id> <white key> <black key>`: a game between these Nostr keys.
//! - `t <game id> <ply>`: every move up to `ply` was published.
//! - `x <game id>`: its ending was published; the game is forgotten.
//! - `q <key> <since>`: the key asked to play at `since` and waits.
//! - `u <key>`: it waits no more (paired, or gave up).
//!
//! A torn last line (a crash mid-write) is skipped. On opening, the file is
//! rewritten with only what is still needed: events inside the acceptance
//! window and games not yet over.

use std::{
    collections::{HashMap, HashSet},
    fs::{File, OpenOptions},
    io::{BufRead as _, BufReader, Write as _},
    path::{Path, PathBuf},
};

use chess_domain::GameId;
use nostr_sdk::prelude::EventId;

/// A game the bridge announces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Followed {
    pub white: String,
    pub black: String,
    /// Moves published so far.
    pub told_ply: u32,
}

/// The journal, loaded; every change is appended to the file.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: File,
    /// Handled event ids and their `created_at`.
    handled: HashMap<String, u64>,
    games: HashMap<GameId, Followed>,
    /// Keys waiting for an opponent, since when (Unix seconds).
    waiting: HashMap<String, u64>,
    /// Records appended since the file was last rewritten.
    appended: usize,
    /// Records appended before a rewrite is due, at least.
    compact_after: usize,
}

/// Records appended before the file is rewritten with only the live ones
/// (at least; more when there are more live records).
const COMPACT_AFTER: usize = 10_000;

impl Journal {
    /// Opens (or creates) the journal at `path`, keeping the handled events
    /// created at or after `keep_since` (Unix seconds).
    pub fn open(path: &Path, keep_since: u64) -> std::io::Result<Self> {
        let mut handled = HashMap::new();
        let mut games: HashMap<GameId, Followed> = HashMap::new();
        let mut waiting = HashMap::new();
        match File::open(path) {
            Ok(file) => {
                for line in BufReader::new(file).lines() {
                    let Ok(line) = line else { break };
                    let words: Vec<&str> = line.split(' ').collect();
                    match words.as_slice() {
                        ["e", id, at] => {
                            if let Ok(at) = at.parse::<u64>() {
                                handled.insert((*id).to_owned(), at);
                            }
                        }
                        ["g", game, white, black] => {
                            // The journal holds only ids the bridge wrote.
                            games.entry(GameId::trusted(*game)).or_insert(Followed {
                                white: (*white).to_owned(),
                                black: (*black).to_owned(),
                                told_ply: 0,
                            });
                        }
                        ["t", game, ply] => {
                            if let (Some(g), Ok(ply)) = (games.get_mut(*game), ply.parse::<u32>()) {
                                // The last line wins: a takeback tells a lower ply.
                                g.told_ply = ply;
                            }
                        }
                        ["x", game] => {
                            games.remove(*game);
                        }
                        ["q", key, since] => {
                            if let Ok(since) = since.parse::<u64>() {
                                waiting.insert((*key).to_owned(), since);
                            }
                        }
                        ["u", key] => {
                            waiting.remove(*key);
                        }
                        // A torn or unknown line.
                        _ => {}
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        handled.retain(|_, at| *at >= keep_since);
        let file = Self::rewrite(path, &handled, &games, &waiting)?;
        Ok(Self {
            path: path.to_owned(),
            file,
            handled,
            games,
            waiting,
            appended: 0,
            compact_after: COMPACT_AFTER,
        })
    }

    /// Writes only the live records beside the file at `path`, swaps the two
    /// and returns the new file, open for appending.
    fn rewrite(
        path: &Path,
        handled: &HashMap<String, u64>,
        games: &HashMap<GameId, Followed>,
        waiting: &HashMap<String, u64>,
    ) -> std::io::Result<File> {
        let fresh = path.with_extension("new");
        {
            let mut out = std::io::BufWriter::new(File::create(&fresh)?);
            for (id, at) in handled {
                writeln!(out, "e {id} {at}")?;
            }
            for (game, f) in games {
                writeln!(out, "g {game} {} {}", f.white, f.black)?;
                writeln!(out, "t {game} {}", f.told_ply)?;
            }
            for (key, since) in waiting {
                writeln!(out, "q {key} {since}")?;
            }
            out.into_inner()
                .map_err(std::io::IntoInnerError::into_error)?
                .sync_all()?;
        }
        std::fs::rename(&fresh, path)?;
        if let Some(dir) = path.parent() {
            // The rename itself must survive a crash.
            File::open(dir)?.sync_all()?;
        }
        OpenOptions::new().append(true).open(path)
    }

    /// Rewrites the file with only the live records once the records
    /// appended since the last rewrite far outnumber them, so a bridge that
    /// runs for months keeps a file of the size of its last hour.
    fn compact_if_due(&mut self) -> std::io::Result<()> {
        let live = self.handled.len() + 2 * self.games.len() + self.waiting.len();
        if self.appended < self.compact_after.max(2 * live) {
            return Ok(());
        }
        self.file = Self::rewrite(&self.path, &self.handled, &self.games, &self.waiting)?;
        self.appended = 0;
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn append(&mut self, line: &str, sync: bool) -> std::io::Result<()> {
        self.file.write_all(line.as_bytes())?;
        if sync {
            self.file.sync_data()?;
        }
        self.appended += 1;
        Ok(())
    }

    /// Takes event `id` for handling: false if it was taken before. The
    /// record is on disk when this returns true.
    pub fn take(&mut self, id: &EventId, created_at: u64) -> std::io::Result<bool> {
        let id = id.to_hex();
        if self.handled.contains_key(&id) {
            return Ok(false);
        }
        self.append(&format!("e {id} {created_at}\n"), true)?;
        self.handled.insert(id, created_at);
        if let Err(e) = self.compact_if_due() {
            // The longer file still holds every record.
            tracing::warn!(error = %e, path = %self.path.display(), "cannot compact the Nostr journal");
        }
        Ok(true)
    }

    /// Forgets handled events created before `keep_since`: they fall outside
    /// the acceptance window and would be refused anyway.
    pub fn forget_before(&mut self, keep_since: u64) {
        self.handled.retain(|_, at| *at >= keep_since);
    }

    /// Starts announcing a game (a no-op for one already known).
    pub fn follow(&mut self, game_id: &GameId, white: &str, black: &str) -> std::io::Result<()> {
        if self.games.contains_key(game_id) {
            return Ok(());
        }
        self.append(&format!("g {game_id} {white} {black}\n"), true)?;
        self.games.insert(
            game_id.clone(),
            Followed {
                white: white.to_owned(),
                black: black.to_owned(),
                told_ply: 0,
            },
        );
        Ok(())
    }

    /// Records that every move of a game up to `ply` was published.
    pub fn told(&mut self, game_id: &GameId, ply: u32) -> std::io::Result<()> {
        let Some(game) = self.games.get_mut(game_id) else {
            return Ok(());
        };
        if ply <= game.told_ply {
            return Ok(());
        }
        game.told_ply = ply;
        // Losing this record only repeats a state event after a crash.
        self.append(&format!("t {game_id} {ply}\n"), false)
    }

    /// Records that a game was taken back to `ply`, whose position was
    /// published: its moves after `ply` are told again as they are played.
    pub fn rewound(&mut self, game_id: &GameId, ply: u32) -> std::io::Result<()> {
        let Some(game) = self.games.get_mut(game_id) else {
            return Ok(());
        };
        if ply >= game.told_ply {
            return Ok(());
        }
        game.told_ply = ply;
        self.append(&format!("t {game_id} {ply}\n"), false)
    }

    /// Records that a game's ending was published: it is forgotten.
    pub fn ended(&mut self, game_id: &GameId) -> std::io::Result<()> {
        if self.games.remove(game_id).is_some() {
            self.append(&format!("x {game_id}\n"), false)?;
        }
        Ok(())
    }

    /// Records that `key` waits for an opponent since `since`.
    pub fn wait(&mut self, key: &str, since: u64) -> std::io::Result<()> {
        self.append(&format!("q {key} {since}\n"), true)?;
        self.waiting.insert(key.to_owned(), since);
        Ok(())
    }

    /// Records that `key` waits no more.
    pub fn stop_waiting(&mut self, key: &str) -> std::io::Result<()> {
        if self.waiting.remove(key).is_some() {
            self.append(&format!("u {key}\n"), false)?;
        }
        Ok(())
    }

    /// The keys waiting for an opponent, and since when.
    pub fn waiting(&self) -> impl Iterator<Item = (&String, &u64)> {
        self.waiting.iter()
    }

    pub fn game(&self, game_id: &GameId) -> Option<&Followed> {
        self.games.get(game_id)
    }

    /// Every game being announced.
    pub fn games(&self) -> impl Iterator<Item = (&GameId, &Followed)> {
        self.games.iter()
    }

    /// Handled events remembered (for tests and logs).
    pub fn handled_ids(&self) -> HashSet<&str> {
        self.handled.keys().map(String::as_str).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event_id(n: u64) -> EventId {
        EventId::from_hex(&format!("{n:064x}")).unwrap()
    }

    #[test]
    fn events_are_taken_once_across_a_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal");
        let (aa, bb) = (event_id(0xaa), event_id(0xbb));
        let mut j = Journal::open(&path, 0).unwrap();
        assert!(j.take(&aa, 100).unwrap());
        assert!(!j.take(&aa, 100).unwrap());
        assert!(j.take(&bb, 50).unwrap());
        drop(j);
        let mut j = Journal::open(&path, 60).unwrap();
        assert!(!j.take(&aa, 100).unwrap(), "kept: inside the window");
        let aa = aa.to_hex();
        assert_eq!(j.handled_ids(), HashSet::from([aa.as_str()]), "bb fell out");
    }

    #[test]
    fn games_and_waiters_survive_a_reopening_and_ended_ones_are_dropped() {
        let (g1, g2) = (GameId::trusted("g1"), GameId::trusted("g2"));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal");
        let mut j = Journal::open(&path, 0).unwrap();
        j.follow(&g1, "w", "b").unwrap();
        j.follow(&g2, "w2", "b2").unwrap();
        j.told(&g1, 3).unwrap();
        j.told(&g1, 2).unwrap();
        j.ended(&g2).unwrap();
        j.wait("k1", 10).unwrap();
        j.wait("k2", 20).unwrap();
        j.stop_waiting("k1").unwrap();
        drop(j);
        // The stored form, which a bridge of another version reads.
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "g g1 w b\ng g2 w2 b2\nt g1 3\nx g2\nq k1 10\nq k2 20\nu k1\n"
        );
        // A torn last line is ignored.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"t g1 ").unwrap();
        drop(f);
        let j = Journal::open(&path, 0).unwrap();
        assert_eq!(
            j.game(&g1),
            Some(&Followed {
                white: "w".into(),
                black: "b".into(),
                told_ply: 3
            })
        );
        assert_eq!(j.games().count(), 1);
        assert_eq!(
            j.waiting().collect::<Vec<_>>(),
            vec![(&"k2".to_owned(), &20)]
        );
        drop(j);
        // Compaction kept it all.
        let j = Journal::open(&path, 0).unwrap();
        assert_eq!(j.game(&g1).map(|g| g.told_ply), Some(3));
    }

    #[test]
    fn a_long_run_keeps_the_file_to_its_live_records() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal");
        let mut j = Journal::open(&path, 0).unwrap();
        j.compact_after = 200;
        let g1 = GameId::trusted("g1");
        j.follow(&g1, "w", "b").unwrap();
        for i in 0..2_000_u64 {
            j.forget_before(i.saturating_sub(100));
            assert!(j.take(&event_id(i), i).unwrap());
        }
        let lines = std::fs::read_to_string(&path).unwrap().lines().count();
        // At most the 101 live events and the game, and what was appended
        // since the last rewrite.
        assert!(lines <= 103 + 200, "{lines} lines");
        drop(j);
        let mut j = Journal::open(&path, 0).unwrap();
        let last = 1_999;
        assert!(!j.take(&event_id(last), last).unwrap());
        assert!(j.game(&g1).is_some());
    }
}
