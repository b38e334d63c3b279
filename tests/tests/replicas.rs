//! The game service as several replicas sharing one PostgreSQL database,
//! under load through the public gRPC API: real binaries, real kills.
//!
//! `chess-stack --game-replicas 2` runs `game-0` and `game-1` (supervised:
//! restarted at once if they die), and the test runs `game-2` itself, so
//! that a replica can die and stay dead, or leave and come back. Callers
//! learn of `game-2` from the shard map alone.
//!
//! - A replica killed with SIGKILL: only its games pause, and every one
//!   resumes on the others once its leases expire.
//! - A replica paused with SIGSTOP past its leases: another takes its
//!   shards over and the games go on there; resumed, the paused replica's
//!   stale writes are refused and it drops the shards.
//! - Scaling 3 → 2 → 3 under load: the leaving replica hands its shards
//!   over, the coming one takes its share.
//! - Daily games served by each replica are all mailed: the gateway
//!   follows every replica's daily games.
//! - A move streamed (PlayMoves) to a replica that does not serve its game
//!   is refused there, and the internal client has the owner make it.
//!
//! Throughout: every move a client was told was made is in its game's
//! record and PGN, with no gap and nothing twice; clients only ever see
//! UNAVAILABLE, which tells them to retry; each finished rated game counts
//! once in the ratings. The pauses each game saw are printed.

mod support;

use std::{
    collections::{BTreeMap, HashSet},
    path::PathBuf,
    time::{Duration, Instant},
};

use chess_e2e::{StackProcess, binary, signal};
use chess_proto::{
    common::v1 as common,
    game::v1::{self as game_pb, game_service_client::GameServiceClient},
    gateway::v1::{self as pb, play_service_client::PlayServiceClient},
};
use chess_shards::shard_of;
use chess_testkit::{Service, gateway::Gateway, process::kill9};
use nix::sys::signal::Signal;
use support::*;
use tonic::{Code, transport::Channel};

/// Pairs of players driving games in the kill and scaling drills.
const REPLICA_PAIRS: usize = 16;
/// White's time in the games of the pause drill: shorter than the pause,
/// longer than a takeover and the gateway's learning of it.
const WHITE_SECONDS: u32 = 6;
/// How long a client of a killed replica's games may wait for them: the
/// lease (3 s), a renewal period (1 s), loading, and the client's retries.
const FAILOVER_BOUND: Duration = Duration::from_secs(8);

/// The stack with two supervised game replicas on a fresh PostgreSQL
/// database, and the database's URL.
async fn stack() -> (StackProcess, String) {
    let url = chess_storage::testing::fresh_postgres_database().await;
    let stack =
        StackProcess::start(&["--game-replicas", "2", "--database-url", &url], UNLIMITED).await;
    assert_eq!(stack.game_replicas.len(), 2, "{:?}", stack.game_replicas);
    (stack, url)
}

/// The stack with two game replicas, once both serve shards, and the
/// address of `game-0`.
async fn two() -> (StackProcess, String) {
    let (stack, _url) = stack().await;
    let first = stack.game_replicas[0].1.clone();
    wait_for_map(
        &stack,
        &first,
        "two replicas share the shards",
        served_by(&["game-0", "game-1"]),
    )
    .await;
    (stack, first)
}

/// The stack's two game replicas and a third, sharing the shards.
struct Three {
    stack: StackProcess,
    /// The database's URL.
    url: String,
    /// The address of `game-0`, whose shard map the test reads.
    first: String,
    /// `game-2`, run by the test.
    third: Service,
}

async fn three() -> Three {
    let (stack, url) = stack().await;
    let first = stack.game_replicas[0].1.clone();
    let third = third_replica(&stack, &url, "game-2").await;
    wait_for_map(
        &stack,
        &first,
        "three replicas share the shards",
        served_by(&["game-0", "game-1", "game-2"]),
    )
    .await;
    Three {
        stack,
        url,
        first,
        third,
    }
}

