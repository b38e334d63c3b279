//! Starting the real `chess-game` binary for tests.

#![allow(dead_code, unreachable_pub, unused_imports, unused_macros)]

use chess_proto::{
    common::v1 as common,
    game::v1::{self as pb, game_service_client::GameServiceClient},
};
pub use chess_testkit::acting;
pub use chess_testkit::free_port;
use chess_testkit::{Answer as _, Service, Signed};
use tokio::process::Child;

/// A client signed as the gateway's calls are.
pub type Client = GameServiceClient<Signed>;

/// A running `chess-game`.
pub struct GameService {
    pub child: Child,
    pub addr: String,
    pub database_url: String,
}

impl GameService {
    /// Starts the service on `database_url` and waits until it is SERVING.
    /// The engine and rating services are unreachable unless given.
    pub async fn start(database_url: &str) -> Self {
        Self::start_with(database_url, "127.0.0.1:9", "127.0.0.1:9").await
    }

    pub async fn start_with(database_url: &str, engine_addr: &str, rating_addr: &str) -> Self {
        let addr = chess_testkit::free_addr();
        Self::start_at(database_url, &addr, engine_addr, rating_addr).await
    }

    /// Starts the service on `database_url`, listening at `addr` (where a
    /// crashed run listened), and waits until it is SERVING.
    pub async fn restart_at(database_url: &str, addr: &str) -> Self {
        Self::start_at(database_url, addr, "127.0.0.1:9", "127.0.0.1:9").await
    }

    async fn start_at(
        database_url: &str,
        addr: &str,
        engine_addr: &str,
        rating_addr: &str,
    ) -> Self {
        let Service { child, addr } = Service::start_at(
            env!("CARGO_BIN_EXE_chess-game"),
            addr,
            &[
                "--database-url",
                database_url,
                "--engine-addr",
                engine_addr,
                "--rating-addr",
                rating_addr,
            ],
        )
        .await;
        Self {
            child,
            addr,
            database_url: database_url.to_owned(),
        }
    }

    pub async fn client(&self) -> Client {
        GameServiceClient::new(chess_testkit::signed(
            chess_testkit::connect(&self.addr).await,
        ))
    }

    /// Kills the process with SIGKILL, as a crash would.
    pub async fn crash(self) {
        Service {
            child: self.child,
            addr: self.addr,
        }
        .crash()
        .await;
    }
}

/// A guest named after its id.
pub fn guest(id: &str) -> common::Player {
    chess_domain::guest_player(id, id)
}

pub fn registered(id: &str, name: &str) -> common::Player {
    chess_domain::registered_player(id, name)
}

pub fn untimed() -> common::TimeControl {
    chess_domain::TimeControl::Untimed.into()
}

pub fn incremental(initial_secs: u32, increment_secs: u32) -> common::TimeControl {
    chess_domain::TimeControl::Incremental {
        initial_secs,
        increment_secs,
    }
    .into()
}

/// Creates a game between guests `white` and `black`.
pub async fn create(
    client: &mut Client,
    white: &str,
    black: &str,
    tc: common::TimeControl,
) -> common::GameState {
    let request = pb::CreateGameRequest {
        white: Some(guest(white)),
        black: Some(guest(black)),
        time_control: Some(tc),
        rules: common::RuleSet::Standard as i32,
        ..Default::default()
    };
    let created = client.create_game(request).answer().await;
    created.game.expect("state")
}

pub async fn play(
    client: &mut Client,
    game_id: &str,
    player: &str,
    mv: &str,
) -> Result<pb::MakeMoveResponse, tonic::Status> {
    client
        .make_move(acting(
            pb::MakeMoveRequest {
                game_id: game_id.to_owned(),
                player_id: player.to_owned(),
                r#move: mv.to_owned(),
                ply: None,
            },
            player,
            Some(game_id),
        ))
        .await
        .map(tonic::Response::into_inner)
}

/// A request a player makes in a game, which names just the two.
pub trait PlayerRequest: Sized {
    fn new(game_id: String, player_id: String) -> Self;

    /// The request of `player` in `game_id`, signed as acting for them
    /// there.
    fn by(player: &str, game_id: &str) -> tonic::Request<Self> {
        acting(
            Self::new(game_id.to_owned(), player.to_owned()),
            player,
            Some(game_id),
        )
    }
}

macro_rules! player_requests {
    ($($request:ty),* $(,)?) => {
        $(impl PlayerRequest for $request {
            fn new(game_id: String, player_id: String) -> Self {
                Self { game_id, player_id }
            }
        })*
    };
}

player_requests!(
    pb::ResignRequest,
    pb::OfferDrawRequest,
    pb::AcceptDrawRequest,
    pb::DeclineDrawRequest,
    pb::ClaimDrawRequest,
    pb::AbortRequest,
);

/// Resigns `player`'s side of `game_id`.
pub async fn resign(
    client: &mut Client,
    game_id: &str,
    player: &str,
) -> Result<pb::ResignResponse, tonic::Status> {
    client
        .resign(pb::ResignRequest::by(player, game_id))
        .await
        .map(tonic::Response::into_inner)
}

/// The SAN of each move of a game, in order.
pub fn sans(state: &common::GameState) -> Vec<&str> {
    state.moves.iter().map(|m| m.san.as_str()).collect()
}

pub async fn get(client: &mut Client, game_id: &str) -> common::GameState {
    client
        .get_game(pb::GetGameRequest {
            game_id: game_id.to_owned(),
        })
        .await
        .expect("get game")
        .into_inner()
        .game
        .expect("state")
}

/// The game's state once it has finished, awaited for 20 s at most (a
/// flag falls when the service's timer fires, however slow the machine):
/// the last state seen if it never does.
pub async fn finished(client: &mut Client, game_id: &str) -> common::GameState {
    chess_testkit::settled(
        std::time::Duration::from_secs(20),
        || {
            let mut client = client.clone();
            async move { get(&mut client, game_id).await }
        },
        |state| state.status == common::GameStatus::Finished as i32,
    )
    .await
}

/// A fresh SQLite database file (kept alive by the returned directory).
pub fn sqlite() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let url = chess_storage::sqlite_url(&dir.path().join("game.sqlite"));
    (dir, url)
}

/// The service on a fresh SQLite file (kept alive by the returned
/// directory), and a client of it.
pub async fn on_sqlite() -> (tempfile::TempDir, GameService, Client) {
    let (dir, url) = sqlite();
    let service = GameService::start(&url).await;
    let client = service.client().await;
    (dir, service, client)
}

/// Two tests running `$run`, an async fn of a database URL: `$sqlite` on a
/// fresh SQLite file, `$postgres` on a fresh PostgreSQL database.
macro_rules! on_each_backend {
    ($sqlite:ident, $postgres:ident => $run:ident) => {
        #[tokio::test]
        async fn $sqlite() {
            let (_dir, url) = common::sqlite();
            $run(url).await;
        }

        #[tokio::test]
        async fn $postgres() {
            $run(chess_storage::testing::fresh_postgres_database().await).await;
        }
    };
}
pub(crate) use on_each_backend;
