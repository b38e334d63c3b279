//! Fault drills: the whole system (`chess-stack`, real binaries) under steady
//! load through the public gRPC API while each service in turn is killed
//! with SIGKILL and restarted by the stack.
//!
//! What must hold: every move a client was told was made is in its game's
//! record at its ply, and in its PGN, and nothing is played twice (clients send each move
//! with its ply and send it again, unchanged, while the service is
//! unavailable; every answer must be for the ply it was sent for); during
//! an outage clients see only
//! UNAVAILABLE, which tells them to retry; each finished rated game counts
//! exactly once in both players' ratings. Each outage's length is printed.

use std::{
    collections::{BTreeMap, HashMap},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

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
        self as pb, account_service_client::AccountServiceClient,
        lobby_service_client::LobbyServiceClient, play_service_client::PlayServiceClient,
    },
};
use chess_testkit::process::kill9;
use rand::{SeedableRng as _, rngs::StdRng};
use shakmaty::{CastlingMode, Chess, Position as _, uci::UciMove};
use tonic::{Code, Status, transport::Channel};

/// Every client of these drills registers from 127.0.0.1: the gateway's
/// per-address limits are for the open internet, not for this.
const UNLIMITED: &[(&str, &str)] = &[
    ("CHESS_GATEWAY_REGISTRATIONS_PER_ADDRESS", "0"),
    ("CHESS_GATEWAY_LOGIN_FAILURES_PER_ADDRESS", "0"),
];

/// Pairs of players, each playing one game at a time.
const PAIRS: usize = 8;
/// Plies after which the side to move resigns, so games finish (and are
/// rated) during the drill.
const PLIES_PER_GAME: usize = 30;
/// Successful calls after a restart before the next service is killed.
const RECOVERED_AFTER: usize = 30;
/// How long an outage may last before the drill gives up on it.
const OUTAGE_LIMIT: Duration = Duration::from_secs(60);

/// A failed call.
#[derive(Clone, Debug)]
struct Failure {
    at: Instant,
    code: Code,
    message: String,
    /// Whether the client's own connection to the gateway broke (no server
    /// answered), rather than the gateway answering with a status.
    connection_lost: bool,
}

/// What the clients saw, shared by every driver.
#[derive(Default)]
struct Log {
    /// Every failed call.
    failures: Mutex<Vec<Failure>>,
    /// When each successful call returned.
    successes: Mutex<Vec<Instant>>,
    /// Acknowledged moves: game id → (ply → UCI).
    acknowledged: Mutex<HashMap<String, BTreeMap<u32, String>>>,
    /// Finished games: (game id, white, black).
    finished: Mutex<Vec<(String, String, String)>>,
    /// Pairs signed up and playing.
    playing: std::sync::atomic::AtomicUsize,
}

impl Log {
    fn ok(&self) {
        self.successes
            .lock()
            .expect("not poisoned")
            .push(Instant::now());
    }

