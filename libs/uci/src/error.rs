//! Why talking to the engine failed.

use std::{process::ExitStatus, time::Duration};

use crate::parse::ParseError;

/// Why talking to the engine failed. Every error but [`Error::BadCommand`]
/// leaves the engine unusable: it must be killed and started again.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot execute: {0}")]
    Spawn(#[source] std::io::Error),
    #[error("{}", exited(.status))]
    Closed { status: Option<ExitStatus> },
    #[error("no {expected} within {} ms", .after.as_millis())]
    Timeout {
        expected: &'static str,
        after: Duration,
    },
    #[error("an output line longer than {max} bytes")]
    LineTooLong { max: usize },
    #[error("unexpected output: {0}")]
    Protocol(#[from] ParseError),
    #[error("cannot talk to the engine: {0}")]
    Io(#[source] std::io::Error),
    #[error("refusing to send a malformed command: {0:?}")]
    BadCommand(String),
    #[error("the engine failed earlier and must be restarted")]
    Poisoned,
}

impl Error {
    /// Whether the process is gone (exited, or closed a pipe).
    pub fn is_closed(&self) -> bool {
        matches!(self, Self::Closed { .. })
    }
}

fn exited(status: &Option<ExitStatus>) -> String {
    match status {
        Some(status) => format!("the engine exited ({status})"),
        None => "the engine closed its pipes".to_owned(),
    }
}
