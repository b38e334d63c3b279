//! Starting the real `chess-rating` binary for tests, on a SQLite file or a
//! fresh PostgreSQL database.

#![allow(dead_code, unreachable_pub)]

use chess_proto::{
    common::v1 as common,
    rating::v1::{self as pb, rating_service_client::RatingServiceClient},
};
use chess_testkit::{Service, Signed};
use tokio::process::Child;

/// A client signed as the gateway's calls are.
pub type Client = RatingServiceClient<Signed>;

/// `request` as the game service sends it: the one caller whose results
/// are taken, bound to the game.
pub fn from_game(request: pb::RecordResultRequest) -> tonic::Request<pb::RecordResultRequest> {
    let game_id = request.game_id.clone();
    chess_testkit::acting_as("game", request, "", Some(&game_id))
}

/// A password every test account uses.
pub const PASSWORD: &str = "correct horse battery";

/// A database for one test: a SQLite file in a temporary directory, or a
/// fresh PostgreSQL database.
pub struct Database {
    pub url: String,
    _dir: Option<tempfile::TempDir>,
}

impl Database {
    pub fn sqlite() -> Self {
        let dir = tempfile::tempdir().expect("temporary directory");
        let url = chess_storage::sqlite_url(&dir.path().join("rating.sqlite"));
        Self {
            url,
            _dir: Some(dir),
        }
    }

    pub async fn postgres() -> Self {
        Self {
            url: chess_storage::testing::fresh_postgres_database().await,
            _dir: None,
        }
    }
}

/// A running `chess-rating`.
pub struct RatingService {
    pub child: Child,
    pub addr: String,
}

impl RatingService {
    /// Starts the service (club Elo) on `database_url` and waits until it is
    /// SERVING.
    pub async fn start(database_url: &str) -> Self {
        Self::start_with(database_url, &[]).await
    }

    /// Starts the service with extra flags.
    pub async fn start_with(database_url: &str, flags: &[&str]) -> Self {
        let args: Vec<&str> = ["--database-url", database_url]
            .into_iter()
            .chain(flags.iter().copied())
            .collect();
        let Service { child, addr } =
            Service::start(env!("CARGO_BIN_EXE_chess-rating"), &args).await;
        Self { child, addr }
    }

    /// Starts the service on `database_url` with `names` registered: the
    /// service, a client of it and the players' ids.
    pub async fn with_players<const N: usize>(
        database_url: &str,
        names: [&str; N],
    ) -> (Self, Client, [String; N]) {
        let service = Self::start(database_url).await;
        let mut client = service.client().await;
        let mut ids = Vec::with_capacity(N);
        for name in names {
            ids.push(register(&mut client, name).await);
        }
        let ids = ids.try_into().expect("an id for each name");
        (service, client, ids)
    }

    pub async fn client(&self) -> Client {
        RatingServiceClient::new(chess_testkit::signed(
            chess_testkit::connect(&self.addr).await,
        ))
    }

    /// Stops the service the way a supervisor does (end of its standard
    /// input) and waits for it to exit cleanly.
    pub async fn stop(self) {
        let status = Service {
            child: self.child,
            addr: self.addr,
        }
        .stop()
        .await;
        assert!(status.success(), "chess-rating exited with {status}");
    }
}

/// Registers `username` (email `<username>@example.org`) and returns the id.
pub async fn register(client: &mut Client, username: &str) -> String {
    client
        .register(pb::RegisterRequest {
            username: username.into(),
            email: format!("{username}@example.org"),
            password: PASSWORD.into(),
        })
        .await
        .unwrap_or_else(|e| panic!("register {username}: {e}"))
        .into_inner()
        .profile
        .expect("a profile")
        .player_id
}

/// A rated blitz game.
pub fn game(
    game_id: &str,
    white: &str,
    black: &str,
    result: common::GameResult,
) -> pb::RecordResultRequest {
    pb::RecordResultRequest {
        game_id: game_id.into(),
        white_id: white.into(),
        black_id: black.into(),
        result: result as i32,
        category: common::SpeedCategory::Blitz as i32,
        rated: true,
        finished_at: None,
    }
}

