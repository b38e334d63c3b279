//! The driver against the real Stockfish (and a few programs that are not
//! chess engines, to see failures reported as they should be).

use std::{collections::HashSet, path::Path, time::Duration};

use chess_uci::{Engine, Error, Go, Score, SearchEvent, Timeouts};
use shakmaty::{CastlingMode, Chess, Position as _, fen::Fen, uci::UciMove};

const STOCKFISH: &str = "/usr/games/stockfish";

async fn stockfish() -> Engine {
    Engine::start(Path::new(STOCKFISH), Timeouts::default())
        .await
        .expect("Stockfish starts")
}

fn fen(text: &str) -> Fen {
    text.parse().expect("valid FEN")
}

fn position(text: &str) -> Chess {
    fen(text)
        .into_position(CastlingMode::Standard)
        .expect("legal position")
}

fn mv(text: &str) -> UciMove {
    text.parse().expect("valid UCI move")
}

/// A script standing in for an engine.
fn script(body: &str) -> tempfile::TempPath {
    use std::io::Write as _;
    use std::os::unix::fs::PermissionsExt as _;
    let mut file = tempfile::Builder::new()
        .prefix("fake-engine")
        .tempfile()
        .unwrap();
    writeln!(file, "#!/bin/sh\n{body}").unwrap();
    file.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o755))
        .unwrap();
    file.into_temp_path()
}

#[tokio::test]
async fn handshake_reports_name_and_options() {
    let engine = stockfish().await;
    assert!(
        engine.name().unwrap().starts_with("Stockfish"),
        "{:?}",
        engine.name()
    );
    let skill = engine
        .options()
        .iter()
        .find(|o| o.name == "Skill Level")
        .expect("Skill Level declared");
    assert_eq!(
        (skill.kind.as_str(), skill.min, skill.max),
        ("spin", Some(0), Some(20))
    );
    assert!(engine.options().iter().any(|o| o.name == "UCI_Elo"));
    assert!(engine.pid().is_some());
}

#[tokio::test]
async fn depth_search_reports_progress_and_a_legal_move() {
    let mut engine = stockfish().await;
    engine.set_option("Threads", 1).await.unwrap();
    engine.new_game().await.unwrap();
    engine
        .position(None, &[mv("e2e4"), mv("e7e5")])
        .await
        .unwrap();
    let mut search = engine.go(&to_depth(8)).await.unwrap();
    let mut depths = Vec::new();
    let best = loop {
        match search.next().await.unwrap().expect("search running") {
            SearchEvent::Info(info) => {
                if let (Some(depth), Some(_)) = (info.depth, info.score) {
                    assert!(!info.pv.is_empty());
                    depths.push(depth);
                }
            }
            SearchEvent::BestMove(best) => break best,
        }
    };
    assert!(
        search.next().await.unwrap().is_none(),
        "nothing after bestmove"
    );
    assert_eq!(depths.last(), Some(&8), "{depths:?}");
    let mut pos = Chess::default();
    for m in ["e2e4", "e7e5"] {
        let m = mv(m).to_move(&pos).unwrap();
        pos.play_unchecked(m);
    }
    best.best.unwrap().to_move(&pos).expect("legal best move");
}

#[tokio::test]
async fn finds_mate_in_one_within_a_movetime() {
    let mut engine = stockfish().await;
    // Scholar's mate: Qxf7#.
    let text = "r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4";
    engine.position(Some(&fen(text)), &[]).await.unwrap();
    let mut search = engine.go(&for_ms(200)).await.unwrap();
    let mut last_score = None;
    let best = loop {
        match search.next().await.unwrap().unwrap() {
            SearchEvent::Info(info) => last_score = info.score.or(last_score),
            SearchEvent::BestMove(best) => break best,
        }
    };
    assert_eq!(best.best, Some(mv("h5f7")));
    assert_eq!(last_score, Some(Score::Mate(1)));
}

#[tokio::test]
async fn no_legal_move_is_bestmove_none() {
    let mut engine = stockfish().await;
    // Fool's mate: white is checkmated.
    let mated = "rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3";
    engine.position(Some(&fen(mated)), &[]).await.unwrap();
    let best = engine
        .go(&to_depth(5))
        .await
        .unwrap()
        .finish()
        .await
        .unwrap();
    assert_eq!(best.best, None);
    assert_eq!(best.ponder, None);
    let perft = engine.perft(1).await.unwrap();
    assert!(perft.moves.is_empty());
    assert_eq!(perft.nodes, 0);
}

