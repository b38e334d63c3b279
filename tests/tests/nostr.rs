//! Runs the Python end-to-end test of chess over Nostr
//! (`tests/nostr/test_nostr.py`): a real relay in its own process
//! (`tests/nostr/relay.py`, nostr-sdk's `LocalRelay`), `chess-stack` with its
//! Nostr bridge on that relay, and players that are independent Nostr
//! clients with their own keys (`tests/nostr/player.py`). The Python test
//! starts the relay and the stack itself, because it kills and restarts
//! both (the relay, and the gateway under `chess-stack`) mid-game.
//!
//! Needs `python3` with the packages of `tests/python/requirements.txt`
//! (grpcio-tools, nostr-sdk, chess): `scripts/setup test` installs them in
//! `.venv/`, which `scripts/test` puts first on `PATH`.

use std::path::PathBuf;

use tokio::process::Command;

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Fails with the fix if the Python packages are missing.
async fn require_python_packages() {
    chess_e2e::require_python_modules(
        &["grpc", "grpc_tools", "nostr_sdk", "chess"],
        "the Nostr test",
    )
    .await;
}

#[tokio::test]
async fn chess_over_nostr_works_end_to_end() {
    require_python_packages().await;
    let status = Command::new("python3")
        .arg(manifest_dir().join("nostr").join("test_nostr.py"))
        .env("CHESS_E2E_STACK", chess_e2e::binary("chess-stack"))
        .env("CHESS_E2E_PROTO", manifest_dir().join("../proto"))
        .kill_on_drop(true)
        .status()
        .await
        .expect("run the Python test");
    assert!(status.success(), "the Nostr test failed: {status}");
}
