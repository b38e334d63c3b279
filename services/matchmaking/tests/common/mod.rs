//! Starting the real services for tests: `chess-matchmaking` from this
//! package, and `chess-game` and `chess-rating`, built next to it by
//! `cargo build --workspace --bins`.

#![allow(dead_code, unreachable_pub, unused_imports, unused_macros)]

use std::{path::PathBuf, time::Duration};

use chess_proto::{
    common::v1 as common,
    game::v1::{GetGameRequest, game_service_client::GameServiceClient},
    matchmaking::v1::{self as pb, matchmaking_service_client::MatchmakingServiceClient},
    rating::v1::{RegisterRequest, rating_service_client::RatingServiceClient},
};
pub use chess_testkit::{Service, Signed, free_port, workspace_binary};

/// A request to matchmaking that acts for a player (or a guest).
pub trait ActsFor {
    /// The id of the player it acts for; empty for nobody.
    fn player(&self) -> &str;
}

macro_rules! acts_for {
    ($($request:ident . $field:ident),* $(,)?) => {
        $(impl ActsFor for pb::$request {
            fn player(&self) -> &str {
                &self.$field
            }
        })*
    };
}

acts_for!(
    JoinPairingQueueRequest.guest_id,
    CreateSeekRequest.player_id,
    CancelSeekRequest.player_id,
    ListSeeksRequest.viewer_id,
    RequestSeekRequest.player_id,
    AcceptSeekRequestRequest.player_id,
    RejectSeekRequestRequest.player_id,
    WithdrawSeekRequestRequest.player_id,
    ListSeekRequestsRequest.player_id,
    CreateChallengeRequest.player_id,
    AcceptChallengeRequest.player_id,
    DeclineChallengeRequest.player_id,
    CancelChallengeRequest.player_id,
    ListChallengesRequest.player_id,
    WatchPlayerRequest.player_id,
);

/// `request` with the assertion the gateway gives it: acting for its player.
pub fn for_player<T: ActsFor>(request: T) -> tonic::Request<T> {
    let player = request.player().to_owned();
    chess_testkit::acting(request, &player, None)
}

/// The rating and game services with matchmaking in front, each on its own
/// SQLite file in one temporary directory.
pub struct Lobby {
    pub dir: tempfile::TempDir,
    pub rating: Service,
    pub game: Service,
    pub matchmaking: Option<Service>,
    pub matchmaking_db: String,
}

impl Lobby {
    pub async fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let url = chess_storage::sqlite_url(&dir.path().join("matchmaking.sqlite"));
        Self::start_on(dir, url).await
    }

    /// Starts everything, with matchmaking storing into a fresh PostgreSQL
    /// database.
    pub async fn start_on_postgres() -> Self {
        let url = chess_storage::testing::fresh_postgres_database().await;
        Self::start_on(tempfile::tempdir().unwrap(), url).await
    }

    /// Starts everything, with matchmaking storing into `matchmaking_db`.
    pub async fn start_on(dir: tempfile::TempDir, matchmaking_db: String) -> Self {
        let rating_db = chess_storage::sqlite_url(&dir.path().join("rating.sqlite"));
        let rating = Service::start(
            workspace_binary("chess-rating"),
            &["--database-url", &rating_db],
        )
        .await;
        let game_db = chess_storage::sqlite_url(&dir.path().join("game.sqlite"));
        let game = Service::start(
            workspace_binary("chess-game"),
            &[
                "--database-url",
                &game_db,
                "--rating-addr",
                &rating.addr,
                "--engine-addr",
                "127.0.0.1:9",
            ],
        )
        .await;
        let mut lobby = Self {
            dir,
            rating,
            game,
            matchmaking: None,
            matchmaking_db,
        };
        lobby.start_matchmaking().await;
        lobby
    }

    pub async fn start_matchmaking(&mut self) {
        let service = Service::start(
            PathBuf::from(env!("CARGO_BIN_EXE_chess-matchmaking")),
            &[
                "--database-url",
                &self.matchmaking_db,
                "--game-addr",
                &self.game.addr,
                "--rating-addr",
                &self.rating.addr,
                "--presence-grace-secs",
                "2",
            ],
        )
        .await;
        self.matchmaking = Some(service);
    }

    pub async fn crash_matchmaking(&mut self) {
        if let Some(service) = self.matchmaking.take() {
            service.crash().await;
        }
    }

    pub async fn client(&self) -> MatchmakingServiceClient<Signed> {
        let service = self.matchmaking.as_ref().expect("matchmaking is running");
        MatchmakingServiceClient::new(service.signed().await)
    }

    pub async fn games(&self) -> GameServiceClient<Signed> {
        GameServiceClient::new(self.game.signed().await)
    }

    pub async fn ratings(&self) -> RatingServiceClient<Signed> {
        RatingServiceClient::new(self.rating.signed().await)
    }

    /// A fresh lobby with `names` registered, and a client of it.
    pub async fn with_players<const N: usize>(names: [&str; N]) -> (Self, [Player; N], Client) {
        let lobby = Self::start().await;
        let players = lobby.register_all(names).await;
        let client = lobby.client().await;
        (lobby, players, client)
    }

    /// Registers each of `names`, in order.
    pub async fn register_all<const N: usize>(&self, names: [&str; N]) -> [Player; N] {
        let mut players = Vec::with_capacity(N);
        for name in names {
            players.push(self.register(name).await);
        }
        players.try_into().expect("a player for each name")
    }

    /// Registers `name` and returns the new player.
    pub async fn register(&self, name: &str) -> Player {
        let profile = self
            .ratings()
            .await
            .register(RegisterRequest {
                username: name.to_owned(),
                email: format!("{name}@example.org"),
                password: "correct horse battery".to_owned(),
            })
            .await
            .expect("register")
            .into_inner()
            .profile
            .expect("profile");
        Player {
            id: profile.player_id,
            name: profile.username,
        }
    }
}

