//! Exclusive locks on files, so two processes never run on the same SQLite
//! database or data directory.
//!
//! A lock is an advisory `flock` on a file of its own (a `.lock` beside the
//! thing it protects), never on a database file itself: SQLite locks its
//! files with POSIX record locks, which a process loses when it closes any
//! descriptor of the file, and on NFS `flock` is emulated with those same
//! record locks. The kernel releases a `flock` when the last descriptor of
//! it closes, so a process that is killed, however abruptly, leaves nothing
//! to clean up. The file holds the owner's process id and program name for
//! the message the next one prints.

use std::{
    fs::File,
    io::{Read as _, Seek as _, Write as _},
    os::fd::AsFd as _,
    path::{Path, PathBuf},
};

use rustix::{
    fs::{FlockOperation, flock},
    io::Errno,
};

/// Why a lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{what} {} is in use by another {}", path.display(), owner_text(.owner))]
    Held {
        /// What the lock protects, e.g. `database file` or `data directory`.
        what: &'static str,
        path: PathBuf,
        owner: Option<Owner>,
    },
    #[error("cannot lock {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Who holds a lock, as written in its file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner {
    pub pid: u32,
    pub program: String,
}

fn owner_text(owner: &Option<Owner>) -> String {
    match owner {
        Some(Owner { pid, program }) => format!("{program} (pid {pid})"),
        None => "process".to_owned(),
    }
}

/// A held lock; dropping it (or the process ending) releases it.
#[derive(Debug)]
pub struct FileLock {
    file: File,
    path: PathBuf,
}

impl FileLock {
    /// Takes the lock file `path` (created if missing) at once, or fails
    /// with [`Error::Held`] naming the owner. `what` and `shown` describe
    /// what is protected in that message (`data directory`, `./data`).
    pub fn acquire(path: &Path, what: &'static str, shown: &Path) -> Result<Self, Error> {
        let io = |source| Error::Io {
            path: path.to_owned(),
            source,
        };
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io)?;
        match flock(file.as_fd(), FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(Errno::WOULDBLOCK) => {
                return Err(Error::Held {
                    what,
                    path: shown.to_owned(),
                    owner: read_owner(&mut file),
                });
            }
            Err(e) => return Err(io(e.into())),
        }
        let program = std::env::current_exe()
            .ok()
            .and_then(|p| Some(p.file_name()?.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "process".to_owned());
        file.set_len(0).map_err(io)?;
        file.rewind().map_err(io)?;
        writeln!(file, "{}\n{program}", std::process::id()).map_err(io)?;
        Ok(Self {
            file,
            path: path.to_owned(),
        })
    }

    /// Lets child processes inherit the lock: it is then released only when
    /// this process and every child have exited.
    pub fn share_with_children(&self) -> Result<(), Error> {
        use rustix::io::{FdFlags, fcntl_getfd, fcntl_setfd};
        let fd = self.file.as_fd();
        fcntl_getfd(fd)
            .and_then(|flags| fcntl_setfd(fd, flags - FdFlags::CLOEXEC))
            .map_err(|e| Error::Io {
                path: self.path.clone(),
                source: e.into(),
            })
    }
}

/// The owner written in a lock file, if it can be read.
fn read_owner(file: &mut File) -> Option<Owner> {
    let mut text = String::new();
    file.read_to_string(&mut text).ok()?;
    let mut lines = text.lines();
    let pid = lines.next()?.trim().parse().ok()?;
    let program = lines.next().unwrap_or("process").trim().to_owned();
    Some(Owner { pid, program })
}

/// The lock file of the SQLite database file `database`: `<database>.lock`.
pub fn lock_path(database: &Path) -> PathBuf {
    let mut name = database.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// Locks the SQLite database file `database` (its directory is created if
/// missing) for this process; None when there is no file (PostgreSQL, or
/// SQLite in memory), which needs no lock.
///
/// One process per file: a second writer would take the same rows and race
/// the first. A service takes it once its flags have proved good, so that a
/// bad one changes nothing, and holds it until it stops.
pub fn database(database: Option<&Path>) -> Result<Option<FileLock>, Error> {
    let Some(database) = database else {
        return Ok(None);
    };
    if let Some(dir) = database.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| Error::Io {
            path: dir.to_owned(),
            source,
        })?;
    }
    FileLock::acquire(&lock_path(database), "database file", database).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_fails_and_names_the_owner() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("sub/game.sqlite");
        let first = database(Some(&db)).unwrap().unwrap();
        let e = database(Some(&db)).unwrap_err();
        let program = std::env::current_exe().unwrap();
        let program = program.file_name().unwrap().to_string_lossy();
        assert_eq!(
            e.to_string(),
            format!(
                "database file {} is in use by another {program} (pid {})",
                db.display(),
                std::process::id()
            )
        );
        drop(first);
        let again = database(Some(&db)).unwrap();
        assert!(again.is_some());
        assert!(database(None).unwrap().is_none());
        assert_eq!(lock_path(&db), dir.path().join("sub/game.sqlite.lock"));
    }
}
