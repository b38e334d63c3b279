//! The uqchess front, end to end: `uqchessserver` started as a user would,
//! real TCP clients, real Stockfish. Every reply is compared byte for byte
//! with the protocol contract.

use std::{process::Stdio, time::Duration};

use chess_e2e::{UqClient, UqServer, binary, children_of, process_name, signal};
use chess_testkit::process::{descendants_of, stockfish_under, ticks_in_a_second_after};
use shakmaty::{CastlingMode, Chess, Position as _, uci::UciMove};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

/// What Stockfish itself says about the position after `moves`: its perft
/// move order and its board drawing.
async fn stockfish_view(moves: &[&str]) -> (Vec<String>, String) {
    let mut child = chess_testkit::process::stockfish();
    let mut stdin = child.stdin.take().unwrap();
    let position = if moves.is_empty() {
        "position startpos\n".to_owned()
    } else {
        format!("position startpos moves {}\n", moves.join(" "))
    };
    stdin
        .write_all(format!("{position}go perft 1\nd\nquit\n").as_bytes())
        .await
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut perft = Vec::new();
    let mut board = String::new();
    let mut in_board = false;
    while let Some(line) = lines.next_line().await.unwrap() {
        if let Some((m, "1")) = line.split_once(": ") {
            perft.push(m.to_owned());
        }
        if line.starts_with(" +---") && !in_board {
            in_board = true;
            board.push('\n');
        }
        if line.starts_with("Fen: ") {
            in_board = false;
        }
        if in_board {
            board.push_str(&line);
            board.push('\n');
        }
    }
    (perft, board)
}

/// Applies `m` to `position`, asserting it is legal.
fn apply(position: &mut Chess, m: &str) {
    let uci = UciMove::from_ascii(m.as_bytes()).unwrap_or_else(|_| panic!("{m} is not UCI"));
    let legal = uci
        .to_move(position)
        .unwrap_or_else(|_| panic!("{m} is not legal"));
    position.play_unchecked(legal);
}

/// Reads `moved <m>` and returns `m`.
async fn moved(client: &mut UqClient) -> String {
    let line = client.line().await;
    line.strip_prefix("moved ")
        .unwrap_or_else(|| panic!("expected a move, got {line:?}"))
        .to_owned()
}

/// Two clients paired in a human game: (white, black).
async fn human_pair(server: &UqServer) -> (UqClient, UqClient) {
    paired(server, ["white", "black"], ["white", "black"]).await
}

/// Two clients paired in a human game: the first asks to play `asks[0]`
/// and waits, then the second asks to play `asks[1]`; each is told the
/// colour it gets, in `gets`.
async fn paired(server: &UqServer, asks: [&str; 2], gets: [&str; 2]) -> (UqClient, UqClient) {
    let mut first = server.connect().await;
    let mut second = server.connect().await;
    first.send(&format!("start human {}\n", asks[0])).await;
    first.expect_silence(Duration::from_millis(200)).await;
    let told = format!("started {}", gets[1]);
    second
        .ask(&format!("start human {}", asks[1]), &[&told])
        .await;
    first.expect(&[&format!("started {}", gets[0])]).await;
    (first, second)
}

/// A new server and a client playing the computer as `colour`.
async fn against_computer(colour: &str) -> (UqServer, UqClient) {
    let server = UqServer::start().await;
    let mut client = server.connect().await;
    let started = format!("started {colour}");
    client
        .ask(&format!("start computer {colour}"), &[&started])
        .await;
    (server, client)
}

/// Asserts that the legal moves and the board `client` is shown after
/// `played` are Stockfish's; Stockfish's legal moves and board.
async fn assert_stockfish_view(client: &mut UqClient, played: &[&str]) -> (Vec<String>, String) {
    let (perft, board) = stockfish_view(played).await;
    client.send("hint all\n").await;
    assert_eq!(client.line().await, format!("moves {}", perft.join(" ")));
    client.send("board\n").await;
    assert_eq!(client.board().await, board);
    (perft, board)
}

/// A new server and two humans paired on it, white first.
async fn humans() -> (UqServer, UqClient, UqClient) {
    let server = UqServer::start().await;
    let (white, black) = human_pair(&server).await;
    (server, white, black)
}

