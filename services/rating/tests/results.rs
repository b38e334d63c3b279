//! Results and ratings end to end: games applied once however often and
//! however concurrently they are reported, history, leaderboards, the
//! untimed category, restarts, and each rating system; every test body run
//! once on a SQLite file and once on PostgreSQL.

mod common;

use std::collections::HashSet;

use chess_proto::{
    common::v1::{self as cpb, GameResult, RatingSystem, SpeedCategory},
    rating::v1::{self as pb, get_player_request::Key},
};
use common::{
    PASSWORD, RatingService, assert_refused, blitz, from_game, full_history, full_leaderboard,
    game, leaderboard, record, register, register_request,
};
use futures::future::join_all;
use tonic::Code;

common::on_sqlite_and_postgres!(
    parallel_results_for_one_player_lose_nothing,
    replayed_results_change_nothing,
    leaderboard_order_and_paging,
    untimed_games_are_never_rated,
    restart_keeps_accounts_and_ratings,
    glicko2_ratings,
    logistic_elo_ratings,
);

fn result_for(i: usize) -> GameResult {
    [
        GameResult::WhiteWins,
        GameResult::BlackWins,
        GameResult::Draw,
    ][i % 3]
}

/// Each row's rating before is the previous row's rating after (history is
/// newest first), and the newest matches the current rating.
fn assert_chained(history: &[cpb::RatingHistoryEntry], current: f64) {
    assert_eq!(history.first().map(|e| e.rating_after), Some(current));
    for pair in history.windows(2) {
        assert_eq!(
            pair[0].rating_before, pair[1].rating_after,
            "a lost update between games {} and {}",
            pair[1].game_id, pair[0].game_id
        );
    }
}

async fn parallel_results_for_one_player_lose_nothing(url: &str) {
    let (service, mut client, [hub]) = RatingService::with_players(url, ["hub"]).await;
    let mut opponents = Vec::new();
    for name in ["opp0", "opp1", "opp2", "opp3"] {
        opponents.push(register(&mut client, name).await);
    }

    let calls = (0..100).map(|i| {
        let mut client = client.clone();
        let opponent = &opponents[i % opponents.len()];
        let (white, black) = if i % 2 == 0 {
            (hub.as_str(), opponent.as_str())
        } else {
            (opponent.as_str(), hub.as_str())
        };
        let request = game(&format!("game-{i}"), white, black, result_for(i));
        async move { client.record_result(from_game(request)).await }
    });
    for outcome in join_all(calls).await {
        let response = outcome.expect("record result").into_inner();
        assert!(response.first_time);
        assert!(response.white.is_some() && response.black.is_some());
    }

    let rating = blitz(&mut client, &hub).await;
    assert_eq!(rating.games_played, 100);
    assert_eq!(rating.wins + rating.losses + rating.draws, 100);
    let history = full_history(&mut client, &hub, 7).await;
    assert_eq!(history.len(), 100);
    let games: HashSet<_> = history.iter().map(|e| e.game_id.as_str()).collect();
    assert_eq!(games.len(), 100);
    assert_chained(&history, rating.rating);

    let mut opponents_games = 0;
    for opponent in &opponents {
        let rating = blitz(&mut client, opponent).await;
        opponents_games += rating.games_played;
        let history = full_history(&mut client, opponent, 200).await;
        assert_eq!(history.len(), rating.games_played as usize);
        assert_chained(&history, rating.rating);
    }
    assert_eq!(opponents_games, 100);

    service.stop().await;
}

