//! The command blocks of the pages under `docs/` run as written against a
//! live `chess-stack`: they are the first thing users copy.
//!
//! Every ```` ```sh ```` block of a page runs, in order, in one `bash` from the
//! repository root (later blocks use names earlier ones set), with `set -e`
//! so that any failing command fails the test. The only change made to the
//! text is the addresses: the stack under test listens on free ports rather
//! than the documented defaults, and keeps its files (keys, sockets) in a
//! data directory of its own, so those are replaced by the real ones.

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

/// The pages with commands, each with what its run must print.
const PAGES: [(&str, &[&str]); 2] = [
    (
        "docs/calling-the-services.md",
        &[
            "\"username\": \"alice\"", // Me and GetProfile
            "\"drawOffered\"",         // both streams saw the offer…
            "\"drawDeclined\"",        // …its refusal…
            "\"gameEnded\"",           // …and the resignation
            "1. e4 e5 1-0",            // the PGN
            "\"status\": \"SERVING\"", // health
        ],
    ),
    (
        "docs/codegen/README.md",
        &[
            // Both clients, TypeScript then Python, on the generated stubs;
            // a new player's blitz rating under club Elo (the default).
            "registered ts_",
            "registered py_",
            "signed in as ",
            "blitz rating 1200",
            "leaderboard CLUB_ELO: ",
        ],
    ),
];

/// The addresses the pages use (chess-stack's defaults), and the service
/// behind each.
/// How the pages mint caller assertions for the internal services.
const MINT: &str = "target/release/chess-stack mint-assertion --data-dir data";

/// How the pages reach a service's Unix socket in the stack's data
/// directory.
const SOCKET: &str = "--unix-socket data/";

const DOCUMENTED: [(&str, &str); 5] = [
    ("127.0.0.1:50051", "gateway"),
    ("127.0.0.1:50052", "matchmaking"),
    ("127.0.0.1:50053", "game"),
    ("127.0.0.1:50054", "rating"),
    ("127.0.0.1:50055", "engine"),
];

/// Runs the commands of `page` against a new stack and checks that they
/// succeed and print each of `expected`.
async fn run_page(page: &str, expected: &[&str]) {
    require_tool("buf").await;
    require_tool("jq").await;
    let text = std::fs::read_to_string(root().join(page)).unwrap();
    let blocks = sh_blocks(&text);
    assert!(!blocks.is_empty(), "{page} has no sh blocks");

    let stack = StackProcess::start(&[], &[]).await;
    let mut script = blocks.concat();
    // Assertions are minted with this build's chess-stack, from the data
    // directory of the stack under test.
    let mint = format!(
        "{} mint-assertion --data-dir {}",
        chess_e2e::binary("chess-stack").display(),
        stack.data.path().display()
    );
    script = script.replace(MINT, &mint);
    let socket = format!("--unix-socket {}/", stack.data.path().display());
    script = script.replace(SOCKET, &socket);
    for (documented, service) in DOCUMENTED {
        let actual = match service {
            "gateway" => stack.gateway.as_str(),
            internal => stack.internal(internal),
        };
        script = script.replace(documented, actual);
    }

    let (ok, stdout, stderr) = run(&script).await;
    assert!(
        ok,
        "a command of {page} failed\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    );
    for expected in expected {
        assert!(
            stdout.contains(expected),
            "{expected} missing from the output of {page}\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
        );
    }
    stack.stop().await;
}

#[tokio::test]
async fn calling_the_services_runs_as_written() {
    let (page, expected) = PAGES[0];
    run_page(page, expected).await;
}

#[tokio::test]
async fn generating_stubs_runs_as_written() {
    let (page, expected) = PAGES[1];
    run_page(page, expected).await;
}

/// Every Markdown file under `dir`, relative to the root.
fn markdown_under(dir: &Path, found: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if path
                .file_name()
                .is_some_and(|n| n != "node_modules" && n != "gen")
            {
                markdown_under(&path, found);
            }
        } else if path.extension().is_some_and(|e| e == "md") {
            let relative = path.strip_prefix(root()).unwrap();
            found.push(relative.to_string_lossy().into_owned());
        }
    }
}

#[test]
fn every_page_with_commands_is_run() {
    let mut pages = Vec::new();
    markdown_under(&root().join("docs"), &mut pages);
    for page in pages {
        let text = std::fs::read_to_string(root().join(&page)).unwrap();
        if !sh_blocks(&text).is_empty() {
            assert!(
                PAGES.iter().any(|(p, _)| *p == page),
                "{page} has sh blocks but no test runs them: add it to PAGES"
            );
        }
    }
}

#[test]
fn blocks_are_found_in_order() {
    let text = "intro\n```sh\na\nb\n```\n```text\nnot run\n```\n```sh\nc\n```\n";
    assert_eq!(sh_blocks(text), ["a\nb\n", "c\n"]);
}