#[tokio::test]
async fn perft_lists_every_legal_move() {
    let mut engine = stockfish().await;
    for text in [
        // Castling both ways, promotions-to-be and many captures.
        "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
        // En passant (e5xd6) available.
        "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq d6 0 3",
        // Promotions, with and without capture.
        "r3k3/1P4P1/8/8/8/8/8/4K3 w q - 0 1",
    ] {
        engine.position(Some(&fen(text)), &[]).await.unwrap();
        let perft = engine.perft(1).await.unwrap();
        let ours: HashSet<UciMove> = perft.moves.iter().map(|(m, _)| *m).collect();
        let theirs: HashSet<UciMove> = position(text)
            .legal_moves()
            .iter()
            .map(|m| m.to_uci(CastlingMode::Standard))
            .collect();
        assert_eq!(ours, theirs, "{text}");
        assert_eq!(ours.len(), perft.moves.len(), "no duplicates in {text}");
        assert_eq!(perft.nodes, perft.moves.len() as u64);
        assert!(perft.moves.iter().all(|(_, n)| *n == 1));
    }
}

#[tokio::test]
async fn an_abandoned_search_never_leaks_into_the_next_command() {
    let mut engine = stockfish().await;
    engine.position(None, &[]).await.unwrap();
    {
        // An infinite search, abandoned after its first report.
        let mut search = engine.go(&Go::default()).await.unwrap();
        assert!(matches!(
            search.next().await.unwrap(),
            Some(SearchEvent::Info(_))
        ));
    }
    // The next command reads the rest of the search first.
    engine.is_ready().await.unwrap();
    let perft = engine.perft(1).await.unwrap();
    assert_eq!(perft.moves.len(), 20);

    // A perft abandoned half-way is read to its end by the next command.
    let abandoned = tokio::time::timeout(Duration::from_millis(5), engine.perft(6)).await;
    assert!(abandoned.is_err(), "perft 6 takes longer than 5 ms");
    engine.position(None, &[mv("e2e4")]).await.unwrap();
    let perft = engine.perft(1).await.unwrap();
    assert_eq!(perft.moves.len(), 20);
    assert!(perft.moves.iter().any(|(m, _)| *m == mv("e7e5")));
}

#[tokio::test]
async fn stop_ends_an_infinite_search_with_a_move() {
    let mut engine = stockfish().await;
    engine.position(None, &[]).await.unwrap();
    let mut search = engine.go(&Go::default()).await.unwrap();
    search.stop().await.unwrap();
    search.stop().await.unwrap();
    let best = search.finish().await.unwrap();
    best.best.unwrap().to_move(&Chess::default()).unwrap();
    // The engine is idle again.
    engine.is_ready().await.unwrap();
}

#[tokio::test]
async fn a_search_that_overruns_is_stopped() {
    let mut engine = stockfish().await;
    engine.position(None, &[]).await.unwrap();
    let mut search = engine.go(&Go::default()).await.unwrap();
    search.stop_at(tokio::time::Instant::now() + Duration::from_millis(100));
    let best = search.finish().await.unwrap();
    assert!(best.best.is_some());
}

#[tokio::test]
async fn a_killed_engine_is_reported_closed() {
    use nix::{sys::signal, unistd::Pid};
    let mut engine = stockfish().await;
    engine.position(None, &[]).await.unwrap();
    let pid = engine.pid().unwrap();
    let mut search = engine.go(&Go::default()).await.unwrap();
    signal::kill(Pid::from_raw(pid as i32), signal::Signal::SIGKILL).unwrap();
    let error = loop {
        match search.next().await {
            Ok(Some(SearchEvent::Info(_))) => {}
            Ok(other) => panic!("unexpected {other:?}"),
            Err(e) => break e,
        }
    };
    assert!(error.is_closed(), "{error}");
    assert!(error.to_string().contains("signal: 9"), "{error}");
    assert!(engine.is_poisoned());
    assert!(matches!(engine.is_ready().await, Err(Error::Poisoned)));
}

#[tokio::test]
async fn malformed_commands_are_refused_before_sending() {
    let mut engine = stockfish().await;
    assert!(matches!(
        engine.set_option("Hash\nquit", 1).await,
        Err(Error::BadCommand(_))
    ));
    assert!(matches!(
        engine.set_option("Skill value Level", 1).await,
        Err(Error::BadCommand(_))
    ));
    assert!(matches!(
        engine.set_option("Hash", "1\nquit").await,
        Err(Error::BadCommand(_))
    ));
    // Still usable.
    engine.is_ready().await.unwrap();
}

