//! What the fault drills share: players driving games through the public
//! gRPC API, noting every call that failed and every move acknowledged,
//! and the checks that nothing acknowledged was lost.

#![allow(dead_code, unreachable_pub)]

use std::{
    collections::{BTreeMap, HashMap},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use chess_domain::TimeControl;
use chess_e2e::{
    StackProcess, children_of,
    load::{
        grpc::{self, Player},
        uqchess::choose_move,
    },
    process_name,
};
use chess_proto::{
    common::v1 as common,
    gateway::v1::{
        self as pb, lobby_service_client::LobbyServiceClient,
        play_service_client::PlayServiceClient,
    },
};
use chess_testkit::{Answer as _, clocks::daily, gateway::Gateway};
use rand::{SeedableRng as _, rngs::StdRng};
use shakmaty::{CastlingMode, Chess, Position as _, uci::UciMove};
use tonic::{Code, Status, transport::Channel};

/// Every client of these drills registers from 127.0.0.1: the gateway's
/// per-address limits are for the open internet, not for this.
pub const UNLIMITED: &[(&str, &str)] = &[
    ("CHESS_GATEWAY_REGISTRATIONS_PER_ADDRESS", "0"),
    ("CHESS_GATEWAY_LOGIN_FAILURES_PER_ADDRESS", "0"),
];

/// Pairs of players, each playing one game at a time.
pub const PAIRS: usize = 8;
/// Plies after which the side to move resigns, so games finish (and are
/// rated) during the drill.
pub const PLIES_PER_GAME: usize = 30;
/// Successful calls after a restart before the next service is killed.
pub const RECOVERED_AFTER: usize = 30;
/// How long an outage may last before the drill gives up on it.
pub const OUTAGE_LIMIT: Duration = Duration::from_secs(60);

/// A failed call.
#[derive(Clone, Debug)]
pub struct Failure {
    pub at: Instant,
    pub code: Code,
    pub message: String,
    /// Whether the client's own connection to the gateway broke (no server
    /// answered), rather than the gateway answering with a status.
    pub connection_lost: bool,
}

/// What the clients saw, shared by every driver.
#[derive(Default)]
pub struct Log {
    /// Every failed call.
    pub failures: Mutex<Vec<Failure>>,
    /// When each successful call returned.
    pub successes: Mutex<Vec<Instant>>,
    /// Acknowledged moves: game id → (ply → UCI).
    pub acknowledged: Mutex<HashMap<String, BTreeMap<u32, String>>>,
    /// When each move was acknowledged: game id → times, in ply order.
    pub acknowledged_at: Mutex<HashMap<String, Vec<Instant>>>,
    /// Finished games: (game id, white, black).
    pub finished: Mutex<Vec<(String, String, String)>>,
    /// Pairs signed up and playing.
    pub playing: std::sync::atomic::AtomicUsize,
}

impl Log {
    pub fn ok(&self) {
        self.successes
            .lock()
            .expect("not poisoned")
            .push(Instant::now());
    }

    pub fn failed(&self, status: &Status) {
        // A status the client library made from a broken connection keeps
        // the transport error as its source; one decoded from a server's
        // answer has none.
        let connection_lost = std::error::Error::source(status).is_some();
        self.failures.lock().expect("not poisoned").push(Failure {
            at: Instant::now(),
            code: status.code(),
            message: status.message().to_owned(),
            connection_lost,
        });
    }

    pub fn successes_since(&self, at: Instant) -> usize {
        self.successes
            .lock()
            .expect("not poisoned")
            .iter()
            .filter(|&&t| t >= at)
            .count()
    }

    /// Waits until `count` more calls have succeeded from now on.
    pub async fn more_successes(&self, count: usize) {
        let since = Instant::now();
        while self.successes_since(since) < count {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Calls `call` until it succeeds, noting every failure; a short pause
/// between attempts, as a client that was told UNAVAILABLE would.
pub async fn persist<T, F, Fut>(log: &Log, mut call: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Status>>,
{
    let started = Instant::now();
    loop {
        match call().await {
            Ok(value) => {
                log.ok();
                return value;
            }
            Err(status) => {
                log.failed(&status);
                assert!(
                    started.elapsed() < OUTAGE_LIMIT,
                    "no success for {OUTAGE_LIMIT:?}: {status:?}"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

pub async fn sign_up(channel: &Channel, username: String) -> Player {
    grpc::sign_up(channel, username).await.expect("sign up")
}

/// Black's game in progress, if any (each pair plays one at a time).
pub async fn game_in_progress(channel: &Channel, log: &Log, black: &Player) -> Option<String> {
    let games = persist(log, || {
        let mut play = PlayServiceClient::new(channel.clone());
        let request = black.request(pb::ListMyGamesRequest {
            filter: pb::GameFilter::Active as i32,
            page_size: 10,
            page_token: String::new(),
        });
        async move { play.list_my_games(request).await }
    })
    .await
    .into_inner()
    .games;
    games.into_iter().next().map(|g| g.game_id)
}

/// White challenges black to a rated blitz game; black accepts.
pub async fn start_game(channel: &Channel, log: &Log, white: &Player, black: &Player) -> String {
    let lobby = LobbyServiceClient::new(channel.clone());
    let blitz: common::TimeControl = TimeControl::Incremental {
        initial_secs: 300,
        increment_secs: 3,
    }
    .into();
    loop {
        let challenge = persist(log, || {
            let mut lobby = lobby.clone();
            let request = white.request(pb::CreateChallengeRequest {
                opponent_username: black.username.clone(),
                time_control: Some(blitz),
                color: common::ColorChoice::White as i32,
                rated: true,
                expires_in_seconds: 0,
                allow_hints: false,
            });
            async move { lobby.create_challenge(request).await }
        })
        .await
        .into_inner()
        .challenge
        .expect("a challenge");
        let accepted = lobby
            .clone()
            .accept_challenge(black.request(pb::AcceptChallengeRequest {
                challenge_id: challenge.challenge_id.clone(),
            }))
            .await;
        match accepted {
            Ok(accepted) => {
                log.ok();
                return accepted
                    .into_inner()
                    .challenge
                    .map(|c| c.game_id)
                    .expect("a game");
            }
            Err(status) => {
                log.failed(&status);
                // An acceptance whose answer was lost may have started the
                // game; otherwise challenge again.
                if let Some(game_id) = game_in_progress(channel, log, black).await {
                    return game_id;
                }
            }
        }
    }
}

/// The game as the server has it.
pub async fn read_game(
    play: &PlayServiceClient<Channel>,
    log: &Log,
    game_id: &str,
) -> common::GameState {
    persist(log, || {
        let mut play = play.clone();
        let request = pb::GetGameRequest {
            game_id: game_id.to_owned(),
        };
        async move { play.get_game(request).await }
    })
    .await
    .into_inner()
    .game
    .expect("a game")
}

/// The moves of a PGN's movetext, in SAN: without comments, move numbers
/// or the result.
pub fn pgn_moves(pgn: &str) -> Vec<String> {
    let movetext: String = pgn
        .lines()
        .filter(|line| !line.starts_with('['))
        .collect::<Vec<_>>()
        .join(" ");
    let mut plain = String::new();
    let mut in_comment = false;
    for c in movetext.chars() {
        match c {
            '{' => in_comment = true,
            '}' => in_comment = false,
            c if !in_comment => plain.push(c),
            _ => {}
        }
    }
    plain
        .split_whitespace()
        .filter(|token| !token.ends_with('.') && !matches!(*token, "1-0" | "0-1" | "1/2-1/2" | "*"))
        .map(str::to_owned)
        .collect()
}

/// The position after the game's moves.
pub fn position_of(state: &common::GameState) -> Chess {
    let mut position = Chess::default();
    for m in &state.moves {
        let uci = UciMove::from_ascii(m.uci.as_bytes()).expect("UCI from the server");
        let legal = uci
            .to_move(&position)
            .expect("a legal move from the server");
        position.play_unchecked(legal);
    }
    position
}

/// Plays one game to its end (the mover resigns after `PLIES_PER_GAME`).
pub async fn play_game(
    channel: &Channel,
    log: &Log,
    game_id: &str,
    players: [&Player; 2],
    rng: &mut StdRng,
    stop: &AtomicBool,
) {
    let play = PlayServiceClient::new(channel.clone());
    let mut position = Chess::default();
    let mut ply = 0usize;
    loop {
        let mover = players[ply % 2];
        if ply >= PLIES_PER_GAME || stop.load(Ordering::Relaxed) {
            let resigned = play
                .clone()
                .resign(mover.request(pb::ResignRequest {
                    game_id: game_id.to_owned(),
                }))
                .await;
            match resigned {
                Ok(_) => log.ok(),
                Err(status) => {
                    log.failed(&status);
                    // Resigned or not, the game is read back below and
                    // resigned again if it goes on.
                }
            }
            let state = read_game(&play, log, game_id).await;
            if state.status == common::GameStatus::Finished as i32 {
                return;
            }
            continue;
        }
        let m = choose_move(&position, rng);
        let uci = m.to_uci(CastlingMode::Standard).to_string();
        let sent_ply = ply as u32 + 1;
        // Sent with its ply, a move is safe to send again: while the
        // service is unavailable the same move goes again, as a client that
        // lost the answer would send it.
        let mut made = Err(Status::unavailable("not sent yet"));
        for _ in 0..20 {
            made = play
                .clone()
                .make_move(mover.request(pb::MakeMoveRequest {
                    game_id: game_id.to_owned(),
                    r#move: uci.clone(),
                    ply: Some(sent_ply),
                }))
                .await;
            match &made {
                Err(status) if status.code() == Code::Unavailable => {
                    log.failed(status);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                _ => break,
            }
        }
        match made {
            Ok(made) => {
                log.ok();
                let made = made.into_inner();
                assert_eq!(
                    made.ply, sent_ply,
                    "game {game_id}: {uci} sent for ply {sent_ply} was played as ply {}",
                    made.ply
                );
                log.acknowledged
                    .lock()
                    .expect("not poisoned")
                    .entry(game_id.to_owned())
                    .or_default()
                    .insert(made.ply, uci);
                log.acknowledged_at
                    .lock()
                    .expect("not poisoned")
                    .entry(game_id.to_owned())
                    .or_default()
                    .push(Instant::now());
                position.play_unchecked(m);
                ply += 1;
                if made.game_ended.is_some() {
                    return;
                }
            }
            Err(status) => {
                log.failed(&status);
                // Something else went wrong: the server's record says
                // where the game stands.
                let state = read_game(&play, log, game_id).await;
                if state.status == common::GameStatus::Finished as i32 {
                    return;
                }
                position = position_of(&state);
                ply = state.moves.len();
            }
        }
    }
}

/// One pair of players playing game after game until `stop`.
pub async fn drive(channel: Channel, log: Arc<Log>, pair: usize, stop: Arc<AtomicBool>) {
    let white = sign_up(&channel, format!("dw{pair}")).await;
    let black = sign_up(&channel, format!("db{pair}")).await;
    let mut rng = StdRng::seed_from_u64(pair as u64);
    log.playing.fetch_add(1, Ordering::Relaxed);
    while !stop.load(Ordering::Relaxed) {
        let game_id = start_game(&channel, &log, &white, &black).await;
        play_game(&channel, &log, &game_id, [&white, &black], &mut rng, &stop).await;
        log.finished.lock().expect("not poisoned").push((
            game_id,
            white.username.clone(),
            black.username.clone(),
        ));
    }
}

/// A daily game between `white` and `black`: a table white sets, black
/// joins.
pub async fn daily_game(channel: &Channel, white: &Player, black: &Player) -> String {
    let mut lobby = LobbyServiceClient::new(channel.clone());
    let table = white.request(pb::CreateSeekRequest {
        time_control: Some(daily(48)),
        color: common::ColorChoice::White as i32,
        accept_mode: common::AcceptMode::Automatic as i32,
        ..Default::default()
    });
    let table = lobby
        .create_seek(table)
        .answer()
        .await
        .seek
        .expect("a table");
    let join = black.request(pb::RequestSeekRequest {
        seek_id: table.seek_id,
    });
    let joined = lobby.request_seek(join).answer().await;
    joined.request.expect("a request").game_id
}

/// The mails `stack` has sent: `chess-stack` writes them into `<data>/mail`
/// when no SMTP server is given.
pub fn mails(stack: &StackProcess) -> Vec<String> {
    std::fs::read_dir(stack.data.path().join("mail"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "eml"))
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .collect()
}

/// The gateway of `stack`, connected on first use.
pub fn gateway_channel(stack: &StackProcess) -> Channel {
    Channel::from_shared(format!("http://{}", stack.gateway))
        .expect("uri")
        .connect_lazy()
}

/// Pairs of players driving games through one channel until stopped.
pub struct Load {
    pub log: Arc<Log>,
    stop: Arc<AtomicBool>,
    drivers: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    /// Starts `pairs` drivers on `channel` and waits until, within
    /// `within`, they all play, and then until `warm` more calls have
    /// succeeded: the load is steady.
    pub async fn start(channel: &Channel, pairs: usize, within: Duration, warm: usize) -> Self {
        let log = Arc::new(Log::default());
        let stop = Arc::new(AtomicBool::new(false));
        let drivers: Vec<_> = (0..pairs)
            .map(|pair| {
                tokio::spawn(drive(
                    channel.clone(),
                    Arc::clone(&log),
                    pair,
                    Arc::clone(&stop),
                ))
            })
            .collect();
        let deadline = Instant::now() + within;
        while log.playing.load(Ordering::Relaxed) < pairs {
            assert!(
                !drivers.iter().any(tokio::task::JoinHandle::is_finished),
                "a driver stopped before the drill began"
            );
            assert!(Instant::now() < deadline, "the pairs never all began");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        log.more_successes(warm).await;
        Self { log, stop, drivers }
    }

    /// Stops the drivers once their games' current calls are done.
    pub async fn stop(self) -> Arc<Log> {
        self.stop.store(true, Ordering::Relaxed);
        for driver in self.drivers {
            tokio::time::timeout(OUTAGE_LIMIT, driver)
                .await
                .expect("the drivers stop")
                .expect("a driver panicked");
        }
        self.log
    }
}

/// The pid of the stack's child running `program`.
pub fn service_pid(stack: &StackProcess, program: &str) -> Option<u32> {
    children_of(stack.pid())
        .into_iter()
        .find(|&pid| process_name(pid).as_deref() == Some(program))
}

/// Checks that every acknowledged move is in its game's record at its ply,
/// with no gap, and that the game's PGN says the same; returns how many
/// moves were checked.
pub async fn check_records(channel: &Channel, log: &Log) -> usize {
    let play = PlayServiceClient::new(channel.clone());
    let acknowledged = log.acknowledged.lock().expect("not poisoned").clone();
    let mut moves = 0;
    for (game_id, acked) in &acknowledged {
        let state = read_game(&play, log, game_id).await;
        let record: BTreeMap<u32, String> =
            state.moves.iter().map(|m| (m.ply, m.uci.clone())).collect();
        assert_eq!(
            record.keys().copied().collect::<Vec<_>>(),
            (1..=state.ply).collect::<Vec<_>>(),
            "game {game_id}'s record has a gap"
        );
        for (ply, uci) in acked {
            assert_eq!(
                record.get(ply),
                Some(uci),
                "game {game_id}: acknowledged move {ply} {uci} is not in the record"
            );
            moves += 1;
        }
        // And the PGN players download says the same, move for move.
        let pgn = persist(log, || {
            let mut play = play.clone();
            let request = pb::ExportPgnRequest {
                game_id: game_id.clone(),
            };
            async move { play.export_pgn(request).await }
        })
        .await
        .into_inner()
        .pgn;
        let sans: Vec<String> = state.moves.iter().map(|m| m.san.clone()).collect();
        assert_eq!(
            pgn_moves(&pgn),
            sans,
            "game {game_id}'s PGN differs from its record"
        );
    }
    println!(
        "drill: {moves} acknowledged moves in {} games checked",
        acknowledged.len()
    );
    moves
}

/// Checks that each finished rated game counts once in both players'
/// ratings, once the results have been delivered; returns how many games.
pub async fn check_ratings(channel: &Channel, log: &Log) -> usize {
    let finished = log.finished.lock().expect("not poisoned").clone();
    let mut expected: HashMap<String, u32> = HashMap::new();
    for (_, white, black) in &finished {
        *expected.entry(white.clone()).or_default() += 1;
        *expected.entry(black.clone()).or_default() += 1;
    }
    let gateway = Gateway::new(channel.clone());
    let deadline = Instant::now() + OUTAGE_LIMIT;
    for (username, games) in &expected {
        loop {
            let profile = gateway.profile(username).await;
            let played: u32 = profile.ratings.iter().map(|r| r.games_played).sum();
            assert!(
                played <= *games,
                "{username} has {played} rated games, but played {games}"
            );
            if played == *games {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{username} has {played} rated games of {games}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    finished.len()
}