/// Three replicas, and pairs of players driving games through the
/// gateway, the load steady.
async fn three_under_load() -> (Three, Channel, Load) {
    let three = three().await;
    let channel = gateway_channel(&three.stack);
    // Signing up hashes passwords: slow on purpose, and this machine is
    // busy.
    let load = Load::start(&channel, REPLICA_PAIRS, 3 * OUTAGE_LIMIT, 300).await;
    (three, channel, load)
}

/// Starts replica `id` of the game service beside the stack's, on its
/// database and with its key, and waits until it is SERVING.
async fn third_replica(stack: &StackProcess, url: &str, id: &str) -> Service {
    let key: PathBuf = stack.data.path().join("internal.key");
    let key = key.to_str().expect("a UTF-8 path");
    Service::start(
        binary("chess-game"),
        &[
            "--internal-key-file",
            key,
            "--database-url",
            url,
            "--engine-addr",
            stack.internal("engine"),
            "--rating-addr",
            stack.internal("rating"),
            "--replica-id",
            id,
        ],
    )
    .await
}

/// The shard map as game replica `addr` reports it.
async fn shard_map(stack: &StackProcess, addr: &str) -> game_pb::GetShardMapResponse {
    let signer = gateway_signer(stack);
    let channel = chess_runtime::channel(addr).expect("a game replica's address");
    GameServiceClient::new(signer.channel(channel, None, None))
        .get_shard_map(game_pb::GetShardMapRequest {})
        .await
        .expect("GetShardMap")
        .into_inner()
}

/// Shards owned per replica id in `map` ("" for none).
fn owners(map: &game_pb::GetShardMapResponse) -> BTreeMap<String, usize> {
    let mut count = BTreeMap::new();
    for owner in &map.owners {
        *count.entry(owner.clone()).or_default() += 1;
    }
    count
}

