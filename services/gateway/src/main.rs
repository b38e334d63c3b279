//! `chess-gateway`: serves the public gRPC API and the uqchess line protocol
//! until shut down.

use std::process::ExitCode;

/// jemalloc, whose background thread gives freed memory back to the system
/// within seconds: the gateway's memory follows its connections down after
/// a crowd leaves, where glibc's allocator would keep most of its peak.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    chess_runtime::service::main("gateway", chess_gateway::run)
}
