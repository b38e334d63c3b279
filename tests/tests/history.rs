//! A player's game history over the public API, against the real stack:
//! rated and casual games of two speeds against two opponents, listed
//! newest first with the filters, pages and rating changes; the PGN export
//! read back game by game with python-chess; a game's rating changes; and
//! the refusals of unknown players and bad filters.

mod support;

use std::{process::Stdio, time::Duration};

use chess_domain::TimeControl;
use chess_e2e::{
    StackProcess,
    load::grpc::{self, Player},
};
use chess_proto::{
    common::v1 as common,
    gateway::v1::{
        self as pb, lobby_service_client::LobbyServiceClient,
        play_service_client::PlayServiceClient,
    },
};
use tokio::io::AsyncWriteExt as _;
use tokio_stream::StreamExt as _;
use tonic::{Code, transport::Channel};

/// `white` challenges `black`; black accepts; after 1. e4 e5 the loser
/// (`black_loses`: black) resigns. Returns the game's id.
async fn finished_game(
    channel: &Channel,
    white: &Player,
    black: &Player,
    tc: TimeControl,
    rated: bool,
    black_loses: bool,
) -> String {
    let mut lobby = LobbyServiceClient::new(channel.clone());
    let challenge = lobby
        .create_challenge(white.request(pb::CreateChallengeRequest {
            opponent_username: black.username.clone(),
            time_control: Some(tc.into()),
            color: common::ColorChoice::White as i32,
            rated,
            expires_in_seconds: 0,
            allow_hints: false,
        }))
        .await
        .expect("challenge")
        .into_inner()
        .challenge
        .expect("a challenge");
    let game_id = lobby
        .accept_challenge(black.request(pb::AcceptChallengeRequest {
            challenge_id: challenge.challenge_id,
        }))
        .await
        .expect("accept")
        .into_inner()
        .challenge
        .expect("the challenge")
        .game_id;
    let mut play = PlayServiceClient::new(channel.clone());
    for (player, uci) in [(white, "e2e4"), (black, "e7e5")] {
        play.make_move(player.request(pb::MakeMoveRequest {
            game_id: game_id.clone(),
            r#move: uci.to_owned(),
            ply: None,
        }))
        .await
        .expect("move");
    }
    let loser = if black_loses { black } else { white };
    play.resign(loser.request(pb::ResignRequest {
        game_id: game_id.clone(),
    }))
    .await
    .expect("resign");
    game_id
}

fn filter(
    rated: pb::RatedFilter,
    speed: common::SpeedCategory,
    against: &str,
) -> pb::PlayerGamesFilter {
    pb::PlayerGamesFilter {
        rated: rated as i32,
        speed: speed as i32,
        opponent_username: against.to_owned(),
    }
}

async fn list(
    play: &mut PlayServiceClient<Channel>,
    username: &str,
    filter: pb::PlayerGamesFilter,
    page_size: u32,
    page_token: String,
) -> Result<pb::ListPlayerGamesResponse, tonic::Status> {
    play.list_player_games(pb::ListPlayerGamesRequest {
        username: username.to_owned(),
        filter: Some(filter),
        page_size,
        page_token,
    })
    .await
    .map(tonic::Response::into_inner)
}

fn ids(page: &pb::ListPlayerGamesResponse) -> Vec<String> {
    page.games
        .iter()
        .map(|g| g.game.as_ref().expect("a game").game_id.clone())
        .collect()
}

/// Reads `pgn` with python-chess, game by game, and returns each game's
/// `GameId` tag and result.
async fn python_chess_games(pgn: &str) -> Vec<(String, String)> {
    chess_e2e::require_python_modules(&["chess.pgn"], "the PGN export test").await;
    let script = "import sys, io, chess.pgn\n\
        text = io.StringIO(sys.stdin.read())\n\
        while (g := chess.pgn.read_game(text)) is not None:\n\
        \x20   assert not g.errors, g.errors\n\
        \x20   print(g.headers['GameId'], g.headers['Result'], len(list(g.mainline_moves())))\n";
    let mut python = tokio::process::Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    let mut stdin = python.stdin.take().expect("stdin");
    stdin
        .write_all(pgn.as_bytes())
        .await
        .expect("write the PGN");
    drop(stdin);
    let out = python.wait_with_output().await.expect("python3 ran");
    assert!(
        out.status.success(),
        "python-chess could not read the export"
    );
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|line| {
            let mut parts = line.split(' ');
            let id = parts.next().unwrap_or_default().to_owned();
            let result = parts.next().unwrap_or_default().to_owned();
            assert_eq!(
                parts.next(),
                Some("2"),
                "every game has 1. e4 e5 and no more: {line}"
            );
            (id, result)
        })
        .collect()
}

