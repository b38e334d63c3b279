//! One Stockfish process, with the options and game it was last set to.

use std::{collections::HashSet, path::PathBuf, time::Duration};

use chess_domain::GameId;
use chess_uci::{Bound, Engine, Info, Score, SearchEvent, Timeouts};
use shakmaty::{CastlingMode, Position as _, uci::UciMove};
use tokio::time::Instant;

use crate::{
    limits::{MAX_SEARCH_TIME, SearchPlan, Strength},
    position::GamePosition,
};

/// How every process of a pool is started.
#[derive(Clone, Debug)]
pub(crate) struct ProcessConfig {
    pub(crate) stockfish: PathBuf,
    pub(crate) threads: u32,
    pub(crate) hash_mb: u32,
    pub(crate) nice: i32,
    pub(crate) idle: bool,
    pub(crate) timeouts: Timeouts,
}

/// Why a process must be replaced.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Fault {
    #[error(transparent)]
    Engine(#[from] chess_uci::Error),
    #[error("{0}")]
    Wrong(String),
}

impl Fault {
    /// Whether the process was gone (exited or closed a pipe).
    pub(crate) fn is_closed(&self) -> bool {
        matches!(self, Self::Engine(e) if e.is_closed())
    }
}

/// A search request: a legal position, how to search, and its game.
#[derive(Clone, Debug)]
pub struct SearchRequest {
    pub position: GamePosition,
    pub plan: SearchPlan,
    /// The game the position belongs to, if any.
    pub game_id: Option<GameId>,
}

/// What a finished search found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchOutcome {
    pub best_move: UciMove,
    pub ponder: Option<UciMove>,
    /// The evaluation of the line starting with the best move, at the deepest
    /// iteration reported.
    pub score: Option<Score>,
    pub depth: u32,
    pub nodes: u64,
    /// The search time Stockfish reported.
    pub engine_time: Duration,
    /// The principal variation, starting with the best move.
    pub pv: Vec<UciMove>,
}

/// Sets every option a process of the pool relies on, at full strength:
/// `threads` search threads and `hash_mb` MiB of hash. Returns once the
/// engine has taken them (`isready`).
pub async fn configure(
    engine: &mut Engine,
    threads: u32,
    hash_mb: u32,
) -> Result<(), chess_uci::Error> {
    let strength = Strength::FULL;
    engine.set_option("Threads", threads).await?;
    engine.set_option("Hash", hash_mb).await?;
    engine.set_option("UCI_LimitStrength", "false").await?;
    engine
        .set_option("Skill Level", strength.skill_level)
        .await?;
    engine.set_option("MultiPV", strength.multipv).await?;
    engine.is_ready().await
}

/// A running Stockfish process.
#[derive(Debug)]
pub(crate) struct Process {
    engine: Engine,
    strength: Strength,
    game: Option<GameId>,
    started: Instant,
    completed: u64,
}

impl Process {
    /// Starts a process, completes the handshake and sets every option we
    /// rely on, so its state is known.
    pub(crate) async fn start(config: &ProcessConfig) -> Result<Self, chess_uci::Error> {
        let mut engine = Engine::start(&config.stockfish, config.timeouts).await?;
        // Set before the options below: `Threads` makes Stockfish create its
        // search threads anew, and they inherit the main thread's priority
        // and policy. If the kernel refuses, searches compete with the other
        // processes as equals: slower answers elsewhere, never wrong ones.
        let pid = engine
            .pid()
            .and_then(|p| rustix::process::Pid::from_raw(p as i32));
        if let Some(pid) = pid {
            if config.nice != 0
                && let Err(e) = rustix::process::setpriority_process(Some(pid), config.nice)
            {
                tracing::warn!(pid = pid.as_raw_nonzero().get(), error = %e, "cannot lower Stockfish's priority");
            }
            // Always set: a service started under a real-time policy (by
            // `chrt`, say) must not hand it down to searches, which would
            // then take the cores from everything else.
            let (policy, name) = if config.idle {
                (scheduler::Policy::Idle, "SCHED_IDLE")
            } else {
                (scheduler::Policy::Other, "SCHED_OTHER")
            };
            if scheduler::set_policy(pid.as_raw_nonzero().get(), policy, 0).is_err() {
                let e = std::io::Error::last_os_error();
                tracing::warn!(pid = pid.as_raw_nonzero().get(), error = %e, policy = name, "cannot set Stockfish's scheduling policy");
            }
        }
        match configure(&mut engine, config.threads, config.hash_mb).await {
            Ok(()) => Ok(Self {
                engine,
                strength: Strength::FULL,
                game: None,
                started: Instant::now(),
                completed: 0,
            }),
            Err(e) => {
                engine.kill().await;
                Err(e)
            }
        }
    }

