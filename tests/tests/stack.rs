//! `chess-stack`: the one-command system. All five services come up SERVING
//! with reflection, the internal ones on their TCP ports and on Unix sockets
//! in the data directory (or on TCP alone where a socket's path would be too
//! long); a child that dies is restarted; SIGTERM stops every child and the
//! launcher exits 0, leaving each SQLite file closed and no socket behind. A
//! data directory and a database file serve one stack and one service at a
//! time.

use sea_orm::{ConnectionTrait as _, DbBackend, Statement};
use std::time::{Duration, Instant};

use chess_e2e::{
    INTERNAL_ON_FREE_PORTS, StackProcess, children_of, is_alive, process_name, signal,
};
use chess_testkit::process::{ThreadScheduling, thread_scheduling};
use tokio_stream::StreamExt as _;
use tonic_health::pb::{
    HealthCheckRequest, health_check_response::ServingStatus, health_client::HealthClient,
};
use tonic_reflection::pb::v1::{
    ServerReflectionRequest, server_reflection_client::ServerReflectionClient,
    server_reflection_request::MessageRequest, server_reflection_response::MessageResponse,
};

/// Whether the service at `addr` (`host:port` or `unix:PATH`) is SERVING.
async fn serving(addr: &str) -> bool {
    let Ok(channel) = chess_runtime::channel(addr) else {
        return false;
    };
    HealthClient::new(channel)
        .check(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .is_ok_and(|r| r.get_ref().status == ServingStatus::Serving as i32)
}

/// Whether the service at the Unix socket `name`.sock in `dir` is SERVING.
async fn serving_on_socket(dir: &std::path::Path, name: &str) -> bool {
    serving(&format!(
        "unix:{}",
        dir.join(format!("{name}.sock")).display()
    ))
    .await
}

/// What every internal service serves beside its own service.
const HEALTH_AND_REFLECTION: &[&str] = &[
    "grpc.health.v1.Health",
    "grpc.reflection.v1.ServerReflection",
    "grpc.reflection.v1alpha.ServerReflection",
];

/// Asserts that reflection at `addr` (the server `name`) lists every one
/// of `wanted`.
async fn assert_lists(name: &str, addr: &str, wanted: &[&str]) {
    let services = reflected_services(addr).await;
    for wanted in wanted {
        assert!(
            services.iter().any(|s| s == wanted),
            "{name} does not list {wanted}: {services:?}"
        );
    }
}

/// The service names reflection lists at `addr`.
async fn reflected_services(addr: &str) -> Vec<String> {
    let mut client = ServerReflectionClient::new(StackProcess::channel(addr).await);
    let request = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut responses = client
        .server_reflection_info(tokio_stream::iter([request]))
        .await
        .unwrap()
        .into_inner();
    match responses.next().await.unwrap().unwrap().message_response {
        Some(MessageResponse::ListServicesResponse(list)) => {
            list.service.into_iter().map(|s| s.name).collect()
        }
        other => panic!("unexpected reflection answer {other:?}"),
    }
}

/// Two uqchess players paired in a game on `stack`, White's 1. e4 played
/// and seen by Black.
async fn opened_game(stack: &StackProcess) -> (chess_e2e::UqClient, chess_e2e::UqClient) {
    let port = stack.uqchess_port();
    let mut white = chess_e2e::UqClient::connect(port).await;
    let mut black = chess_e2e::UqClient::connect(port).await;
    white.send("start human white\n").await;
    black.ask("start human black", &["started black"]).await;
    white.expect(&["started white"]).await;
    white.ask("move e2e4", &["ok"]).await;
    black.expect(&["moved e2e4"]).await;
    (white, black)
}

/// The stack's children by program name.
fn services_of(pid: u32) -> Vec<(String, u32)> {
    children_of(pid)
        .into_iter()
        .filter_map(|child| process_name(child).map(|name| (name, child)))
        .collect()
}

#[tokio::test]
async fn starts_serves_restarts_and_stops() {
    let stack = StackProcess::start(&[], &[]).await;

    let expected = [
        ("engine", "chess.engine.v1.EngineService"),
        ("rating", "chess.rating.v1.RatingService"),
        ("game", "chess.game.v1.GameService"),
        ("matchmaking", "chess.matchmaking.v1.MatchmakingService"),
    ];
    for (name, service) in expected {
        let addr = stack.internal(name);
        assert!(serving(addr).await, "{name} is not SERVING");
        assert!(
            serving_on_socket(stack.data.path(), name).await,
            "{name} is not SERVING on its Unix socket"
        );
        assert_lists(name, addr, &[&[service], HEALTH_AND_REFLECTION].concat()).await;
    }
    assert!(serving(&stack.gateway).await, "gateway is not SERVING");
    let gateway_services = [
        "chess.gateway.v1.AccountService",
        "chess.gateway.v1.LobbyService",
        "chess.gateway.v1.PlayService",
        "grpc.health.v1.Health",
    ];
    assert_lists("gateway", &stack.gateway, &gateway_services).await;

    let children = services_of(stack.pid());
    let mut names: Vec<&str> = children.iter().map(|(n, _)| n.as_str()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "chess-engine",
            "chess-game",
            "chess-gateway",
            "chess-matchmaking",
            "chess-rating"
        ]
    );

    // A child that dies is restarted on the same address.
    let (_, game_pid) = children.iter().find(|(n, _)| n == "chess-game").unwrap();
    signal(*game_pid, nix::sys::signal::Signal::SIGKILL);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let restarted = services_of(stack.pid())
            .into_iter()
            .any(|(n, p)| n == "chess-game" && p != *game_pid);
        if restarted
            && serving(stack.internal("game")).await
            && serving_on_socket(stack.data.path(), "game").await
        {
            break;
        }
        assert!(Instant::now() < deadline, "chess-game was not restarted");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // A child told to stop with SIGTERM (its standard input, the
    // supervisor's pipe, still open) exits, and is started again.
    let (_, gateway_pid) = services_of(stack.pid())
        .into_iter()
        .find(|(n, _)| n == "chess-gateway")
        .unwrap();
    signal(gateway_pid, nix::sys::signal::Signal::SIGTERM);
    let deadline = Instant::now() + Duration::from_secs(30);
    while is_alive(gateway_pid) {
        assert!(
            Instant::now() < deadline,
            "chess-gateway did not exit after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    loop {
        let restarted = services_of(stack.pid())
            .into_iter()
            .any(|(n, p)| n == "chess-gateway" && p != gateway_pid);
        if restarted && serving(&stack.gateway).await {
            break;
        }
        assert!(Instant::now() < deadline, "chess-gateway was not restarted");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let all: Vec<u32> = services_of(stack.pid())
        .into_iter()
        .map(|(_, p)| p)
        .collect();
    assert_eq!(all.len(), 5);
    let (status, data) = stack.stop_keeping_data().await;
    assert!(status.success(), "chess-stack exited with {status}");
    for pid in all {
        assert!(!is_alive(pid), "child {pid} outlived chess-stack");
    }
    let sockets: Vec<_> = std::fs::read_dir(data.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .filter(|name| name.to_string_lossy().ends_with(".sock"))
        .collect();
    assert!(sockets.is_empty(), "sockets left behind: {sockets:?}");
}

#[tokio::test]
async fn a_data_directory_too_long_for_a_socket_keeps_the_calls_on_tcp() {
    let stack = StackProcess::start_in(chess_e2e::too_long_for_sockets(), &[], &[]).await;
    let notes = stack.log_lines("over TCP");
    for name in ["engine", "rating", "game", "matchmaking"] {
        assert!(
            notes
                .iter()
                .any(|l| l.contains(&format!("the services call {name} over TCP"))),
            "no note that {name} is called over TCP: {notes:?}"
        );
    }
    // A game: the gateway, matchmaking and the game service reach each
    // other on their ports.
    opened_game(&stack).await;
    let status = stack.stop().await;
    assert!(status.success(), "chess-stack exited with {status}");
}

#[tokio::test]
async fn a_missing_engine_is_a_clear_startup_failure() {
    let data = tempfile::tempdir().unwrap();
    let output = tokio::process::Command::new(chess_e2e::binary("chess-stack"))
        .arg("--data-dir")
        .arg(data.path())
        .args(["--grpc-listen", "127.0.0.1:0", "--uqchess-listen", ""])
        .args(INTERNAL_ON_FREE_PORTS)
        .args(["--stockfish-path", "/nonexistent/stockfish"])
        .output()
        .await
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("chess-stack: chess-engine exited while starting"),
        "{stderr}"
    );
    assert!(stderr.contains("cannot start Stockfish"), "{stderr}");
    assert!(
        stderr.contains(
            "Stockfish cannot be started; install it (`apt-get install stockfish`, which puts it \
             at /usr/games/stockfish) or point --stockfish-path (CHESS_STACK_STOCKFISH_PATH) at it\n"
        ),
        "{stderr}"
    );
}

#[tokio::test]
async fn bad_flags_are_one_clear_line() {
    let output = tokio::process::Command::new(chess_e2e::binary("chess-stack"))
        .arg("--bogus")
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("chess-stack: error: unexpected argument '--bogus'"),
        "{stderr}"
    );
    for service in [
        "chess-game",
        "chess-engine",
        "chess-rating",
        "chess-matchmaking",
        "chess-gateway",
    ] {
        let output = tokio::process::Command::new(chess_e2e::binary(service))
            .envs(chess_testkit::internal_key_env())
            .args(["--listen", "256.0.0.1:1", "--log-filter", "error"])
            .output()
            .await
            .unwrap();
        assert!(!output.status.success(), "{service}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(stderr.lines().count(), 1, "{service}: {stderr}");
        assert!(
            stderr.starts_with(&format!("{service}: cannot resolve listen address")),
            "{service}: {stderr}"
        );

        // Without the internal key, no service starts.
        let mut without_key = tokio::process::Command::new(chess_e2e::binary(service));
        for (name, _) in chess_testkit::internal_key_env() {
            without_key.env_remove(name);
        }
        let output = without_key
            .args(["--listen", "127.0.0.1:0", "--log-filter", "error"])
            .output()
            .await
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "{service}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(stderr.lines().count(), 1, "{service}: {stderr}");
        assert!(
            stderr.starts_with(&format!(
                "{service}: no internal key: give --internal-key-file"
            )),
            "{service}: {stderr}"
        );
    }
}

#[tokio::test]
async fn a_second_stack_on_the_same_data_directory_fails_at_once() {
    let first = StackProcess::start(&[], &[]).await;
    let services = services_of(first.pid());
    let started = Instant::now();
    let output = chess_e2e::stack_command(first.data.path())
        .output()
        .await
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        format!(
            "chess-stack: data directory {} is in use by another chess-stack (pid {})\n",
            first.data.path().display(),
            first.pid()
        )
    );
    // The first one's services were left alone.
    assert_eq!(services_of(first.pid()), services);

    // Killed outright, the first leaves nothing behind that stops a new start
    // on the same directory (its services stop when their pipes close).
    let StackProcess {
        mut child, data, ..
    } = first;
    signal(child.id().unwrap(), nix::sys::signal::Signal::SIGKILL);
    child.wait().await.unwrap();
    let again = StackProcess::start_in(data, &[], &[]).await;
    assert!(serving(&again.gateway).await);
    assert!(serving(again.internal("game")).await);
    let status = again.stop().await;
    assert!(status.success(), "chess-stack exited with {status}");
}

#[tokio::test]
async fn a_clean_stop_leaves_each_database_file_whole_and_without_its_log() {
    let stack = StackProcess::start(&[], &[]).await;
    let (mut white, mut black) = opened_game(&stack).await;
    black.ask("move e7e5", &["ok"]).await;
    white.expect(&["moved e7e5"]).await;

    let (status, data) = stack.stop_keeping_data().await;
    assert!(status.success(), "chess-stack exited with {status}");

    // Each service closed its connections as it stopped, and the last one
    // to close copied the log back into the file and removed it.
    let mut files: Vec<String> = std::fs::read_dir(data.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".sqlite"))
        .collect();
    files.sort_unstable();
    assert_eq!(
        files,
        [
            "game.sqlite",
            "game.sqlite.lock",
            "matchmaking.sqlite",
            "matchmaking.sqlite.lock",
            "rating.sqlite",
            "rating.sqlite.lock",
        ]
    );
    // The moves are in the file itself, copied out of the game service's
    // log of moves as it stopped.
    let url = chess_storage::sqlite_url(&data.path().join("game.sqlite"));
    let db = chess_storage::connect(&url, 1).await.unwrap();
    let column = |sql: &'static str| {
        let db = &db;
        async move {
            let rows = db
                .query_all_raw(Statement::from_string(DbBackend::Sqlite, sql))
                .await
                .unwrap();
            rows.iter()
                .map(|row| row.try_get_by_index(0).unwrap())
                .collect::<Vec<String>>()
        }
    };
    let moves = column("SELECT uci FROM moves ORDER BY ply").await;
    let logged = column("SELECT uci FROM move_log").await;
    chess_storage::close(&db).await;
    assert_eq!(moves, ["e2e4", "e7e5"]);
    assert_eq!(logged, Vec::<String>::new());
}