/// Records `request` as the game service reports it, and the answer.
pub async fn record(
    client: &mut Client,
    request: pb::RecordResultRequest,
) -> pb::RecordResultResponse {
    let game_id = request.game_id.clone();
    client
        .record_result(from_game(request))
        .await
        .unwrap_or_else(|e| panic!("record {game_id}: {e}"))
        .into_inner()
}

/// `player_id`'s blitz rating.
pub async fn blitz(client: &mut Client, player_id: &str) -> common::Rating {
    client
        .get_ratings(pb::GetRatingsRequest {
            player_ids: vec![player_id.into()],
            category: common::SpeedCategory::Blitz as i32,
        })
        .await
        .expect("get ratings")
        .into_inner()
        .ratings
        .pop()
        .and_then(|r| r.rating)
        .unwrap_or_else(|| panic!("no blitz rating for {player_id}"))
}

/// Every history row of `player_id`, newest first, read `page_size` at a
/// time.
pub async fn full_history(
    client: &mut Client,
    player_id: &str,
    page_size: u32,
) -> Vec<common::RatingHistoryEntry> {
    let mut entries = Vec::new();
    let mut page_token = String::new();
    loop {
        let page = client
            .get_rating_history(pb::GetRatingHistoryRequest {
                player_id: player_id.into(),
                category: common::SpeedCategory::Unspecified as i32,
                page_size,
                page_token,
            })
            .await
            .expect("history")
            .into_inner();
        assert!(page.entries.len() <= page_size as usize);
        entries.extend(page.entries);
        if page.next_page_token.is_empty() {
            return entries;
        }
        page_token = page.next_page_token;
    }
}

/// A page of the leaderboard of `category` (a wire value), from
/// `page_token`.
pub async fn leaderboard(
    client: &mut Client,
    category: i32,
    page_size: u32,
    page_token: &str,
) -> Result<tonic::Response<pb::LeaderboardResponse>, tonic::Status> {
    client
        .leaderboard(pb::LeaderboardRequest {
            category,
            page_size,
            page_token: page_token.to_owned(),
        })
        .await
}

/// Every leaderboard row in blitz, read `page_size` at a time (0: the
/// service's default of 50).
pub async fn full_leaderboard(
    client: &mut Client,
    page_size: u32,
) -> Vec<common::LeaderboardEntry> {
    let mut entries = Vec::new();
    let mut page_token = String::new();
    loop {
        let page = leaderboard(
            client,
            common::SpeedCategory::Blitz as i32,
            page_size,
            &page_token,
        )
        .await
        .expect("leaderboard")
        .into_inner();
        let limit = if page_size == 0 { 50 } else { page_size };
        assert!(page.entries.len() <= limit as usize);
        entries.extend(page.entries);
        if page.next_page_token.is_empty() {
            return entries;
        }
        page_token = page.next_page_token;
    }
}

/// Runs each named test body against SQLite and against PostgreSQL.
#[allow(unused_macros)]
macro_rules! on_sqlite_and_postgres {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = crate::common::Database::sqlite();
                    super::$name(&db.url).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = crate::common::Database::postgres().await;
                    super::$name(&db.url).await;
                }
            )*
        }
    };
}
#[allow(unused_imports)]
pub(crate) use on_sqlite_and_postgres;

pub fn register_request(username: &str, email: &str, password: &str) -> pb::RegisterRequest {
    pb::RegisterRequest {
        username: username.into(),
        email: email.into(),
        password: password.into(),
    }
}

pub fn login_request(login: &str, password: &str) -> pb::AuthenticateRequest {
    pb::AuthenticateRequest {
        login: login.into(),
        password: password.into(),
    }
}

/// Asserts that a call was refused with `code`.
pub fn assert_refused<T: std::fmt::Debug>(result: Result<T, tonic::Status>, code: tonic::Code) {
    let status = result.expect_err("refused");
    assert_eq!(status.code(), code, "{status:?}");
}
