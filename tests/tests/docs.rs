//! The command blocks of `docs/*.md` run as written against a live
//! `chess-stack`: they are the first thing users copy.
//!
//! Every ```` ```sh ```` block of a page runs, in order, in one `bash` from the
//! repository root (later blocks use names earlier ones set), with `set -e`
//! so that any failing command fails the test. The only change made to the
//! text is the addresses: the stack under test listens on free ports rather
//! than the documented defaults, so those are replaced by the real ones.

use std::{path::Path, process::Stdio, time::Duration};

use chess_e2e::StackProcess;
use nix::{
    sys::signal::{Signal, killpg},
    unistd::Pid,
};
use tokio::{
    io::{AsyncRead, AsyncReadExt as _},
    process::Command,
    time::timeout,
};

/// How long one page's commands may take.
const PAGE_TIMEOUT: Duration = Duration::from_secs(180);

/// The repository's root.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the repository")
}

/// The `sh` fenced blocks of a Markdown text, in order.
fn sh_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        match &mut current {
            None if line.trim_end() == "```sh" => current = Some(String::new()),
            None => {}
            Some(_) if line.trim_end() == "```" => blocks.extend(current.take()),
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
        }
    }
    assert!(current.is_none(), "an sh block is not closed");
    blocks
}

/// Fails with the set-up command when a tool the pages use is missing.
async fn require_tool(tool: &str) {
    let found = Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await
        .is_ok_and(|s| s.success());
    assert!(
        found,
        "{tool} is not on PATH: run `scripts/setup test` (it installs {tool}) and the tests with scripts/test"
    );
}

/// Runs `script` from the repository root; its exit status and output.
///
/// The script runs in a process group of its own, ended as soon as the
/// script is: streams a page leaves running in the background (and buf's
/// launcher starts the real buf as a child of its own) end with it.
async fn run(script: &str) -> (bool, String, String) {
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(format!("set -euo pipefail\n{script}"))
        .current_dir(root())
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("bash runs");
    let group = Pid::from_raw(child.id().expect("running") as i32);
    let collect = |mut pipe: Box<dyn AsyncRead + Unpin + Send>| {
        tokio::spawn(async move {
            let mut text = Vec::new();
            let _ = pipe.read_to_end(&mut text).await; // a cut pipe keeps what came
            String::from_utf8_lossy(&text).into_owned()
        })
    };
    let stdout = collect(Box::new(child.stdout.take().expect("stdout")));
    let stderr = collect(Box::new(child.stderr.take().expect("stderr")));
    let status = timeout(PAGE_TIMEOUT, child.wait()).await;
    // Whatever is left of the group has nothing more to say.
    let _ = killpg(group, Signal::SIGKILL); // the group may be gone already
    let status = status
        .expect("the page's commands finished in time")
        .expect("bash ran");
    (
        status.success(),
        stdout.await.expect("stdout read"),
        stderr.await.expect("stderr read"),
    )
}

#[tokio::test]
async fn calling_the_services_runs_as_written() {
    require_tool("buf").await;
    require_tool("jq").await;
    let page = std::fs::read_to_string(root().join("docs/calling-the-services.md")).unwrap();
    let blocks = sh_blocks(&page);
    assert!(blocks.len() >= 8, "only {} sh blocks found", blocks.len());

    let stack = StackProcess::start(&[], &[]).await;
    let mut script = blocks.concat();
    for (documented, actual) in [
        ("127.0.0.1:50051", stack.gateway.as_str()),
        ("127.0.0.1:50052", stack.internal("matchmaking")),
        ("127.0.0.1:50053", stack.internal("game")),
        ("127.0.0.1:50054", stack.internal("rating")),
        ("127.0.0.1:50055", stack.internal("engine")),
    ] {
        assert!(
            script.contains(documented),
            "the page never calls {documented}"
        );
        script = script.replace(documented, actual);
    }

    let (ok, stdout, stderr) = run(&script).await;
    assert!(
        ok,
        "a documented command failed\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    );
    // What the page's story leads to, as printed along the way.
    for expected in [
        "\"username\": \"alice\"", // Me and GetProfile
        "\"drawOffered\"",         // both streams saw the offer…
        "\"drawDeclined\"",        // …its refusal…
        "\"gameEnded\"",           // …and the resignation
        "1. e4 e5 1-0",            // the PGN
        "\"status\": \"SERVING\"", // health
    ] {
        assert!(
            stdout.contains(expected),
            "{expected} missing from the output\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
        );
    }
    stack.stop().await;
}

#[test]
fn blocks_are_found_in_order() {
    let text = "intro\n```sh\na\nb\n```\n```text\nnot run\n```\n```sh\nc\n```\n";
    assert_eq!(sh_blocks(text), ["a\nb\n", "c\n"]);
}
