//! The load generator's parts: measurement ([`stats`], [`procs`]), the
//! baselines measured in the same run ([`baseline`], and [`engine`] for the
//! engine's own rate) and the loads through
//! the uqchess front ([`uqchess`]) and the public gRPC API ([`grpc`]), and
//! stored games to resume ([`resume`]).

pub mod baseline;
pub mod engine;
pub mod grpc;
pub mod procs;
pub mod resume;
pub mod stats;
pub mod uqchess;