#[tokio::test]
async fn a_players_history_is_filtered_paged_rated_and_exported_as_pgn() {
    let stack = StackProcess::start(&[], support::UNLIMITED).await;
    let channel = support::gateway_channel(&stack);
    let suffix = &uuid_suffix();
    let alice = grpc::sign_up(&channel, format!("alice{suffix}"))
        .await
        .unwrap();
    let bob = grpc::sign_up(&channel, format!("bob{suffix}"))
        .await
        .unwrap();
    let carol = grpc::sign_up(&channel, format!("carol{suffix}"))
        .await
        .unwrap();
    let blitz = TimeControl::Incremental {
        initial_secs: 180,
        increment_secs: 2,
    };
    let rapid = TimeControl::Incremental {
        initial_secs: 600,
        increment_secs: 0,
    };
    // Oldest first: alice wins a rated blitz game against bob, loses a
    // casual rapid one to carol (as black), wins a rated rapid one against
    // bob (as black), and a casual blitz one against carol.
    let g1 = finished_game(&channel, &alice, &bob, blitz, true, true).await;
    let g2 = finished_game(&channel, &carol, &alice, rapid, false, true).await;
    let g3 = finished_game(&channel, &bob, &alice, rapid, true, false).await;
    let g4 = finished_game(&channel, &alice, &carol, blitz, false, true).await;

    let mut play = PlayServiceClient::new(channel.clone());
    let any = || {
        filter(
            pb::RatedFilter::Unspecified,
            common::SpeedCategory::Unspecified,
            "",
        )
    };
    // The rated games' changes arrive once the rating service applied them.
    let mut waited = 0;
    let first = loop {
        let page = list(&mut play, &alice.username, any(), 3, String::new())
            .await
            .unwrap();
        let rated_done = page.games.iter().filter(|g| g.rating.is_some()).count();
        if rated_done == 1
            && page
                .games
                .iter()
                .any(|g| g.game.as_ref().unwrap().game_id == g3)
        {
            break page;
        }
        waited += 1;
        assert!(waited < 100, "the rating changes never showed: {page:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(ids(&first), [g4.clone(), g3.clone(), g2.clone()]);
    let rest = list(
        &mut play,
        &alice.username,
        any(),
        3,
        first.next_page_token.clone(),
    )
    .await
    .unwrap();
    assert_eq!(ids(&rest), std::slice::from_ref(&g1));
    assert!(rest.next_page_token.is_empty());

    // From alice's side: colours, outcomes, rating changes.
    let won = pb::PlayerOutcome::Won as i32;
    let lost = pb::PlayerOutcome::Lost as i32;
    let [casual_blitz, rated_rapid, casual_rapid] = &first.games[..] else {
        panic!("three games");
    };
    assert_eq!(
        (casual_blitz.color, casual_blitz.outcome),
        (common::Color::White as i32, won)
    );
    assert!(casual_blitz.rating.is_none() && casual_blitz.opponent_rating.is_none());
    assert_eq!(
        (rated_rapid.color, rated_rapid.outcome),
        (common::Color::Black as i32, won)
    );
    let change = rated_rapid.rating.as_ref().expect("alice's rating change");
    assert!(change.rating_after > change.rating_before, "{change:?}");
    let theirs = rated_rapid
        .opponent_rating
        .as_ref()
        .expect("bob's rating change");
    assert!(theirs.rating_after < theirs.rating_before, "{theirs:?}");
    assert_eq!(
        (casual_rapid.color, casual_rapid.outcome),
        (common::Color::Black as i32, lost)
    );
    let state = casual_rapid.game.as_ref().unwrap();
    assert_eq!(state.termination, common::Termination::Resignation as i32);
    assert_eq!(state.speed, common::SpeedCategory::Rapid as i32);
    assert!(!state.rated);
    let old = &rest.games[0];
    assert!(
        old.rating
            .as_ref()
            .is_some_and(|r| r.rating_after > r.rating_before)
    );

    // Filters.
    let rated = filter(
        pb::RatedFilter::Rated,
        common::SpeedCategory::Unspecified,
        "",
    );
    let page = list(&mut play, &alice.username, rated, 20, String::new())
        .await
        .unwrap();
    assert_eq!(ids(&page), [g3.clone(), g1.clone()]);
    let casual_blitz = filter(pb::RatedFilter::Casual, common::SpeedCategory::Blitz, "");
    let page = list(&mut play, &alice.username, casual_blitz, 20, String::new())
        .await
        .unwrap();
    assert_eq!(ids(&page), std::slice::from_ref(&g4));
    let against_carol = filter(
        pb::RatedFilter::Unspecified,
        common::SpeedCategory::Unspecified,
        &carol.username,
    );
    let page = list(&mut play, &alice.username, against_carol, 20, String::new())
        .await
        .unwrap();
    assert_eq!(ids(&page), [g4.clone(), g2.clone()]);
    let bobs = list(&mut play, &bob.username, any(), 20, String::new())
        .await
        .unwrap();
    assert_eq!(ids(&bobs), [g3.clone(), g1.clone()]);
    assert!(bobs.games.iter().all(|g| g.outcome == lost));

    // A game's rating changes, for the page at its end.
    let changes = play
        .get_rating_changes(pb::GetRatingChangesRequest {
            game_id: g3.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(changes.black.as_ref(), rated_rapid.rating.as_ref());
    assert_eq!(changes.white.as_ref(), rated_rapid.opponent_rating.as_ref());
    let casual = play
        .get_rating_changes(pb::GetRatingChangesRequest {
            game_id: g4.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(casual.white.is_none() && casual.black.is_none());

    // The PGN export: every game, newest first, readable game by game.
    let mut chunks = play
        .export_player_games(pb::ExportPlayerGamesRequest {
            username: alice.username.clone(),
            filter: Some(any()),
            max_games: 0,
        })
        .await
        .unwrap()
        .into_inner();
    let mut pgn = String::new();
    while let Some(chunk) = chunks.next().await {
        pgn.push_str(&chunk.unwrap().pgn);
    }
    assert!(
        pgn.contains(" 1-0\n\n[Event \""),
        "games are apart by a blank line:\n{pgn}"
    );
    let games = python_chess_games(&pgn).await;
    let expected: Vec<(String, String)> = [(&g4, "1-0"), (&g3, "0-1"), (&g2, "1-0"), (&g1, "1-0")]
        .into_iter()
        .map(|(id, result)| (id.clone(), result.to_owned()))
        .collect();
    assert_eq!(games, expected);
    // Bounded, and filtered alike.
    let mut two = play
        .export_player_games(pb::ExportPlayerGamesRequest {
            username: alice.username.clone(),
            filter: Some(filter(
                pb::RatedFilter::Rated,
                common::SpeedCategory::Unspecified,
                "",
            )),
            max_games: 1,
        })
        .await
        .unwrap()
        .into_inner();
    let mut rated_pgn = String::new();
    while let Some(chunk) = two.next().await {
        rated_pgn.push_str(&chunk.unwrap().pgn);
    }
    assert_eq!(
        python_chess_games(&rated_pgn).await,
        [(g3.clone(), "0-1".to_owned())]
    );

    // Refusals.
    let unknown = list(&mut play, "nobody-here", any(), 20, String::new())
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound, "{unknown:?}");
    let unknown_opponent = filter(
        pb::RatedFilter::Unspecified,
        common::SpeedCategory::Unspecified,
        "nobody-here",
    );
    let status = list(
        &mut play,
        &alice.username,
        unknown_opponent,
        20,
        String::new(),
    )
    .await
    .unwrap_err();
    assert_eq!(status.code(), Code::NotFound, "{status:?}");
    let bad_rated = pb::PlayerGamesFilter { rated: 7, ..any() };
    let status = list(&mut play, &alice.username, bad_rated, 20, String::new())
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    let bad_speed = pb::PlayerGamesFilter { speed: 42, ..any() };
    let status = list(&mut play, &alice.username, bad_speed, 20, String::new())
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    let long = pb::PlayerGamesFilter {
        opponent_username: "x".repeat(1000),
        ..any()
    };
    let status = list(&mut play, &alice.username, long, 20, String::new())
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    let status = play
        .export_player_games(pb::ExportPlayerGamesRequest {
            username: "nobody-here".to_owned(),
            filter: None,
            max_games: 0,
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::NotFound, "{status:?}");

    stack.stop().await;
}

/// A few characters unlikely to repeat, so names differ between runs.
fn uuid_suffix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    format!("{:x}", nanos % 0xfffff)
}
