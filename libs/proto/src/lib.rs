//! Generated protobuf messages and gRPC stubs for the chess server.
//!
//! One module per package under `proto/chess/`: `chess_proto::game::v1` holds
//! `chess.game.v1`, with its client in `game_service_client` and its server
//! trait in `game_service_server`. [`FILE_DESCRIPTOR_SET`] is every file
//! (imports included) encoded, which the services hand to gRPC reflection.

#![allow(unreachable_pub, missing_debug_implementations, clippy::all)]

/// The encoded `FileDescriptorSet` of every proto file, for server reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/chess_descriptor.bin"));

/// A module `$area::v1` for each package `chess.$area.v1`, with what it is
/// for.
macro_rules! packages {
    ($($area:ident: $what:literal,)*) => {
        $(
            #[doc = concat!("`chess.", stringify!($area), ".v1`: ", $what, ".")]
            pub mod $area {
                pub mod v1 {
                    // What `tonic::include_proto!` does, which takes only a
                    // literal name.
                    include!(concat!(env!("OUT_DIR"), "/chess.", stringify!($area), ".v1.rs"));
                }
            }
        )*
    };
}

packages! {
    common: "types shared by every service and the public API",
    engine: "the engine service",
    game: "the game service",
    matchmaking: "the matchmaking service",
    rating: "the rating service",
    gateway: "the public API",
}