/// `mover` plays `m`: it is told `ok`, the opponent `moved <m>`, each
/// followed by the lines `then` (a check, the game's end).
async fn play(mover: &mut UqClient, opponent: &mut UqClient, m: &str, then: &[&str]) {
    mover
        .ask(&format!("move {m}"), &[&["ok"], then].concat())
        .await;
    let moved = format!("moved {m}");
    opponent.expect(&[&[moved.as_str()], then].concat()).await;
}

/// `first` and `second` play `moves` by turns, `first` beginning, each
/// move told to both.
async fn alternate(first: &mut UqClient, second: &mut UqClient, moves: &[&str]) {
    for (i, m) in moves.iter().enumerate() {
        if i % 2 == 0 {
            play(first, second, m, &[]).await;
        } else {
            play(second, first, m, &[]).await;
        }
    }
}

#[tokio::test]
async fn requests_before_any_game_and_malformed_lines() {
    let server = UqServer::start().await;
    let mut c = server.connect().await;
    for request in ["board", "hint best", "hint all", "move e2e4", "resign"] {
        c.ask(request, &["error game"]).await;
    }
    for bad in [
        "",
        "start",
        "start computer",
        "start computer either extra",
        "start alien either",
        "start computer purple",
        "Board",
        " board",
        "board ",
        "hint",
        "hint none",
        "move",
        "move e2e",
        "move e2e4e5",
        "move e2-e4",
        "resign now",
        "start  computer white",
    ] {
        c.ask(bad, &["error command"]).await;
    }
    c.send("board\r\n").await;
    c.expect(&["error command"]).await;
    server.assert_quiet();
}

#[tokio::test]
async fn a_temporary_directory_too_long_for_sockets_changes_nothing_printed() {
    // The services then call each other on their TCP ports, and the server
    // still prints its port and nothing else.
    let tmp = chess_e2e::too_long_for_sockets();
    let tmp = tmp.path().to_str().expect("a UTF-8 path");
    let server = UqServer::start_with_env(&[("TMPDIR", tmp)]).await;
    let mut c = server.connect().await;
    c.ask("start computer white", &["started white"]).await;
    c.ask("move e2e4", &["ok"]).await;
    let reply = moved(&mut c).await;
    assert_eq!(reply.len(), 4, "{reply}");
    c.ask("resign", &["gameover resignation black"]).await;
    server.assert_quiet();
}

#[tokio::test]
async fn a_game_against_the_computer_as_white() {
    let (server, mut c) = against_computer("white").await;
    assert_stockfish_view(&mut c, &[]).await;

    let mut position = Chess::default();
    let mut played = vec!["e2e4".to_owned()];
    c.ask("move e2e4", &["ok"]).await;
    apply(&mut position, "e2e4");
    let reply = moved(&mut c).await;
    apply(&mut position, &reply);
    played.push(reply);

    let as_str: Vec<&str> = played.iter().map(String::as_str).collect();
    let (perft, board) = assert_stockfish_view(&mut c, &as_str).await;
    c.send("hint best\n").await;
    let best = c.line().await;
    let best = best.strip_prefix("moves ").unwrap();
    assert!(
        perft.iter().any(|m| m == best),
        "{best} is not a legal move"
    );

    c.ask("move e2e4", &["error move"]).await;
    c.ask("move zz99", &["error move"]).await;
    c.ask("move e7e5", &["error move"]).await;
    c.ask("resign", &["gameover resignation black"]).await;
    // The finished game's board stays; acting in it does not.
    c.send("board\n").await;
    assert_eq!(c.board().await, board);
    for request in ["hint best", "move d2d4", "resign"] {
        c.ask(request, &["error game"]).await;
    }
    server.assert_quiet();
}

#[tokio::test]
async fn the_computer_moves_first_for_a_black_client() {
    let (_server, mut c) = against_computer("black").await;
    let first = moved(&mut c).await;
    let mut position = Chess::default();
    apply(&mut position, &first);
    c.ask("hint best", &[]).await;
    let hint = c.line().await;
    assert!(hint.starts_with("moves "), "{hint}");
    // Either against the computer means white.
    c.ask(
        "start computer either",
        &["gameover resignation white", "started white"],
    )
    .await;
    c.ask("move d2d4", &["ok"]).await;
    moved(&mut c).await;
}

