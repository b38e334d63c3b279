//! An async driver for one UCI chess engine process (Stockfish).
//!
//! [`Engine::start`] spawns the engine with pipes to its standard input and
//! output (standard error is inherited; the process dies with the handle) and
//! completes the handshake: `isready` → `readyok`, then `uci` → `uciok`.
//! The handle then sends options, positions and searches:
//!
//! ```no_run
//! # async fn example() -> Result<(), chess_uci::Error> {
//! use chess_uci::{Engine, Go, SearchEvent, Timeouts};
//! let mut engine = Engine::start("stockfish".as_ref(), Timeouts::default()).await?;
//! engine.set_option("Threads", 1).await?;
//! engine.position(None, &["e2e4".parse().unwrap()]).await?;
//! let mut search = engine.go(&Go { depth: Some(12), ..Go::default() }).await?;
//! while let Some(event) = search.next().await? {
//!     match event {
//!         SearchEvent::Info(info) => println!("depth {:?} score {:?}", info.depth, info.score),
//!         SearchEvent::BestMove(best) => println!("best {:?}", best.best),
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! What lives where:
//! - `engine`: the process, its commands, searches (`engine/search.rs`) and perft, and
//!   the bookkeeping that makes every operation safe to abandon half-way:
//!   the engine remembers which end marker (`readyok`, `bestmove`, the blank
//!   line after `Nodes searched:`) it still owes and reads up to it before the
//!   next command, so no command ever reads another's output.
//! - `parse`: what each output line means (`info`, `bestmove`, perft lines,
//!   handshake lines), with unit tests.
//! - `lines`: cancel-safe line reading with a bound on line length.
//! - `error`: what can fail, and which failures leave the engine unusable.
//!
//! Every wait has a timeout ([`Timeouts`]); a process that exits or closes a
//! pipe is reported as [`Error::Closed`]. After any error but
//! [`Error::BadCommand`] the engine is unusable and should be replaced.

mod engine;
mod error;
mod lines;
mod parse;

pub use engine::{Engine, Go, MAX_LINE_BYTES, Perft, Search, SearchEvent, Timeouts};
pub use error::Error;
pub use parse::{BestMove, Bound, Info, Line, OptionInfo, ParseError, Score};