async fn replayed_results_change_nothing(url: &str) {
    let (service, mut client, [a, b]) = RatingService::with_players(url, ["alpha", "beta"]).await;

    let first = record(&mut client, game("g1", &a, &b, GameResult::WhiteWins)).await;
    assert!(first.first_time);
    let white = first.white.clone().expect("white change");
    let black = first.black.clone().expect("black change");
    assert_eq!(
        (
            white.player_id.as_str(),
            white.rating_before,
            white.rating_after
        ),
        (a.as_str(), 1200.0, 1210.0)
    );
    assert_eq!(
        (
            black.player_id.as_str(),
            black.rating_before,
            black.rating_after
        ),
        (b.as_str(), 1200.0, 1190.0)
    );
    assert_eq!(white.category, SpeedCategory::Blitz as i32);

    // The same game again, even with another result, is a repeat.
    for result in [GameResult::WhiteWins, GameResult::BlackWins] {
        let again = record(&mut client, game("g1", &a, &b, result)).await;
        assert!(!again.first_time);
        assert_eq!(again.white, first.white);
        assert_eq!(again.black, first.black);
    }
    assert_eq!(blitz(&mut client, &a).await.rating, 1210.0);
    assert_eq!(blitz(&mut client, &a).await.games_played, 1);
    assert_eq!(full_history(&mut client, &a, 50).await.len(), 1);

    // Ten deliveries of one game at once: applied once, all told the same.
    let deliveries = (0..10).map(|_| {
        let mut client = client.clone();
        let request = game("g2", &a, &b, GameResult::BlackWins);
        async move { client.record_result(from_game(request)).await }
    });
    let responses: Vec<_> = join_all(deliveries)
        .await
        .into_iter()
        .map(|r| r.expect("delivery").into_inner())
        .collect();
    assert_eq!(responses.iter().filter(|r| r.first_time).count(), 1);
    for response in &responses {
        assert_eq!(response.white, responses[0].white);
        assert_eq!(response.black, responses[0].black);
    }
    let a_rating = blitz(&mut client, &a).await;
    assert_eq!(a_rating.games_played, 2);
    assert_eq!(full_history(&mut client, &a, 50).await.len(), 2);
    assert_eq!(
        Some(a_rating.rating),
        responses[0].white.as_ref().map(|c| c.rating_after)
    );

    // Unrated games and games with unknown players are recorded, and
    // recognised again, but change nothing.
    let mut unrated = game("g3", &a, &b, GameResult::WhiteWins);
    unrated.rated = false;
    let unknown = game("g4", &a, "no-such-player", GameResult::WhiteWins);
    let itself = game("g5", &a, &a, GameResult::WhiteWins);
    for request in [unrated, unknown, itself] {
        for first_time in [true, false] {
            let response = record(&mut client, request.clone()).await;
            assert_eq!(response.first_time, first_time, "{}", request.game_id);
            assert_eq!((response.white, response.black), (None, None));
        }
    }
    assert_eq!(blitz(&mut client, &a).await, a_rating);
    assert_eq!(full_history(&mut client, &a, 50).await.len(), 2);

    // Bad reports are refused.
    let no_result = game("g6", &a, &b, GameResult::Unspecified);
    let mut no_category = game("g7", &a, &b, GameResult::Draw);
    no_category.category = SpeedCategory::Unspecified as i32;
    let no_id = game("", &a, &b, GameResult::Draw);
    for request in [no_result, no_category, no_id] {
        assert_refused(
            client.record_result(from_game(request)).await,
            Code::InvalidArgument,
        );
    }

    service.stop().await;
}