#[tokio::test]
async fn check_then_fools_mate_between_humans() {
    let (server, mut w, mut b) = humans().await;
    b.ask("hint best", &["error turn"]).await;
    play(&mut w, &mut b, "f2f3", &[]).await;
    w.ask("move e2e4", &["error turn"]).await;
    b.ask("hint all", &[]).await;
    assert!(b.line().await.starts_with("moves "));
    alternate(&mut b, &mut w, &["e7e5", "g2g4"]).await;
    play(&mut b, &mut w, "d8h4", &["gameover checkmate black"]).await;
    // Both can still see the final board.
    w.send("board\n").await;
    let final_board = w.board().await;
    assert!(
        final_board.contains(" |   |   |   |   |   |   | P | q | 4\n"),
        "{final_board}"
    );
    b.send("board\n").await;
    assert_eq!(b.board().await, final_board);

    // Check (not mate) is announced to both, after ok and after moved.
    let (mut w, mut b) = human_pair(&server).await;
    alternate(&mut w, &mut b, &["e2e4", "f7f6"]).await;
    play(&mut w, &mut b, "d1h5", &["check"]).await;
}

#[tokio::test]
async fn stalemate_between_humans() {
    let (_server, mut w, mut b) = humans().await;
    // Sam Loyd's ten-move stalemate.
    let before_check = [
        "e2e3", "a7a5", "d1h5", "a8a6", "h5a5", "h7h5", "h2h4", "a6h6", "a5c7", "f7f6",
    ];
    alternate(&mut w, &mut b, &before_check).await;
    play(&mut w, &mut b, "c7d7", &["check"]).await;
    let after_check = ["e8f7", "d7b7", "d8d3", "b7b8", "d3h7", "b8c8", "f7g6"];
    alternate(&mut b, &mut w, &after_check).await;
    play(&mut w, &mut b, "c8e6", &["gameover stalemate"]).await;
}

#[tokio::test]
async fn the_opponent_sees_exactly_the_move_sent() {
    let (_server, mut w, mut b) = humans().await;
    alternate(
        &mut w,
        &mut b,
        &[
            "a2a4", "b7b5", "a4b5", "c7c6", "b5c6", "g8f6", "c6c7", "f6e4",
        ],
    )
    .await;
    // Promotion letter in upper case is accepted and passed on as sent.
    play(&mut w, &mut b, "c7d8Q", &["check"]).await;
}

#[tokio::test]
async fn pairing_order_and_colours() {
    let server = UqServer::start().await;
    let mut a = server.connect().await;
    let mut b = server.connect().await;
    let mut c = server.connect().await;
    // B asks first, but A connected first: A is paired.
    b.send("start human white\n").await;
    b.expect_silence(Duration::from_millis(200)).await;
    a.send("start human white\n").await;
    a.expect_silence(Duration::from_millis(200)).await;
    // While waiting, other requests are answered.
    a.ask("board", &["error game"]).await;
    a.ask("hint best", &["error game"]).await;
    c.ask("start human black", &["started black"]).await;
    a.expect(&["started white"]).await;
    b.expect_silence(Duration::from_millis(200)).await;
    // Either meets a waiting white: the newcomer is black.
    let mut d = server.connect().await;
    d.ask("start human either", &["started black"]).await;
    b.expect(&["started white"]).await;
    // Either with either: the one who waited is white.
    let _either = paired(&server, ["either", "either"], ["white", "black"]).await;
    // A colour and its opposite, the other way round.
    let _opposite = paired(&server, ["black", "either"], ["black", "white"]).await;
}

#[tokio::test]
async fn disconnecting_resigns_and_leaves_the_queue() {
    let (server, w, mut b) = humans().await;
    drop(w);
    b.expect(&["gameover resignation black"]).await;
    b.send("board\n").await;
    b.board().await;

    // A waiter that leaves is not paired with anyone.
    let mut gone = server.connect().await;
    gone.send("start human either\n").await;
    gone.expect_silence(Duration::from_millis(200)).await;
    drop(gone);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut x = server.connect().await;
    x.send("start human either\n").await;
    x.expect_silence(Duration::from_millis(300)).await;
    let mut y = server.connect().await;
    y.ask("start human either", &["started black"]).await;
    x.expect(&["started white"]).await;
}