    pub(crate) fn pid(&self) -> Option<u32> {
        self.engine.pid()
    }

    /// Whether the process has proved itself: it completed a request, or has
    /// been up for a while. A failure after that restarts it at once.
    pub(crate) fn was_healthy(&self) -> bool {
        self.completed > 0 || self.started.elapsed() > Duration::from_secs(30)
    }

    /// A mark of the output read so far, to tell later whether the process
    /// answered anything since.
    pub(crate) fn output_mark(&self) -> u64 {
        self.engine.lines_read()
    }

    /// Whether the process is known to be dead or unusable.
    pub(crate) fn is_dead(&mut self) -> bool {
        self.engine.is_dead()
    }

    /// Watches the idle process; returns only when it has failed.
    pub(crate) async fn watch(&mut self, ping_every: Duration) -> Fault {
        Fault::Engine(self.engine.watch(ping_every).await)
    }

    pub(crate) async fn quit(self) {
        self.engine.quit().await;
    }

    pub(crate) async fn kill(mut self) {
        self.engine.kill().await;
    }

    /// Tells the process about a change of game, and sets the strength
    /// options the search needs.
    async fn prepare(&mut self, game: Option<&GameId>, strength: Strength) -> Result<(), Fault> {
        // A different game — or a request with none after one with a game —
        // must not profit from (or be misled by) what the hash learnt.
        if self.game.as_ref() != game {
            self.engine.new_game().await?;
            self.game = game.cloned();
        }
        if self.strength.skill_level != strength.skill_level {
            self.engine
                .set_option("Skill Level", strength.skill_level)
                .await?;
            self.strength.skill_level = strength.skill_level;
        }
        if self.strength.multipv != strength.multipv {
            self.engine.set_option("MultiPV", strength.multipv).await?;
            self.strength.multipv = strength.multipv;
        }
        Ok(())
    }

    /// Runs a search to its end. If `cancel` completes first, the search is
    /// stopped and drained, and `None` returned: the process is free again.
    /// Each progress report is handed to `on_info` as it comes.
    pub(crate) async fn search(
        &mut self,
        job: &SearchRequest,
        cancel: impl Future<Output = ()>,
        mut on_info: impl FnMut(&Info),
    ) -> Result<Option<SearchOutcome>, Fault> {
        self.prepare(job.game_id.as_ref(), job.plan.strength)
            .await?;
        self.engine
            .position(job.position.start(), job.position.moves())
            .await?;
        let started = Instant::now();
        let mut search = self.engine.go(&job.plan.go).await?;
        if job.plan.go.movetime.is_none() {
            search.stop_at(started + MAX_SEARCH_TIME);
        }
        tokio::pin!(cancel);
        let mut cancelled = false;
        let mut lines = Lines::default();
        let best = loop {
            tokio::select! {
                biased;
                () = &mut cancel, if !cancelled => {
                    cancelled = true;
                    search.stop().await?;
                }
                event = search.next() => match event? {
                    Some(SearchEvent::Info(info)) => {
                        lines.record(&info);
                        on_info(&info);
                    }
                    Some(SearchEvent::BestMove(best)) => break best,
                    None => return Err(Fault::Wrong("the search ended without a best move".into())),
                },
            }
        };
        if cancelled {
            self.completed += 1;
            return Ok(None);
        }
        let Some(best_move) = best.best else {
            return Err(Fault::Wrong(
                "Stockfish found no move in a position with legal moves".into(),
            ));
        };
        let Some(legal) = job.position.legal(best_move) else {
            return Err(Fault::Wrong(format!(
                "Stockfish chose the illegal move {best_move}"
            )));
        };
        let ponder = best.ponder.filter(|ponder| {
            let mut after = job.position.current().clone();
            after.play_unchecked(legal);
            ponder.to_move(&after).is_ok()
        });
        self.completed += 1;
        Ok(Some(lines.outcome(best_move, ponder)))
    }