/// A registered player.
#[derive(Clone, Debug)]
pub struct Player {
    pub id: String,
    pub name: String,
}

pub use chess_testkit::clocks::{blitz, daily};

/// A seek by `poster` with the given settings.
pub fn seek(
    poster: &Player,
    time_control: common::TimeControl,
    accept: common::AcceptMode,
) -> pb::CreateSeekRequest {
    pb::CreateSeekRequest {
        player_id: poster.id.clone(),
        username: poster.name.clone(),
        time_control: Some(time_control),
        color: common::ColorChoice::White as i32,
        rated: true,
        min_rating: 0,
        max_rating: 0,
        show_name: false,
        accept_mode: accept as i32,
        allow_hints: false,
    }
}

/// The next lobby event of a stream, waiting at most five seconds.
pub async fn next_event(
    stream: &mut tonic::Streaming<pb::WatchPlayerResponse>,
) -> common::lobby_event::Kind {
    next_event_within(stream, Duration::from_secs(5)).await
}

/// The next lobby event of a stream, waiting at most `wait`.
pub async fn next_event_within(
    stream: &mut tonic::Streaming<pb::WatchPlayerResponse>,
    wait: Duration,
) -> common::lobby_event::Kind {
    tokio::time::timeout(wait, stream.message())
        .await
        .unwrap_or_else(|_| panic!("a lobby event within {wait:?}"))
        .expect("the stream is healthy")
        .expect("the stream is open")
        .event
        .and_then(|e| e.kind)
        .expect("an event with a kind")
}

/// Opens `player`'s lobby event stream.
pub async fn watch(
    client: &mut MatchmakingServiceClient<Signed>,
    player: &Player,
) -> tonic::Streaming<pb::WatchPlayerResponse> {
    client
        .watch_player(for_player(pb::WatchPlayerRequest {
            player_id: player.id.clone(),
        }))
        .await
        .expect("watch")
        .into_inner()
}

/// The seeks `viewer` sees once there are `n` of them, awaited for 20 s at
/// most (the last list seen if never): how soon a seek lapses, with its
/// poster's last stream or after the presence grace (two seconds in these
/// tests), depends on the machine.
pub async fn list_once(lobby: &Lobby, viewer: &Player, n: usize) -> Vec<common::Seek> {
    chess_testkit::settled(
        Duration::from_secs(20),
        || list(lobby, viewer),
        |seen| seen.len() == n,
    )
    .await
}

pub async fn list(lobby: &Lobby, viewer: &Player) -> Vec<common::Seek> {
    lobby
        .client()
        .await
        .list_seeks(for_player(pb::ListSeeksRequest {
            viewer_id: viewer.id.clone(),
            ..Default::default()
        }))
        .await
        .expect("list seeks")
        .into_inner()
        .seeks
}

pub async fn request(
    lobby: &Lobby,
    seek_id: &str,
    player: &Player,
) -> Result<common::SeekRequest, tonic::Status> {
    lobby
        .client()
        .await
        .request_seek(for_player(pb::RequestSeekRequest {
            seek_id: seek_id.to_owned(),
            player_id: player.id.clone(),
            username: player.name.clone(),
        }))
        .await
        .map(|r| r.into_inner().request.expect("request"))
}