#[tokio::test]
async fn a_missing_program_cannot_be_started() {
    let error = Engine::start(Path::new("/nonexistent/stockfish"), Timeouts::default())
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Spawn(_)), "{error}");
}

#[tokio::test]
async fn a_program_that_exits_is_reported_closed() {
    let error = Engine::start(Path::new("/bin/true"), Timeouts::default())
        .await
        .unwrap_err();
    assert!(error.is_closed(), "{error}");
}

#[tokio::test]
async fn a_silent_program_times_out_in_the_handshake() {
    let timeouts = Timeouts {
        handshake: Duration::from_millis(300),
        answer: Duration::from_millis(300),
    };
    // cat echoes `isready` back but never says `readyok`.
    let error = Engine::start(Path::new("/bin/cat"), timeouts)
        .await
        .unwrap_err();
    assert_timed_out(&error, "readyok");
}

#[tokio::test]
async fn endless_lines_are_refused() {
    let fake = script("read line\nhead -c 1000000 /dev/zero | tr '\\0' x\nsleep 10");
    let error = Engine::start(&fake, Timeouts::default()).await.unwrap_err();
    assert!(matches!(error, Error::LineTooLong { .. }), "{error}");
}

#[tokio::test]
async fn an_engine_that_ignores_stop_times_out() {
    // Answers the handshake, then never ends a search.
    let fake = script(
        "while read line; do\n\
         case \"$line\" in\n\
         isready) echo readyok ;;\n\
         uci) echo 'id name Fake'; echo uciok ;;\n\
         go*) echo 'info depth 1 score cp 0 pv e2e4' ;;\n\
         esac\n\
         done",
    );
    let timeouts = Timeouts {
        handshake: Duration::from_secs(5),
        answer: Duration::from_millis(200),
    };
    let mut engine = Engine::start(&fake, timeouts).await.unwrap();
    assert_eq!(engine.name(), Some("Fake"));
    let mut search = engine.go(&for_ms(50)).await.unwrap();
    assert!(matches!(
        search.next().await,
        Ok(Some(SearchEvent::Info(_)))
    ));
    let error = search.next().await.unwrap_err();
    assert_timed_out(&error, "bestmove");
}

#[tokio::test]
async fn watching_an_idle_engine_reports_its_death() {
    use nix::{sys::signal, unistd::Pid};
    let mut engine = stockfish().await;
    let pid = Pid::from_raw(engine.pid().unwrap() as i32);
    // Alive and answering its pings: the watch goes on.
    let watched = tokio::time::timeout(
        Duration::from_millis(300),
        engine.watch(Duration::from_millis(20)),
    )
    .await;
    assert!(watched.is_err(), "{watched:?}");
    // An abandoned watch leaves the engine usable.
    engine.is_ready().await.unwrap();
    assert!(!engine.is_dead());

    signal::kill(pid, signal::Signal::SIGKILL).unwrap();
    let error = watch_ends(&mut engine, Duration::from_secs(5)).await;
    assert!(error.is_closed(), "{error}");
    assert!(engine.is_dead());
}

#[tokio::test]
async fn watching_a_hung_engine_times_out() {
    use nix::{sys::signal, unistd::Pid};
    let timeouts = Timeouts {
        handshake: Duration::from_secs(10),
        answer: Duration::from_millis(200),
    };
    let mut engine = Engine::start(Path::new(STOCKFISH), timeouts).await.unwrap();
    let pid = Pid::from_raw(engine.pid().unwrap() as i32);
    signal::kill(pid, signal::Signal::SIGSTOP).unwrap();
    let error = watch_ends(&mut engine, Duration::from_millis(50)).await;
    assert_timed_out(&error, "readyok");
    assert!(engine.is_dead());
    engine.kill().await;
}

/// Asserts that `error` is a timeout waiting for `expected`.
/// How a watch pinging every `every` ends, which it must within ten seconds.
async fn watch_ends(engine: &mut Engine, every: Duration) -> Error {
    tokio::time::timeout(Duration::from_secs(10), engine.watch(every))
        .await
        .expect("the watch ends")
}

fn assert_timed_out(error: &Error, expected: &str) {
    match error {
        Error::Timeout { expected: what, .. } => assert_eq!(*what, expected, "{error}"),
        other => panic!("not a timeout: {other}"),
    }
}

/// A search to `depth` plies.
fn to_depth(depth: u32) -> Go {
    Go {
        depth: Some(depth),
        ..Go::default()
    }
}

/// A search of `ms` milliseconds.
fn for_ms(ms: u64) -> Go {
    Go {
        movetime: Some(Duration::from_millis(ms)),
        ..Go::default()
    }
}
