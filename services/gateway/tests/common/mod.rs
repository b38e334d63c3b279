//! Starting the whole system for the gateway's tests: `chess-gateway` from
//! this package and the other four services, built next to it by
//! `cargo build --workspace --bins`, each on a free port with its own SQLite
//! file in one temporary directory. The steps of the public API a test
//! takes on its way (signing up, starting and reading games) are
//! chess-testkit's [`Gateway`], which [`System`] derefs to.

#![allow(dead_code, unreachable_pub, unused_imports)]

use std::{
    path::PathBuf,
    process::Stdio,
    time::{Duration, Instant},
};

use chess_proto::gateway::v1::{
    self as pb, account_service_client::AccountServiceClient,
    lobby_service_client::LobbyServiceClient, play_service_client::PlayServiceClient,
};
use tokio::{
    io::{AsyncReadExt as _, AsyncWriteExt as _},
    net::TcpStream,
};
use tonic::transport::Channel;

pub use chess_testkit::{
    Answer, Service, SmtpSink,
    clocks::{blitz, daily},
    connect, free_port,
    gateway::{Gateway, PASSWORD, User, next_event, next_game_event},
    workspace_binary,
};

pub mod steps;

/// The repository's root.
pub fn repo_root() -> PathBuf {
    chess_testkit::repo_root(env!("CARGO_MANIFEST_DIR"))
}

/// All five services.
pub struct System {
    pub dir: tempfile::TempDir,
    pub engine: Service,
    pub rating: Service,
    pub game: Service,
    pub matchmaking: Service,
    pub gateway: Service,
    pub mail_dir: PathBuf,
    /// The gateway's public API, which the system derefs to.
    api: Gateway,
}

impl std::ops::Deref for System {
    type Target = Gateway;

    fn deref(&self) -> &Gateway {
        &self.api
    }
}

impl System {
    /// Starts everything; `gateway_args` are added to the gateway's flags.
    pub async fn start(gateway_args: &[&str]) -> Self {
        Self::start_with(gateway_args, &[]).await
    }

    /// Starts everything, adding `gateway_args` to the gateway's flags and
    /// `matchmaking_args` to the matchmaking service's.
    pub async fn start_with(gateway_args: &[&str], matchmaking_args: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let db = |name: &str| format!("sqlite://{}?mode=rwc", dir.path().join(name).display());
        let engine = Service::start(
            workspace_binary("chess-engine"),
            &[
                "--stockfish-path",
                "/usr/games/stockfish",
                "--pool-size",
                "1",
            ],
        )
        .await;
        let rating = Service::start(
            workspace_binary("chess-rating"),
            &["--database-url", &db("rating.sqlite")],
        )
        .await;
        let game = Service::start(
            workspace_binary("chess-game"),
            &[
                "--database-url",
                &db("game.sqlite"),
                "--engine-addr",
                &engine.addr,
                "--rating-addr",
                &rating.addr,
            ],
        )
        .await;
        let matchmaking_db = db("matchmaking.sqlite");
        let mut args = vec![
            "--database-url",
            &matchmaking_db,
            "--game-addr",
            &game.addr,
            "--rating-addr",
            &rating.addr,
        ];
        args.extend_from_slice(matchmaking_args);
        let matchmaking = Service::start(workspace_binary("chess-matchmaking"), &args).await;
        let mail_dir = dir.path().join("mail");
        let mail = mail_dir.display().to_string();
        let mut args = vec![
            "--uqchess-listen",
            "",
            "--game-addr",
            &game.addr,
            "--matchmaking-addr",
            &matchmaking.addr,
            "--rating-addr",
            &rating.addr,
            "--token-key",
            "a test key that is long enough",
            "--mail-dir",
            &mail,
        ];
        args.extend_from_slice(gateway_args);
        let gateway =
            Service::start(PathBuf::from(env!("CARGO_BIN_EXE_chess-gateway")), &args).await;
        let api = Gateway::new(gateway.channel().await);
        Self {
            dir,
            engine,
            rating,
            game,
            matchmaking,
            gateway,
            mail_dir,
            api,
        }
    }

    /// A client of the account service on a connection of its own (as the
    /// two below are), apart from the one the system's Gateway uses.
    pub async fn accounts(&self) -> AccountServiceClient<Channel> {
        AccountServiceClient::new(self.gateway.channel().await)
    }

    pub async fn lobby(&self) -> LobbyServiceClient<Channel> {
        LobbyServiceClient::new(self.gateway.channel().await)
    }

    pub async fn play(&self) -> PlayServiceClient<Channel> {
        PlayServiceClient::new(self.gateway.channel().await)
    }
}

/// Opens `user`'s event stream.
pub async fn events(system: &System, user: &User) -> tonic::Streaming<pb::StreamEventsResponse> {
    system.api.events(user).await
}

/// An HTTP/1.1 answer as it came over the socket.
#[derive(Debug)]
pub struct HttpAnswer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpAnswer {
    /// The value of header `name` (any case), if sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Sends one plain HTTP/1.1 request over a new TCP connection to `addr`
/// (`Connection: close`) and reads the whole answer, decoding a chunked
/// body.
pub async fn http(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> HttpAnswer {
    let mut stream = TcpStream::connect(addr).await.expect("connect over TCP");
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    if !body.is_empty() {
        request.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.expect("send");
    stream.write_all(body).await.expect("send the body");
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut raw))
        .await
        .expect("an answer within 20 s")
        .expect("read the answer");
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no header end in {:?}", String::from_utf8_lossy(&raw)));
    let head = String::from_utf8(raw[..split].to_vec()).expect("ASCII headers");
    let mut lines = head.split("\r\n");
    let status_line = lines.next().expect("a status line");
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
    assert!(status_line.starts_with("HTTP/1.1 "), "{status_line}");
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let mut answer = HttpAnswer {
        status,
        headers,
        body: raw[split + 4..].to_vec(),
    };
    if answer
        .header("transfer-encoding")
        .is_some_and(|t| t.eq_ignore_ascii_case("chunked"))
    {
        answer.body = dechunk(&answer.body);
    } else if let Some(length) = answer.header("content-length")
        && method != "HEAD"
    {
        assert_eq!(
            answer.body.len(),
            length.parse::<usize>().unwrap(),
            "the body is as long as Content-Length says"
        );
    }
    answer
}

/// The payload of a chunked body.
fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let end = raw
            .windows(2)
            .position(|w| w == b"\r\n")
            .expect("a chunk size line");
        let size_line = std::str::from_utf8(&raw[..end]).expect("ASCII chunk size");
        let size = usize::from_str_radix(size_line.split(';').next().unwrap().trim(), 16)
            .expect("a hexadecimal chunk size");
        raw = &raw[end + 2..];
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&raw[..size]);
        raw = &raw[size + 2..];
    }
}