#[tokio::test]
async fn starting_again_resigns_the_game_in_progress() {
    let (_server, mut w, mut b) = humans().await;
    w.ask("move e2e4", &["ok"]).await;
    b.expect(&["moved e2e4"]).await;
    b.ask(
        "start computer white",
        &["gameover resignation white", "started white"],
    )
    .await;
    w.expect(&["gameover resignation white"]).await;
    // The new game goes on.
    b.ask("move d2d4", &["ok"]).await;
    moved(&mut b).await;
}

#[tokio::test]
async fn pipelined_requests_are_answered_in_order() {
    let server = UqServer::start().await;
    let mut c = server.connect().await;
    c.send("board\nhint best\nstart computer white\nmove e2e4\nhint all\nbogus\nresign\nresign\n")
        .await;
    c.expect(&["error game", "error game", "started white", "ok"])
        .await;
    let reply = moved(&mut c).await;
    let (perft, _) = stockfish_view(&["e2e4", &reply]).await;
    assert_eq!(c.line().await, format!("moves {}", perft.join(" ")));
    c.expect(&["error command", "gameover resignation black", "error game"])
        .await;
}

#[tokio::test]
async fn a_megabyte_without_a_newline_is_one_command_error() {
    let server = UqServer::start().await;
    let mut c = server.connect().await;
    let junk = vec![b'x'; 1 << 20];
    c.writer.write_all(&junk).await.unwrap();
    c.send("\nboard\n").await;
    c.expect(&["error command", "error game"]).await;
    let mut other = server.connect().await;
    other.ask("start computer white", &["started white"]).await;
}

/// What the protocol answers a client that has not started a game to
/// `line` (without its newline): `error game` to a well-formed request,
/// `error command` to anything else. `start` lines are not asked about.
fn answer_without_a_game(line: &[u8]) -> &'static str {
    let Ok(text) = std::str::from_utf8(line) else {
        return "error command";
    };
    let well_formed = match text.split(' ').collect::<Vec<_>>().as_slice() {
        ["board"] | ["resign"] | ["hint", "best" | "all"] => true,
        ["move", m] => (4..=5).contains(&m.len()) && m.bytes().all(|b| b.is_ascii_alphanumeric()),
        _ => false,
    };
    if well_formed {
        "error game"
    } else {
        "error command"
    }
}

/// A random line without its newline: words of the protocol and others,
/// spaces, control characters, bytes that are not UTF-8, now and then far
/// longer than any request. Never a well-formed `start`.
fn random_line(rng: &mut rand::rngs::StdRng) -> Vec<u8> {
    use rand::Rng as _;
    const WORDS: &[&[u8]] = &[
        b"start",
        b"board",
        b"hint",
        b"move",
        b"resign",
        b"best",
        b"all",
        b"computer",
        b"human",
        b"either",
        b"white",
        b"black",
        b"e2e4",
        b"g7g8q",
        b"E2E4",
        b"e2e4e5",
        b"e2-e4",
        b"a1",
        b"",
        b"\r",
        b"\t",
        b"\x00",
        b"\xff\xfe",
        "é".as_bytes(),
        b"moved",
        b"ok",
    ];
    loop {
        let mut line = Vec::new();
        if rng.random_bool(0.05) {
            let len = rng.random_range(100..3_000);
            line.extend((0..len).map(|_| rng.random_range(0x20..0x7f_u8)));
        } else if rng.random_bool(0.1) {
            let len = rng.random_range(0..40);
            line.extend((0..len).map(|_| {
                loop {
                    let b: u8 = rng.random();
                    if b != b'\n' {
                        break b;
                    }
                }
            }));
        } else {
            for i in 0..rng.random_range(0..5) {
                if i > 0 {
                    line.extend_from_slice(if rng.random_bool(0.9) { b" " } else { b"  " });
                }
                line.extend_from_slice(WORDS[rng.random_range(0..WORDS.len())]);
            }
        }
        let start = std::str::from_utf8(&line).is_ok_and(|text| {
            matches!(
                text.split(' ').collect::<Vec<_>>().as_slice(),
                ["start", "computer" | "human", "either" | "white" | "black"]
            )
        });
        if !start {
            return line;
        }
    }
}

