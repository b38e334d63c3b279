//! The data directory of one system: made if missing, locked for the stack
//! and the services it starts, and holding their secrets (`token.key`,
//! `internal.key`) and SQLite files.

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
    time::Duration,
};

use chess_runtime::lock::{Error, FileLock};
use tokio::time::Instant;

use crate::StartError;

/// The name of the lock file in a data directory.
pub const LOCK_FILE: &str = "chess-stack.lock";

/// The name of the internal key's file in a data directory.
pub const INTERNAL_KEY_FILE: &str = "internal.key";

/// How long a start waits for the services of a stack that was killed to
/// finish stopping (they stop when their standard input closes).
const ORPHANS_GRACE: Duration = Duration::from_secs(20);

/// A data directory, locked by this stack.
#[derive(Debug)]
pub(crate) struct DataDir {
    /// Its canonical path, which the services are given.
    pub(crate) path: PathBuf,
    pub(crate) keys: Keys,
    /// Held while the stack runs (and by its services).
    _lock: FileLock,
}

/// The secrets of one system, as files in its data directory.
#[derive(Debug)]
pub(crate) struct Keys {
    /// Signs session tokens (the gateway's).
    pub(crate) token: PathBuf,
    /// Signs and checks the calls between the services (all five).
    pub(crate) internal: PathBuf,
}

impl DataDir {
    /// Makes `dir` if missing and locks it, then its keys. The lock comes
    /// before anything is bound or started: a second stack on the same
    /// files must change nothing.
    pub(crate) async fn open(dir: &Path) -> Result<Self, StartError> {
        let error = |source| StartError::DataDir {
            path: dir.display().to_string(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(error)?;
        let path = dir.canonicalize().map_err(error)?;
        let lock = lock(&path, dir).await?;
        let keys = Keys {
            token: secret_file(&path, "token.key").map_err(error)?,
            internal: secret_file(&path, INTERNAL_KEY_FILE).map_err(error)?,
        };
        Ok(Self {
            path,
            keys,
            _lock: lock,
        })
    }

    /// The database URL of the SQLite file `<name>.sqlite` in it.
    pub(crate) fn sqlite(&self, name: &str) -> OsString {
        format!(
            "sqlite://{}?mode=rwc",
            self.path.join(format!("{name}.sqlite")).display()
        )
        .into()
    }
}

/// Whether process `pid` exists.
fn alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

/// Locks `data_dir` (named `shown` in messages) for this stack and the
/// services it starts (they inherit the lock, so it is free only once all
/// of them are gone). A running owner is an error at once; the services of
/// an owner that was killed get a grace period to stop.
async fn lock(data_dir: &Path, shown: &Path) -> Result<FileLock, StartError> {
    let path = data_dir.join(LOCK_FILE);
    let deadline = Instant::now() + ORPHANS_GRACE;
    let mut announced = false;
    loop {
        match FileLock::acquire(&path, "data directory", shown) {
            Ok(lock) => {
                lock.share_with_children().map_err(StartError::Lock)?;
                return Ok(lock);
            }
            Err(Error::Held { owner, .. }) => {
                let owner_gone = owner.as_ref().is_some_and(|o| !alive(o.pid));
                if !owner_gone || Instant::now() >= deadline {
                    return Err(StartError::DataDirInUse {
                        path: shown.to_owned(),
                        owner,
                    });
                }
                if !announced {
                    announced = true;
                    eprintln!(
                        "chess-stack: waiting for the services of a stopped chess-stack to exit ({})",
                        shown.display()
                    );
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => return Err(StartError::Lock(e)),
        }
    }
}

/// The key file `name` in `data_dir` (the gateway's `token.key`, the
/// services' `internal.key`), created with a fresh random secret if missing,
/// readable by the owner only.
fn secret_file(data_dir: &Path, name: &str) -> std::io::Result<PathBuf> {
    use std::{io::Write as _, os::unix::fs::OpenOptionsExt as _};
    let path = data_dir.join(name);
    if !path.exists() {
        let hex = chess_runtime::InternalKey::generate_hex();
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?;
        file.write_all(hex.as_bytes())?;
    }
    Ok(path)
}
