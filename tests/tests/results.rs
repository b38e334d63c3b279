//! A finished rated game reaches the rating service even when that service
//! is down as the game ends: the result waits in the game service's outbox
//! and is delivered, exactly once, when the rating service is back.

use std::{
    process::Stdio,
    time::{Duration, Instant},
};

use chess_e2e::binary;
use chess_proto::{
    common::v1 as common,
    game::v1::{CreateGameRequest, MakeMoveRequest, game_service_client::GameServiceClient},
    rating::v1::{
        GetPlayerRequest, RegisterRequest, get_player_request::Key,
        rating_service_client::RatingServiceClient,
    },
};
use chess_testkit::free_port;
use tokio::process::{Child, Command};
use tonic::transport::Channel;

fn start(program: &str, args: &[&str]) -> Child {
    Command::new(binary(program))
        .envs(chess_testkit::internal_key_env())
        .args(args)
        .args(["--log-filter", "error", "--stop-on-stdin-eof"])
        .stdin(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("start {program}: {e}"))
}

/// A channel to `addr` once it is SERVING, its calls signed as the
/// gateway's.
async fn connect(addr: &str) -> chess_testkit::Signed {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(channel) = Channel::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect()
            .await
        {
            let mut health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
            let request = tonic_health::pb::HealthCheckRequest {
                service: String::new(),
            };
            if health
                .check(request)
                .await
                .is_ok_and(|r| r.get_ref().status == 1)
            {
                return chess_testkit::signed(channel);
            }
        }
        assert!(Instant::now() < deadline, "{addr} never became SERVING");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn sqlite(dir: &tempfile::TempDir, name: &str) -> String {
    format!("sqlite://{}?mode=rwc", dir.path().join(name).display())
}

#[tokio::test]
async fn a_result_waits_for_the_rating_service_and_is_applied_once() {
    let data = tempfile::tempdir().unwrap();
    let rating_addr = format!("127.0.0.1:{}", free_port());
    let game_addr = format!("127.0.0.1:{}", free_port());
    let rating_args = [
        "--listen",
        &rating_addr,
        "--database-url",
        &sqlite(&data, "rating.sqlite"),
    ];

    // Two registered players.
    let mut rating_service = start("chess-rating", &rating_args);
    let mut rating = RatingServiceClient::new(connect(&rating_addr).await);
    let mut ids = Vec::new();
    for name in ["alice", "bob"] {
        let profile = rating
            .register(RegisterRequest {
                username: name.into(),
                email: format!("{name}@example.com"),
                password: "correct horse".into(),
            })
            .await
            .unwrap()
            .into_inner()
            .profile
            .unwrap();
        ids.push(profile.player_id);
    }
    // The rating service goes down before the game ends.
    rating_service.kill().await.unwrap();

    let _game_service = start(
        "chess-game",
        &[
            "--listen",
            &game_addr,
            "--database-url",
            &sqlite(&data, "game.sqlite"),
            "--rating-addr",
            &rating_addr,
            "--engine-addr",
            "127.0.0.1:9",
        ],
    );
    let mut game = GameServiceClient::new(connect(&game_addr).await);
    let player = |id: &str, name: &str| common::Player {
        kind: Some(common::player::Kind::Registered(common::RegisteredPlayer {
            player_id: id.to_owned(),
            username: name.to_owned(),
        })),
    };
    let created = game
        .create_game(CreateGameRequest {
            white: Some(player(&ids[0], "alice")),
            black: Some(player(&ids[1], "bob")),
            time_control: Some(common::TimeControl {
                kind: Some(common::time_control::Kind::Incremental(
                    common::Incremental {
                        initial_seconds: 300,
                        increment_seconds: 0,
                    },
                )),
            }),
            rules: common::RuleSet::Standard as i32,
            rated: true,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .game
        .unwrap();
    // Fool's mate: bob wins.
    for (i, m) in ["f3", "e5", "g4", "Qh4#"].iter().enumerate() {
        game.make_move(chess_testkit::acting(
            MakeMoveRequest {
                game_id: created.game_id.clone(),
                player_id: ids[i % 2].clone(),
                r#move: (*m).to_owned(),
                ply: None,
            },
            &ids[i % 2],
            Some(&created.game_id),
        ))
        .await
        .unwrap();
    }

    // Back up: the outbox delivers the result.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let _rating_service = start("chess-rating", &rating_args);
    let mut rating = RatingServiceClient::new(connect(&rating_addr).await);
    let blitz = |profile: common::PlayerProfile| {
        profile
            .ratings
            .into_iter()
            .find(|r| r.category == common::SpeedCategory::Blitz as i32)
            .expect("a blitz rating")
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let bob = loop {
        let profile = rating
            .get_player(GetPlayerRequest {
                key: Some(Key::PlayerId(ids[1].clone())),
            })
            .await
            .unwrap()
            .into_inner()
            .profile
            .unwrap();
        let bob = blitz(profile);
        if bob.games_played > 0 {
            break bob;
        }
        assert!(Instant::now() < deadline, "the result never arrived");
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    // Club Elo, both new at 1200: the winner gains 10.
    assert_eq!((bob.games_played, bob.wins, bob.rating), (1, 1, 1210.0));
    let alice = blitz(
        rating
            .get_player(GetPlayerRequest {
                key: Some(Key::PlayerId(ids[0].clone())),
            })
            .await
            .unwrap()
            .into_inner()
            .profile
            .unwrap(),
    );
    assert_eq!(
        (alice.games_played, alice.losses, alice.rating),
        (1, 1, 1190.0)
    );
    // Delivered once: nothing changes later.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let again = rating
        .get_player(GetPlayerRequest {
            key: Some(Key::PlayerId(ids[1].clone())),
        })
        .await
        .unwrap()
        .into_inner()
        .profile
        .unwrap();
    assert_eq!(blitz(again).games_played, 1);
}

/// An untimed game between registered players is filed as untimed and, like
/// every untimed game, changes no rating; one cannot even be created rated.
#[tokio::test]
async fn an_untimed_game_changes_no_rating() {
    let data = tempfile::tempdir().unwrap();
    let rating_addr = format!("127.0.0.1:{}", free_port());
    let game_addr = format!("127.0.0.1:{}", free_port());
    let _rating_service = start(
        "chess-rating",
        &[
            "--listen",
            &rating_addr,
            "--database-url",
            &sqlite(&data, "rating.sqlite"),
        ],
    );
    let mut rating = RatingServiceClient::new(connect(&rating_addr).await);
    let mut ids = Vec::new();
    for name in ["carol", "dave"] {
        let profile = rating
            .register(RegisterRequest {
                username: name.into(),
                email: format!("{name}@example.com"),
                password: "correct horse".into(),
            })
            .await
            .unwrap()
            .into_inner()
            .profile
            .unwrap();
        ids.push(profile.player_id);
    }
    let _game_service = start(
        "chess-game",
        &[
            "--listen",
            &game_addr,
            "--database-url",
            &sqlite(&data, "game.sqlite"),
            "--rating-addr",
            &rating_addr,
            "--engine-addr",
            "127.0.0.1:9",
        ],
    );
    let mut game = GameServiceClient::new(connect(&game_addr).await);
    let player = |id: &str, name: &str| common::Player {
        kind: Some(common::player::Kind::Registered(common::RegisteredPlayer {
            player_id: id.to_owned(),
            username: name.to_owned(),
        })),
    };
    let untimed = common::TimeControl {
        kind: Some(common::time_control::Kind::Untimed(common::Untimed {})),
    };
    let blitz = common::TimeControl {
        kind: Some(common::time_control::Kind::Incremental(
            common::Incremental {
                initial_seconds: 300,
                increment_seconds: 0,
            },
        )),
    };
    let request = |time_control: &common::TimeControl, rated| CreateGameRequest {
        white: Some(player(&ids[0], "carol")),
        black: Some(player(&ids[1], "dave")),
        time_control: Some(*time_control),
        rules: common::RuleSet::Standard as i32,
        rated,
        ..Default::default()
    };
    let refused = game.create_game(request(&untimed, true)).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);

    // The untimed game ends first, then a rated blitz one: results are
    // delivered in the order the games ended, so once the blitz game counts,
    // the untimed one has been delivered too.
    for time_control in [&untimed, &blitz] {
        let created = game
            .create_game(request(time_control, time_control == &blitz))
            .await
            .unwrap()
            .into_inner()
            .game
            .unwrap();
        let expected = if time_control == &blitz {
            common::SpeedCategory::Blitz
        } else {
            common::SpeedCategory::Untimed
        };
        assert_eq!(created.speed, expected as i32);
        for (i, m) in ["f3", "e5", "g4", "Qh4#"].iter().enumerate() {
            game.make_move(chess_testkit::acting(
                MakeMoveRequest {
                    game_id: created.game_id.clone(),
                    player_id: ids[i % 2].clone(),
                    r#move: (*m).to_owned(),
                    ply: None,
                },
                &ids[i % 2],
                Some(&created.game_id),
            ))
            .await
            .unwrap();
        }
    }

    let deadline = Instant::now() + Duration::from_secs(60);
    let profile = loop {
        let profile = rating
            .get_player(GetPlayerRequest {
                key: Some(Key::PlayerId(ids[1].clone())),
            })
            .await
            .unwrap()
            .into_inner()
            .profile
            .unwrap();
        let played: u32 = profile.ratings.iter().map(|r| r.games_played).sum();
        if played > 0 {
            break profile;
        }
        assert!(Instant::now() < deadline, "the blitz result never arrived");
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    // Only the blitz game counts: one game, one history row.
    for r in &profile.ratings {
        let games = u32::from(r.category == common::SpeedCategory::Blitz as i32);
        assert_eq!(r.games_played, games, "category {}", r.category);
    }
    let history = rating
        .get_rating_history(chess_proto::rating::v1::GetRatingHistoryRequest {
            player_id: ids[1].clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .entries;
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].category, common::SpeedCategory::Blitz as i32);
}