#[tokio::test]
async fn random_lines_in_random_pieces_are_answered_one_by_one_in_order() {
    use rand::{Rng as _, SeedableRng as _};
    const CLIENTS: u64 = 8;
    const LINES: usize = 300;
    let server = UqServer::start().await;
    let mut clients = Vec::new();
    for seed in 0..CLIENTS {
        let client = server.connect().await;
        clients.push(tokio::spawn(async move {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let lines: Vec<Vec<u8>> = (0..LINES).map(|_| random_line(&mut rng)).collect();
            let mut stream = Vec::new();
            for line in &lines {
                stream.extend_from_slice(line);
                stream.push(b'\n');
            }
            // Sent in pieces cut anywhere, while the answers are read.
            let UqClient {
                lines: mut answers,
                mut writer,
            } = client;
            let pieces: Vec<Vec<u8>> = {
                let mut rest = stream.as_slice();
                let mut pieces = Vec::new();
                while !rest.is_empty() {
                    let cut = rng.random_range(1..=rest.len().min(700));
                    pieces.push(rest[..cut].to_vec());
                    rest = &rest[cut..];
                }
                pieces
            };
            let send = tokio::spawn(async move {
                for piece in pieces {
                    writer.write_all(&piece).await.expect("send");
                    tokio::task::yield_now().await;
                }
                writer
            });
            for (index, line) in lines.iter().enumerate() {
                let answer = chess_e2e::read_line(&mut answers, "the server")
                    .await
                    .expect("the server closed the connection");
                assert_eq!(
                    answer,
                    answer_without_a_game(line),
                    "client {seed}, line {index}: {:?}",
                    String::from_utf8_lossy(line)
                );
            }
            let mut writer = send.await.expect("the sender finished");
            writer.write_all(b"board\n").await.expect("send");
            let last = chess_e2e::read_line(&mut answers, "the server").await;
            assert_eq!(last.as_deref(), Some("error game"), "client {seed}");
        }));
    }
    for client in clients {
        client
            .await
            .expect("a client's answers were as the protocol says");
    }
    let mut c = server.connect().await;
    c.ask("start computer white", &["started white"]).await;
    c.ask("move e2e4", &["ok"]).await;
    moved(&mut c).await;
    server.assert_quiet();
}

#[tokio::test]
async fn clients_vanishing_mid_request_do_not_disturb_others() {
    let server = UqServer::start().await;
    for _ in 0..10 {
        let mut c = server.connect().await;
        c.send("start computer white\nmove e2e4\nhint best\nhint all\n")
            .await;
        drop(c);
    }
    let mut c = server.connect().await;
    c.send("start computer black\n").await;
    c.send("hint best\n").await;
    c.expect(&["started black"]).await;
    moved(&mut c).await;
    assert!(c.line().await.starts_with("moves "));
}

/// Clients that ask for a hint and leave take their searches with them:
/// the queued ones are never started and the running ones are stopped, so
/// the engine pool is idle within a moment instead of searching for nobody.
#[tokio::test]
async fn hints_of_clients_that_left_are_not_searched() {
    let server = UqServer::start().await;
    // Enough full-strength searches to keep the pool busy for seconds.
    let mut clients = Vec::new();
    for _ in 0..16 {
        let mut client = server.connect().await;
        client
            .ask("start computer white\n", &["started white"])
            .await;
        clients.push(client);
    }
    let engines = stockfish_under(server.pid());
    assert!(!engines.is_empty(), "no Stockfish under the server");
    for client in &mut clients {
        client.send("hint best\n").await;
    }
    // The first searches start; then everyone leaves.
    tokio::time::sleep(Duration::from_millis(200)).await;
    drop(clients);
    // Counted after time for the gateway to notice, the calls to be
    // cancelled and the searches in progress to be stopped.
    let used = ticks_in_a_second_after(&engines, Duration::from_millis(800)).await;
    // Idle processes use next to nothing (a ping every few seconds); one
    // search in progress alone would use about 100 ticks in that second.
    assert!(
        used <= 10,
        "the engine pool used {used} ticks in the second after its clients left"
    );
    server.assert_quiet();
}

