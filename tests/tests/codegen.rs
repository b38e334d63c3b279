//! The stub generation examples of `docs/codegen/` work as its README shows:
//! `buf generate` with each template, then the TypeScript client (Connect
//! over gRPC) and the Python client (grpcio) each register a player and read
//! the profile and the leaderboard from a live `chess-stack`.
//!
//! Needs `npm ci --prefix docs/codegen` (buf, protoc-gen-es, Connect, tsx),
//! protoc and grpc_python_plugin (Debian's protobuf-compiler and
//! protobuf-compiler-grpc) and Python's grpcio: `scripts/setup test`
//! installs all of them.

use std::{
    path::{Path, PathBuf},
    process::Output,
};

use chess_e2e::StackProcess;
use tokio::process::Command;

const SETUP: &str = "install it with `scripts/setup test`";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .expect("repository root")
}

fn codegen_dir() -> PathBuf {
    repo_root().join("docs/codegen")
}

fn node_bin(name: &str) -> PathBuf {
    codegen_dir().join("node_modules/.bin").join(name)
}

/// Fails, naming the fix, unless every tool the examples need is here.
async fn require_tools() {
    for tool in ["buf", "protoc-gen-es", "tsx"] {
        assert!(
            node_bin(tool).is_file(),
            "{tool} is missing from docs/codegen/node_modules: run `npm ci --prefix docs/codegen` ({SETUP})"
        );
    }
    for (tool, package) in [
        ("protoc", "protobuf-compiler"),
        ("grpc_python_plugin", "protobuf-compiler-grpc"),
    ] {
        let found = std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(tool).is_file()));
        assert!(
            found,
            "{tool} is not on PATH: it comes with Debian's {package} ({SETUP})"
        );
    }
    let probe = Command::new("python3")
        .args(["-c", "import grpc, google.protobuf"])
        .output()
        .await
        .unwrap_or_else(|e| panic!("python3 cannot be run ({e}): {SETUP}"));
    assert!(
        probe.status.success(),
        "Python's grpcio is missing ({SETUP}): {}",
        String::from_utf8_lossy(&probe.stderr)
    );
}

/// Runs `command` and returns its standard output, failing with everything
/// it printed if it fails.
async fn run(what: &str, command: &mut Command) -> String {
    let Output {
        status,
        stdout,
        stderr,
    } = command
        .output()
        .await
        .unwrap_or_else(|e| panic!("{what} cannot be started: {e}"));
    let stdout = String::from_utf8_lossy(&stdout).into_owned();
    assert!(
        status.success(),
        "{what} failed ({status}):\n{stdout}\n{}",
        String::from_utf8_lossy(&stderr)
    );
    stdout
}

/// `buf generate` with `template`, into `out`, from the repository's root as
/// the README shows.
async fn generate(template: &str, out: &Path) {
    run(
        &format!("buf generate --template {template}"),
        Command::new(node_bin("buf"))
            .current_dir(repo_root())
            .args(["generate", "--template", template, "-o"])
            .arg(out),
    )
    .await;
}

/// The lines both clients print for `username`.
fn check_output(client: &str, output: &str, username: &str) {
    let lines: Vec<&str> = output.lines().collect();
    assert!(
        lines
            .first()
            .is_some_and(|l| l.starts_with(&format!("registered {username} ("))),
        "{client}: {output}"
    );
    assert!(
        lines.contains(&format!("signed in as {username} <{username}@example.org>").as_str()),
        "{client}: {output}"
    );
    // A new player's blitz rating: club Elo (the stack's default) starts at
    // 1200.
    assert!(
        lines.iter().any(|l| l.starts_with("blitz rating 1200")),
        "{client}: {output}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("leaderboard CLUB_ELO: ")),
        "{client}: {output}"
    );
}

#[tokio::test]
async fn the_generated_typescript_and_python_stubs_call_the_live_gateway() {
    require_tools().await;
    let stack = StackProcess::start(&[], &[]).await;
    // A scratch copy of the example folder: the clients next to their
    // generated stubs, the npm packages reached through a link.
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let dir = scratch.path();
    std::os::unix::fs::symlink(codegen_dir().join("node_modules"), dir.join("node_modules"))
        .expect("link node_modules");
    for file in ["package.json", "client.ts", "client.py"] {
        std::fs::copy(codegen_dir().join(file), dir.join(file)).expect("copy the example");
    }

    generate("docs/codegen/buf.gen.ts.yaml", &dir.join("gen/ts")).await;
    assert!(dir.join("gen/ts/chess/gateway/v1/gateway_pb.ts").is_file());
    let typescript = run(
        "the TypeScript client",
        Command::new(node_bin("tsx"))
            .current_dir(dir)
            .arg(dir.join("client.ts"))
            .args([&stack.gateway, "ts_client"]),
    )
    .await;
    check_output("TypeScript", &typescript, "ts_client");

    generate("docs/codegen/buf.gen.python.yaml", &dir.join("gen/python")).await;
    for file in ["gateway_pb2.py", "gateway_pb2.pyi", "gateway_pb2_grpc.py"] {
        assert!(
            dir.join("gen/python/chess/gateway/v1").join(file).is_file(),
            "{file}"
        );
    }
    let python = run(
        "the Python client",
        Command::new("python3")
            .current_dir(dir)
            .arg(dir.join("client.py"))
            .args([&stack.gateway, "py_client"]),
    )
    .await;
    check_output("Python", &python, "py_client");
    stack.stop().await;
}
