//! Load through the public gRPC API: pairs of registered players, each game
//! made by a challenge and its acceptance, moves played with `MakeMove`, and
//! each player's `StreamEvents` stream carrying the opponent's moves.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Instant,
};

use chess_proto::{
    common::v1 as common,
    gateway::v1::{
        self as pb, account_service_client::AccountServiceClient,
        lobby_service_client::LobbyServiceClient, play_service_client::PlayServiceClient,
    },
};
use shakmaty::{CastlingMode, Chess, Position as _};
use tokio::sync::Notify;
use tonic::{Request, metadata::MetadataValue, transport::Channel};

use super::uqchess::{GameFigures, Pace, Schedule, Window, choose_move};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// A signed-in player.
#[derive(Clone)]
pub struct Player {
    pub username: String,
    bearer: MetadataValue<tonic::metadata::Ascii>,
}

impl std::fmt::Debug for Player {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token.
        f.debug_struct("Player")
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

impl Player {
    /// `message` as a call signed in as this player.
    pub fn request<T>(&self, message: T) -> Request<T> {
        let mut request = Request::new(message);
        request
            .metadata_mut()
            .insert("authorization", self.bearer.clone());
        request
    }
}

/// Registers `username` through the public API and signs in.
pub async fn sign_up(channel: &Channel, username: String) -> Result<Player, Error> {
    let mut accounts = AccountServiceClient::new(channel.clone());
    let password = "a long enough password".to_owned();
    accounts
        .register(pb::RegisterRequest {
            username: username.clone(),
            email: format!("{username}@load.test"),
            password: password.clone(),
        })
        .await?;
    let token = accounts
        .login(pb::LoginRequest {
            login: username.clone(),
            password,
        })
        .await?
        .into_inner()
        .token;
    Ok(Player {
        username,
        bearer: format!("Bearer {token}").parse()?,
    })
}

/// When each ply of each game reached a player's event stream.
#[derive(Debug, Default)]
struct Arrivals {
    seen: Mutex<HashMap<(String, u32), Instant>>,
    changed: Notify,
}

impl Arrivals {
    /// Waits until ply `ply` of `game` has arrived, and returns when it did.
    /// The game's earlier plies are forgotten with it: a player's stream
    /// also carries its own moves, which nobody waits for.
    async fn wait(&self, game: &str, ply: u32) -> Instant {
        loop {
            let notified = self.changed.notified();
            {
                let mut seen = self.seen.lock().expect("not poisoned");
                if let Some(at) = seen.remove(&(game.to_owned(), ply)) {
                    seen.retain(|(g, p), _| g != game || *p > ply);
                    return at;
                }
            }
            notified.await;
        }
    }

    /// Forgets every ply of `game`, once it is over.
    fn forget(&self, game: &str) {
        self.seen
            .lock()
            .expect("not poisoned")
            .retain(|(g, _), _| g != game);
    }
}

/// Opens a player's event stream (subscribed once this returns) and reads
/// it in the background for as long as it lasts, noting move arrivals.
async fn follow(channel: Channel, player: &Player, arrivals: Arc<Arrivals>) -> Result<(), Error> {
    let mut play = PlayServiceClient::new(channel);
    let mut events = play
        .stream_events(player.request(pb::StreamEventsRequest::default()))
        .await?
        .into_inner();
    tokio::spawn(async move {
        while let Ok(Some(event)) = events.message().await {
            if let Some(pb::stream_events_response::Event::Game(event)) = event.event
                && matches!(event.kind, Some(common::game_event::Kind::MoveMade(_)))
            {
                arrivals
                    .seen
                    .lock()
                    .expect("not poisoned")
                    .insert((event.game_id, event.ply), Instant::now());
                arrivals.changed.notify_waiters();
            }
        }
    });
    Ok(())
}

/// Two players, signed in and following their event streams, each over
/// its own connection (white's, black's).
#[derive(Debug)]
struct Pair {
    index: usize,
    white: Player,
    black: Player,
    channels: [Channel; 2],
    arrivals: [Arc<Arrivals>; 2],
}

impl Pair {
    /// Signs both players up and follows both event streams.
    async fn sign_up(channels: [Channel; 2], index: usize, run: u64) -> Result<Self, Error> {
        let white = sign_up(&channels[0], format!("w{run}x{index}")).await?;
        let black = sign_up(&channels[1], format!("b{run}x{index}")).await?;
        let arrivals = [Arc::new(Arrivals::default()), Arc::new(Arrivals::default())];
        for ((player, arrived), channel) in [(&white, &arrivals[0]), (&black, &arrivals[1])]
            .into_iter()
            .zip(&channels)
        {
            follow(channel.clone(), player, Arc::clone(arrived)).await?;
        }
        Ok(Self {
            index,
            white,
            black,
            channels,
            arrivals,
        })
    }
}

/// Pairs of players ready to play through the public API at one address.
/// Signing up takes a while (each password is hashed), so it happens
/// before any window of measurement opens, and one set of pairs can play
/// through several windows.
#[derive(Debug)]
pub struct Pairs {
    pairs: Vec<Arc<Pair>>,
}

impl Pairs {
    /// Signs up `games` new pairs of players at `addr`, all over one
    /// HTTP/2 connection (as behind a proxy that multiplexes its clients'
    /// calls), or each player over a connection of its own
    /// (`connection_per_player`, as clients reaching the gateway directly).
    pub async fn sign_up(
        addr: &str,
        games: usize,
        connection_per_player: bool,
    ) -> Result<Self, Error> {
        let connect = || async {
            Channel::from_shared(format!("http://{addr}"))?
                .tcp_nodelay(true)
                .connect()
                .await
                .map_err(Error::from)
        };
        let shared = connect().await?;
        // Each call's players are new accounts.
        static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let run = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_secs()
            % 100_000
            * 100
            + call % 100;
        let mut tasks = Vec::with_capacity(games);
        for index in 0..games {
            let channels = if connection_per_player {
                [connect().await?, connect().await?]
            } else {
                [shared.clone(), shared.clone()]
            };
            tasks.push(tokio::spawn(Pair::sign_up(channels, index, run)));
        }
        let mut pairs = Vec::with_capacity(games);
        for task in tasks {
            pairs.push(Arc::new(task.await??));
        }
        Ok(Self { pairs })
    }

