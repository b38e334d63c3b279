//! The links in `chess-stack`'s move emails: `--public-url` reaches the
//! gateway and is the base of every link, and the path of the link opens the
//! game on the public port over plain HTTP/1.1. (The default, the address
//! `--grpc-listen` bound, is checked by the Python test through a real SMTP
//! server: `public_api_python`.)

use std::time::{Duration, Instant};

use chess_e2e::StackProcess;
use chess_proto::{
    common::v1 as common,
    gateway::v1::{
        self as pb, account_service_client::AccountServiceClient,
        lobby_service_client::LobbyServiceClient, play_service_client::PlayServiceClient,
    },
};
use tokio::{
    io::{AsyncReadExt as _, AsyncWriteExt as _},
    net::TcpStream,
};
use tonic::Request;

/// Registers `name` and returns its bearer token.
async fn sign_up(
    accounts: &mut AccountServiceClient<tonic::transport::Channel>,
    name: &str,
) -> String {
    accounts
        .register(pb::RegisterRequest {
            username: name.to_owned(),
            email: format!("{name}@example.org"),
            password: "correct horse battery".to_owned(),
        })
        .await
        .expect("register");
    let login = accounts
        .login(pb::LoginRequest {
            login: name.to_owned(),
            password: "correct horse battery".to_owned(),
        })
        .await
        .expect("login")
        .into_inner();
    format!("Bearer {}", login.token)
}

fn signed<T>(token: &str, message: T) -> Request<T> {
    let mut request = Request::new(message);
    request
        .metadata_mut()
        .insert("authorization", token.parse().unwrap());
    request
}

/// GET `path` from `addr` over HTTP/1.1 on a fresh TCP connection: the
/// status line and the whole answer.
async fn http_get(addr: &str, path: &str) -> (String, String) {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(20), stream.read_to_string(&mut answer))
        .await
        .expect("an answer in time")
        .expect("read");
    let status = answer.lines().next().unwrap_or_default().to_owned();
    (status, answer)
}

#[tokio::test]
async fn a_given_public_url_is_the_base_of_the_links_in_emails() {
    let stack =
        StackProcess::start(&["--public-url", "https://chess.example.org/play/"], &[]).await;
    let channel = StackProcess::channel(&stack.gateway).await;
    let mut accounts = AccountServiceClient::new(channel.clone());
    let alice = sign_up(&mut accounts, "alice").await;
    let bob = sign_up(&mut accounts, "bob").await;
    let mut lobby = LobbyServiceClient::new(channel.clone());
    let table = lobby
        .create_seek(signed(
            &alice,
            pb::CreateSeekRequest {
                time_control: Some(common::TimeControl {
                    kind: Some(common::time_control::Kind::Daily(common::Daily {
                        turn_hours: 48,
                    })),
                }),
                color: common::ColorChoice::White as i32,
                accept_mode: common::AcceptMode::Automatic as i32,
                ..Default::default()
            },
        ))
        .await
        .expect("create a table")
        .into_inner()
        .seek
        .unwrap();
    let game_id = lobby
        .request_seek(signed(
            &bob,
            pb::RequestSeekRequest {
                seek_id: table.seek_id,
            },
        ))
        .await
        .expect("join the table")
        .into_inner()
        .request
        .unwrap()
        .game_id;
    PlayServiceClient::new(channel)
        .make_move(signed(
            &alice,
            pb::MakeMoveRequest {
                game_id: game_id.clone(),
                r#move: "e4".to_owned(),
                ply: None,
            },
        ))
        .await
        .expect("move");

    // chess-stack mails into <data>/mail when no SMTP server is given.
    let mail_dir = stack.data.path().join("mail");
    let deadline = Instant::now() + Duration::from_secs(20);
    let mail = loop {
        let found = std::fs::read_dir(&mail_dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|e| e == "eml"));
        if let Some(file) = found {
            break std::fs::read_to_string(file).unwrap();
        }
        assert!(
            Instant::now() < deadline,
            "no mail in {}",
            mail_dir.display()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(mail.contains("To: bob@example.org"), "{mail}");
    let link = format!("https://chess.example.org/play/games/{game_id}");
    assert!(
        mail.contains(&format!("Open the game: {link}\r\n"))
            || mail.contains(&format!("Open the game: {link}\n")),
        "{mail}"
    );

    // Behind the proxy that URL names, the request reaching the gateway is
    // /games/<id>: the page of the game.
    let (status, answer) = http_get(&stack.gateway, &format!("/games/{game_id}")).await;
    assert_eq!(status, "HTTP/1.1 200 OK", "{answer}");
    assert!(answer.contains("<li>e4</li>"), "{answer}");
    assert!(answer.contains("Black to move."), "{answer}");
    let (status, answer) = http_get(&stack.gateway, "/games/nosuchgame12").await;
    assert_eq!(status, "HTTP/1.1 404 Not Found", "{answer}");
    stack.stop().await;
}
