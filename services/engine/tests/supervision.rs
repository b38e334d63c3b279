//! Stockfish processes that die, never start, or start late.

mod common;

use std::{io::Write as _, os::unix::fs::PermissionsExt as _, time::Duration};

use common::*;
use tonic::Code;
use tonic_health::pb::health_check_response::ServingStatus;

#[tokio::test]
async fn a_killed_process_fails_its_request_and_is_replaced() {
    let service = Service::start(&[]).await;
    let old = service.stockfish_pids();
    assert_eq!(old.len(), 1, "{old:?}");
    let before = cpu_ticks(old[0]);
    let mut client = service.client();
    let call = tokio::spawn(async move {
        client
            .best_move(best_move_request("", &[], limits(20_000, 0)))
            .await
    });
    wait_until_busy(old[0], before, 10).await;
    kill9(old[0]);
    let result = call.await.unwrap();
    let status = result.unwrap_err();
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    assert_eq!(
        status.metadata().get("chess-reason").unwrap(),
        "engine-unavailable"
    );

    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let new = loop {
        let pids = service.stockfish_pids();
        if pids.len() == 1 && pids != old {
            break pids;
        }
        assert!(tokio::time::Instant::now() < deadline, "never restarted");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_ne!(new, old);
    // The new process exists before its handshake is over; until then the
    // pool has no live engine and refuses at once, as it should. Once the
    // handshake is done, health says so and requests are served.
    loop {
        let answer = service
            .client()
            .list_moves(chess_proto::engine::v1::ListMovesRequest {
                position: position("", &[]),
            })
            .await;
        match answer {
            Ok(listed) => {
                assert_eq!(listed.into_inner().moves.len(), 20);
                break;
            }
            Err(status) => {
                assert_eq!(status.code(), Code::Unavailable, "{status:?}");
                assert!(tokio::time::Instant::now() < deadline, "never served");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
    service.wait_for(ServingStatus::Serving).await;
    for moves in [&[][..], &["e2e4"][..], &["e2e4", "e7e5"][..]] {
        let found = service
            .client()
            .best_move(best_move_request("", moves, limits(100, 0)))
            .await
            .expect("served after the restart")
            .into_inner()
            .result
            .unwrap();
        assert!(is_legal("", moves, &found.best_move));
    }
}

#[tokio::test]
async fn one_dead_process_leaves_the_others_serving() {
    let service = Service::start(&["--pool-size", "2"]).await;
    let pids = service.stockfish_pids();
    assert_eq!(pids.len(), 2, "{pids:?}");
    kill9(pids[0]);
    // Whatever the timing, the other process keeps the service SERVING and
    // answering.
    for _ in 0..5 {
        assert_eq!(service.health().await, Some(ServingStatus::Serving));
        let listed = service
            .client()
            .list_moves(chess_proto::engine::v1::ListMovesRequest {
                position: position("", &[]),
            })
            .await
            .unwrap()
            .into_inner()
            .moves;
        assert_eq!(listed.len(), 20);
    }
}

/// A Stockfish stand-in that starts at once the first time and, after that,
/// only once the file `go` exists next to it.
fn slow_restarting_stockfish(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("stockfish");
    let mut file = std::fs::File::create(&path).unwrap();
    write!(
        file,
        "#!/bin/sh\n\
         dir='{dir}'\n\
         if [ -e \"$dir/started\" ]; then\n\
           while [ ! -e \"$dir/go\" ]; do sleep 0.02; done\n\
         fi\n\
         touch \"$dir/started\"\n\
         exec {STOCKFISH}\n",
        dir = dir.display()
    )
    .unwrap();
    file.set_permissions(std::fs::Permissions::from_mode(0o755))
        .unwrap();
    path
}

#[tokio::test]
async fn health_follows_the_processes_not_serving_then_serving() {
    let dir = tempfile::tempdir().unwrap();
    let stockfish = slow_restarting_stockfish(dir.path());
    let service = Service::start(&[
        "--stockfish-path",
        stockfish.to_str().unwrap(),
        "--answer-timeout-ms",
        "120000",
    ])
    .await;
    assert_eq!(service.health().await, Some(ServingStatus::Serving));
    let pids = service.stockfish_pids();
    assert_eq!(pids.len(), 1);
    kill9(pids[0]);

    // The restart waits for `go`: no process is alive meanwhile.
    service.wait_for(ServingStatus::NotServing).await;
    let refused = service
        .client()
        .best_move(best_move_request("", &[], limits(50, 0)))
        .await;
    assert_eq!(code_of(&refused), Code::Unavailable);

    std::fs::File::create(dir.path().join("go")).unwrap();
    service.wait_for(ServingStatus::Serving).await;
    let found = service
        .client()
        .best_move(best_move_request("", &[], limits(50, 0)))
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert!(is_legal("", &[], &found.best_move));
}

/// Runs the binary to completion with `args` (and the test's internal key);
/// returns status and output.
fn run_to_exit(args: &[&str]) -> (Option<i32>, String, String) {
    run_to_exit_with(args, &chess_testkit::internal_key_env())
}

/// Runs the binary to completion with `args` and `env`; returns status and
/// output.
fn run_to_exit_with(
    args: &[&str],
    env: &[(String, std::path::PathBuf)],
) -> (Option<i32>, String, String) {
    let port = free_port().to_string();
    let output = std::process::Command::new(BINARY)
        .env_remove("CHESS_ENGINE_INTERNAL_KEY_FILE")
        .envs(env.iter().cloned())
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

/// Checks that a run ended with `status`, nothing on standard output and one
/// line on standard error beginning with `start`; returns that line.
fn exits_with_one_line(
    (status, stdout, stderr): (Option<i32>, String, String),
    expected: i32,
    start: &str,
) -> String {
    assert_eq!(status, Some(expected), "{stderr:?}");
    assert_eq!(stdout, "");
    assert_eq!(stderr.lines().count(), 1, "{stderr:?}");
    assert!(stderr.starts_with(start), "{stderr:?}");
    stderr
}

#[test]
fn without_the_internal_key_it_refuses_to_start_with_one_line() {
    exits_with_one_line(
        run_to_exit_with(&[], &[]),
        1,
        "chess-engine: no internal key: give --internal-key-file",
    );
    let dir = tempfile::tempdir().unwrap();
    let short = dir.path().join("short.key");
    std::fs::write(&short, "too short").unwrap();
    let (status, _, stderr) = run_to_exit(&["--internal-key-file", short.to_str().unwrap()]);
    assert_eq!(status, Some(1));
    assert!(stderr.contains("shorter than 32 bytes"), "{stderr:?}");
}

#[test]
fn a_missing_stockfish_exits_with_status_3_and_one_line() {
    let stderr = exits_with_one_line(
        run_to_exit(&["--stockfish-path", "/nonexistent/stockfish"]),
        3,
        "chess-engine: cannot start Stockfish (/nonexistent/stockfish): ",
    );
    assert!(
        stderr.ends_with(
            "; install it (`apt-get install stockfish`, which puts it at /usr/games/stockfish) \
             or point --stockfish-path (CHESS_ENGINE_STOCKFISH_PATH) at it\n"
        ),
        "{stderr:?}"
    );
    assert!(stderr.ends_with('\n'));
}

#[test]
fn a_program_that_is_not_an_engine_exits_with_status_3() {
    // `cat` starts but never answers `isready`.
    let (status, stdout, stderr) = run_to_exit(&[
        "--stockfish-path",
        "/bin/cat",
        "--pool-size",
        "2",
        "--answer-timeout-ms",
        "300",
    ]);
    assert_eq!(status, Some(3));
    assert_eq!(stdout, "");
    assert_eq!(
        stderr,
        "chess-engine: cannot start Stockfish (/bin/cat): no readyok within 300 ms; \
         install it (`apt-get install stockfish`, which puts it at /usr/games/stockfish) \
         or point --stockfish-path (CHESS_ENGINE_STOCKFISH_PATH) at it\n"
    );
}

#[test]
fn bad_flags_exit_with_status_2() {
    let (status, _, stderr) = run_to_exit(&["--pool-size", "0"]);
    assert_eq!(status, Some(2));
    assert_eq!(stderr.lines().count(), 1, "{stderr:?}");
}

/// Field `field` (numbered from 1, as in proc(5)) of a `stat` file under
/// `/proc`; None if the process or thread is gone.
fn stat_field(path: &std::path::Path, field: usize) -> Option<i64> {
    let stat = std::fs::read_to_string(path).ok()?;
    // The name (field 2) may hold spaces; fields 3 on follow its `)`.
    let after = stat.rsplit_once(')')?.1;
    after.split_whitespace().nth(field - 3)?.parse().ok()
}

/// The niceness of process `pid` (field 19 of `/proc/<pid>/stat`).
fn niceness(pid: u32) -> i64 {
    stat_field(format!("/proc/{pid}/stat").as_ref(), 19).unwrap()
}

#[tokio::test]
async fn stockfish_runs_at_the_configured_niceness_restarts_included() {
    let service = Service::start(&["--stockfish-nice", "7"]).await;
    let first = service.stockfish_pids();
    assert_eq!(first.len(), 1, "{first:?}");
    assert_eq!(niceness(first[0]), 7);
    assert_eq!(
        niceness(service.pid()),
        0,
        "the service itself keeps its own"
    );
    kill9(first[0]);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let pids = service.stockfish_pids();
        if pids.len() == 1 && pids != first && niceness(pids[0]) == 7 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "not restarted at niceness 7"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The scheduling policy of every thread of process `pid` (0 is
/// `SCHED_OTHER`, 2 `SCHED_RR`, 5 `SCHED_IDLE`).
fn thread_policies(pid: u32) -> Vec<u32> {
    chess_testkit::process::thread_scheduling(pid)
        .into_iter()
        .map(|thread| thread.policy)
        .collect()
}

/// Every thread of `pid` runs under `SCHED_IDLE`, the search threads too.
fn all_idle(pid: u32) -> bool {
    let policies = thread_policies(pid);
    // Stockfish runs its UCI loop and at least one search thread.
    policies.len() >= 2 && policies.iter().all(|&p| p == 5)
}

#[tokio::test]
async fn stockfish_runs_under_sched_idle_restarts_included() {
    let service = Service::start(&["--stockfish-idle"]).await;
    let first = service.stockfish_pids();
    assert_eq!(first.len(), 1, "{first:?}");
    assert!(all_idle(first[0]), "{:?}", thread_policies(first[0]));
    assert!(
        thread_policies(service.pid()).iter().all(|&p| p == 0),
        "the service itself keeps its own policy"
    );
    kill9(first[0]);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let pids = service.stockfish_pids();
        if pids.len() == 1 && pids != first && all_idle(pids[0]) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "not restarted under SCHED_IDLE"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