#[tokio::test]
async fn stockfish_dying_mid_search_is_an_engine_error_then_play_goes_on() {
    let (server, mut c) = against_computer("white").await;
    c.ask("move e2e4", &["ok"]).await;
    // The engine's reply is being searched (500 ms): kill every Stockfish.
    tokio::time::sleep(Duration::from_millis(150)).await;
    let victims = stockfish_under(server.pid());
    assert!(!victims.is_empty(), "no Stockfish processes found");
    for pid in victims {
        signal(pid, nix::sys::signal::Signal::SIGKILL);
    }
    c.expect(&["error engine"]).await;
    // The engine is restarted and owes its move, which follows.
    let reply = moved(&mut c).await;
    let mut position = Chess::default();
    apply(&mut position, "e2e4");
    apply(&mut position, &reply);
    c.send("hint best\n").await;
    assert!(c.line().await.starts_with("moves "));
    let next = position.legal_moves()[0]
        .to_uci(CastlingMode::Standard)
        .to_string();
    c.ask(&format!("move {next}"), &["ok"]).await;
    moved(&mut c).await;
    server.assert_quiet();
}

#[tokio::test]
async fn a_thousand_simultaneous_connections() {
    let server = UqServer::start().await;
    let mut clients = Vec::new();
    for _ in 0..1000 {
        clients.push(server.connect().await);
    }
    // Everyone asks at once; everyone is answered.
    for c in &mut clients {
        c.send("board\n").await;
    }
    for c in &mut clients {
        c.expect(&["error game"]).await;
    }
    // Pair them all up and play a move in each of the 500 games.
    for pair in clients.chunks_mut(2) {
        let [w, b] = pair else { unreachable!() };
        w.send("start human white\n").await;
        b.send("start human black\n").await;
    }
    for pair in clients.chunks_mut(2) {
        let [w, b] = pair else { unreachable!() };
        w.expect(&["started white"]).await;
        b.expect(&["started black"]).await;
        w.send("move e2e4\n").await;
    }
    for pair in clients.chunks_mut(2) {
        let [w, b] = pair else { unreachable!() };
        w.expect(&["ok"]).await;
        b.expect(&["moved e2e4"]).await;
    }
}

/// The gateway's resident memory, from `/proc`.
fn gateway_rss_kib(server: &UqServer) -> u64 {
    let pid = children_of(server.pid())
        .into_iter()
        .find(|&pid| process_name(pid).as_deref() == Some("chess-gateway"))
        .expect("a gateway process");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmRSS")
}

