//! PlayMoves: many players' moves over one stream, each answered by its id
//! exactly as MakeMove would answer it, each checked against its own
//! assertion; and the internal client that sends moves this way.

mod common;

use std::collections::HashMap;

use chess_internal_clients::GameClient;
use chess_proto::game::v1::{
    self as pb, game_service_client::GameServiceClient, play_moves_response,
};
use chess_runtime::{InternalKey, Reason, Signer};
use common::*;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Code;

fn gateway() -> Signer {
    chess_testkit::signer("gateway")
}

/// A move of `player` in `game`, numbered `id`, signed by `signer` acting
/// for `acts_for` in `game`.
fn numbered(
    id: u64,
    signer: &Signer,
    acts_for: &str,
    game: &str,
    player: &str,
    mv: &str,
) -> pb::PlayMovesRequest {
    pb::PlayMovesRequest {
        id,
        assertion: signer.mint(Some(acts_for), Some(game)).unwrap(),
        r#move: Some(pb::MakeMoveRequest {
            game_id: game.to_owned(),
            player_id: player.to_owned(),
            r#move: mv.to_owned(),
            ply: None,
        }),
        trace_context: HashMap::new(),
    }
}

/// An open PlayMoves stream: where to send moves, and the answers.
struct Stream {
    moves: mpsc::Sender<pb::PlayMovesRequest>,
    answers: tonic::Streaming<pb::PlayMovesResponse>,
}

impl Stream {
    async fn open(service: &GameService) -> Self {
        let (moves, rx) = mpsc::channel(64);
        let answers = service
            .client()
            .await
            .play_moves(ReceiverStream::new(rx))
            .await
            .expect("open PlayMoves")
            .into_inner();
        Self { moves, answers }
    }

    /// Sends `request` and returns its answer: the move made, or the
    /// status it was refused with.
    async fn ask(
        &mut self,
        request: pb::PlayMovesRequest,
    ) -> Result<pb::MakeMoveResponse, tonic::Status> {
        let id = request.id;
        self.moves.send(request).await.unwrap();
        let answer = self.answers.message().await.unwrap().expect("an answer");
        assert_eq!(answer.id, id, "answered by its id");
        match answer.result.expect("a result") {
            play_moves_response::Result::Made(made) => Ok(made),
            play_moves_response::Result::Refused(refusal) => {
                let mut status = tonic::Status::new(Code::from_i32(refusal.code), refusal.message);
                for (k, v) in refusal.metadata {
                    status.metadata_mut().insert(
                        tonic::metadata::MetadataKey::from_bytes(k.as_bytes()).unwrap(),
                        v.parse().unwrap(),
                    );
                }
                Err(status)
            }
        }
    }
}

