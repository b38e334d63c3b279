//! The gateway's public gRPC API as tests drive it: a signed-in [`User`],
//! and a [`Gateway`] client with the steps most tests take on their way to
//! what they test (signing up, starting a game, reading it back).

use std::time::Duration;

use chess_proto::{
    common::v1 as common,
    gateway::v1::{
        self as pb, account_service_client::AccountServiceClient,
        lobby_service_client::LobbyServiceClient, play_service_client::PlayServiceClient,
    },
};
use tonic::{Request, Status, Streaming, transport::Channel};

use crate::{Answer as _, next_message};

/// The password of every account [`Gateway::sign_up`] makes.
pub const PASSWORD: &str = "correct horse battery";

/// A signed-in player.
#[derive(Clone, Debug)]
pub struct User {
    pub id: String,
    pub name: String,
    pub token: String,
}

impl User {
    /// `message` as a call signed in as this user.
    pub fn call<T>(&self, message: T) -> Request<T> {
        let mut request = Request::new(message);
        request.metadata_mut().insert(
            "authorization",
            format!("Bearer {}", self.token)
                .parse()
                .expect("tokens are ASCII"),
        );
        request
    }
}

/// The public API of one gateway, over one channel.
#[derive(Clone, Debug)]
pub struct Gateway {
    channel: Channel,
}

impl Gateway {
    pub fn new(channel: Channel) -> Self {
        Self { channel }
    }

    pub fn accounts(&self) -> AccountServiceClient<Channel> {
        AccountServiceClient::new(self.channel.clone())
    }

    pub fn lobby(&self) -> LobbyServiceClient<Channel> {
        LobbyServiceClient::new(self.channel.clone())
    }

    pub fn play(&self) -> PlayServiceClient<Channel> {
        PlayServiceClient::new(self.channel.clone())
    }

    /// Registers `name`, with `email` and [`PASSWORD`].
    pub async fn register(&self, name: &str, email: &str) -> Result<pb::RegisterResponse, Status> {
        let request = pb::RegisterRequest {
            username: name.to_owned(),
            email: email.to_owned(),
            password: PASSWORD.to_owned(),
        };
        Ok(self.accounts().register(request).await?.into_inner())
    }

    /// Signs in with `login` (a username or an email) and `password`.
    pub async fn login(&self, login: &str, password: &str) -> Result<pb::LoginResponse, Status> {
        let request = pb::LoginRequest {
            login: login.to_owned(),
            password: password.to_owned(),
        };
        Ok(self.accounts().login(request).await?.into_inner())
    }

    /// Registers `name` (mail to `<name>@example.org`) and signs in.
    pub async fn sign_up(&self, name: &str) -> User {
        self.register(name, &format!("{name}@example.org"))
            .await
            .unwrap_or_else(|e| panic!("register {name}: {e}"));
        let login = self
            .login(name, PASSWORD)
            .await
            .unwrap_or_else(|e| panic!("sign in as {name}: {e}"));
        User {
            id: login.player_id,
            name: login.username,
            token: login.token,
        }
    }

    /// `challenger` challenges `opponent` to a rated game, which the
    /// opponent accepts; the game's id.
    pub async fn challenge_and_accept(
        &self,
        challenger: &User,
        opponent: &User,
        color: common::ColorChoice,
        time_control: common::TimeControl,
    ) -> String {
        let mut lobby = self.lobby();
        let challenge = lobby
            .create_challenge(challenger.call(pb::CreateChallengeRequest {
                opponent_username: opponent.name.clone(),
                time_control: Some(time_control),
                color: color as i32,
                rated: true,
                expires_in_seconds: 0,
                allow_hints: false,
            }))
            .answer()
            .await
            .challenge
            .expect("the challenge made");
        let accept = pb::AcceptChallengeRequest {
            challenge_id: challenge.challenge_id,
        };
        let accepted = lobby.accept_challenge(opponent.call(accept)).answer().await;
        accepted.challenge.expect("the challenge accepted").game_id
    }

    /// `user` plays `mv` in the game, without a ply.
    pub async fn make_move(
        &self,
        user: &User,
        game_id: &str,
        mv: &str,
    ) -> Result<pb::MakeMoveResponse, Status> {
        let request = user.call(pb::MakeMoveRequest {
            game_id: game_id.to_owned(),
            r#move: mv.to_owned(),
            ply: None,
        });
        Ok(self.play().make_move(request).await?.into_inner())
    }

    /// A new untimed game of `user`, as white, against the engine at level 1.
    pub async fn play_engine(&self, user: &User) -> common::GameState {
        let request = user.call(pb::PlayEngineRequest {
            level: 1,
            color: common::ColorChoice::White as i32,
            time_control: None,
            full_strength: false,
        });
        let started = self.lobby().play_engine(request).answer().await;
        started.game.expect("the game started")
    }

    /// The game `game_id` now, as anyone reads it.
    pub async fn game(&self, game_id: &str) -> common::GameState {
        let request = pb::GetGameRequest {
            game_id: game_id.to_owned(),
        };
        let found = self.play().get_game(request).answer().await;
        found.game.expect("the game")
    }

    /// The public profile of `username`.
    pub async fn profile(&self, username: &str) -> common::PlayerProfile {
        let request = pb::GetProfileRequest {
            username: username.to_owned(),
        };
        let found = self.accounts().get_profile(request).answer().await;
        found.profile.expect("the profile")
    }

    /// The open seeks, as anyone sees them.
    pub async fn seeks(&self) -> Vec<common::Seek> {
        let request = pb::ListSeeksRequest::default();
        self.lobby().list_seeks(request).answer().await.seeks
    }

    /// Opens `user`'s event stream.
    pub async fn events(&self, user: &User) -> Streaming<pb::StreamEventsResponse> {
        let request = user.call(pb::StreamEventsRequest::default());
        self.play().stream_events(request).answer().await
    }
}

/// The next event on a stream, waiting at most ten seconds.
pub async fn next_event(
    stream: &mut Streaming<pb::StreamEventsResponse>,
) -> pb::stream_events_response::Event {
    let message = next_message(stream, Duration::from_secs(10)).await;
    message.event.expect("an event")
}

/// Skips events until a game event of kind `want` arrives.
pub async fn next_game_event(
    stream: &mut Streaming<pb::StreamEventsResponse>,
    want: fn(&common::game_event::Kind) -> bool,
) -> common::GameEvent {
    loop {
        if let pb::stream_events_response::Event::Game(event) = next_event(stream).await
            && event.kind.as_ref().is_some_and(want)
        {
            return event;
        }
    }
}
