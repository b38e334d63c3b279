//! Starting the real `chess-engine` binary and talking to it.

#![allow(unused_imports, dead_code, unreachable_pub)]

use std::{
    io::{BufRead as _, BufReader, Write as _},
    net::SocketAddr,
    process::Stdio,
    time::Duration,
};

use chess_proto::engine::v1::{
    self as pb, best_move_request::Strength, engine_service_client::EngineServiceClient,
};
use shakmaty::{CastlingMode, Chess, Position as _, fen::Fen, uci::UciMove};
use tonic::transport::Channel;
use tonic_health::pb::{
    HealthCheckRequest, health_check_response::ServingStatus, health_client::HealthClient,
};

pub const STOCKFISH: &str = "/usr/games/stockfish";
pub const BINARY: &str = env!("CARGO_BIN_EXE_chess-engine");

/// A running `chess-engine`; killed when dropped.
pub struct Service {
    pub child: tokio::process::Child,
    pub addr: SocketAddr,
    /// Signed as the game service's calls are.
    pub client: EngineServiceClient<chess_testkit::Signed>,
    health: HealthClient<Channel>,
}

pub use chess_testkit::{
    free_port,
    process::{children_of as children, cpu_ticks, kill9},
};

impl Service {
    /// Starts the service with real Stockfish and `args` (which may override
    /// `--stockfish-path` and `--pool-size`), and waits until it is SERVING.
    pub async fn start(args: &[&str]) -> Self {
        let service = Self::spawn(args).await;
        service.wait_for(ServingStatus::Serving).await;
        service
    }