async fn leaderboard_order_and_paging(url: &str) {
    let service = RatingService::start(url).await;
    let mut client = service.client().await;
    let mut ids = std::collections::HashMap::new();
    for name in ["alice", "Bob", "carol", "dave", "Eve", "frank"] {
        ids.insert(name, register(&mut client, name).await);
    }
    // An unrated game does not put its players on the board.
    let mut casual = game("l0", &ids["Eve"], &ids["frank"], GameResult::WhiteWins);
    casual.rated = false;
    record(&mut client, casual).await;
    for (game_id, white, black) in [
        ("l1", "alice", "Bob"),
        ("l2", "carol", "dave"),
        ("l3", "alice", "carol"),
    ] {
        record(
            &mut client,
            game(game_id, &ids[white], &ids[black], GameResult::WhiteWins),
        )
        .await;
    }
    // alice 1220 (2 games); carol 1200 (2); Bob and dave 1190. Eve and
    // frank have played no rated game: they are not ranked.
    let expected = [
        ("alice", 1220.0, 2),
        ("carol", 1200.0, 2),
        ("Bob", 1190.0, 1),
        ("dave", 1190.0, 1),
    ];
    let whole = full_leaderboard(&mut client, 0).await;
    for page_size in [1, 2, 3] {
        assert_eq!(whole, full_leaderboard(&mut client, page_size).await);
    }
    let seen: Vec<_> = whole
        .iter()
        .map(|e| {
            let rating = e.rating.as_ref().unwrap();
            (e.username.as_str(), rating.rating, rating.games_played)
        })
        .collect();
    assert_eq!(seen, expected);
    for (rank, entry) in (1..).zip(&whole) {
        assert_eq!(entry.rank, rank);
        assert_eq!(entry.player_id, ids[entry.username.as_str()]);
    }

    // Their profile still shows the starting rating, in every rated
    // category.
    let eve = client
        .get_player(pb::GetPlayerRequest {
            key: Some(Key::PlayerId(ids["Eve"].clone())),
        })
        .await
        .expect("profile")
        .into_inner()
        .profile
        .expect("a profile");
    assert_eq!(eve.ratings.len(), 5);
    let eve_blitz = eve
        .ratings
        .iter()
        .find(|r| r.category == SpeedCategory::Blitz as i32)
        .expect("a blitz rating");
    assert_eq!((eve_blitz.rating, eve_blitz.games_played), (1200.0, 0));

    // A category nobody has played has an empty board.
    let bullet = leaderboard(&mut client, SpeedCategory::Bullet as i32, 10, "")
        .await
        .expect("bullet")
        .into_inner();
    assert_eq!(bullet.rating_system, RatingSystem::ClubElo as i32);
    assert!(bullet.next_page_token.is_empty());
    assert!(bullet.entries.is_empty());

    assert_refused(
        leaderboard(&mut client, SpeedCategory::Blitz as i32, 2, "garbage").await,
        Code::InvalidArgument,
    );

    service.stop().await;
}

/// Untimed games are never rated: no rating, history or leaderboard in that
/// category, and a report of a rated untimed game is refused.
async fn untimed_games_are_never_rated(url: &str) {
    let (service, mut client, [a, b]) =
        RatingService::with_players(url, ["timeless", "clockless"]).await;

    let mut rated = game("u1", &a, &b, GameResult::WhiteWins);
    rated.category = SpeedCategory::Untimed as i32;
    let status = client
        .record_result(from_game(rated.clone()))
        .await
        .expect_err("rated untimed game accepted");
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(status.message().contains("untimed"), "{}", status.message());

    // Reported unrated, it is kept (so a repeat is known) and changes nothing.
    let mut unrated = rated;
    unrated.rated = false;
    let recorded = record(&mut client, unrated.clone()).await;
    assert!(recorded.first_time);
    assert_eq!((recorded.white, recorded.black), (None, None));
    assert!(!record(&mut client, unrated).await.first_time);
    assert_eq!(blitz(&mut client, &a).await.games_played, 0);
    assert!(full_history(&mut client, &a, 50).await.is_empty());

    let untimed = SpeedCategory::Untimed as i32;
    let refusals = [
        leaderboard(&mut client, untimed, 0, "").await.map(drop),
        client
            .get_rating_history(pb::GetRatingHistoryRequest {
                player_id: a.clone(),
                category: untimed,
                page_size: 0,
                page_token: String::new(),
            })
            .await
            .map(drop),
        client
            .get_ratings(pb::GetRatingsRequest {
                player_ids: vec![a.clone()],
                category: untimed,
            })
            .await
            .map(drop),
    ];
    for refusal in refusals {
        let status = refusal.expect_err("an untimed rating was served");
        assert_eq!(status.code(), Code::InvalidArgument);
        assert!(status.message().contains("untimed"), "{}", status.message());
    }

    let profile = client
        .get_player(pb::GetPlayerRequest {
            key: Some(Key::PlayerId(a.clone())),
        })
        .await
        .expect("profile")
        .into_inner()
        .profile
        .expect("a profile");
    assert!(profile.ratings.iter().all(|r| r.category != untimed));
    service.stop().await;
}

