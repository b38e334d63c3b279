//! Compiles `proto/` with protox (a Rust protobuf compiler, so no system
//! `protoc` is needed) and generates the prost messages and tonic stubs.
//! The encoded descriptor set is written next to them for server reflection.

use std::{env, fs, path::PathBuf};

use prost::Message as _;

const FILES: &[&str] = &[
    "chess/common/v1/common.proto",
    "chess/engine/v1/engine.proto",
    "chess/game/v1/game.proto",
    "chess/matchmaking/v1/matchmaking.proto",
    "chess/rating/v1/rating.proto",
    "chess/gateway/v1/gateway.proto",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR")?).join("../../proto");
    println!("cargo:rerun-if-changed={}", root.display());

    let mut compiler = protox::Compiler::new([&root])?;
    compiler.include_source_info(true).include_imports(true);
    compiler.open_files(FILES)?;
    let fds = compiler.file_descriptor_set();

    let out = PathBuf::from(env::var("OUT_DIR")?);
    fs::write(out.join("chess_descriptor.bin"), fds.encode_to_vec())?;

    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .compile_fds(fds)?;
    Ok(())
}
