//! The load generator's parts: measurement ([`stats`], [`procs`]), the
//! baselines measured in the same run ([`baseline`]) and the loads
//! ([`uqchess`]).

pub mod baseline;
pub mod procs;
pub mod stats;
pub mod uqchess;
