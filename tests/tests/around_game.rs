//! Around a game: takebacks on the game service, with its real binary and
//! a SQLite file. A takeback asked for and declined changes nothing; one
//! accepted takes the game back; rated games refuse them unless the
//! operator allows; and a takeback stands after a SIGKILL of the service.

use std::{
    process::Stdio,
    time::{Duration, Instant},
};

use chess_domain::registered_player;
use chess_e2e::binary;
use chess_proto::{
    common::v1 as common,
    game::v1::{
        AcceptTakebackRequest, CancelTakebackRequest, CreateGameRequest, DeclineTakebackRequest,
        GetGameRequest, MakeMoveRequest, ProposeTakebackRequest,
        game_service_client::GameServiceClient,
    },
};
use chess_testkit::{Answer as _, clocks::blitz, free_port};
use tokio::process::{Child, Command};
use tonic::{Code, transport::Channel};

type Game = GameServiceClient<chess_testkit::Signed>;

const WHITE: &str = "p-white";
const BLACK: &str = "p-black";

/// The game service on `addr` and the SQLite file `url`, with `extra`
/// flags; a client once it serves.
async fn start(addr: &str, url: &str, extra: &[&str]) -> (Child, Game) {
    let child = Command::new(binary("chess-game"))
        .envs(chess_testkit::internal_key_env())
        .args(["--listen", addr, "--database-url", url])
        .args([
            "--rating-addr",
            "127.0.0.1:9",
            "--engine-addr",
            "127.0.0.1:9",
        ])
        .args(extra)
        .args(["--log-filter", "error", "--stop-on-stdin-eof"])
        .stdin(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start chess-game");
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
                return (
                    child,
                    GameServiceClient::new(chess_testkit::signed(channel)),
                );
            }
        }
        assert!(Instant::now() < deadline, "{addr} never became SERVING");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A new blitz game between the two players.
async fn new_game(game: &mut Game, rated: bool) -> String {
    let request = CreateGameRequest {
        white: Some(registered_player(WHITE, "white")),
        black: Some(registered_player(BLACK, "black")),
        time_control: Some(blitz()),
        rules: common::RuleSet::Standard as i32,
        rated,
        ..Default::default()
    };
    game.create_game(request)
        .answer()
        .await
        .game
        .unwrap()
        .game_id
}

/// Plays `moves` in `game_id`, white first.
async fn play(game: &mut Game, game_id: &str, moves: &[&str]) {
    for m in moves {
        let state = get(game, game_id).await;
        let player = if state.turn == common::Color::White as i32 {
            WHITE
        } else {
            BLACK
        };
        let request = MakeMoveRequest {
            game_id: game_id.to_owned(),
            player_id: player.to_owned(),
            r#move: (*m).to_owned(),
            ply: None,
        };
        game.make_move(chess_testkit::acting(request, player, Some(game_id)))
            .await
            .unwrap_or_else(|e| panic!("{m}: {e}"));
    }
}

async fn get(game: &mut Game, game_id: &str) -> common::GameState {
    let request = GetGameRequest {
        game_id: game_id.to_owned(),
    };
    game.get_game(request).answer().await.game.unwrap()
}

/// The four takeback calls.
#[derive(Clone, Copy)]
enum Call {
    Propose,
    Accept,
    Decline,
    Cancel,
}

/// Makes `call` for `player`; the TakenBack it answered, if any.
async fn call(
    game: &mut Game,
    call: Call,
    game_id: &str,
    player: &str,
) -> Result<Option<common::TakenBack>, tonic::Status> {
    let (g, p) = (game_id.to_owned(), player.to_owned());
    Ok(match call {
        Call::Propose => {
            let r = ProposeTakebackRequest {
                game_id: g,
                player_id: p,
            };
            game.propose_takeback(seat_of(r, player, game_id))
                .await?
                .into_inner()
                .taken_back
        }
        Call::Accept => {
            let r = AcceptTakebackRequest {
                game_id: g,
                player_id: p,
            };
            game.accept_takeback(seat_of(r, player, game_id))
                .await?
                .into_inner()
                .taken_back
        }
        Call::Decline => {
            let r = DeclineTakebackRequest {
                game_id: g,
                player_id: p,
            };
            game.decline_takeback(seat_of(r, player, game_id)).await?;
            None
        }
        Call::Cancel => {
            let r = CancelTakebackRequest {
                game_id: g,
                player_id: p,
            };
            game.cancel_takeback(seat_of(r, player, game_id)).await?;
            None
        }
    })
}

