//! The service's edges: bad flags refused at startup with one line, and
//! calls taken only from the callers they belong to.

mod common;

use chess_proto::{common::v1::GameResult, rating::v1::get_player_request::Key};
use common::{PASSWORD, RatingService, blitz, game, register};
use tonic::Code;

#[test]
fn bad_flags_exit_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let url = chess_storage::sqlite_url(&dir.path().join("unused.sqlite"));
    for (flags, code, needle) in [
        (vec!["--rating-system", "nope"], 2, "invalid value"),
        (
            vec!["--rating-system", "glicko2", "--glicko2-tau", "0"],
            1,
            "tau",
        ),
    ] {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_chess-rating"))
            .args(["--listen", "127.0.0.1:0", "--database-url", &url])
            .args(&flags)
            .output()
            .expect("run chess-rating");
        assert_eq!(output.status.code(), Some(code), "{flags:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        let lines: Vec<_> = stderr
            .lines()
            .filter(|l| l.starts_with("chess-rating:"))
            .collect();
        assert_eq!(lines.len(), 1, "{stderr}");
        assert!(lines[0].contains(needle), "{stderr}");
    }
}

#[tokio::test]
async fn accounts_and_results_are_taken_only_from_their_callers() {
    let db = common::Database::sqlite();
    let service = RatingService::start(&db.url).await;
    let mut client = service.client().await;
    let a = register(&mut client, "ann").await;
    let b = register(&mut client, "ben").await;
    let channel = chess_testkit::connect(&service.addr).await;
    let denied = |status: tonic::Status| {
        assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
        assert_eq!(
            chess_runtime::Reason::of(&status),
            Some(chess_runtime::Reason::CallerMismatch)
        );
    };

    // Accounts are the gateway's: the lobby cannot sign anyone in.
    let mut lobby = chess_proto::rating::v1::rating_service_client::RatingServiceClient::new(
        chess_testkit::signed_as(channel.clone(), "matchmaking"),
    );
    denied(
        lobby
            .authenticate(chess_proto::rating::v1::AuthenticateRequest {
                login: "ann".into(),
                password: PASSWORD.into(),
            })
            .await
            .unwrap_err(),
    );
    // Results are the game service's, each for its own game.
    denied(
        client
            .record_result(game("g1", &a, &b, GameResult::WhiteWins))
            .await
            .unwrap_err(),
    );
    denied(
        client
            .record_result(chess_testkit::acting_as(
                "game",
                game("g1", &a, &b, GameResult::WhiteWins),
                "",
                Some("g2"),
            ))
            .await
            .unwrap_err(),
    );
    assert_eq!(blitz(&mut client, &a).await.games_played, 0);
    // Reads need only a valid assertion.
    assert_eq!(blitz(&mut lobby, &b).await.games_played, 0);

    // Linking a Nostr key acts for the player, and only the gateway does it.
    let key = "ab".repeat(32);
    let link = |player_id: &str| chess_proto::rating::v1::LinkNostrKeyRequest {
        player_id: player_id.into(),
        public_key: key.clone(),
    };
    let unlink = |player_id: &str| chess_proto::rating::v1::UnlinkNostrKeyRequest {
        player_id: player_id.into(),
    };
    // Each refused: for no player, by the gateway for another player, and
    // by another service for the player.
    macro_rules! denied_for_a {
        ($method:ident, $request:expr) => {
            denied(client.$method($request).await.unwrap_err());
            let for_b = chess_testkit::acting($request, &b, None);
            denied(client.$method(for_b).await.unwrap_err());
            let from_lobby = chess_testkit::acting_as("matchmaking", $request, &a, None);
            denied(lobby.$method(from_lobby).await.unwrap_err());
        };
    }
    denied_for_a!(link_nostr_key, link(&a));
    denied_for_a!(unlink_nostr_key, unlink(&a));
    let by_key = |key: &str| chess_proto::rating::v1::GetPlayerRequest {
        key: Some(Key::NostrPublicKey(key.to_owned())),
    };
    assert_eq!(
        lobby.get_player(by_key(&key)).await.unwrap_err().code(),
        Code::NotFound
    );
    client
        .link_nostr_key(chess_testkit::acting(link(&a), &a, None))
        .await
        .expect("the gateway links for the player");
    // Looking a key up needs only a valid assertion.
    let found = lobby
        .get_player(by_key(&key))
        .await
        .expect("by key")
        .into_inner()
        .profile
        .expect("a profile");
    assert_eq!(found.player_id, a);
    client
        .unlink_nostr_key(chess_testkit::acting(unlink(&a), &a, None))
        .await
        .expect("the gateway unlinks for the player");
}
