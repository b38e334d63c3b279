//! Runs the Python end-to-end tests of the public API (`tests/python/`,
//! stubs generated from `proto/` by grpcio-tools) against the whole system
//! started by `chess-stack`: `test_public_api.py` with the gateway mailing
//! through a real SMTP server (`tests/python/smtp_sink.py`), and
//! `test_odd_requests.py`.
//!
//! Needs `python3` with the packages of `tests/python/requirements.txt`:
//! `scripts/setup test` installs them in `.venv/`, which `scripts/test` puts
//! first on `PATH`.

use std::path::PathBuf;

use chess_e2e::StackProcess;
use tokio::process::Command;

fn python_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python")
}

/// Fails with the fix if the Python packages are missing.
async fn require_python_packages() {
    chess_e2e::require_python_modules(&["grpc", "grpc_tools", "aiosmtpd"], "the Python test").await;
}

#[tokio::test]
async fn the_public_api_works_from_python() {
    require_python_packages().await;
    let sink = chess_testkit::SmtpSink::start().await;
    let stack = StackProcess::start(&["--smtp-url", &sink.url()], &[]).await;
    let mail_dir = sink.dir.path().as_os_str();
    run_python_test(
        stack,
        "test_public_api.py",
        &[("CHESS_E2E_MAIL_DIR", mail_dir)],
    )
    .await;
}

/// Runs `tests/python/<script>` against `stack` (then stops it) with `env`
/// besides the gateway's address and the proto directory, and asserts it
/// passed.
async fn run_python_test(stack: StackProcess, script: &str, env: &[(&str, &std::ffi::OsStr)]) {
    let status = Command::new("python3")
        .arg(python_dir().join(script))
        .env("CHESS_E2E_GATEWAY", &stack.gateway)
        .env(
            "CHESS_E2E_PROTO",
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../proto"),
        )
        .envs(env.iter().copied())
        .status()
        .await
        .expect("run the Python test");
    stack.stop().await;
    assert!(
        status.success(),
        "the Python test {script} failed: {status}"
    );
}

/// Calls every method of the public API with odd requests built at random
/// (`tests/python/test_odd_requests.py`): each must get an ordinary answer,
/// and two players must still be able to play afterwards.
#[tokio::test]
async fn odd_requests_from_python_get_ordinary_answers() {
    require_python_packages().await;
    let stack = StackProcess::start(&[], &[]).await;
    run_python_test(stack, "test_odd_requests.py", &[]).await;
}

/// Every internal service answers a grpcio client over its Unix socket in
/// the stack's data directory (`tests/python/test_unix_sockets.py`), though
/// gRPC's C core names the socket's path as the requests' authority.
#[tokio::test]
async fn every_internal_service_answers_grpcio_over_its_unix_socket() {
    require_python_packages().await;
    let stack = StackProcess::start(&[], &[]).await;
    let mut sockets: Vec<String> = std::fs::read_dir(stack.data.path())
        .expect("read the data directory")
        .filter_map(|entry| {
            let path = entry.expect("a directory entry").path();
            let name = path
                .file_name()?
                .to_str()?
                .strip_suffix(".sock")?
                .to_owned();
            Some(format!("{name}={}", path.display()))
        })
        .collect();
    sockets.sort();
    assert_eq!(
        sockets.len(),
        4,
        "one socket per internal service: {sockets:?}"
    );
    let sockets = sockets.join(",");
    run_python_test(
        stack,
        "test_unix_sockets.py",
        &[("CHESS_E2E_SOCKETS", std::ffi::OsStr::new(&sockets))],
    )
    .await;
}