/// Waits until process `pid` has written itself into lock file `path`.
async fn wait_lock_owner(path: &std::path::Path, pid: u32) {
    let owner_now = || {
        let owner: Option<u32> = std::fs::read_to_string(path)
            .ok()
            .and_then(|text| text.lines().next()?.parse().ok());
        std::future::ready(owner)
    };
    let owner = chess_testkit::settled(Duration::from_secs(30), owner_now, |owner| {
        *owner == Some(pid)
    })
    .await;
    assert_eq!(owner, Some(pid), "{pid} did not take {}", path.display());
}

#[tokio::test]
async fn two_game_services_never_share_a_database_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("game.sqlite");
    let url = format!("sqlite://{}?mode=rwc", file.display());
    let game = || {
        let mut command = tokio::process::Command::new(chess_e2e::binary("chess-game"));
        command
            .envs(chess_testkit::internal_key_env())
            .args(["--listen", "127.0.0.1:0", "--log-filter", "warn"])
            .args(["--database-url", &url])
            .kill_on_drop(true);
        command
    };
    let mut first = game().spawn().unwrap();
    let lock = dir.path().join("game.sqlite.lock");
    wait_lock_owner(&lock, first.id().unwrap()).await;

    let output = game().output().await.unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        format!(
            "chess-game: database file {} is in use by another chess-game (pid {})\n",
            file.display(),
            first.id().unwrap()
        )
    );

    // The kernel releases the lock of a killed process.
    first.kill().await.unwrap();
    let mut second = game().spawn().unwrap();
    wait_lock_owner(&lock, second.id().unwrap()).await;
    assert!(second.try_wait().unwrap().is_none(), "the second one runs");
    second.kill().await.unwrap();
}