/// Waits until game replica `addr` reports a map for which `done` holds.
async fn wait_for_map(
    stack: &StackProcess,
    addr: &str,
    what: &str,
    done: impl Fn(&game_pb::GetShardMapResponse) -> bool,
) -> Instant {
    let deadline = Instant::now() + OUTAGE_LIMIT;
    loop {
        let map = shard_map(stack, addr).await;
        if done(&map) {
            return Instant::now();
        }
        assert!(Instant::now() < deadline, "{what}: {:?}", owners(&map));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The shards replica `id` owns in `map`.
fn shards_of(map: &game_pb::GetShardMapResponse, id: &str) -> HashSet<u16> {
    (0..map.owners.len())
        .filter(|&s| map.owners[s] == id)
        .map(|s| s as u16)
        .collect()
}

/// Every shard served, by exactly the replicas `ids`, each with a share.
fn served_by(ids: &[&str]) -> impl Fn(&game_pb::GetShardMapResponse) -> bool {
    let ids: HashSet<String> = ids.iter().map(|s| (*s).to_owned()).collect();
    move |map| {
        let count = owners(map);
        count.keys().all(|k| ids.contains(k)) && ids.iter().all(|id| count.contains_key(id))
    }
}

/// Pauses each game saw across `at`: the time from its last acknowledged
/// move before `at` to its first after, for games with moves on both sides,
/// split by whether `affected` (a game id) says the game was hit.
fn pauses(log: &Log, at: Instant, affected: impl Fn(&str) -> bool) -> (Vec<f64>, Vec<f64>) {
    let mut hit = Vec::new();
    let mut spared = Vec::new();
    for (game, times) in log.acknowledged_at.lock().expect("not poisoned").iter() {
        let before = times.iter().filter(|&&t| t < at).max();
        let after = times.iter().filter(|&&t| t >= at).min();
        if let (Some(before), Some(after)) = (before, after) {
            let pause = after.duration_since(*before).as_secs_f64();
            if affected(game) {
                hit.push(pause);
            } else {
                spared.push(pause);
            }
        }
    }
    hit.sort_by(f64::total_cmp);
    spared.sort_by(f64::total_cmp);
    (hit, spared)
}

fn summary(pauses: &[f64]) -> String {
    if pauses.is_empty() {
        return "no games".to_owned();
    }
    let median = pauses[pauses.len() / 2];
    let max = pauses[pauses.len() - 1];
    format!(
        "{} games, median {median:.2} s, max {max:.2} s",
        pauses.len()
    )
}

/// Stops the drivers and checks what they saw: only UNAVAILABLE, every
/// acknowledged move kept, every finished game rated once.
async fn finish(channel: &Channel, load: Load) {
    let log = load.stop().await;
    let other: Vec<String> = log
        .failures
        .lock()
        .expect("not poisoned")
        .iter()
        .filter(|f| f.connection_lost || f.code != Code::Unavailable)
        .map(|f| format!("{:?}: {}", f.code, f.message))
        .collect();
    assert!(
        other.is_empty(),
        "clients saw more than UNAVAILABLE: {other:?}"
    );
    let moves = check_records(channel, &log).await;
    let games = check_ratings(channel, &log).await;
    println!(
        "replicas: {moves} acknowledged moves checked; {games} finished games rated once each; {} failed calls",
        log.failures.lock().expect("not poisoned").len()
    );
    assert!(games >= 50, "only {games} games finished");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_replica_s_games_resume_elsewhere_and_nothing_is_lost() {
    let (
        Three {
            stack,
            first,
            third,
            ..
        },
        channel,
        load,
    ) = three_under_load().await;
    let log = &load.log;

    let map = shard_map(&stack, &first).await;
    let victim = shards_of(&map, "game-2");
    assert!(!victim.is_empty());
    let killed = Instant::now();
    kill9(third.pid());
    let taken_over = wait_for_map(
        &stack,
        &first,
        "the others take the killed replica's shards",
        served_by(&["game-0", "game-1"]),
    )
    .await;
    println!(
        "replicas: game-2 killed; its {} shards served again after {:.2} s",
        victim.len(),
        taken_over.duration_since(killed).as_secs_f64()
    );
    // Load goes on for a while on two replicas.
    log.more_successes(300).await;
    let (hit, spared) = pauses(log, killed, |game| victim.contains(&shard_of(game)));
    println!(
        "replicas: pauses across the kill: games of the killed replica {}; the others {}",
        summary(&hit),
        summary(&spared)
    );
    assert!(!hit.is_empty(), "no game of the killed replica was watched");
    let longest = hit[hit.len() - 1];
    assert!(
        longest <= FAILOVER_BOUND.as_secs_f64(),
        "a game of the killed replica paused {longest:.2} s"
    );
    // Only its games paused: the others went on as before.
    if !spared.is_empty() {
        let median = spared[spared.len() / 2];
        assert!(
            median < 1.5,
            "the other replicas' games paused too: median {median:.2} s"
        );
    }
    finish(&channel, load).await;
    stack.stop().await;
}

/// Two players' casual game of 6 s + 60 s a move, through a challenge.
async fn short_game(
    channel: &Channel,
    white: &chess_e2e::load::grpc::Player,
    black: &chess_e2e::load::grpc::Player,
) -> String {
    let control = common::TimeControl {
        kind: Some(common::time_control::Kind::Incremental(
            common::Incremental {
                initial_seconds: WHITE_SECONDS,
                increment_seconds: 60,
            },
        )),
    };
    chess_e2e::load::grpc::challenge(&[channel.clone(), channel.clone()], white, black, control)
        .await
        .expect("a game by challenge")
}

async fn make_move(
    channel: &Channel,
    player: &chess_e2e::load::grpc::Player,
    game_id: &str,
    uci: &str,
    ply: u32,
) {
    let mut play = PlayServiceClient::new(channel.clone());
    let deadline = Instant::now() + OUTAGE_LIMIT;
    loop {
        let made = play
            .make_move(player.request(pb::MakeMoveRequest {
                game_id: game_id.to_owned(),
                r#move: uci.to_owned(),
                ply: Some(ply),
            }))
            .await;
        match made {
            Ok(made) => {
                assert_eq!(made.into_inner().ply, ply);
                return;
            }
            Err(status) if status.code() == Code::Unavailable && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(status) => panic!("{uci} in game {game_id}: {status:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_replica_s_stale_writes_are_refused() {
    let (stack, first) = two().await;
    let paused = stack.game_replicas[1].0.clone();
    let channel = gateway_channel(&stack);
    let white = sign_up(&channel, "fwhite".to_owned()).await;
    let black = sign_up(&channel, "fblack".to_owned()).await;
    // Games in the shards of the replica to pause; white to move, with
    // WHITE_SECONDS on the clock.
    let map = shard_map(&stack, &first).await;
    let mut games = Vec::new();
    while games.len() < 4 {
        let game = short_game(&channel, &white, &black).await;
        if map.owners[usize::from(shard_of(&game))] == paused {
            games.push(game);
        } else {
            // Not needed: ended at once.
            PlayServiceClient::new(channel.clone())
                .abort(white.request(pb::AbortRequest { game_id: game }))
                .await
                .expect("abort");
        }
    }
    for game in &games {
        make_move(&channel, &white, game, "e2e4", 1).await;
        make_move(&channel, &black, game, "e7e5", 2).await;
    }
    let pid = supervised_replica_pid(&stack, &paused);
    signal(pid, Signal::SIGSTOP);
    let stopped = Instant::now();
    // game-0 takes the paused replica's shards once their leases expire;
    // the games go on there, white's clock given back the time meanwhile.
    wait_for_map(
        &stack,
        &first,
        "game-0 takes the paused replica's shards",
        served_by(&["game-0"]),
    )
    .await;
    println!(
        "replicas: {paused} paused; its shards served by game-0 after {:.2} s",
        stopped.elapsed().as_secs_f64()
    );
    // The gateway learns of the new owner within a refresh of its map.
    tokio::time::sleep(Duration::from_secs(2)).await;
    for game in &games {
        make_move(&channel, &white, game, "g1f3", 3).await;
        make_move(&channel, &black, game, "b8c6", 4).await;
    }
    // In the paused replica's view, white's flag fell WHITE_SECONDS after
    // black's move: its timers fire as soon as it runs again.
    let stale_deadline = stopped + Duration::from_secs(2 * u64::from(WHITE_SECONDS));
    tokio::time::sleep_until(stale_deadline.into()).await;
    signal(pid, Signal::SIGCONT);
    let refusals = |text: &str| {
        stack
            .log_lines(text)
            .into_iter()
            .filter(|line| line.starts_with(&format!("[{paused}]")))
            .count()
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while refusals("write refused") == 0 {
        assert!(
            Instant::now() < deadline,
            "{paused} never tried a stale write: {:?}",
            stack.log_lines(&format!("[{paused}]"))
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!(
        "replicas: {paused} resumed: {} stale writes refused",
        refusals("write refused")
    );
    // The games are as game-0 has them: no timeout, no fork; the replicas
    // share the shards again, and play goes on.
    wait_for_map(
        &stack,
        &first,
        "the replicas share the shards again",
        served_by(&["game-0", "game-1"]),
    )
    .await;
    let gateway = Gateway::new(channel.clone());
    for game in &games {
        let state = gateway.game(game).await;
        assert_eq!(state.status, common::GameStatus::Active as i32, "{state:?}");
        let moves: Vec<&str> = state.moves.iter().map(|m| m.uci.as_str()).collect();
        assert_eq!(moves, ["e2e4", "e7e5", "g1f3", "b8c6"], "game {game}");
        make_move(&channel, &white, game, "f1c4", 5).await;
    }
    stack.stop().await;
}

/// The pid of the stack's game replica `id`.
fn supervised_replica_pid(stack: &StackProcess, id: &str) -> u32 {
    chess_e2e::children_of(stack.pid())
        .into_iter()
        .find(|&pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmdline| {
                let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
                args.windows(2)
                    .any(|w| w[0] == b"--replica-id" && w[1] == id.as_bytes())
            })
        })
        .unwrap_or_else(|| panic!("no replica {id} among the stack's children"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scaling_three_two_three_under_load_loses_nothing() {
    let (
        Three {
            stack,
            url,
            first,
            third,
        },
        channel,
        load,
    ) = three_under_load().await;
    let log = &load.log;

    // 3 → 2: game-2 stops (as a scaled-down pod is told to) and hands its
    // shards over.
    let map = shard_map(&stack, &first).await;
    let leaving = shards_of(&map, "game-2");
    let down = Instant::now();
    let status = third.stop().await;
    assert!(status.success(), "game-2 exited with {status}");
    let handed = wait_for_map(
        &stack,
        &first,
        "scaled to two",
        served_by(&["game-0", "game-1"]),
    )
    .await;
    log.more_successes(300).await;
    let (hit, spared) = pauses(log, down, |game| leaving.contains(&shard_of(game)));
    println!(
        "replicas: 3 → 2 in {:.2} s; pauses: games handed over {}; the others {}",
        handed.duration_since(down).as_secs_f64(),
        summary(&hit),
        summary(&spared)
    );

    // 2 → 3: game-2 comes back and takes its share.
    let up = Instant::now();
    let _third = third_replica(&stack, &url, "game-2").await;
    let shared = wait_for_map(
        &stack,
        &first,
        "scaled to three",
        served_by(&["game-0", "game-1", "game-2"]),
    )
    .await;
    let map = shard_map(&stack, &first).await;
    let coming = shards_of(&map, "game-2");
    log.more_successes(300).await;
    let (hit, spared) = pauses(log, up, |game| coming.contains(&shard_of(game)));
    println!(
        "replicas: 2 → 3 in {:.2} s; pauses: games handed over {}; the others {}",
        shared.duration_since(up).as_secs_f64(),
        summary(&hit),
        summary(&spared)
    );
    finish(&channel, load).await;
    stack.stop().await;
}

/// The moves of daily games served by every replica are mailed: the
/// gateway follows the daily games of all of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daily_games_on_every_replica_are_mailed() {
    let Three {
        stack,
        first,
        third: _third,
        ..
    } = three().await;
    let channel = gateway_channel(&stack);
    let white = sign_up(&channel, "mwhite".to_owned()).await;
    let black = sign_up(&channel, "mblack".to_owned()).await;
    let map = shard_map(&stack, &first).await;
    // A daily game served by each replica.
    let mut games: BTreeMap<String, String> = BTreeMap::new();
    let deadline = Instant::now() + OUTAGE_LIMIT;
    while games.len() < 3 {
        assert!(
            Instant::now() < deadline,
            "games on {:?} only",
            games.keys()
        );
        let game = daily_game(&channel, &white, &black).await;
        let owner = map.owners[usize::from(shard_of(&game))].clone();
        games.entry(owner).or_insert(game);
    }
    for game in games.values() {
        make_move(&channel, &white, game, "e2e4", 1).await;
    }
    // The games no mail tells of yet, and how many mails there are.
    let unmailed = || {
        let mails = mails(&stack);
        let games: Vec<(&String, &String)> = games
            .iter()
            .filter(|(_, game)| {
                !mails.iter().any(|mail| {
                    mail.contains("To: mblack@load.test")
                        && mail.contains(&format!("/games/{game}"))
                })
            })
            .collect();
        std::future::ready((games, mails.len()))
    };
    let (unmailed, sent) =
        chess_testkit::settled(Duration::from_secs(30), unmailed, |(games, _)| {
            games.is_empty()
        })
        .await;
    assert!(
        unmailed.is_empty(),
        "no mail for the games of {unmailed:?} ({sent} mails)"
    );
    println!(
        "replicas: a move in a daily game of each replica was mailed ({:?})",
        games.keys()
    );
    stack.stop().await;
}

/// The signer of the gateway's calls, with the stack's key.
fn gateway_signer(stack: &StackProcess) -> chess_runtime::Signer {
    let key = chess_runtime::InternalKey::read(&stack.data.path().join("internal.key"))
        .expect("the stack's key");
    chess_runtime::Signer::new(key, "gateway")
}

/// A move sent over PlayMoves to a replica that does not serve its game is
/// refused there having done nothing, its owner named; the internal client
/// then sends it again as a routed MakeMove call, which the owner makes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_streamed_to_a_replica_not_serving_its_game_is_made_by_the_owner() {
    let (stack, first) = two().await;
    let channel = gateway_channel(&stack);
    let white = sign_up(&channel, "streamwhite".to_owned()).await;
    let black = sign_up(&channel, "streamblack".to_owned()).await;
    let game_id = short_game(&channel, &white, &black).await;
    let map = shard_map(&stack, &first).await;
    let owner_id = &map.owners[usize::from(shard_of(&game_id))];
    let owner_addr = &stack
        .game_replicas
        .iter()
        .find(|(id, _)| id == owner_id)
        .expect("the owner is one of the stack's replicas")
        .1;
    let other_addr = &stack
        .game_replicas
        .iter()
        .find(|(id, _)| id != owner_id)
        .expect("a replica that does not serve the game")
        .1;
    let signer = gateway_signer(&stack);
    let state = |addr: &str| {
        let client = GameServiceClient::new(signer.channel(
            chess_runtime::channel(addr).expect("a game replica's address"),
            None,
            Some(&game_id),
        ));
        let game_id = game_id.clone();
        async move {
            let mut client = client;
            client
                .get_game(game_pb::GetGameRequest { game_id })
                .await
                .expect("GetGame")
                .into_inner()
                .game
                .expect("a game")
        }
    };
    let before = state(owner_addr).await;
    let Some(common::Player {
        kind: Some(common::player::Kind::Registered(white_player)),
    }) = before.white
    else {
        panic!("white is a registered player: {:?}", before.white);
    };
    let request = game_pb::MakeMoveRequest {
        game_id: game_id.clone(),
        player_id: white_player.player_id.clone(),
        r#move: "e2e4".to_owned(),
        ply: Some(1),
    };

    // Over a stream of its own to the other replica: refused, nothing done.
    let mut other = GameServiceClient::new(signer.channel(
        chess_runtime::channel(other_addr).expect("a game replica's address"),
        None,
        None,
    ));
    let message = game_pb::PlayMovesRequest {
        id: 7,
        assertion: signer
            .mint(Some(&white_player.player_id), Some(&game_id))
            .expect("an assertion"),
        r#move: Some(request.clone()),
        trace_context: Default::default(),
    };
    let mut answers = other
        .play_moves(tokio_stream::iter([message]))
        .await
        .expect("PlayMoves opens")
        .into_inner();
    let answer = answers
        .message()
        .await
        .expect("the stream")
        .expect("an answer");
    assert_eq!(answer.id, 7);
    let Some(game_pb::play_moves_response::Result::Refused(refusal)) = answer.result else {
        panic!("the move was not refused: {answer:?}");
    };
    assert_eq!(refusal.code, Code::FailedPrecondition as i32, "{refusal:?}");
    // The owner as the services reach it: under chess-stack, its Unix
    // socket in the data directory.
    let owner_socket = stack
        .data
        .path()
        .canonicalize()
        .unwrap()
        .join(format!("{owner_id}.sock"));
    assert_eq!(
        refusal.metadata.get(chess_shards::routing::OWNER_KEY),
        Some(&format!("unix:{}", owner_socket.display())),
        "{refusal:?}"
    );
    assert!(state(owner_addr).await.moves.is_empty());

    // Through the internal client, knowing only the other replica (its
    // first move goes there, before the shard map is read).
    let client =
        chess_internal_clients::GameClient::connect(other_addr, signer.clone()).expect("a client");
    let made = client.make_move(request).await.expect("the move is made");
    assert_eq!(made.ply, 1);
    let after = state(owner_addr).await;
    let moves: Vec<&str> = after.moves.iter().map(|m| m.uci.as_str()).collect();
    assert_eq!(moves, ["e2e4"]);
    stack.stop().await;
}
