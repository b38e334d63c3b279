//! Calls to the other services, through the typed clients of
//! [`chess_internal_clients`].
//!
//! - [`EngineClient`]: the engine service, for computer moves and hints.
//! - [`rating`]: the rating service, fed from the results outbox by the
//!   [`Reporter`] task.

pub mod rating;

pub use chess_internal_clients::{EngineClient, EngineError, RatingClient};
pub use rating::Reporter;