    /// Starts the service and connects, without waiting for SERVING.
    pub async fn spawn(args: &[&str]) -> Self {
        let port = free_port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let mut command = tokio::process::Command::new(BINARY);
        command
            .envs(chess_testkit::internal_key_env())
            .args(["--listen", &addr.to_string(), "--stop-on-stdin-eof"])
            .args(["--log-filter", "warn"]);
        if !args.contains(&"--stockfish-path") {
            command.args(["--stockfish-path", STOCKFISH]);
        }
        if !args.contains(&"--pool-size") {
            command.args(["--pool-size", "1"]);
        }
        let mut child = command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("chess-engine starts");
        let channel = connect(addr, &mut child).await;
        Self {
            child,
            addr,
            client: EngineServiceClient::new(chess_testkit::signed_as(channel.clone(), "game")),
            health: HealthClient::new(channel),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id().expect("still running")
    }

    /// The overall health status.
    pub async fn health(&self) -> Option<ServingStatus> {
        let mut health = self.health.clone();
        let response = health
            .check(HealthCheckRequest {
                service: String::new(),
            })
            .await
            .ok()?;
        ServingStatus::try_from(response.into_inner().status).ok()
    }

    /// Waits (at most a minute) until health says `status`.
    pub async fn wait_for(&self, status: ServingStatus) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            if self.health().await == Some(status) {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "health never became {status:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The Stockfish processes the service runs (its children).
    pub fn stockfish_pids(&self) -> Vec<u32> {
        children(self.pid())
    }

    pub fn client(&self) -> EngineServiceClient<chess_testkit::Signed> {
        self.client.clone()
    }
}

async fn connect(addr: SocketAddr, child: &mut tokio::process::Child) -> Channel {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("chess-engine exited early: {status}");
        }
        if let Ok(channel) = Channel::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect()
            .await
        {
            return channel;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "chess-engine never listened"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until process `pid` has used `ticks` more CPU than `since`: a
/// Stockfish process only does so while it searches.
pub async fn wait_until_busy(pid: u32, since: u64, ticks: u64) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while cpu_ticks(pid) < since + ticks {
        assert!(
            tokio::time::Instant::now() < deadline,
            "process {pid} never started searching"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub fn position(fen: &str, moves: &[&str]) -> Option<pb::Position> {
    Some(pb::Position {
        fen: fen.to_owned(),
        moves: moves.iter().map(|m| (*m).to_owned()).collect(),
    })
}

pub fn limits(movetime_ms: u32, depth: u32) -> Option<Strength> {
    Some(Strength::Limits(pb::SearchLimits { movetime_ms, depth }))
}

pub fn best_move_request(
    fen: &str,
    moves: &[&str],
    strength: Option<Strength>,
) -> pb::BestMoveRequest {
    pb::BestMoveRequest {
        position: position(fen, moves),
        strength,
        game_id: String::new(),
    }
}

/// An analysis of `fen` (empty: the start) after `moves`, for
/// `movetime_ms` or to `depth`, with `multipv` lines, in `game_id`.
pub fn analyse_request(
    fen: &str,
    moves: &[&str],
    (movetime_ms, depth): (u32, u32),
    multipv: u32,
    game_id: &str,
) -> pb::AnalyseRequest {
    pb::AnalyseRequest {
        position: position(fen, moves),
        limits: Some(pb::SearchLimits { movetime_ms, depth }),
        multipv,
        game_id: game_id.to_owned(),
    }
}

/// What the service found for `request`, which it must answer.
pub async fn best(
    client: &mut EngineServiceClient<chess_testkit::Signed>,
    request: pb::BestMoveRequest,
) -> pb::SearchResult {
    client
        .best_move(request)
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap()
}

/// The position reached from `fen` (empty: the start) by `moves`.
pub fn chess(fen: &str, moves: &[&str]) -> Chess {
    let mut pos: Chess = if fen.is_empty() {
        Chess::default()
    } else {
        fen.parse::<Fen>()
            .unwrap()
            .into_position(CastlingMode::Standard)
            .unwrap()
    };
    for m in moves {
        let m = m.parse::<UciMove>().unwrap().to_move(&pos).unwrap();
        pos.play_unchecked(m);
    }
    pos
}

/// Whether `uci` is legal in the position.
pub fn is_legal(fen: &str, moves: &[&str], uci: &str) -> bool {
    let pos = chess(fen, moves);
    uci.parse::<UciMove>()
        .ok()
        .and_then(|m| m.to_move(&pos).ok())
        .is_some()
}

/// Talks to Stockfish directly: sends `commands`, then reads output lines
/// until one satisfies `done`, returning them all.
pub fn stockfish_directly(commands: &[String], done: impl Fn(&str) -> bool) -> Vec<String> {
    let mut child = std::process::Command::new(STOCKFISH)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("Stockfish starts");
    let mut stdin = child.stdin.take().unwrap();
    for command in commands {
        writeln!(stdin, "{command}").unwrap();
    }
    stdin.flush().unwrap();
    let mut lines = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        let finished = done(&line);
        lines.push(line);
        if finished {
            break;
        }
    }
    writeln!(stdin, "quit").ok();
    drop(stdin);
    child.wait().unwrap();
    lines
}

/// The `position …` command for a FEN (empty: the start) and moves.
pub fn position_command(fen: &str, moves: &[&str]) -> String {
    let mut command = if fen.is_empty() {
        "position startpos".to_owned()
    } else {
        format!("position fen {fen}")
    };
    if !moves.is_empty() {
        command.push_str(" moves ");
        command.push_str(&moves.join(" "));
    }
    command
}

/// Stockfish's own `go perft 1` list for the position, in its order.
pub fn stockfish_perft(fen: &str, moves: &[&str]) -> Vec<String> {
    let lines = stockfish_directly(
        &[position_command(fen, moves), "go perft 1".to_owned()],
        |line| line.starts_with("Nodes searched:"),
    );
    lines
        .iter()
        .filter_map(|line| {
            let (m, count) = line.split_once(": ")?;
            (!m.contains(' ') && count.trim() == "1").then(|| m.to_owned())
        })
        .collect()
}

pub fn code_of<T>(result: &Result<T, tonic::Status>) -> tonic::Code {
    match result {
        Ok(_) => tonic::Code::Ok,
        Err(status) => status.code(),
    }
}
