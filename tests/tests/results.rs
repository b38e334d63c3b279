//! A finished rated game reaches the rating service even when that service
//! is down as the game ends: the result waits in the game service's outbox
//! and is delivered, exactly once, when the rating service is back.

use std::{
    process::Stdio,
    time::{Duration, Instant},
};

use chess_domain::registered_player;
use chess_e2e::binary;
use chess_proto::{
    common::v1 as common,
    game::v1::{CreateGameRequest, MakeMoveRequest, game_service_client::GameServiceClient},
    rating::v1::{
        GetPlayerRequest, RegisterRequest, get_player_request::Key,
        rating_service_client::RatingServiceClient,
    },
};
use chess_testkit::{Answer as _, clocks::blitz, free_port};
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

#[tokio::test]
async fn a_result_waits_for_the_rating_service_and_is_applied_once() {
    let places = Places::new();
    // Two registered players.
    let (mut rating_service, mut rating) = places.start_rating().await;
    let ids = register(&mut rating, &["alice", "bob"]).await;
    // The rating service goes down before the game ends.
    rating_service.kill().await.unwrap();

    let (_game_service, mut game) = places.start_game().await;
    // Fool's mate: bob wins.
    fools_mate(&mut game, &ids).await;

    // Back up: the outbox delivers the result.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (_rating_service, mut rating) = places.start_rating().await;
    let blitz = |profile: common::PlayerProfile| {
        profile
            .ratings
            .into_iter()
            .find(|r| r.category == common::SpeedCategory::Blitz as i32)
            .expect("a blitz rating")
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let bob = loop {
        let profile = profile(&mut rating, &ids[1]).await;
        let bob = blitz(profile);
        if bob.games_played > 0 {
            break bob;
        }
        assert!(Instant::now() < deadline, "the result never arrived");
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    // Club Elo, both new at 1200: the winner gains 10.
    assert_eq!((bob.games_played, bob.wins, bob.rating), (1, 1, 1210.0));
    let alice = blitz(profile(&mut rating, &ids[0]).await);
    assert_eq!(
        (alice.games_played, alice.losses, alice.rating),
        (1, 1, 1190.0)
    );
    // Delivered once: nothing changes later.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let again = profile(&mut rating, &ids[1]).await;
    assert_eq!(blitz(again).games_played, 1);
}

/// An untimed game between registered players is filed as untimed and, like
/// every untimed game, changes no rating; one cannot even be created rated.
#[tokio::test]
async fn an_untimed_game_changes_no_rating() {
    let places = Places::new();
    let (_rating_service, mut rating) = places.start_rating().await;
    let ids = register(&mut rating, &["carol", "dave"]).await;
    let (_game_service, mut game) = places.start_game().await;
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
        play_fools_mate(&mut game, &ids, &created.game_id).await;
    }

    let deadline = Instant::now() + Duration::from_secs(60);
    let profile = loop {
        let profile = profile(&mut rating, &ids[1]).await;
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

/// The game service stopping while it delivers a backlog of results: each
/// result is then either recorded by the rating service or still in the
/// outbox, never both. (One recorded but left in the outbox would be sent
/// again at the next start: harmless, as the rating service applies a game
/// once, but a sign the outbox was written to after it had closed.)
#[tokio::test]
async fn a_stop_during_delivery_leaves_each_result_recorded_or_pending_not_both() {
    const GAMES: usize = 300;
    let places = Places::new();
    let (mut rating_service, mut rating) = places.start_rating().await;
    let ids = register(&mut rating, &["erin", "frank"]).await;
    // The results pile up in the outbox while the rating service is down.
    rating_service.kill().await.unwrap();
    let (mut game_service, mut game) = places.start_game().await;
    for _ in 0..GAMES {
        fools_mate(&mut game, &ids).await;
    }

    // Back up; one more game's end has the outbox delivered at once.
    let (_rating_service, mut rating) = places.start_rating().await;
    fools_mate(&mut game, &ids).await;
    let games_played = |profile: common::PlayerProfile| {
        profile
            .ratings
            .into_iter()
            .find(|r| r.category == common::SpeedCategory::Blitz as i32)
            .map_or(0, |r| r.games_played)
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let profile = profile(&mut rating, &ids[1]).await;
        if games_played(profile) > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "no result was delivered");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // Stopped in the middle of the delivery (end of standard input).
    drop(game_service.stdin.take());
    let status = tokio::time::timeout(Duration::from_secs(30), game_service.wait())
        .await
        .expect("the game service did not stop")
        .unwrap();
    assert!(status.success(), "the game service stopped with {status}");

    let recorded = games_played(profile(&mut rating, &ids[1]).await);
    let store = chess_game::store::Store::open(&places.game_url())
        .await
        .unwrap();
    let pending = store.pending_results().await.unwrap().len();
    store.close().await;
    assert_eq!(
        usize::try_from(recorded).unwrap() + pending,
        GAMES + 1,
        "{recorded} results recorded and {pending} still in the outbox"
    );
}

/// Creates a rated blitz game between the two players and plays fool's
/// mate in it: the second player wins.
async fn fools_mate(game: &mut GameServiceClient<chess_testkit::Signed>, ids: &[String]) {
    let request = CreateGameRequest {
        white: Some(registered_player(&ids[0], "")),
        black: Some(registered_player(&ids[1], "")),
        time_control: Some(blitz()),
        rules: common::RuleSet::Standard as i32,
        rated: true,
        ..Default::default()
    };
    let answer = game.create_game(request).answer().await;
    let created = answer.game.expect("the game created");
    play_fools_mate(game, ids, &created.game_id).await;
}

/// Plays fool's mate in the game `game_id` between the two players: the
/// second player wins.
async fn play_fools_mate(
    game: &mut GameServiceClient<chess_testkit::Signed>,
    ids: &[String],
    game_id: &str,
) {
    for (i, m) in ["f3", "e5", "g4", "Qh4#"].iter().enumerate() {
        game.make_move(chess_testkit::acting(
            MakeMoveRequest {
                game_id: game_id.to_owned(),
                player_id: ids[i % 2].clone(),
                r#move: (*m).to_owned(),
                ply: None,
            },
            &ids[i % 2],
            Some(game_id),
        ))
        .await
        .unwrap();
    }
}

/// Registers a player by each of `names`; their ids.
async fn register(
    rating: &mut RatingServiceClient<chess_testkit::Signed>,
    names: &[&str],
) -> Vec<String> {
    let mut ids = Vec::new();
    for name in names {
        let request = RegisterRequest {
            username: (*name).into(),
            email: format!("{name}@example.com"),
            password: "correct horse".into(),
        };
        let registered = rating.register(request).answer().await;
        ids.push(registered.profile.expect("the new profile").player_id);
    }
    ids
}

/// Where a test's rating and game services listen, and their SQLite files
/// (in a directory removed with it).
struct Places {
    data: tempfile::TempDir,
    rating_addr: String,
    game_addr: String,
}

impl Places {
    fn new() -> Self {
        Self {
            data: tempfile::tempdir().unwrap(),
            rating_addr: format!("127.0.0.1:{}", free_port()),
            game_addr: format!("127.0.0.1:{}", free_port()),
        }
    }

    fn url(&self, name: &str) -> String {
        format!(
            "sqlite://{}?mode=rwc",
            self.data.path().join(name).display()
        )
    }

    fn game_url(&self) -> String {
        self.url("game.sqlite")
    }

    /// Starts the rating service (again, on the same file); a client once
    /// it serves.
    async fn start_rating(&self) -> (Child, RatingServiceClient<chess_testkit::Signed>) {
        let url = self.url("rating.sqlite");
        let child = start(
            "chess-rating",
            &["--listen", &self.rating_addr, "--database-url", &url],
        );
        (
            child,
            RatingServiceClient::new(connect(&self.rating_addr).await),
        )
    }

    /// Starts the game service, reporting results to the rating service and
    /// without an engine; a client once it serves.
    async fn start_game(&self) -> (Child, GameServiceClient<chess_testkit::Signed>) {
        let url = self.game_url();
        let child = start(
            "chess-game",
            &[
                "--listen",
                &self.game_addr,
                "--database-url",
                &url,
                "--rating-addr",
                &self.rating_addr,
                "--engine-addr",
                "127.0.0.1:9",
            ],
        );
        (
            child,
            GameServiceClient::new(connect(&self.game_addr).await),
        )
    }
}

/// The player's profile, as the rating service has it now.
async fn profile(
    rating: &mut RatingServiceClient<chess_testkit::Signed>,
    id: &str,
) -> common::PlayerProfile {
    rating
        .get_player(GetPlayerRequest {
            key: Some(Key::PlayerId(id.to_owned())),
        })
        .await
        .unwrap()
        .into_inner()
        .profile
        .unwrap()
}
