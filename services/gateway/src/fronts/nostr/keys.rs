//! The server's Nostr key pair: a file holding the secret key (64
//! hexadecimal digits, or `nsec…`), created with a fresh key on first start
//! and readable by its owner only.

use std::{io::Write as _, path::Path};

use nostr_sdk::prelude::{Keys, SecretKey};

/// Why the key could not be had.
#[derive(Debug, thiserror::Error)]
pub enum KeyFileError {
    #[error("Nostr key file {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("Nostr key file {path} holds no secret key (64 hexadecimal digits or nsec…)")]
    Invalid { path: String },
}

/// Reads the key at `path`, or creates the file with a new key.
pub fn load_or_create(path: &Path) -> Result<Keys, KeyFileError> {
    let io = |source| KeyFileError::Io {
        path: path.display().to_string(),
        source,
    };
    match std::fs::read_to_string(path) {
        Ok(text) => {
            SecretKey::parse(text.trim())
                .map(Keys::new)
                .map_err(|_| KeyFileError::Invalid {
                    path: path.display().to_string(),
                })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).map_err(io)?;
            }
            let keys = Keys::generate();
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            match options.open(path) {
                Ok(mut file) => {
                    writeln!(file, "{}", keys.secret_key().to_secret_hex()).map_err(io)?;
                    file.sync_all().map_err(io)?;
                    Ok(keys)
                }
                // Another process created it first: use theirs.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => load_or_create(path),
                Err(e) => Err(io(e)),
            }
        }
        Err(e) => Err(io(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_created_once_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nostr").join("server.key");
        let first = load_or_create(&path).unwrap();
        let again = load_or_create(&path).unwrap();
        assert_eq!(first.public_key(), again.public_key());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::write(&path, "not a key\n").unwrap();
        assert!(matches!(
            load_or_create(&path),
            Err(KeyFileError::Invalid { .. })
        ));
    }
}