#[tokio::test]
async fn memory_goes_back_down_after_a_crowd_leaves() {
    let server = UqServer::start().await;
    // A few connections first, so one-off allocations are in the baseline.
    for _ in 0..10 {
        let mut c = server.connect().await;
        c.ask("board", &["error game"]).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let baseline = gateway_rss_kib(&server);
    let mut crowd = Vec::new();
    for _ in 0..1000 {
        let mut c = server.connect().await;
        c.send("board\n").await;
        crowd.push(c);
    }
    for c in &mut crowd {
        c.expect(&["error game"]).await;
    }
    let peak = gateway_rss_kib(&server);
    assert!(
        peak > baseline + 2048,
        "a thousand connections should show: {baseline} KiB, then {peak} KiB"
    );
    drop(crowd);
    // Freed memory goes back to the system within seconds.
    let limit = baseline + (peak - baseline) / 4;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(40);
    loop {
        let now = gateway_rss_kib(&server);
        if now <= limit {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{baseline} KiB before, {peak} KiB with the crowd, still {now} KiB after it left"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    // And the server still answers.
    let mut c = server.connect().await;
    c.ask("board", &["error game"]).await;
}

#[tokio::test]
async fn the_terminal_client_plays_against_the_real_server() {
    let server = UqServer::start().await;
    let mut client = tokio::process::Command::new(binary("uqchessclient"))
        .arg(server.port.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = client.stdin.take().unwrap();
    let mut out = BufReader::new(client.stdout.take().unwrap()).lines();
    let mut next = async || {
        chess_e2e::read_line(&mut out, "uqchessclient")
            .await
            .expect("client output")
    };
    assert_eq!(
        next().await,
        "Welcome to UQChessClient - written by the Rookery developers"
    );
    assert_eq!(next().await, "started white");
    stdin.write_all(b"move e2e4\n").await.unwrap();
    assert_eq!(next().await, "ok");
    let reply = next().await;
    assert!(reply.starts_with("moved "), "{reply}");
    stdin.write_all(b"print\n").await.unwrap();
    // The board without its delimiters.
    assert_eq!(next().await, "");
    assert_eq!(next().await, " +---+---+---+---+---+---+---+---+");
    for _ in 0..16 {
        next().await;
    }
    assert_eq!(next().await, "   a   b   c   d   e   f   g   h");
    assert_eq!(next().await, "");
    stdin.write_all(b"resign\n").await.unwrap();
    assert_eq!(next().await, "gameover resignation black");
    stdin.write_all(b"quit\n").await.unwrap();
    let status = client.wait().await.unwrap();
    assert_eq!(status.code(), Some(0));
}

async fn run_server(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let output = tokio::process::Command::new(binary("uqchessserver"))
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn server_command_line_and_startup_failures() {
    let usage = "Usage: ./uqchessserver [--listenOn portno]\n".to_owned();
    for args in [
        &["--listenOn"][..],
        &["--listenOn", ""],
        &["--listen", "0"],
        &["--listenOn", "0", "--listenOn", "0"],
        &["--listenOn", "0", "extra"],
        &[""],
        &["0"],
    ] {
        assert_eq!(
            run_server(args, &[]).await,
            (Some(8), String::new(), usage.clone()),
            "{args:?}"
        );
    }
    let busy = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    let port = busy.local_addr().unwrap().port().to_string();
    assert_eq!(
        run_server(&["--listenOn", &port], &[]).await,
        (
            Some(20),
            String::new(),
            format!("uqchessserver: can't start listening on port \"{port}\"\n")
        )
    );
    assert_eq!(
        run_server(&["--listenOn", "no-such-service"], &[]).await,
        (
            Some(20),
            String::new(),
            "uqchessserver: can't start listening on port \"no-such-service\"\n".to_owned()
        )
    );
    assert_eq!(
        run_server(
            &[],
            &[("CHESS_ENGINE_STOCKFISH_PATH", "/nonexistent/stockfish")]
        )
        .await,
        (
            Some(4),
            String::new(),
            "uqchessserver: cannot start communication with chess engine\n".to_owned()
        )
    );
}

/// The temporary data directories of server `pid`.
fn data_dirs_of(pid: u32) -> Vec<std::path::PathBuf> {
    let prefix = format!("uqchessserver-{pid}-");
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect()
}

#[tokio::test]
async fn ctrl_c_ends_the_server_and_every_process_it_started() {
    stop_by_signal(nix::sys::signal::Signal::SIGINT).await;
}

#[tokio::test]
async fn sigterm_ends_the_server_and_every_process_it_started() {
    stop_by_signal(nix::sys::signal::Signal::SIGTERM).await;
}

/// `sig` ends the server by that signal, after every process it started
/// and its temporary directory are gone.
async fn stop_by_signal(sig: nix::sys::signal::Signal) {
    let server = UqServer::start().await;
    let dirs = data_dirs_of(server.pid());
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let descendants = descendants_of(server.pid());
    assert!(descendants.len() >= 5, "{descendants:?}");
    let pid = server.pid();
    signal(pid, sig);
    let mut server = server;
    let status = server.child.wait().await.unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(sig as i32),
        "ended by {sig}"
    );
    // It removed its directory before it ended, so its services were gone.
    assert!(!dirs[0].exists(), "{} left behind", dirs[0].display());
    assert!(data_dirs_of(pid).is_empty());
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while descendants.iter().any(|&p| chess_e2e::is_alive(p)) {
        assert!(
            std::time::Instant::now() < deadline,
            "processes outlived uqchessserver"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