pub async fn game_players(lobby: &Lobby, game_id: &str) -> (String, String) {
    let game = game_state(lobby, game_id).await;
    let id = |p: Option<common::Player>| match p.and_then(|p| p.kind) {
        Some(common::player::Kind::Registered(r)) => r.player_id,
        other => panic!("not a registered player: {other:?}"),
    };
    (id(game.white), id(game.black))
}

pub async fn game_state(lobby: &Lobby, game_id: &str) -> common::GameState {
    lobby
        .games()
        .await
        .get_game(GetGameRequest {
            game_id: game_id.to_owned(),
        })
        .await
        .expect("the game exists")
        .into_inner()
        .game
        .expect("state")
}

/// A client of matchmaking, signed as the gateway's calls are.
pub type Client = MatchmakingServiceClient<Signed>;

/// Calls about one seek, request or challenge (`id`), made for `player`;
/// each answers with what the call left of it.
macro_rules! about_one {
    ($($call:ident: $request:ident.$field:ident -> $answer:ident: $kind:ident;)*) => {$(
        pub async fn $call(
            client: &mut Client,
            id: &str,
            player: &Player,
        ) -> Result<common::$kind, tonic::Status> {
            let request = pb::$request {
                $field: id.to_owned(),
                player_id: player.id.clone(),
            };
            let response = client.$call(for_player(request)).await?.into_inner();
            Ok(response.$answer.expect(stringify!(an answer with its $answer)))
        }
    )*};
}

about_one! {
    cancel_seek: CancelSeekRequest.seek_id -> seek: Seek;
    accept_seek_request: AcceptSeekRequestRequest.request_id -> request: SeekRequest;
    reject_seek_request: RejectSeekRequestRequest.request_id -> request: SeekRequest;
    withdraw_seek_request: WithdrawSeekRequestRequest.request_id -> request: SeekRequest;
    accept_challenge: AcceptChallengeRequest.challenge_id -> challenge: Challenge;
    cancel_challenge: CancelChallengeRequest.challenge_id -> challenge: Challenge;
}

/// Listings of what concerns one player, made for them.
macro_rules! listing {
    ($($(#[$doc:meta])* $call:ident: $request:ident -> $response:ident;)*) => {$(
        $(#[$doc])*
        pub async fn $call(client: &mut Client, player: &Player) -> pb::$response {
            let request = pb::$request {
                player_id: player.id.clone(),
            };
            let response = client.$call(for_player(request)).await;
            response.expect(stringify!($call)).into_inner()
        }
    )*};
}

listing! {
    /// `player`'s pending challenges.
    list_challenges: ListChallengesRequest -> ListChallengesResponse;
    /// `player`'s requests, received and sent, and their seeks.
    list_seek_requests: ListSeekRequestsRequest -> ListSeekRequestsResponse;
}

/// Takes the next lobby event of `$events` and checks it against `$pattern`
/// with `$check`; any other event fails the test.
macro_rules! expect_event {
    ($events:expr, $pattern:pat => $check:expr) => {
        match $crate::common::next_event($events).await {
            $pattern => $check,
            other => panic!("unexpected {other:?}"),
        }
    };
}
pub(crate) use expect_event;

/// Asserts that a call was refused with `code`.
pub fn refused<T: std::fmt::Debug>(result: Result<T, tonic::Status>, code: tonic::Code) {
    let status = result.expect_err("refused");
    assert_eq!(status.code(), code, "{status:?}");
}

/// Makes `call` about `id` first for `stranger`, who must be refused as it is
/// not theirs, then for `owner`, who must be answered.
pub async fn only_for<T: std::fmt::Debug>(
    call: impl AsyncFn(&mut Client, &str, &Player) -> Result<T, tonic::Status>,
    client: &mut Client,
    id: &str,
    stranger: &Player,
    owner: &Player,
) -> T {
    refused(
        call(client, id, stranger).await,
        tonic::Code::PermissionDenied,
    );
    call(client, id, owner).await.expect("the owner's call")
}

/// Posts `request`'s seek, for its poster.
pub async fn post_seek(client: &mut Client, request: pb::CreateSeekRequest) -> common::Seek {
    let response = client.create_seek(for_player(request)).await;
    response
        .expect("seek posted")
        .into_inner()
        .seek
        .expect("a seek")
}

/// Sends `request`'s challenge, for its challenger.
pub async fn send_challenge(
    client: &mut Client,
    request: pb::CreateChallengeRequest,
) -> common::Challenge {
    let response = client.create_challenge(for_player(request)).await;
    let challenge = response.expect("challenge sent").into_inner().challenge;
    challenge.expect("a challenge")
}