fn seat_of<T>(request: T, player: &str, game_id: &str) -> tonic::Request<T> {
    chess_testkit::acting(request, player, Some(game_id))
}

fn refused(answer: Result<Option<common::TakenBack>, tonic::Status>, code: Code) {
    match answer {
        Err(status) => assert_eq!(status.code(), code, "{status:?}"),
        Ok(done) => panic!("not refused: {done:?}"),
    }
}

#[tokio::test]
async fn takebacks_are_answered_refused_in_rated_games_and_survive_a_sigkill() {
    let data = tempfile::tempdir().unwrap();
    let url = format!(
        "sqlite://{}?mode=rwc",
        data.path().join("game.sqlite").display()
    );
    let addr = format!("127.0.0.1:{}", free_port());
    let (mut service, mut game) = start(&addr, &url, &[]).await;

    let casual = new_game(&mut game, false).await;
    play(&mut game, &casual, &["e4", "e5", "Nf3", "Nc6"]).await;
    // Nothing to answer yet; a stranger cannot ask; an unknown game is none.
    refused(
        call(&mut game, Call::Accept, &casual, BLACK).await,
        Code::FailedPrecondition,
    );
    refused(
        call(&mut game, Call::Propose, &casual, "p-stranger").await,
        Code::PermissionDenied,
    );
    refused(
        call(&mut game, Call::Propose, "nosuchgame", WHITE).await,
        Code::NotFound,
    );
    // Asked and declined, asked and withdrawn: nothing changes.
    assert_eq!(
        call(&mut game, Call::Propose, &casual, WHITE)
            .await
            .unwrap(),
        None
    );
    refused(
        call(&mut game, Call::Propose, &casual, WHITE).await,
        Code::FailedPrecondition,
    );
    assert_eq!(
        get(&mut game, &casual).await.takeback_offer,
        common::Color::White as i32
    );
    call(&mut game, Call::Decline, &casual, BLACK)
        .await
        .unwrap();
    call(&mut game, Call::Propose, &casual, WHITE)
        .await
        .unwrap();
    refused(
        call(&mut game, Call::Cancel, &casual, BLACK).await,
        Code::FailedPrecondition,
    );
    call(&mut game, Call::Cancel, &casual, WHITE).await.unwrap();
    assert_eq!(get(&mut game, &casual).await.ply, 4);
    // Asked again and accepted: white's Nf3 and black's reply go.
    call(&mut game, Call::Propose, &casual, WHITE)
        .await
        .unwrap();
    let done = call(&mut game, Call::Accept, &casual, BLACK)
        .await
        .unwrap()
        .expect("taken back");
    assert_eq!(done.ply, 2);
    let after = done.game.expect("the game after it");
    assert_eq!((after.ply, after.moves.len()), (2, 2));
    assert_eq!(after.fen, done.fen);
    play(&mut game, &casual, &["Bc4"]).await;

    // Rated: refused by default, and nothing changes.
    let rated = new_game(&mut game, true).await;
    play(&mut game, &rated, &["d4", "d5", "c4"]).await;
    refused(
        call(&mut game, Call::Propose, &rated, WHITE).await,
        Code::FailedPrecondition,
    );
    assert_eq!(
        get(&mut game, &rated).await.takeback_offer,
        common::Color::Unspecified as i32
    );

    // SIGKILL: the game comes back as taken back, moves and all.
    let before = get(&mut game, &casual).await;
    service.kill().await.unwrap();
    let (_service, mut game) = start(&addr, &url, &["--rated-takebacks"]).await;
    let reloaded = get(&mut game, &casual).await;
    assert_eq!(reloaded.fen, before.fen);
    assert_eq!(reloaded.ply, 3);
    let sans: Vec<_> = reloaded.moves.iter().map(|m| m.san.as_str()).collect();
    assert_eq!(sans, ["e4", "e5", "Bc4"]);
    assert_eq!(reloaded.clock.unwrap().white, before.clock.unwrap().white);

    // The operator allows takebacks in rated games now.
    call(&mut game, Call::Propose, &rated, WHITE).await.unwrap();
    let done = call(&mut game, Call::Accept, &rated, BLACK)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(done.ply, 2);
    // A finished game has none.
    game.resign(chess_testkit::acting(
        chess_proto::game::v1::ResignRequest {
            game_id: rated.clone(),
            player_id: BLACK.to_owned(),
        },
        BLACK,
        Some(&rated),
    ))
    .await
    .unwrap();
    refused(
        call(&mut game, Call::Propose, &rated, WHITE).await,
        Code::FailedPrecondition,
    );
}