    /// Every legal move in Stockfish's `go perft 1` order, checked against
    /// shakmaty's list.
    pub(crate) async fn list_moves(
        &mut self,
        position: &GamePosition,
    ) -> Result<Vec<UciMove>, Fault> {
        self.engine
            .position(position.start(), position.moves())
            .await?;
        let perft = self.engine.perft(1).await?;
        let moves: Vec<UciMove> = perft.moves.into_iter().map(|(m, _)| m).collect();
        let legal: HashSet<UciMove> = position
            .current()
            .legal_moves()
            .iter()
            .map(|m| m.to_uci(CastlingMode::Standard))
            .collect();
        let listed: HashSet<UciMove> = moves.iter().copied().collect();
        if listed != legal || listed.len() != moves.len() {
            return Err(Fault::Wrong(format!(
                "Stockfish listed {} moves where the rules allow {}",
                moves.len(),
                legal.len()
            )));
        }
        self.completed += 1;
        Ok(moves)
    }
}

/// The latest report of each principal variation, and the search's totals.
#[derive(Debug, Default)]
struct Lines {
    /// By multipv index (0 is the best line).
    latest: Vec<Option<Info>>,
    nodes: u64,
    time_ms: u64,
}

impl Lines {
    fn record(&mut self, info: &Info) {
        if let Some(nodes) = info.nodes {
            self.nodes = nodes;
        }
        if let Some(time) = info.time_ms {
            self.time_ms = time;
        }
        if info.pv.is_empty() || info.score.is_none() || info.bound != Bound::Exact {
            return;
        }
        let index = info.multipv.unwrap_or(1).max(1) as usize - 1;
        if index >= 64 {
            return;
        }
        if self.latest.len() <= index {
            self.latest.resize(index + 1, None);
        }
        self.latest[index] = Some(info.clone());
    }

    /// The outcome for `best`: the line starting with it (below Skill Level
    /// 20 that need not be the first), else the first line.
    fn outcome(self, best: UciMove, ponder: Option<UciMove>) -> SearchOutcome {
        let line = self
            .latest
            .iter()
            .flatten()
            .find(|info| info.pv.first() == Some(&best))
            .or_else(|| self.latest.first().and_then(Option::as_ref));
        let pv = match line {
            Some(info) if info.pv.first() == Some(&best) => info.pv.clone(),
            _ => std::iter::once(best).chain(ponder).collect(),
        };
        SearchOutcome {
            best_move: best,
            ponder,
            score: line.and_then(|info| info.score),
            depth: line.and_then(|info| info.depth).unwrap_or(0),
            nodes: self.nodes,
            engine_time: Duration::from_millis(self.time_ms),
            pv,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(line: &str) -> Info {
        match chess_uci::Line::parse(line).unwrap() {
            chess_uci::Line::Info(info) => *info,
            other => panic!("{other:?}"),
        }
    }

    fn mv(text: &str) -> UciMove {
        text.parse().unwrap()
    }

    #[test]
    fn the_outcome_follows_the_best_moves_line() {
        let mut lines = Lines::default();
        lines.record(&info(
            "info depth 5 multipv 1 score cp 30 nodes 100 time 3 pv e2e4 e7e5",
        ));
        lines.record(&info(
            "info depth 5 multipv 2 score cp 10 nodes 150 time 4 pv d2d4 d7d5",
        ));
        lines.record(&info("info depth 6 currmove e2e4 currmovenumber 1"));
        lines.record(&info(
            "info depth 6 multipv 1 score cp 99 lowerbound nodes 200 time 5 pv e2e4",
        ));
        let outcome = lines.outcome(mv("d2d4"), Some(mv("d7d5")));
        assert_eq!(outcome.score, Some(Score::Cp(10)));
        assert_eq!(outcome.pv, vec![mv("d2d4"), mv("d7d5")]);
        assert_eq!(outcome.depth, 5);
        assert_eq!(outcome.nodes, 200);
        assert_eq!(outcome.engine_time, Duration::from_millis(5));
    }

    #[test]
    fn a_best_move_without_its_line_gets_a_short_pv() {
        let mut lines = Lines::default();
        lines.record(&info("info depth 1 multipv 1 score cp 30 pv e2e4"));
        let outcome = lines.outcome(mv("g1f3"), None);
        assert_eq!(outcome.pv, vec![mv("g1f3")]);
        assert_eq!(outcome.score, Some(Score::Cp(30)));
        let outcome = Lines::default().outcome(mv("g1f3"), Some(mv("g8f6")));
        assert_eq!(outcome.pv, vec![mv("g1f3"), mv("g8f6")]);
        assert_eq!(outcome.score, None);
    }
}