    /// Plays game after game with every pair until `window` closes, each
    /// game's moves sent when `pace` says.
    pub async fn play(&self, window: Arc<Window>, pace: Pace) -> GameFigures {
        let tasks: Vec<_> = self
            .pairs
            .iter()
            .map(|pair| tokio::spawn(play_games(Arc::clone(pair), Arc::clone(&window), pace)))
            .collect();
        GameFigures::gather(tasks).await
    }
}

/// Plays game after game between one pair until the window closes.
async fn play_games(
    pair: Arc<Pair>,
    window: Arc<Window>,
    pace: Pace,
) -> Result<GameFigures, Error> {
    let mut schedule = Schedule::new(pace, pair.index as u64);
    let mut figures = GameFigures::default();
    while !window.over() {
        let game_id = start_game(&pair.channels, &pair.white, &pair.black).await?;
        schedule.begin();
        play_game(
            &pair.channels,
            &game_id,
            [&pair.white, &pair.black],
            &pair.arrivals,
            &mut schedule,
            &window,
            &mut figures,
        )
        .await?;
        for arrived in &pair.arrivals {
            arrived.forget(&game_id);
        }
    }
    Ok(figures)
}

/// White challenges black to an unrated untimed game; black accepts.
async fn start_game(
    channels: &[Channel; 2],
    white: &Player,
    black: &Player,
) -> Result<String, Error> {
    let untimed = common::TimeControl {
        kind: Some(common::time_control::Kind::Untimed(common::Untimed {})),
    };
    challenge(channels, white, black, untimed).await
}

/// White, on the first of `channels`, challenges black to an unrated game
/// of `control`; black accepts on the second. The game's id.
pub async fn challenge(
    [white_channel, black_channel]: &[Channel; 2],
    white: &Player,
    black: &Player,
    control: common::TimeControl,
) -> Result<String, Error> {
    let challenge = LobbyServiceClient::new(white_channel.clone())
        .create_challenge(white.request(pb::CreateChallengeRequest {
            opponent_username: black.username.clone(),
            time_control: Some(control),
            color: common::ColorChoice::White as i32,
            rated: false,
            expires_in_seconds: 0,
            allow_hints: false,
        }))
        .await?
        .into_inner()
        .challenge
        .ok_or("no challenge")?;
    LobbyServiceClient::new(black_channel.clone())
        .accept_challenge(black.request(pb::AcceptChallengeRequest {
            challenge_id: challenge.challenge_id,
        }))
        .await?
        .into_inner()
        .challenge
        .map(|c| c.game_id)
        .ok_or_else(|| "no game".into())
}

/// Plays one game until it ends, the window closes, or it reaches the
/// pace's `max_plies` (then the side to move resigns), its moves sent when
/// `schedule` says.
async fn play_game(
    channels: &[Channel; 2],
    game_id: &str,
    [white, black]: [&Player; 2],
    arrivals: &[Arc<Arrivals>; 2],
    schedule: &mut Schedule,
    window: &Window,
    figures: &mut GameFigures,
) -> Result<(), Error> {
    let mut plays = channels.clone().map(PlayServiceClient::new);
    let mut position = Chess::default();
    let mut ply = 0;
    loop {
        let (mover, play) = if ply % 2 == 0 {
            (white, &mut plays[0])
        } else {
            (black, &mut plays[1])
        };
        if window.over() || ply >= schedule.max_plies() {
            play.resign(mover.request(pb::ResignRequest {
                game_id: game_id.to_owned(),
            }))
            .await?;
            figures.games += 1;
            return Ok(());
        }
        let sent = schedule.due().await;
        let m = choose_move(&position, schedule.rng());
        let uci = m.to_uci(CastlingMode::Standard).to_string();
        position.play_unchecked(m);
        ply += 1;
        let opponent = &arrivals[usize::from(ply % 2 == 1)];
        let request = mover.request(pb::MakeMoveRequest {
            game_id: game_id.to_owned(),
            r#move: uci,
            ply: None,
        });
        // The opponent's arrival is only awaited for a move that was made.
        // The next move waits for both; the move's own latency ends at its
        // answer.
        let made = async {
            let made = play.make_move(request).await?.into_inner();
            Ok::<_, Error>((made, Instant::now()))
        };
        let ((made, ok), notified) =
            tokio::try_join!(made, async { Ok(opponent.wait(game_id, ply).await) })?;
        if window.contains(ok) {
            figures.moves += 1;
            figures.move_latency.record(ok - sent);
            figures
                .notify_latency
                .record(notified.saturating_duration_since(sent));
        }
        // The server ends games by rules the random mover does not track
        // (the 75-move rule, fivefold repetition).
        if made.game_ended.is_some() || position.is_game_over() {
            figures.games += 1;
            return Ok(());
        }
    }
}