#[tokio::test]
async fn the_internal_key_is_the_stacks_own_and_operators_mint_with_it() {
    use std::os::unix::fs::PermissionsExt as _;

    use chess_proto::{
        common::v1::SpeedCategory,
        rating::v1::{LeaderboardRequest, rating_service_client::RatingServiceClient},
    };

    let stack = StackProcess::start(&[], &[]).await;
    let key = stack.data.path().join("internal.key");
    let mode = std::fs::metadata(&key).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{}", key.display());

    let leaderboard = || LeaderboardRequest {
        category: SpeedCategory::Blitz as i32,
        ..Default::default()
    };
    let channel = chess_testkit::connect(stack.internal("rating")).await;
    let mut raw = RatingServiceClient::new(channel.clone());
    let refused = raw.leaderboard(leaderboard()).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unauthenticated, "{refused:?}");
    // Signed with another key (the tests'): refused alike.
    let refused = RatingServiceClient::new(chess_testkit::signed(channel))
        .leaderboard(leaderboard())
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unauthenticated, "{refused:?}");

    // What `chess-stack mint-assertion` prints is taken.
    let minted = tokio::process::Command::new(chess_e2e::binary("chess-stack"))
        .args(["mint-assertion", "--data-dir"])
        .arg(stack.data.path())
        .output()
        .await
        .unwrap();
    assert!(minted.status.success(), "{minted:?}");
    let assertion = String::from_utf8(minted.stdout).unwrap();
    let mut request = tonic::Request::new(leaderboard());
    request.metadata_mut().insert(
        chess_runtime::identity::HEADER,
        assertion.trim().parse().unwrap(),
    );
    raw.leaderboard(request).await.unwrap();
    stack.stop().await;
}