async fn restart_keeps_accounts_and_ratings(url: &str) {
    let (service, mut client, [a, b]) =
        RatingService::with_players(url, ["keeper", "sweeper"]).await;
    record(&mut client, game("r1", &a, &b, GameResult::WhiteWins)).await;
    let before = blitz(&mut client, &a).await;
    service.stop().await;

    let service = RatingService::start(url).await;
    let mut client = service.client().await;
    let login = client
        .authenticate(pb::AuthenticateRequest {
            login: "KEEPER".into(),
            password: PASSWORD.into(),
        })
        .await
        .expect("login after restart")
        .into_inner();
    assert_eq!(login.player_id, a);
    assert_eq!(blitz(&mut client, &a).await, before);
    assert_eq!(before.rating, 1210.0);
    let repeat = record(&mut client, game("r1", &a, &b, GameResult::WhiteWins)).await;
    assert!(!repeat.first_time);
    assert_eq!(repeat.white.map(|c| c.rating_after), Some(1210.0));
    assert_refused(
        client
            .register(register_request("Keeper", "new@example.org", PASSWORD))
            .await,
        Code::AlreadyExists,
    );
    service.stop().await;
}

async fn glicko2_ratings(url: &str) {
    let service =
        RatingService::start_with(url, &["--rating-system", "glicko2", "--glicko2-tau", "0.5"])
            .await;
    let mut client = service.client().await;
    let a = register(&mut client, "gamma").await;
    let b = register(&mut client, "delta").await;

    let fresh = blitz(&mut client, &a).await;
    assert_eq!(
        (fresh.rating, fresh.deviation, fresh.volatility),
        (1500.0, 350.0, 0.06)
    );
    assert!(fresh.provisional);

    let response = record(&mut client, game("x1", &a, &b, GameResult::WhiteWins)).await;
    let white = response.white.expect("white change");
    let black = response.black.expect("black change");
    assert!(white.rating_after > 1500.0 && black.rating_after < 1500.0);
    assert!((white.rating_after - 1500.0 + black.rating_after - 1500.0).abs() < 1e-6);
    assert_eq!(white.deviation_before, 350.0);
    assert!(white.deviation_after < 350.0);

    let after = blitz(&mut client, &a).await;
    assert_eq!(after.rating, white.rating_after);
    assert!(after.deviation >= white.deviation_after && after.deviation < 350.0);
    assert!(after.provisional, "one game leaves the deviation high");
    let board = leaderboard(&mut client, SpeedCategory::Blitz as i32, 0, "")
        .await
        .expect("leaderboard")
        .into_inner();
    assert_eq!(board.rating_system, RatingSystem::Glicko2 as i32);
    assert_eq!(board.entries[0].player_id, a);
    service.stop().await;
}

async fn logistic_elo_ratings(url: &str) {
    let service = RatingService::start_with(url, &["--rating-system", "logistic-elo"]).await;
    let mut client = service.client().await;
    let a = register(&mut client, "epsilon").await;
    let b = register(&mut client, "zeta").await;
    assert_eq!(blitz(&mut client, &a).await.rating, 1000.0);
    let response = record(&mut client, game("e1", &a, &b, GameResult::WhiteWins)).await;
    assert_eq!(response.white.map(|c| c.rating_after), Some(1015.0));
    assert_eq!(response.black.map(|c| c.rating_after), Some(985.0));
    let draw = record(&mut client, game("e2", &a, &b, GameResult::Draw)).await;
    assert_eq!(draw.white.map(|c| c.rating_after), Some(1015.0));
    let rating = blitz(&mut client, &a).await;
    assert_eq!(
        (rating.rating, rating.games_played, rating.draws),
        (1015.0, 2, 1)
    );
    service.stop().await;
}
