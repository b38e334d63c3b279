//! A real SMTP server for the tests of mail: Python's aiosmtpd running
//! `tests/python/smtp_sink.py`, which writes what it receives into a
//! directory.

use std::{
    path::PathBuf,
    process::Stdio,
    time::{Duration, Instant},
};

use tokio::{
    io::{AsyncBufReadExt as _, BufReader},
    process::{Child, Command},
};

use crate::{free_port, repo_root};

/// A real SMTP server (Python's aiosmtpd) writing what it receives into a
/// directory: `<n>.json` with the envelope, then `<n>.eml`.
#[derive(Debug)]
pub struct SmtpSink {
    pub child: Child,
    pub port: u16,
    pub dir: tempfile::TempDir,
}

impl SmtpSink {
    /// Starts the sink on a free port, into a fresh temporary directory, and
    /// waits until it says it is ready.
    pub async fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let script = repo_root(env!("CARGO_MANIFEST_DIR")).join("tests/python/smtp_sink.py");
        let mut child = Command::new("python3")
            .arg(&script)
            .args(["--port", &port.to_string(), "--dir"])
            .arg(dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("python3 runs");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let ready = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("the SMTP sink starts within 30 s")
            .expect("read the sink's output");
        assert_eq!(
            ready.as_deref(),
            Some("ready"),
            "the SMTP sink did not start: python3 needs aiosmtpd (scripts/test puts .venv/bin, from scripts/setup test, first on PATH)"
        );
        Self { child, port, dir }
    }

    /// The URL services take as their SMTP server.
    pub fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }

    /// Waits for `count` messages and returns them as (envelope JSON, raw
    /// message) pairs, in arrival order.
    pub async fn messages(&self, count: usize) -> Vec<(String, String)> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let mut found: Vec<PathBuf> = std::fs::read_dir(self.dir.path())
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "eml"))
                .collect();
            if found.len() >= count {
                found.sort_by_key(|p| {
                    p.file_stem()
                        .and_then(|s| s.to_str())
                        .and_then(|s| s.parse::<u32>().ok())
                });
                return found
                    .into_iter()
                    .map(|eml| {
                        let json = std::fs::read_to_string(eml.with_extension("json")).unwrap();
                        (json, std::fs::read_to_string(&eml).unwrap())
                    })
                    .collect();
            }
            assert!(
                Instant::now() < deadline,
                "{count} messages did not arrive (found {})",
                found.len()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}