    fn failed(&self, status: &Status) {
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

    fn successes_since(&self, at: Instant) -> usize {
        self.successes
            .lock()
            .expect("not poisoned")
            .iter()
            .filter(|&&t| t >= at)
            .count()
    }
}

/// Calls `call` until it succeeds, noting every failure; a short pause
/// between attempts, as a client that was told UNAVAILABLE would.
async fn persist<T, F, Fut>(log: &Log, mut call: F) -> T
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

async fn sign_up(channel: &Channel, username: String) -> Player {
    grpc::sign_up(channel, username).await.expect("sign up")
}

/// Black's game in progress, if any (each pair plays one at a time).
async fn game_in_progress(channel: &Channel, log: &Log, black: &Player) -> Option<String> {
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
async fn start_game(channel: &Channel, log: &Log, white: &Player, black: &Player) -> String {
    let lobby = LobbyServiceClient::new(channel.clone());
    let blitz = common::TimeControl {
        kind: Some(common::time_control::Kind::Incremental(
            common::Incremental {
                initial_seconds: 300,
                increment_seconds: 3,
            },
        )),
    };
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
async fn read_game(
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
fn pgn_moves(pgn: &str) -> Vec<String> {
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
fn position_of(state: &common::GameState) -> Chess {
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
async fn play_game(
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
async fn drive(channel: Channel, log: Arc<Log>, pair: usize, stop: Arc<AtomicBool>) {
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

/// The pid of the stack's child running `program`.
fn service_pid(stack: &StackProcess, program: &str) -> Option<u32> {
    children_of(stack.pid())
        .into_iter()
        .find(|&pid| process_name(pid).as_deref() == Some(program))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_service_killed_under_load_loses_nothing() {
    let stack = StackProcess::start(&[], UNLIMITED).await;
    let channel = Channel::from_shared(format!("http://{}", stack.gateway))
        .expect("uri")
        .connect_lazy();
    let log = Arc::new(Log::default());
    let stop = Arc::new(AtomicBool::new(false));
    let drivers: Vec<_> = (0..PAIRS)
        .map(|pair| {
            tokio::spawn(drive(
                channel.clone(),
                Arc::clone(&log),
                pair,
                Arc::clone(&stop),
            ))
        })
        .collect();
    // Steady load first: every pair playing.
    let deadline = Instant::now() + OUTAGE_LIMIT;
    while log.playing.load(Ordering::Relaxed) < PAIRS {
        assert!(
            !drivers.iter().any(tokio::task::JoinHandle::is_finished),
            "a driver stopped before the drill began"
        );
        assert!(Instant::now() < deadline, "the pairs never all began");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let warm = Instant::now();
    while log.successes_since(warm) < 200 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let mut outages = Vec::new();
    for program in [
        "chess-game",
        "chess-gateway",
        "chess-rating",
        "chess-matchmaking",
        "chess-engine",
    ] {
        let pid = service_pid(&stack, program).expect("the service runs");
        let killed = Instant::now();
        kill9(pid);
        // Restarted by the stack, and serving the load again.
        let deadline = killed + OUTAGE_LIMIT;
        while service_pid(&stack, program).is_none_or(|p| p == pid)
            || log.successes_since(killed) < RECOVERED_AFTER
        {
            assert!(Instant::now() < deadline, "{program} did not come back");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let failures: Vec<Failure> = log
            .failures
            .lock()
            .expect("not poisoned")
            .iter()
            .filter(|f| f.at >= killed)
            .cloned()
            .collect();
        // The outage as clients saw it: from the kill to the last failure
        // of the calls made during it.
        let outage = failures
            .iter()
            .map(|f| f.at.duration_since(killed))
            .max()
            .unwrap_or_default();
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        for f in &failures {
            let what = if f.connection_lost {
                "connection lost".to_owned()
            } else {
                format!("{:?}", f.code)
            };
            *seen.entry(what).or_default() += 1;
        }
        println!(
            "drill: {program} killed: outage {:.2} s, {} failed calls: {seen:?}",
            outage.as_secs_f64(),
            failures.len(),
        );
        outages.push((program, failures));
    }
    stop.store(true, Ordering::Relaxed);
    for driver in drivers {
        tokio::time::timeout(OUTAGE_LIMIT, driver)
            .await
            .expect("the drivers stop")
            .expect("a driver panicked");
    }

    // Every answer during every outage was UNAVAILABLE. Only with the
    // gateway itself killed may a client's connection break with nobody
    // there to answer.
    for (program, failures) in &outages {
        let other: Vec<String> = failures
            .iter()
            .filter(|f| {
                if f.connection_lost {
                    *program != "chess-gateway"
                } else {
                    f.code != Code::Unavailable
                }
            })
            .map(|f| {
                format!(
                    "{:?}: {} (connection lost: {})",
                    f.code, f.message, f.connection_lost
                )
            })
            .collect();
        assert!(
            other.is_empty(),
            "with {program} killed, clients saw more than UNAVAILABLE: {other:?}"
        );
    }

    // Every acknowledged move is in its game's record, at its ply.
    let play = PlayServiceClient::new(channel.clone());
    let acknowledged = log.acknowledged.lock().expect("not poisoned").clone();
    let mut moves = 0;
    for (game_id, acked) in &acknowledged {
        let state = read_game(&play, &log, game_id).await;
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
        let pgn = persist(&log, || {
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

    // Each finished rated game counts once in both players' ratings, once
    // the results have been delivered.
    let finished = log.finished.lock().expect("not poisoned").clone();
    let mut expected: HashMap<String, u32> = HashMap::new();
    for (_, white, black) in &finished {
        *expected.entry(white.clone()).or_default() += 1;
        *expected.entry(black.clone()).or_default() += 1;
    }
    let mut accounts = AccountServiceClient::new(channel.clone());
    let deadline = Instant::now() + OUTAGE_LIMIT;
    for (username, games) in &expected {
        loop {
            let profile = accounts
                .get_profile(pb::GetProfileRequest {
                    username: username.clone(),
                })
                .await
                .expect("profile")
                .into_inner()
                .profile
                .expect("a profile");
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
    println!("drill: {} finished games rated once each", finished.len());
    stack.stop().await;
}

/// Oversized input from one caller hurts nobody else: a 100 KB username in
/// `GetProfile` and a 100 KB game id in `GetGame` (no token needed for
/// either) are refused by the gateway at once, without quoting them, while
/// many other callers' reads go on, every one answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_input_does_not_break_other_callers() {
    let stack = StackProcess::start(&[], UNLIMITED).await;
    let channel = Channel::from_shared(format!("http://{}", stack.gateway))
        .expect("uri")
        .connect_lazy();
    let log = Log::default();
    let white = sign_up(&channel, "owhite".to_owned()).await;
    let black = sign_up(&channel, "oblack".to_owned()).await;
    let game_id = start_game(&channel, &log, &white, &black).await;

    let mut calls = tokio::task::JoinSet::new();
    for i in 0..200 {
        let channel = channel.clone();
        let gateway = stack.gateway.clone();
        let game_id = game_id.clone();
        calls.spawn(async move {
            if i % 10 == 0 {
                // A hostile client, on its own connection to the gateway.
                let own = Channel::from_shared(format!("http://{gateway}"))
                    .expect("uri")
                    .connect_lazy();
                let huge = "x".repeat(100_000);
                let profile = AccountServiceClient::new(own.clone())
                    .get_profile(pb::GetProfileRequest {
                        username: huge.clone(),
                    })
                    .await;
                let game = PlayServiceClient::new(own)
                    .get_game(pb::GetGameRequest { game_id: huge })
                    .await;
                (true, vec![profile.err(), game.err()])
            } else {
                let game = PlayServiceClient::new(channel)
                    .get_game(pb::GetGameRequest { game_id })
                    .await;
                (false, vec![game.err()])
            }
        });
    }
    while let Some(done) = calls.join_next().await {
        let (hostile, errors) = done.expect("a call task");
        for error in errors {
            if hostile {
                let status = error.expect("oversized input is refused");
                assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
                assert!(
                    status.message().ends_with("is too long: at most 64 bytes"),
                    "{status:?}"
                );
            } else {
                assert!(error.is_none(), "another caller's read failed: {error:?}");
            }
        }
    }
    stack.stop().await;
}

/// A service behind the gateway, asked about a 100 KB game id, answers with
/// a short status, and the connection it shares with other calls survives:
/// every concurrent read on the same channel is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_quotes_oversized_input_only_briefly() {
    use chess_proto::game::v1::{self as game, game_service_client::GameServiceClient};

    let stack = StackProcess::start(&[], UNLIMITED).await;
    let channel = Channel::from_shared(format!("http://{}", stack.gateway))
        .expect("uri")
        .connect_lazy();
    let log = Log::default();
    let white = sign_up(&channel, "swhite".to_owned()).await;
    let black = sign_up(&channel, "sblack".to_owned()).await;
    let game_id = start_game(&channel, &log, &white, &black).await;
    // One connection to the game service, shared by every call below,
    // signed as an operator's calls with the stack's internal key.
    let key = chess_runtime::identity::InternalKey::read(&stack.data.path().join("internal.key"))
        .expect("the stack's internal key");
    let internal = chess_runtime::identity::Signer::new(key, "ops").channel(
        chess_runtime::channel(stack.internal("game")).expect("address"),
        None,
        None,
    );
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..100 {
        let mut client = GameServiceClient::new(internal.clone());
        let id = if i % 10 == 0 {
            "x".repeat(100_000)
        } else {
            game_id.clone()
        };
        calls.spawn(async move {
            let answer = client
                .get_game(game::GetGameRequest {
                    game_id: id.clone(),
                })
                .await;
            (id.len() > 64, answer.map(|_| ()))
        });
    }
    while let Some(done) = calls.join_next().await {
        match done.expect("a call task") {
            (true, answer) => {
                let status = answer.expect_err("no such game");
                assert_eq!(status.code(), Code::NotFound, "{status:?}");
                assert!(status.message().len() <= 1024, "a long status came back");
            }
            (false, answer) => answer.expect("another read on the same connection"),
        }
    }
    stack.stop().await;
}

/// A client's event stream resumed after the gateway was killed begins with
/// what the client missed: the opponent's move made while it was away, and
/// a game started meanwhile, before the live events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_stream_resumes_across_a_gateway_kill() {
    let stack = StackProcess::start(&[], UNLIMITED).await;
    let channel = Channel::from_shared(format!("http://{}", stack.gateway))
        .expect("uri")
        .connect_lazy();
    let log = Log::default();
    let alice = sign_up(&channel, "ralice".to_owned()).await;
    let bob = sign_up(&channel, "rbob".to_owned()).await;
    let game_id = start_game(&channel, &log, &alice, &bob).await;
    let play = PlayServiceClient::new(channel.clone());
    let make_move = |player: &Player, mv: &str, ply: u32| {
        let request = player.request(pb::MakeMoveRequest {
            game_id: game_id.clone(),
            r#move: mv.to_owned(),
            ply: Some(ply),
        });
        let mut play = play.clone();
        async move { play.make_move(request).await }
    };
    make_move(&alice, "e2e4", 1).await.expect("alice moves");
    let mut stream = play
        .clone()
        .stream_events(alice.request(pb::StreamEventsRequest::default()))
        .await
        .expect("stream")
        .into_inner();

    let gateway = service_pid(&stack, "chess-gateway").expect("the gateway runs");
    kill9(gateway);
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        while let Ok(Some(_)) = stream.message().await {}
    })
    .await;
    assert!(ended.is_ok(), "the stream outlived its gateway");
    // While alice is away: bob answers (once the gateway is back) and
    // starts another game.
    persist(&log, || make_move(&bob, "e7e5", 2)).await;
    let second = start_game(&channel, &log, &bob, &alice).await;

    let mut resumed = play
        .clone()
        .stream_events(alice.request(pb::StreamEventsRequest {
            resume: true,
            games: vec![common::GameCursor {
                game_id: game_id.clone(),
                ply: 1,
            }],
        }))
        .await
        .expect("resumed stream")
        .into_inner();
    let mut next_game_event = async || loop {
        let event = tokio::time::timeout(Duration::from_secs(10), resumed.message())
            .await
            .expect("an event in time")
            .expect("the stream is healthy")
            .expect("the stream is open");
        if let Some(pb::stream_events_response::Event::Game(event)) = event.event {
            return event;
        }
    };
    let mut missed = [next_game_event().await, next_game_event().await];
    missed.sort_by_key(|e| e.game_id == second);
    assert_eq!(
        (missed[0].game_id.as_str(), missed[0].ply),
        (game_id.as_str(), 2)
    );
    assert!(matches!(
        missed[0].kind,
        Some(common::game_event::Kind::MoveMade(_))
    ));
    assert_eq!(missed[1].game_id, second);
    assert!(matches!(
        missed[1].kind,
        Some(common::game_event::Kind::Snapshot(_))
    ));
    // Then live: alice's own next move comes back once.
    make_move(&alice, "g1f3", 3)
        .await
        .expect("alice moves again");
    let live = next_game_event().await;
    assert_eq!((live.game_id.as_str(), live.ply), (game_id.as_str(), 3));
    stack.stop().await;
}
