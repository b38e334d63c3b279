//! The load generator `chess-load`: its scenarios, one module each or per
//! family, and the parts they are built of.
//!
//! - Scenarios: [`baseline`] (the round trips alone), [`startup`],
//!   [`closed`] (`moves`, `grpc`, `latency`), [`hints`], [`open`],
//!   [`restart`] (`resume`), [`idle`]; [`scenario`] holds what they share
//!   (the stack they start, a measured phase of play, the report lines).
//! - Measurement: [`stats`], [`procs`], and the baselines measured in the
//!   same run ([`baseline`], and [`engine`] for the engine's own rate).
//! - Loads: through the uqchess front ([`uqchess`]) and the public gRPC API
//!   ([`grpc`]), and stored games to resume ([`resume`]).

pub mod baseline;
pub mod closed;
pub mod engine;
pub mod grpc;
pub mod hints;
pub mod idle;
pub mod open;
pub mod procs;
pub mod restart;
pub mod resume;
pub mod scenario;
pub mod startup;
pub mod stats;
pub mod uqchess;
