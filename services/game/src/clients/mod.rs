//! Calls to the other services.
//!
//! - [`engine`]: the engine service, for computer moves and hints.
//! - [`rating`]: the rating service, fed from the results outbox by the
//!   [`Reporter`] task.

pub mod engine;
pub mod rating;

pub use engine::{Engine, EngineError};
pub use rating::Reporter;
