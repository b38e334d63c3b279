//! The `buf curl` calls of `docs/calling-the-services.md` work against a
//! running gateway, over gRPC and gRPC-Web, through reflection alone.

mod common;

use std::path::PathBuf;

use common::{Service, workspace_binary};

/// Runs `buf curl` with `args` and returns its standard output.
async fn buf_curl(args: &[&str]) -> String {
    let output = tokio::process::Command::new("buf")
        .arg("curl")
        .args(args)
        .output()
        .await
        .expect(
            "buf is on PATH (scripts/test puts node_modules/.bin, from scripts/setup test, there)",
        );
    assert!(
        output.status.success(),
        "buf curl {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("text")
}

/// The string value of `"field": "…"` in buf's JSON output.
fn field<'a>(json: &'a str, field: &str) -> &'a str {
    let key = format!("\"{field}\": \"");
    let start = json
        .find(&key)
        .unwrap_or_else(|| panic!("no {field} in {json}"))
        + key.len();
    let end = json[start..].find('"').expect("closing quote") + start;
    &json[start..end]
}

#[tokio::test]
async fn documented_buf_curl_calls_work() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("rating.sqlite").display()
    );
    let rating = Service::start(workspace_binary("chess-rating"), &["--database-url", &db]).await;
    let mail = dir.path().join("mail").display().to_string();
    let gateway = Service::start(
        PathBuf::from(env!("CARGO_BIN_EXE_chess-gateway")),
        &[
            "--uqchess-listen",
            "",
            "--rating-addr",
            &rating.addr,
            // Not needed for these calls.
            "--game-addr",
            "127.0.0.1:9",
            "--matchmaking-addr",
            "127.0.0.1:9",
            "--notify-daily-moves",
            "false",
            "--token-key",
            "a test key that is long enough",
            "--mail-dir",
            &mail,
        ],
    )
    .await;
    let gw = format!("http://{}", gateway.addr);
    let grpc = ["--protocol", "grpc", "--http2-prior-knowledge"];

    let services = buf_curl(&[&grpc[..], &["--list-services", &gw]].concat()).await;
    for service in [
        "chess.gateway.v1.AccountService",
        "chess.gateway.v1.LobbyService",
        "chess.gateway.v1.PlayService",
    ] {
        assert!(
            services.contains(service),
            "{service} missing from {services}"
        );
    }

    let url = |method: &str| format!("{gw}/chess.gateway.v1.AccountService/{method}");
    let registered = buf_curl(
        &[
            &grpc[..],
            &[
                "-d",
                r#"{"username":"alice","email":"alice@example.org","password":"correct horse battery"}"#,
                &url("Register"),
            ],
        ]
        .concat(),
    )
    .await;
    assert_eq!(field(&registered, "username"), "alice");
    let login = buf_curl(
        &[
            &grpc[..],
            &[
                "-d",
                r#"{"login":"alice","password":"correct horse battery"}"#,
                &url("Login"),
            ],
        ]
        .concat(),
    )
    .await;
    let token = field(&login, "token");
    let authorization = format!("Authorization: Bearer {token}");
    let me = buf_curl(&[&grpc[..], &["-H", &authorization, &url("Me")]].concat()).await;
    assert_eq!(field(&me, "email"), "alice@example.org");

    // Exactly as the README and docs show it, and over gRPC-Web.
    let blitz = ["-d", r#"{"category":"SPEED_CATEGORY_BLITZ"}"#];
    for protocol in [
        &["--protocol", "grpc", "--http2-prior-knowledge", "--reflect"][..],
        &["--protocol", "grpcweb"],
    ] {
        let board = buf_curl(&[protocol, &blitz, &[&url("Leaderboard")]].concat()).await;
        assert_eq!(field(&board, "ratingSystem"), "RATING_SYSTEM_CLUB_ELO");
        // Alice has played no rated game: she is not ranked.
        assert!(!board.contains("alice"), "{board}");
    }
}
