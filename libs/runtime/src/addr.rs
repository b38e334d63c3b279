//! The default addresses of the services, in one place: each service
//! listens on its own by default, callers reach it there by default, and
//! `chess-stack` binds the same ones, so the documented commands work
//! against a service run alone and against the whole stack.

/// The public gRPC (and gRPC-Web) API of the gateway.
pub const GATEWAY: &str = "127.0.0.1:50051";
/// The uqchess line protocol of the gateway.
pub const UQCHESS: &str = "127.0.0.1:50050";
/// The matchmaking service.
pub const MATCHMAKING: &str = "127.0.0.1:50052";
/// The game service.
pub const GAME: &str = "127.0.0.1:50053";
/// The rating service.
pub const RATING: &str = "127.0.0.1:50054";
/// The engine service.
pub const ENGINE: &str = "127.0.0.1:50055";

/// The address service `service` (`"game"`, …) listens on by default.
pub fn default_listen(service: &str) -> Option<&'static str> {
    match service {
        "gateway" => Some(GATEWAY),
        "matchmaking" => Some(MATCHMAKING),
        "game" => Some(GAME),
        "rating" => Some(RATING),
        "engine" => Some(ENGINE),
        _ => None,
    }
}
