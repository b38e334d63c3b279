//! The links in `chess-stack`'s move emails: `--public-url` reaches the
//! gateway and is the base of every link, and the path of the link opens the
//! game on the public port over plain HTTP/1.1. (The default, the address
//! `--grpc-listen` bound, is checked by the Python test through a real SMTP
//! server: `public_api_python`.)

mod support;

use std::time::{Duration, Instant};

use chess_e2e::StackProcess;
use chess_proto::gateway::v1::{self as pb, play_service_client::PlayServiceClient};
use support::{daily_game, mails, sign_up};
use tokio::{
    io::{AsyncReadExt as _, AsyncWriteExt as _},
    net::TcpStream,
};

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
    let alice = sign_up(&channel, "alice".to_owned()).await;
    let bob = sign_up(&channel, "bob".to_owned()).await;
    let game_id = daily_game(&channel, &alice, &bob).await;
    PlayServiceClient::new(channel)
        .make_move(alice.request(pb::MakeMoveRequest {
            game_id: game_id.clone(),
            r#move: "e4".to_owned(),
            ply: None,
        }))
        .await
        .expect("move");

    let deadline = Instant::now() + Duration::from_secs(20);
    let mail = loop {
        if let Some(mail) = mails(&stack).into_iter().next() {
            break mail;
        }
        assert!(Instant::now() < deadline, "no mail");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(mail.contains("To: bob@load.test"), "{mail}");
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