/// The policies of every thread of the stack's services and of the engine's
/// Stockfish processes, once each pool process is up.
async fn policies_of_the_services(stack: &StackProcess) -> Vec<(String, Vec<ThreadScheduling>)> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let services = services_of(stack.pid());
        let engine = services
            .iter()
            .find(|(n, _)| n == "chess-engine")
            .unwrap()
            .1;
        let searches = children_of(engine);
        // A pool process is told its policy once it has started.
        let settled = !searches.is_empty()
            && searches
                .iter()
                .all(|&p| thread_scheduling(p).iter().all(|t| t.policy == 5));
        if settled || Instant::now() > deadline {
            let mut all: Vec<_> = services
                .into_iter()
                .map(|(name, pid)| (name, thread_scheduling(pid)))
                .collect();
            all.extend(
                searches
                    .into_iter()
                    .map(|pid| ("stockfish".to_owned(), thread_scheduling(pid))),
            );
            return all;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn by_default_every_service_runs_under_the_normal_policy() {
    let stack = StackProcess::start(&[], &[]).await;
    for (name, threads) in policies_of_the_services(&stack).await {
        let expected = if name == "stockfish" { 5 } else { 0 };
        assert!(
            threads
                .iter()
                .all(|t| (t.policy, t.priority) == (expected, 0)),
            "{name}: {threads:?}"
        );
    }
}
