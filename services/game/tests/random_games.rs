//! Random legal games played through the RPCs, every state checked against an
//! independent replay with shakmaty; the boards the service draws checked
//! against the real Stockfish's `d` output.

mod common;

use chess_proto::{common::v1 as c, game::v1 as pb};
use common::*;
use rand::{Rng as _, SeedableRng as _, rngs::StdRng};
use shakmaty::{CastlingMode, Chess, EnPassantMode, Position as _, fen::Fen, san::SanPlus};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

/// Plays one random game; returns (FEN, board drawing) pairs seen on the way.
async fn random_game(mut client: Client, index: usize, seed: u64) -> Vec<(String, String)> {
    let mut rng = StdRng::seed_from_u64(seed);
    let (white, black) = (format!("w{index}"), format!("b{index}"));
    let game = create(&mut client, &white, &black, untimed()).await;
    let id = game.game_id;
    let mut position = Chess::default();
    let mut boards = Vec::new();
    let mut expected_sans = Vec::new();
    for ply in 1..=400u32 {
        let moves = position.legal_moves();
        let m = moves[rng.random_range(0..moves.len())];
        let uci = m.to_uci(CastlingMode::Standard).to_string();
        // Alternate notations so both paths are exercised.
        let san = SanPlus::from_move(position.clone(), m).to_string();
        let input = if rng.random_bool(0.5) {
            uci.clone()
        } else {
            san.clone()
        };
        let player = if position.turn().is_white() {
            &white
        } else {
            &black
        };
        let response = play(&mut client, &id, player, &input)
            .await
            .unwrap_or_else(|e| panic!("seed {seed} ply {ply}: {input} refused: {e}"));
        position.play_unchecked(m);
        expected_sans.push(san.clone());

        let made = response.move_made.unwrap();
        let fen = Fen::from_position(&position, EnPassantMode::Legal).to_string();
        assert_eq!(response.ply, ply);
        assert_eq!(
            made.r#move.as_ref().unwrap().uci,
            uci,
            "seed {seed} ply {ply}"
        );
        assert_eq!(
            made.r#move.as_ref().unwrap().san,
            san,
            "seed {seed} ply {ply}"
        );
        assert_eq!(made.fen, fen, "seed {seed} ply {ply}");
        assert_eq!(made.check, position.is_check() && !position.is_checkmate());

        let expected_end = if position.is_checkmate() {
            Some(c::Termination::Checkmate)
        } else if position.is_stalemate() {
            Some(c::Termination::Stalemate)
        } else if position.is_insufficient_material() {
            Some(c::Termination::InsufficientMaterial)
        } else if position.halfmoves() >= 100 {
            Some(c::Termination::FiftyMoveRule)
        } else {
            None
        };
        let got_end = response.game_ended.map(|e| e.termination);
        assert_eq!(
            got_end,
            expected_end.map(|t| t as i32),
            "seed {seed} ply {ply}"
        );

        if ply % 7 == 0 || expected_end.is_some() {
            let board = client
                .board(pb::BoardRequest {
                    game_id: id.clone(),
                })
                .await
                .unwrap()
                .into_inner()
                .board;
            boards.push((fen.clone(), board));
        }
        if expected_end.is_some() {
            break;
        }
    }
    let state = get(&mut client, &id).await;
    assert_eq!(sans(&state), expected_sans);
    assert_eq!(
        state.fen,
        Fen::from_position(&position, EnPassantMode::Legal).to_string()
    );
    boards
}

/// Stockfish's drawing of each FEN: the lines from the blank line before the
/// board to the blank line after the file letters.
async fn stockfish_boards(fens: &[String]) -> Vec<String> {
    let mut child = chess_testkit::process::stockfish();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut drawings = Vec::new();
    for fen in fens {
        stdin
            .write_all(format!("position fen {fen}\nd\n").as_bytes())
            .await
            .unwrap();
        let mut collected: Vec<String> = Vec::new();
        loop {
            let line = lines.next_line().await.unwrap().expect("stockfish output");
            if let Some(read) = line.strip_prefix("Fen: ") {
                assert_eq!(read, fen, "stockfish read the position differently");
                break;
            }
            collected.push(line);
        }
        let start = collected
            .iter()
            .position(|l| l.starts_with(" +---"))
            .expect("a board")
            - 1;
        let mut drawing = String::new();
        for line in &collected[start..] {
            drawing.push_str(line);
            drawing.push('\n');
        }
        drawings.push(drawing);
    }
    stdin.write_all(b"quit\n").await.unwrap();
    drawings
}

async fn random_games(url: String, games: usize) {
    let service = GameService::start(&url).await;
    let client = service.client().await;
    let base_seed: u64 = std::env::var("CHESS_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    println!("CHESS_TEST_SEED={base_seed}");
    let mut tasks = Vec::new();
    for i in 0..games {
        tasks.push(tokio::spawn(random_game(
            client.clone(),
            i,
            base_seed.wrapping_add(i as u64),
        )));
    }
    let mut boards = Vec::new();
    for task in tasks {
        boards.extend(task.await.unwrap());
    }
    assert!(boards.len() >= 200, "only {} positions drawn", boards.len());
    let fens: Vec<String> = boards.iter().map(|(f, _)| f.clone()).collect();
    let expected = stockfish_boards(&fens).await;
    for ((fen, ours), theirs) in boards.iter().zip(expected) {
        assert_eq!(ours, &theirs, "board of {fen}");
    }
}

#[tokio::test]
async fn random_games_on_sqlite() {
    let (_dir, url) = sqlite();
    random_games(url, 24).await;
}

#[tokio::test]
async fn random_games_on_postgres() {
    random_games(chess_storage::testing::fresh_postgres_database().await, 8).await;
}
