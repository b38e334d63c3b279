//! A search: its limits (`go …`), what it reports, and reading it to its
//! `bestmove` (or abandoning it half-way).

use std::{fmt, time::Duration};

use tokio::time::{Instant, timeout_at};

use super::{Deadline, Engine, Owed};
use crate::{
    error::Error,
    parse::{BestMove, Info, Line, ParseError},
};

/// Limits of a search (`go …`). Unset fields are not sent; with none set the
/// engine searches until told to stop.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Go {
    pub movetime: Option<Duration>,
    pub depth: Option<u32>,
    pub nodes: Option<u64>,
}

impl fmt::Display for Go {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("go")?;
        if let Some(depth) = self.depth {
            write!(f, " depth {depth}")?;
        }
        if let Some(nodes) = self.nodes {
            write!(f, " nodes {nodes}")?;
        }
        if let Some(movetime) = self.movetime {
            write!(f, " movetime {}", movetime.as_millis())?;
        }
        Ok(())
    }
}

/// What a running search reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SearchEvent {
    /// Progress (`info …`).
    Info(Box<Info>),
    /// The end of the search.
    BestMove(BestMove),
}

/// A running search. Dropping it before its `bestmove` is safe: the engine's
/// next command stops the search and reads its output to the end first.
#[derive(Debug)]
pub struct Search<'e> {
    pub(super) engine: &'e mut Engine,
}

impl Search<'_> {
    /// The next progress report or the final `bestmove`; `None` once the best
    /// move was returned. Lines that are neither (`info string` included, as
    /// an [`SearchEvent::Info`] with only `string` set) are returned as they
    /// come; unknown lines are skipped. Cancel-safe.
    pub async fn next(&mut self) -> Result<Option<SearchEvent>, Error> {
        let result = self.next_inner().await;
        self.engine.note(result)
    }

    async fn next_inner(&mut self) -> Result<Option<SearchEvent>, Error> {
        loop {
            let Owed::BestMove { stop_at, give_up } = self.engine.owed else {
                return Ok(None);
            };
            let line = match (give_up, stop_at) {
                (Some(deadline), _) => self.engine.read_line_by(deadline, "bestmove").await?,
                (None, Some(deadline)) => {
                    match timeout_at(deadline.at, self.engine.read_line()).await {
                        Ok(line) => line?,
                        Err(_) => {
                            // The engine overran its movetime: stop it, and
                            // give up if even that gets no answer.
                            self.engine.send_stop().await?;
                            continue;
                        }
                    }
                }
                (None, None) => self.engine.read_line().await?,
            };
            match Line::parse(&line)? {
                Line::Info(info) => return Ok(Some(SearchEvent::Info(info))),
                Line::BestMove(best) => {
                    self.engine.owed = Owed::Nothing;
                    return Ok(Some(SearchEvent::BestMove(best)));
                }
                other => tracing::debug!(?other, "unexpected line during a search"),
            }
        }
    }

    /// Sends `stop` (once); the engine then ends the search with its best
    /// move so far, to be read with [`Search::next`] or [`Search::finish`].
    pub async fn stop(&mut self) -> Result<(), Error> {
        let result = async {
            self.engine.flush().await?;
            self.engine.send_stop().await
        }
        .await;
        self.engine.note(result)
    }

    /// Sends `stop` by itself at `at` if the search is still running then.
    pub fn stop_at(&mut self, at: Instant) {
        if let Owed::BestMove {
            give_up: None,
            stop_at,
        } = &mut self.engine.owed
        {
            let after = at.saturating_duration_since(Instant::now());
            *stop_at = Some(match *stop_at {
                Some(earlier) if earlier.at <= at => earlier,
                _ => Deadline { at, after },
            });
        }
    }

    /// Reads to the end of the search, discarding progress reports.
    pub async fn finish(mut self) -> Result<BestMove, Error> {
        loop {
            match self.next().await? {
                Some(SearchEvent::BestMove(best)) => return Ok(best),
                Some(SearchEvent::Info(_)) => {}
                None => {
                    return Err(Error::Protocol(ParseError {
                        line: String::new(),
                        why: "the search had already ended",
                    }));
                }
            }
        }
    }
}
