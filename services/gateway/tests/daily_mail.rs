//! The email notices of daily games, end to end: the real gateway mailing
//! through an SMTP sink or into its mail directory.

mod common;

use chess_proto::{common::v1 as wire, gateway::v1 as pb};
use common::{System, blitz, daily};

#[tokio::test]
async fn daily_moves_are_emailed_over_smtp() {
    let sink = common::SmtpSink::start().await;
    let url = sink.url();
    // A public URL given explicitly is the base of the links, trailing
    // slash or not.
    let system = System::start(&[
        "--smtp-url",
        &url,
        "--mail-from",
        "Rookery <chess@example.org>",
        "--public-url",
        "https://chess.example.org/",
    ])
    .await;
    let alice = system.sign_up("alice").await;
    let bob = system.sign_up("bob").await;
    // A correspondence table: Alice takes white, Bob joins it.
    let table = pb::CreateSeekRequest {
        time_control: Some(daily(48)),
        color: wire::ColorChoice::White as i32,
        accept_mode: wire::AcceptMode::Automatic as i32,
        ..Default::default()
    };
    let table = system.post_seek(&alice, table).await;
    let game_id = system.request_seek(&bob, &table.seek_id).await.game_id;
    // Nobody is connected; the moves are still announced.
    system.make_move(&alice, &game_id, "e2e4").await.unwrap();
    let first = sink.messages(1).await;
    let (envelope, message) = &first[0];
    assert!(envelope.contains("bob@example.org"), "{envelope}");
    assert!(!envelope.contains("alice@example.org"), "{envelope}");
    assert!(
        message.contains("Subject: alice played 1. e4 in alice vs bob"),
        "{message}"
    );
    assert!(
        message.contains("From: Rookery <chess@example.org>"),
        "{message}"
    );
    assert!(
        message.contains(&format!("https://chess.example.org/games/{game_id}")),
        "{message}"
    );
    assert!(message.contains("48 hours"), "{message}");

    system.make_move(&bob, &game_id, "Nf6").await.unwrap();
    let both = sink.messages(2).await;
    let (envelope, message) = &both[1];
    assert!(envelope.contains("alice@example.org"), "{envelope}");
    assert!(message.contains("1... Nf6"), "{message}");
    // Real-time games send nothing.
    let blitz_game = system
        .challenge_and_accept(&alice, &bob, wire::ColorChoice::White, blitz())
        .await;
    system.make_move(&alice, &blitz_game, "d4").await.unwrap();
    system.make_move(&bob, &game_id, "Nc6").await.unwrap_err();
    system.make_move(&alice, &game_id, "Nf3").await.unwrap();
    let all = sink.messages(3).await;
    assert_eq!(all.len(), 3, "only the daily game's moves are mailed");
    assert!(all[2].1.contains("2. Nf3"), "{}", all[2].1);
}

#[tokio::test]
async fn without_smtp_mail_goes_to_the_directory_and_one_replica_sends() {
    let system = System::start(&[]).await;
    // A second gateway with the notifier off, as on all but one replica.
    let quiet_mail = system.dir.path().join("quiet-mail");
    let quiet_dir = quiet_mail.display().to_string();
    let _quiet = common::Service::start(
        std::path::PathBuf::from(env!("CARGO_BIN_EXE_chess-gateway")),
        &[
            "--uqchess-listen",
            "",
            "--game-addr",
            &system.game.addr,
            "--matchmaking-addr",
            &system.matchmaking.addr,
            "--rating-addr",
            &system.rating.addr,
            "--token-key",
            "a test key that is long enough",
            "--mail-dir",
            &quiet_dir,
            "--notify-daily-moves",
            "false",
        ],
    )
    .await;
    let alice = system.sign_up("alice").await;
    let bob = system.sign_up("bob").await;
    let game_id = system
        .challenge_and_accept(&alice, &bob, wire::ColorChoice::Black, daily(24))
        .await;
    system.make_move(&bob, &game_id, "e4").await.unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let file = loop {
        let found: Vec<_> = std::fs::read_dir(&system.mail_dir)
            .into_iter()
            .flatten()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "eml"))
            .collect();
        if let Some(file) = found.first() {
            assert_eq!(found.len(), 1);
            break file.clone();
        }
        assert!(std::time::Instant::now() < deadline, "no mail was written");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    let text = std::fs::read_to_string(file).unwrap();
    assert!(text.contains("To: alice@example.org"), "{text}");
    assert!(text.contains("bob played 1. e4"), "{text}");
    assert!(!quiet_mail.exists(), "the quiet replica sent mail too");

    // Without --public-url the link is the gateway's own address, and it
    // opens the game over plain HTTP on the gRPC port.
    let link = text
        .split_whitespace()
        .find(|word| word.starts_with("http"))
        .unwrap_or_else(|| panic!("no link in {text}"));
    let expected = format!("http://{}/games/{game_id}", system.gateway.addr);
    assert_eq!(link, expected);
    let path = &link[format!("http://{}", system.gateway.addr).len()..];
    let page = common::http(&system.gateway.addr, "GET", path, &[], b"").await;
    assert_eq!(page.status, 200, "{}", page.text());
    let html = page.text();
    assert!(html.contains("<li>e4</li>"), "{html}");
    assert!(html.contains("Black to move."), "{html}");
    assert!(html.contains("White: <b>bob</b>"), "{html}");
}