#[tokio::test]
async fn moves_of_many_games_share_a_stream_and_are_answered_by_id() {
    let (_dir, _service, mut client) = on_sqlite().await;
    let games: Vec<String> = create_games(&mut client, 5).await;

    let (moves, rx) = mpsc::channel(64);
    let mut answers = client
        .play_moves(ReceiverStream::new(rx))
        .await
        .unwrap()
        .into_inner();
    // White's first move in every game, all sent before any answer is read.
    let signer = gateway();
    for (i, game) in games.iter().enumerate() {
        let white = format!("w{i}");
        moves
            .send(numbered(
                100 + i as u64,
                &signer,
                &white,
                game,
                &white,
                "e2e4",
            ))
            .await
            .unwrap();
    }
    let mut seen = HashMap::new();
    for _ in 0..games.len() {
        let answer = answers.message().await.unwrap().unwrap();
        let Some(play_moves_response::Result::Made(made)) = answer.result else {
            panic!("move {} refused: {:?}", answer.id, answer.result);
        };
        assert_eq!(made.ply, 1);
        assert_eq!(made.move_made.unwrap().r#move.unwrap().uci, "e2e4");
        assert!(seen.insert(answer.id, ()).is_none(), "one answer per move");
    }
    let mut ids: Vec<u64> = seen.into_keys().collect();
    ids.sort_unstable();
    assert_eq!(ids, (100..105).collect::<Vec<_>>());
    for game in &games {
        let state = get(&mut client, game).await;
        assert_eq!(state.ply, 1);
    }

    // The caller closes its side: the stream ends after the last answer.
    drop(moves);
    assert!(answers.message().await.unwrap().is_none());
}

/// Creates `n` games, `w{i}` against `b{i}`.
async fn create_games(client: &mut Client, n: usize) -> Vec<String> {
    let mut games = Vec::new();
    for i in 0..n {
        games.push(
            create(client, &format!("w{i}"), &format!("b{i}"), untimed())
                .await
                .game_id,
        );
    }
    games
}

#[tokio::test]
async fn each_move_is_refused_as_make_move_would_and_changes_nothing() {
    let (_dir, service, mut client) = on_sqlite().await;
    let game = create(&mut client, "w", "b", untimed()).await.game_id;
    let other = create(&mut client, "x", "y", untimed()).await.game_id;
    let mut stream = Stream::open(&service).await;
    let signer = gateway();

    let mint = |player: Option<&str>, game: Option<&str>| signer.mint(player, game).unwrap();
    let with_assertion = |mut request: pb::PlayMovesRequest, assertion: String| {
        request.assertion = assertion;
        request
    };
    let mut no_move = numbered(12, &signer, "w", &game, "w", "e4");
    no_move.r#move = None;
    let stranger = Signer::new(InternalKey::from_bytes(&[7; 32]).unwrap(), "gateway");
    let refused = [
        // Acting for another player, in another game, or for nobody.
        (
            "another player's assertion",
            numbered(1, &signer, "b", &game, "w", "e4"),
            Code::PermissionDenied,
            Some(Reason::CallerMismatch),
        ),
        (
            "another game's assertion",
            with_assertion(
                numbered(2, &signer, "w", &game, "w", "e4"),
                mint(Some("w"), Some(&other)),
            ),
            Code::PermissionDenied,
            Some(Reason::CallerMismatch),
        ),
        (
            "an assertion for nobody",
            with_assertion(
                numbered(3, &signer, "w", &game, "w", "e4"),
                mint(None, None),
            ),
            Code::PermissionDenied,
            Some(Reason::CallerMismatch),
        ),
        // Signed with another key, or not an assertion at all.
        (
            "another key",
            numbered(4, &stranger, "w", &game, "w", "e4"),
            Code::Unauthenticated,
            None,
        ),
        (
            "no assertion",
            with_assertion(
                numbered(5, &signer, "w", &game, "w", "e4"),
                "not an assertion".to_owned(),
            ),
            Code::Unauthenticated,
            None,
        ),
        // No move in the message; a move too long to be one.
        (
            "no move",
            no_move,
            Code::InvalidArgument,
            Some(Reason::InvalidRequest),
        ),
        (
            "a long move",
            numbered(6, &signer, "w", &game, "w", &"e".repeat(17)),
            Code::InvalidArgument,
            Some(Reason::InvalidRequest),
        ),
        // The game's own refusals keep their reasons.
        (
            "black first",
            numbered(7, &signer, "b", &game, "b", "e5"),
            Code::FailedPrecondition,
            Some(Reason::NotYourTurn),
        ),
        (
            "an illegal move",
            numbered(8, &signer, "w", &game, "w", "e2e5"),
            Code::FailedPrecondition,
            Some(Reason::IllegalMove),
        ),
        (
            "not a move",
            numbered(9, &signer, "w", &game, "w", "zz"),
            Code::InvalidArgument,
            Some(Reason::MalformedMove),
        ),
        (
            "an unknown game",
            numbered(10, &signer, "w", "no-such-game", "w", "e4"),
            Code::NotFound,
            Some(Reason::NotFound),
        ),
    ];
    for (what, request, code, reason) in refused {
        let status = stream.ask(request).await.expect_err(what);
        assert_eq!(
            (status.code(), Reason::of(&status)),
            (code, reason),
            "{what}: {status:?}"
        );
    }
    assert_eq!(get(&mut client, &game).await.ply, 0, "nothing was played");

    // The stream still works after every refusal.
    let made = stream
        .ask(numbered(11, &signer, "w", &game, "w", "e4"))
        .await
        .expect("a good move after the refusals");
    assert_eq!(
        (
            made.ply,
            made.move_made.unwrap().r#move.unwrap().uci.as_str()
        ),
        (1, "e2e4")
    );
}

#[tokio::test]
async fn a_stream_without_an_assertion_is_refused() {
    let (_dir, url) = sqlite();
    let service = GameService::start(&url).await;
    let mut raw = GameServiceClient::new(chess_testkit::connect(&service.addr).await);
    let (_moves, rx) = mpsc::channel::<pb::PlayMovesRequest>(1);
    let status = raw
        .play_moves(ReceiverStream::new(rx))
        .await
        .expect_err("refused");
    assert_eq!(status.code(), Code::Unauthenticated);
}

#[tokio::test]
async fn the_internal_client_plays_whole_games_over_one_stream() {
    let (_dir, service, mut client) = on_sqlite().await;
    let game_client = GameClient::connect(&service.addr, gateway()).unwrap();
    // Fool's mate in eight games at once.
    let games = create_games(&mut client, 8).await;
    let line = ["f2f3", "e7e5", "g2g4", "d8h4"];
    let mut tasks = tokio::task::JoinSet::new();
    for (i, game) in games.iter().enumerate() {
        let (game, game_client) = (game.clone(), game_client.clone());
        tasks.spawn(async move {
            let mut last = None;
            for (ply, mv) in line.iter().enumerate() {
                let player = if ply % 2 == 0 {
                    format!("w{i}")
                } else {
                    format!("b{i}")
                };
                let made = game_client
                    .make_move(pb::MakeMoveRequest {
                        game_id: game.clone(),
                        player_id: player,
                        r#move: (*mv).to_owned(),
                        ply: Some(ply as u32 + 1),
                    })
                    .await
                    .expect("move made");
                assert_eq!(made.ply, ply as u32 + 1);
                last = Some(made);
            }
            last.unwrap()
        });
    }
    let mut finished = 0;
    while let Some(last) = tasks.join_next().await {
        let ended = last.unwrap().game_ended.expect("mate ends the game");
        assert_eq!(
            ended.termination,
            chess_proto::common::v1::Termination::Checkmate as i32
        );
        finished += 1;
    }
    assert_eq!(finished, 8);

    // Refusals come back as MakeMove's, reason and all.
    let status = game_client
        .make_move(pb::MakeMoveRequest {
            game_id: games[0].clone(),
            player_id: "w0".to_owned(),
            r#move: "e4".to_owned(),
            ply: None,
        })
        .await
        .expect_err("the game is over");
    assert_eq!(Reason::of(&status), Some(Reason::GameOver));
    let status = game_client
        .make_move(pb::MakeMoveRequest {
            game_id: games[0].clone(),
            player_id: "nobody".to_owned(),
            r#move: "e4".to_owned(),
            ply: None,
        })
        .await
        .expect_err("not a player");
    assert_eq!(Reason::of(&status), Some(Reason::NotAPlayer));
}

#[tokio::test]
async fn the_internal_client_opens_a_new_stream_after_its_replica_restarts() {
    let (dir, url) = sqlite();
    let service = GameService::start(&url).await;
    let mut client = service.client().await;
    let game = create(&mut client, "w", "b", untimed()).await.game_id;
    let addr = service.addr.clone();
    let game_client = GameClient::connect(&service.addr, gateway()).unwrap();
    let move_of = |player: &str, mv: &str, ply: u32| pb::MakeMoveRequest {
        game_id: game.clone(),
        player_id: player.to_owned(),
        r#move: mv.to_owned(),
        ply: Some(ply),
    };
    game_client.make_move(move_of("w", "e4", 1)).await.unwrap();

    service.crash().await;
    let service = GameService::restart_at(&url, &addr).await;
    // The first move after the restart may find the old stream broken (its
    // answer unknown) before a new one is opened; sent with its ply, it is
    // safe to send again.
    let mut made = None;
    for _ in 0..20 {
        match game_client.make_move(move_of("b", "e5", 2)).await {
            Ok(answer) => {
                made = Some(answer);
                break;
            }
            Err(status) => {
                assert!(Reason::of(&status).is_none(), "refused: {status:?}");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }
    assert_eq!(made.expect("answered after the restart").ply, 2);
    let mut client = service.client().await;
    assert_eq!(get(&mut client, &game).await.ply, 2);
    drop(dir);
}
