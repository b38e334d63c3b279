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

/// `chess.common.v1`: types shared by every service and the public API.
pub mod common {
    pub mod v1 {
        tonic::include_proto!("chess.common.v1");
    }
}

/// `chess.engine.v1`: the engine service.
pub mod engine {
    pub mod v1 {
        tonic::include_proto!("chess.engine.v1");
    }
}

/// `chess.game.v1`: the game service.
pub mod game {
    pub mod v1 {
        tonic::include_proto!("chess.game.v1");
    }
}

/// `chess.matchmaking.v1`: the matchmaking service.
pub mod matchmaking {
    pub mod v1 {
        tonic::include_proto!("chess.matchmaking.v1");
    }
}

/// `chess.rating.v1`: the rating service.
pub mod rating {
    pub mod v1 {
        tonic::include_proto!("chess.rating.v1");
    }
}

/// `chess.gateway.v1`: the public API.
pub mod gateway {
    pub mod v1 {
        tonic::include_proto!("chess.gateway.v1");
    }
}
