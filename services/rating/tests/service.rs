//! The rating service end to end: the real `chess-rating` binary over gRPC,
//! every test body run once on a SQLite file and once on PostgreSQL.

mod common;

use std::collections::HashSet;

use chess_proto::{
    common::v1::{self as cpb, GameResult, RatingSystem, SpeedCategory},
    rating::v1::{self as pb, get_player_request::Key},
};
use common::{
    PASSWORD, RatingService, blitz, from_game, full_history, full_leaderboard, game, register,
};
use futures::future::join_all;
use tonic::Code;

/// Runs each named test body against SQLite and against PostgreSQL.
macro_rules! on_sqlite_and_postgres {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = crate::common::Database::sqlite();
                    super::$name(&db.url).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = crate::common::Database::postgres().await;
                    super::$name(&db.url).await;
                }
            )*
        }
    };
}

on_sqlite_and_postgres!(
    registration_rules_and_duplicates,
    authentication,
    failed_logins_of_an_account_wait,
    sessions_end_one_by_one_or_all_at_once,
    a_password_change_ends_every_session,
    parallel_results_for_one_player_lose_nothing,
    replayed_results_change_nothing,
    leaderboard_order_and_paging,
    untimed_games_are_never_rated,
    restart_keeps_accounts_and_ratings,
    glicko2_ratings,
    logistic_elo_ratings,
    nostr_keys_link_replace_and_unlink,
    a_nostr_key_goes_to_one_player,
);

fn register_request(username: &str, email: &str, password: &str) -> pb::RegisterRequest {
    pb::RegisterRequest {
        username: username.into(),
        email: email.into(),
        password: password.into(),
    }
}

async fn registration_rules_and_duplicates(url: &str) {
    let service = RatingService::start(url).await;
    let mut client = service.client().await;

    for (username, email, password) in [
        ("ab", "ab@example.org", PASSWORD),
        ("this_name_is_too_long", "long@example.org", PASSWORD),
        ("bad name", "bad@example.org", PASSWORD),
        ("dots.here", "dots@example.org", PASSWORD),
        ("goodname", "not-an-email", PASSWORD),
        ("goodname", "two@@example.org", PASSWORD),
        ("goodname", "good@example.org", "short"),
    ] {
        let status = client
            .register(register_request(username, email, password))
            .await
            .expect_err("invalid registration accepted");
        assert_eq!(status.code(), Code::InvalidArgument, "{username} {email}");
    }

    let response = client
        .register(register_request("Alice_1", "Alice@Example.org", PASSWORD))
        .await
        .expect("register")
        .into_inner();
    assert_eq!(response.email, "Alice@Example.org");
    let profile = response.profile.expect("profile");
    assert_eq!(profile.username, "Alice_1");
    assert!(uuid::Uuid::parse_str(&profile.player_id).is_ok());
    assert_eq!(profile.rating_system, RatingSystem::ClubElo as i32);
    assert_eq!(profile.ratings.len(), 5);
    for rating in &profile.ratings {
        assert_eq!((rating.rating, rating.games_played), (1200.0, 0));
    }

    let status = client
        .register(register_request("alice_1", "other@example.org", PASSWORD))
        .await
        .expect_err("duplicate username accepted");
    assert_eq!(status.code(), Code::AlreadyExists);
    assert!(
        status.message().contains("username"),
        "{}",
        status.message()
    );

    let status = client
        .register(register_request("someone", "ALICE@example.ORG", PASSWORD))
        .await
        .expect_err("duplicate email accepted");
    assert_eq!(status.code(), Code::AlreadyExists);
    assert!(status.message().contains("email"), "{}", status.message());

    // Racing registrations pass the early check together; the unique index
    // lets one through.
    let names = ["Racer", "racer", "RACER", "rAcEr"];
    let attempts = names.iter().enumerate().map(|(i, name)| {
        let mut client = client.clone();
        async move {
            client
                .register(register_request(
                    name,
                    &format!("racer{i}@example.org"),
                    PASSWORD,
                ))
                .await
        }
    });
    let outcomes = join_all(attempts).await;
    assert_eq!(outcomes.iter().filter(|o| o.is_ok()).count(), 1);
    for outcome in outcomes.iter().filter_map(|o| o.as_ref().err()) {
        assert_eq!(outcome.code(), Code::AlreadyExists, "{outcome}");
        assert!(outcome.message().contains("username"), "{outcome}");
    }
    let emails = ["Same@example.org", "same@EXAMPLE.org", "SAME@example.org"];
    let attempts = emails.iter().enumerate().map(|(i, email)| {
        let mut client = client.clone();
        async move {
            client
                .register(register_request(&format!("same{i}"), email, PASSWORD))
                .await
        }
    });
    let outcomes = join_all(attempts).await;
    assert_eq!(outcomes.iter().filter(|o| o.is_ok()).count(), 1);
    for outcome in outcomes.iter().filter_map(|o| o.as_ref().err()) {
        assert_eq!(outcome.code(), Code::AlreadyExists, "{outcome}");
        assert!(outcome.message().contains("email"), "{outcome}");
    }

    // Profiles by name (any case) and by id.
    let by_name = client
        .get_player(pb::GetPlayerRequest {
            key: Some(Key::Username("ALICE_1".into())),
        })
        .await
        .expect("by name")
        .into_inner();
    assert_eq!(
        by_name.profile.as_ref().unwrap().player_id,
        profile.player_id
    );
    assert_eq!(by_name.email, "Alice@Example.org");
    let by_id = client
        .get_player(pb::GetPlayerRequest {
            key: Some(Key::PlayerId(profile.player_id.clone())),
        })
        .await
        .expect("by id")
        .into_inner();
    assert_eq!(by_id.profile.unwrap().username, "Alice_1");
    let status = client
        .get_player(pb::GetPlayerRequest {
            key: Some(Key::Username("nobody".into())),
        })
        .await
        .expect_err("unknown player found");
    assert_eq!(status.code(), Code::NotFound);

    service.stop().await;
}

async fn authentication(url: &str) {
    let service = RatingService::start(url).await;
    let mut client = service.client().await;
    let id = register(&mut client, "Magnus").await;

    for login in [
        "Magnus",
        "magnus",
        "MAGNUS@EXAMPLE.ORG",
        "magnus@example.org",
    ] {
        let response = client
            .authenticate(pb::AuthenticateRequest {
                login: login.into(),
                password: PASSWORD.into(),
            })
            .await
            .unwrap_or_else(|e| panic!("login {login}: {e}"))
            .into_inner();
        assert_eq!(
            (response.player_id.as_str(), response.username.as_str()),
            (id.as_str(), "Magnus")
        );
    }

    let mut messages = HashSet::new();
    for (login, password) in [
        ("magnus", "wrong password"),
        ("magnus@example.org", "Correct horse battery"),
        ("nobody", PASSWORD),
        ("nobody@example.org", PASSWORD),
        ("", PASSWORD),
    ] {
        let status = client
            .authenticate(pb::AuthenticateRequest {
                login: login.into(),
                password: password.into(),
            })
            .await
            .expect_err("bad login accepted");
        assert_eq!(status.code(), Code::Unauthenticated, "{login}");
        messages.insert(status.message().to_owned());
    }
    assert_eq!(messages.len(), 1, "the refusals differ: {messages:?}");

    service.stop().await;
}

fn login_request(login: &str, password: &str) -> pb::AuthenticateRequest {
    pb::AuthenticateRequest {
        login: login.into(),
        password: password.into(),
    }
}

/// The wait a `too-many-attempts` refusal asks for.
fn throttled_wait(status: &tonic::Status) -> std::time::Duration {
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    chess_runtime::throttle::wait_of(status).unwrap_or_else(|| panic!("no wait in {status:?}"))
}

async fn failed_logins_of_an_account_wait(url: &str) {
    let service = RatingService::start_with(url, &["--login-backoff-cap-secs", "2"]).await;
    let mut client = service.client().await;
    register(&mut client, "Target").await;

    // The free failures are plain refusals; then the account waits, and the
    // password is not even checked: the right one is refused too.
    let mut refused = 0;
    let wait = loop {
        let status = client
            .authenticate(login_request("target", "wrong password"))
            .await
            .expect_err("wrong password accepted");
        if status.code() == Code::ResourceExhausted {
            break throttled_wait(&status);
        }
        assert_eq!(status.code(), Code::Unauthenticated);
        refused += 1;
        assert!(refused <= 8, "never throttled");
    };
    assert!(refused >= 5, "throttled after {refused} failures");
    assert!(wait <= std::time::Duration::from_secs(2), "{wait:?}");
    let status = client
        .authenticate(login_request("Target@example.org", PASSWORD))
        .await
        .expect_err("a waiting account checked a password");
    assert!(throttled_wait(&status) <= std::time::Duration::from_secs(2));

    // Names nobody owns wait alike, so the answers tell no names apart.
    let unknown = loop {
        let status = client
            .authenticate(login_request("nobody_here", "wrong password"))
            .await
            .expect_err("unknown login accepted");
        if status.code() == Code::ResourceExhausted {
            break status;
        }
        assert_eq!(status.code(), Code::Unauthenticated);
    };
    throttled_wait(&unknown);

    // After the wait (the cap) the right password works, and forgives.
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    client
        .authenticate(login_request("target", PASSWORD))
        .await
        .expect("the owner signs in after the wait");
    let status = client
        .authenticate(login_request("target", "wrong password"))
        .await
        .expect_err("wrong password accepted");
    assert_eq!(status.code(), Code::Unauthenticated);

    service.stop().await;
}

fn state(state: Option<pb::SessionState>) -> (i64, Vec<String>) {
    let state = state.expect("a session state");
    let mut revoked = state.revoked_session_ids;
    revoked.sort();
    (state.generation, revoked)
}

fn in_an_hour() -> prost_types::Timestamp {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    prost_types::Timestamp {
        seconds: i64::try_from(now.as_secs()).unwrap() + 3600,
        nanos: 0,
    }
}

async fn sessions_end_one_by_one_or_all_at_once(url: &str) {
    let service = RatingService::start(url).await;
    let mut client = service.client().await;
    let id = register(&mut client, "Sessions").await;
    let other = register(&mut client, "Bystander").await;

    let signed_in = client
        .authenticate(login_request("sessions", PASSWORD))
        .await
        .expect("login")
        .into_inner();
    assert_eq!(signed_in.session_generation, 0);
    let get = |player_id: &str| pb::GetSessionStateRequest {
        player_id: player_id.into(),
    };
    let fresh = client
        .get_session_state(get(&id))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(state(fresh.state), (0, vec![]));

    let revoke = |session: &str, expires_at| pb::RevokeSessionRequest {
        player_id: id.clone(),
        session_id: session.into(),
        expires_at: Some(expires_at),
    };
    let after = client
        .revoke_session(revoke("s-1", in_an_hour()))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(state(after.state), (0, vec!["s-1".to_owned()]));
    // Twice is once; an already expired session needs no record.
    client
        .revoke_session(revoke("s-1", in_an_hour()))
        .await
        .unwrap();
    let past = prost_types::Timestamp {
        seconds: 1_000_000,
        nanos: 0,
    };
    client.revoke_session(revoke("s-old", past)).await.unwrap();
    client
        .revoke_session(revoke("s-2", in_an_hour()))
        .await
        .unwrap();
    let now = client
        .get_session_state(get(&id))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        state(now.state),
        (0, vec!["s-1".to_owned(), "s-2".to_owned()])
    );
    // Another player's sessions are untouched.
    let theirs = client
        .get_session_state(get(&other))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(state(theirs.state), (0, vec![]));
    // Both at once, the same; a player without an account is left out.
    let many = client
        .get_session_states(pb::GetSessionStatesRequest {
            player_ids: vec![id.clone(), "no-such-player".into(), other.clone()],
        })
        .await
        .unwrap()
        .into_inner();
    let mut many: Vec<(String, (i64, Vec<String>))> = many
        .states
        .into_iter()
        .map(|s| (s.player_id, state(s.state)))
        .collect();
    many.sort();
    let mut expected = vec![
        (id.clone(), (0, vec!["s-1".to_owned(), "s-2".to_owned()])),
        (other.clone(), (0, vec![])),
    ];
    expected.sort();
    assert_eq!(many, expected);
    let too_many = client
        .get_session_states(pb::GetSessionStatesRequest {
            player_ids: vec![id.clone(); 1001],
        })
        .await
        .unwrap_err();
    assert_eq!(too_many.code(), Code::InvalidArgument);

    let all = client
        .revoke_all_sessions(pb::RevokeAllSessionsRequest {
            player_id: id.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(state(all.state), (1, vec![]));
    let signed_in = client
        .authenticate(login_request("sessions", PASSWORD))
        .await
        .expect("login")
        .into_inner();
    assert_eq!(signed_in.session_generation, 1);

    for status in [
        client
            .get_session_state(get("no-such-player"))
            .await
            .unwrap_err(),
        client
            .revoke_all_sessions(pb::RevokeAllSessionsRequest {
                player_id: "no-such-player".into(),
            })
            .await
            .unwrap_err(),
    ] {
        assert_eq!(status.code(), Code::NotFound);
    }
    let status = client
        .revoke_session(revoke(&"x".repeat(65), in_an_hour()))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);

    // The generation survives a restart.
    service.stop().await;
    let service = RatingService::start(url).await;
    let mut client = service.client().await;
    let kept = client
        .get_session_state(get(&id))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(state(kept.state), (1, vec![]));
    service.stop().await;
}

async fn a_password_change_ends_every_session(url: &str) {
    let service = RatingService::start(url).await;
    let mut client = service.client().await;
    let id = register(&mut client, "Changer").await;
    client
        .revoke_session(pb::RevokeSessionRequest {
            player_id: id.clone(),
            session_id: "s-1".into(),
            expires_at: Some(in_an_hour()),
        })
        .await
        .unwrap();
    let change = |old: &str, new: &str| pb::ChangePasswordRequest {
        player_id: id.clone(),
        old_password: old.into(),
        new_password: new.into(),
    };

    let status = client
        .change_password(change("wrong password", "a new password"))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::PermissionDenied);
    let status = client
        .change_password(change(PASSWORD, "short"))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);

    let changed = client
        .change_password(change(PASSWORD, "a new password"))
        .await
        .expect("change")
        .into_inner();
    assert_eq!(changed.username, "Changer");
    assert_eq!(state(changed.state), (1, vec![]));

    let status = client
        .authenticate(login_request("changer", PASSWORD))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated);
    let signed_in = client
        .authenticate(login_request("changer", "a new password"))
        .await
        .expect("the new password")
        .into_inner();
    assert_eq!(signed_in.session_generation, 1);
    // The old password no longer changes anything.
    let status = client
        .change_password(change(PASSWORD, "another password"))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::PermissionDenied);

    service.stop().await;
}

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
    let service = RatingService::start(url).await;
    let mut client = service.client().await;
    let hub = register(&mut client, "hub").await;
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
    let service = RatingService::start(url).await;
    let mut client = service.client().await;
    let a = register(&mut client, "alpha").await;
    let b = register(&mut client, "beta").await;

    let first = client
        .record_result(from_game(game("g1", &a, &b, GameResult::WhiteWins)))
        .await
        .expect("record")
        .into_inner();
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
        let again = client
            .record_result(from_game(game("g1", &a, &b, result)))
            .await
            .expect("repeat")
            .into_inner();
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
            let response = client
                .record_result(from_game(request.clone()))
                .await
                .expect("record")
                .into_inner();
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
        let status = client
            .record_result(from_game(request))
            .await
            .expect_err("bad report accepted");
        assert_eq!(status.code(), Code::InvalidArgument);
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
    client
        .record_result(from_game(casual))
        .await
        .expect("record unrated");
    for (game_id, white, black) in [
        ("l1", "alice", "Bob"),
        ("l2", "carol", "dave"),
        ("l3", "alice", "carol"),
    ] {
        client
            .record_result(from_game(game(
                game_id,
                &ids[white],
                &ids[black],
                GameResult::WhiteWins,
            )))
            .await
            .expect("record");
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
    let bullet = client
        .leaderboard(pb::LeaderboardRequest {
            category: SpeedCategory::Bullet as i32,
            page_size: 10,
            page_token: String::new(),
        })
        .await
        .expect("bullet")
        .into_inner();
    assert_eq!(bullet.rating_system, RatingSystem::ClubElo as i32);
    assert!(bullet.next_page_token.is_empty());
    assert!(bullet.entries.is_empty());

    let status = client
        .leaderboard(pb::LeaderboardRequest {
            category: SpeedCategory::Blitz as i32,
            page_size: 2,
            page_token: "garbage".into(),
        })
        .await
        .expect_err("bad token accepted");
    assert_eq!(status.code(), Code::InvalidArgument);

    service.stop().await;
}

/// Untimed games are never rated: no rating, history or leaderboard in that
/// category, and a report of a rated untimed game is refused.
async fn untimed_games_are_never_rated(url: &str) {
    let service = RatingService::start(url).await;
    let mut client = service.client().await;
    let a = register(&mut client, "timeless").await;
    let b = register(&mut client, "clockless").await;

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
    let recorded = client
        .record_result(from_game(unrated.clone()))
        .await
        .expect("unrated untimed game")
        .into_inner();
    assert!(recorded.first_time);
    assert_eq!((recorded.white, recorded.black), (None, None));
    assert!(
        !client
            .record_result(from_game(unrated))
            .await
            .expect("repeat")
            .into_inner()
            .first_time
    );
    assert_eq!(blitz(&mut client, &a).await.games_played, 0);
    assert!(full_history(&mut client, &a, 50).await.is_empty());

    let untimed = SpeedCategory::Untimed as i32;
    let refusals = [
        client
            .leaderboard(pb::LeaderboardRequest {
                category: untimed,
                page_size: 0,
                page_token: String::new(),
            })
            .await
            .map(drop),
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
    let service = RatingService::start(url).await;
    let mut client = service.client().await;
    let a = register(&mut client, "keeper").await;
    let b = register(&mut client, "sweeper").await;
    client
        .record_result(from_game(game("r1", &a, &b, GameResult::WhiteWins)))
        .await
        .expect("record");
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
    let repeat = client
        .record_result(from_game(game("r1", &a, &b, GameResult::WhiteWins)))
        .await
        .expect("repeat")
        .into_inner();
    assert!(!repeat.first_time);
    assert_eq!(repeat.white.map(|c| c.rating_after), Some(1210.0));
    let status = client
        .register(register_request("Keeper", "new@example.org", PASSWORD))
        .await
        .expect_err("duplicate after restart");
    assert_eq!(status.code(), Code::AlreadyExists);
    service.stop().await;
}

/// A well-formed Nostr public key, different for each `n`.
fn nostr_key(n: u8) -> String {
    format!("{n:02x}").repeat(32)
}

/// `request` as the gateway sends it for `player_id`.
fn for_player<T>(request: T, player_id: &str) -> tonic::Request<T> {
    chess_testkit::acting(request, player_id, None)
}

async fn link(
    client: &mut common::Client,
    player_id: &str,
    key: &str,
) -> Result<cpb::PlayerProfile, tonic::Status> {
    let request = pb::LinkNostrKeyRequest {
        player_id: player_id.into(),
        public_key: key.into(),
    };
    let response = client
        .link_nostr_key(for_player(request, player_id))
        .await?
        .into_inner();
    Ok(response.profile.expect("a profile"))
}

async fn unlink(
    client: &mut common::Client,
    player_id: &str,
) -> Result<cpb::PlayerProfile, tonic::Status> {
    let request = pb::UnlinkNostrKeyRequest {
        player_id: player_id.into(),
    };
    let response = client
        .unlink_nostr_key(for_player(request, player_id))
        .await?
        .into_inner();
    Ok(response.profile.expect("a profile"))
}

async fn get_player(
    client: &mut common::Client,
    key: Key,
) -> Result<pb::GetPlayerResponse, tonic::Status> {
    Ok(client
        .get_player(pb::GetPlayerRequest { key: Some(key) })
        .await?
        .into_inner())
}

/// The key `player_id`'s profile shows, as read by id.
async fn shown_key(client: &mut common::Client, player_id: &str) -> String {
    get_player(client, Key::PlayerId(player_id.into()))
        .await
        .expect("profile")
        .profile
        .expect("a profile")
        .nostr_public_key
}

async fn nostr_keys_link_replace_and_unlink(url: &str) {
    let service = RatingService::start(url).await;
    let mut client = service.client().await;
    let ann = register(&mut client, "Ann").await;
    let ben = register(&mut client, "Ben").await;
    let (first, second) = (nostr_key(1), nostr_key(0xab));
    assert_eq!(shown_key(&mut client, &ann).await, "");

    // Only 64 lowercase hexadecimal digits make a key.
    for bad in [
        String::new(),
        first[1..].to_owned(),
        format!("{first}0"),
        second.to_uppercase(),
        format!("{}g", &first[1..]),
        format!("npub1{}", &first[5..]),
    ] {
        let status = link(&mut client, &ann, &bad)
            .await
            .expect_err("bad key linked");
        assert_eq!(status.code(), Code::InvalidArgument, "{bad:?}: {status:?}");
        let status = get_player(&mut client, Key::NostrPublicKey(bad.clone()))
            .await
            .expect_err("bad key looked up");
        assert_eq!(status.code(), Code::InvalidArgument, "{bad:?}: {status:?}");
    }
    assert_eq!(shown_key(&mut client, &ann).await, "");
    let nobody = uuid::Uuid::now_v7().to_string();
    let status = link(&mut client, &nobody, &first)
        .await
        .expect_err("key linked to nobody");
    assert_eq!(status.code(), Code::NotFound, "{status:?}");
    let status = unlink(&mut client, &nobody)
        .await
        .expect_err("nobody's key unlinked");
    assert_eq!(status.code(), Code::NotFound, "{status:?}");
    let status = link(&mut client, "", &first)
        .await
        .expect_err("key linked without a player");
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    let status = get_player(&mut client, Key::NostrPublicKey(first.clone()))
        .await
        .expect_err("unlinked key found");
    assert_eq!(status.code(), Code::NotFound, "{status:?}");

    // Linked: the profile shows it, and it finds the player.
    let profile = link(&mut client, &ann, &first).await.expect("link");
    assert_eq!(
        (profile.player_id.as_str(), profile.username.as_str()),
        (ann.as_str(), "Ann")
    );
    assert_eq!(profile.nostr_public_key, first);
    assert_eq!(profile.ratings.len(), 5);
    let found = get_player(&mut client, Key::NostrPublicKey(first.clone()))
        .await
        .expect("by key");
    assert_eq!(found.email, "Ann@example.org");
    let found = found.profile.expect("a profile");
    assert_eq!(
        (found.player_id, found.nostr_public_key),
        (ann.clone(), first.clone())
    );
    let by_name = get_player(&mut client, Key::Username("ann".into()))
        .await
        .expect("by name")
        .profile
        .expect("a profile");
    assert_eq!(by_name.nostr_public_key, first);
    assert_eq!(shown_key(&mut client, &ben).await, "");

    // Linking it again is fine.
    let again = link(&mut client, &ann, &first).await.expect("link again");
    assert_eq!(again.nostr_public_key, first);

    // Another player cannot have it.
    let status = link(&mut client, &ben, &first)
        .await
        .expect_err("a key linked twice");
    assert_eq!(status.code(), Code::AlreadyExists, "{status:?}");
    assert!(status.message().contains("Nostr"), "{}", status.message());
    assert_eq!(shown_key(&mut client, &ben).await, "");
    assert_eq!(shown_key(&mut client, &ann).await, first);

    // A new key replaces the old one, which is then free.
    let replaced = link(&mut client, &ann, &second).await.expect("replace");
    assert_eq!(replaced.nostr_public_key, second);
    let status = get_player(&mut client, Key::NostrPublicKey(first.clone()))
        .await
        .expect_err("the old key still finds her");
    assert_eq!(status.code(), Code::NotFound, "{status:?}");
    let found = get_player(&mut client, Key::NostrPublicKey(second.clone()))
        .await
        .expect("by the new key")
        .profile
        .expect("a profile");
    assert_eq!(found.player_id, ann);
    let bens = link(&mut client, &ben, &first)
        .await
        .expect("the freed key");
    assert_eq!(
        (bens.player_id, bens.nostr_public_key),
        (ben.clone(), first.clone())
    );

    // Unlinked: gone from the profile and from lookups; unlinking again is
    // fine.
    let profile = unlink(&mut client, &ann).await.expect("unlink");
    assert_eq!(
        (
            profile.player_id.as_str(),
            profile.nostr_public_key.as_str()
        ),
        (ann.as_str(), "")
    );
    let status = get_player(&mut client, Key::NostrPublicKey(second.clone()))
        .await
        .expect_err("an unlinked key finds her");
    assert_eq!(status.code(), Code::NotFound, "{status:?}");
    assert_eq!(
        unlink(&mut client, &ann)
            .await
            .expect("unlink again")
            .nostr_public_key,
        ""
    );
    assert_eq!(shown_key(&mut client, &ben).await, first);
    service.stop().await;

    // Links last.
    let service = RatingService::start(url).await;
    let mut client = service.client().await;
    let found = get_player(&mut client, Key::NostrPublicKey(first.clone()))
        .await
        .expect("by key after restart")
        .profile
        .expect("a profile");
    assert_eq!(found.player_id, ben);
    assert_eq!(shown_key(&mut client, &ann).await, "");
    link(&mut client, &ann, &second)
        .await
        .expect("link after restart");
    service.stop().await;
}

async fn a_nostr_key_goes_to_one_player(url: &str) {
    let service = RatingService::start(url).await;
    let mut client = service.client().await;
    let mut players = Vec::new();
    for name in ["racer_a", "racer_b", "racer_c", "racer_d", "racer_e"] {
        players.push(register(&mut client, name).await);
    }
    let key = nostr_key(7);
    // Linked by all at once: the unique index lets one through.
    let attempts = players.iter().map(|player_id| {
        let mut client = client.clone();
        let key = key.clone();
        async move { link(&mut client, player_id, &key).await }
    });
    let outcomes = join_all(attempts).await;
    let winners: Vec<&cpb::PlayerProfile> =
        outcomes.iter().filter_map(|o| o.as_ref().ok()).collect();
    assert_eq!(winners.len(), 1, "{outcomes:?}");
    for outcome in outcomes.iter().filter_map(|o| o.as_ref().err()) {
        assert_eq!(outcome.code(), Code::AlreadyExists, "{outcome:?}");
    }
    let found = get_player(&mut client, Key::NostrPublicKey(key.clone()))
        .await
        .expect("by key")
        .profile
        .expect("a profile");
    assert_eq!(found.player_id, winners[0].player_id);
    for player_id in &players {
        let shown = shown_key(&mut client, player_id).await;
        if *player_id == found.player_id {
            assert_eq!(shown, key);
        } else {
            assert_eq!(shown, "");
        }
    }
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

    let response = client
        .record_result(from_game(game("x1", &a, &b, GameResult::WhiteWins)))
        .await
        .expect("record")
        .into_inner();
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
    let board = client
        .leaderboard(pb::LeaderboardRequest {
            category: SpeedCategory::Blitz as i32,
            page_size: 0,
            page_token: String::new(),
        })
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
    let response = client
        .record_result(from_game(game("e1", &a, &b, GameResult::WhiteWins)))
        .await
        .expect("record")
        .into_inner();
    assert_eq!(response.white.map(|c| c.rating_after), Some(1015.0));
    assert_eq!(response.black.map(|c| c.rating_after), Some(985.0));
    let draw = client
        .record_result(from_game(game("e2", &a, &b, GameResult::Draw)))
        .await
        .expect("record")
        .into_inner();
    assert_eq!(draw.white.map(|c| c.rating_after), Some(1015.0));
    let rating = blitz(&mut client, &a).await;
    assert_eq!(
        (rating.rating, rating.games_played, rating.draws),
        (1015.0, 2, 1)
    );
    service.stop().await;
}

#[test]
fn bad_flags_exit_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let url = chess_storage::sqlite_url(&dir.path().join("unused.sqlite"));
    for (flags, code, needle) in [
        (vec!["--rating-system", "nope"], 2, "invalid value"),
        (
            vec!["--rating-system", "glicko2", "--glicko2-tau", "0"],
            1,
            "tau",
        ),
    ] {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_chess-rating"))
            .args(["--listen", "127.0.0.1:0", "--database-url", &url])
            .args(&flags)
            .output()
            .expect("run chess-rating");
        assert_eq!(output.status.code(), Some(code), "{flags:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        let lines: Vec<_> = stderr
            .lines()
            .filter(|l| l.starts_with("chess-rating:"))
            .collect();
        assert_eq!(lines.len(), 1, "{stderr}");
        assert!(lines[0].contains(needle), "{stderr}");
    }
}

#[tokio::test]
async fn accounts_and_results_are_taken_only_from_their_callers() {
    let db = common::Database::sqlite();
    let service = RatingService::start(&db.url).await;
    let mut client = service.client().await;
    let a = register(&mut client, "ann").await;
    let b = register(&mut client, "ben").await;
    let channel = chess_testkit::connect(&service.addr).await;
    let denied = |status: tonic::Status| {
        assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
        assert_eq!(
            chess_runtime::Reason::of(&status),
            Some(chess_runtime::Reason::CallerMismatch)
        );
    };

    // Accounts are the gateway's: the lobby cannot sign anyone in.
    let mut lobby = chess_proto::rating::v1::rating_service_client::RatingServiceClient::new(
        chess_testkit::signed_as(channel.clone(), "matchmaking"),
    );
    denied(
        lobby
            .authenticate(chess_proto::rating::v1::AuthenticateRequest {
                login: "ann".into(),
                password: PASSWORD.into(),
            })
            .await
            .unwrap_err(),
    );
    // Results are the game service's, each for its own game.
    denied(
        client
            .record_result(game("g1", &a, &b, GameResult::WhiteWins))
            .await
            .unwrap_err(),
    );
    denied(
        client
            .record_result(chess_testkit::acting_as(
                "game",
                game("g1", &a, &b, GameResult::WhiteWins),
                "",
                Some("g2"),
            ))
            .await
            .unwrap_err(),
    );
    assert_eq!(blitz(&mut client, &a).await.games_played, 0);
    // Reads need only a valid assertion.
    assert_eq!(blitz(&mut lobby, &b).await.games_played, 0);

    // Linking a Nostr key acts for the player, and only the gateway does it.
    let key = "ab".repeat(32);
    let link = |player_id: &str| chess_proto::rating::v1::LinkNostrKeyRequest {
        player_id: player_id.into(),
        public_key: key.clone(),
    };
    let unlink = |player_id: &str| chess_proto::rating::v1::UnlinkNostrKeyRequest {
        player_id: player_id.into(),
    };
    denied(client.link_nostr_key(link(&a)).await.unwrap_err());
    denied(
        client
            .link_nostr_key(chess_testkit::acting(link(&a), &b, None))
            .await
            .unwrap_err(),
    );
    denied(
        lobby
            .link_nostr_key(chess_testkit::acting_as("matchmaking", link(&a), &a, None))
            .await
            .unwrap_err(),
    );
    denied(client.unlink_nostr_key(unlink(&a)).await.unwrap_err());
    denied(
        client
            .unlink_nostr_key(chess_testkit::acting(unlink(&a), &b, None))
            .await
            .unwrap_err(),
    );
    denied(
        lobby
            .unlink_nostr_key(chess_testkit::acting_as(
                "matchmaking",
                unlink(&a),
                &a,
                None,
            ))
            .await
            .unwrap_err(),
    );
    let by_key = |key: &str| chess_proto::rating::v1::GetPlayerRequest {
        key: Some(Key::NostrPublicKey(key.to_owned())),
    };
    assert_eq!(
        lobby.get_player(by_key(&key)).await.unwrap_err().code(),
        Code::NotFound
    );
    client
        .link_nostr_key(chess_testkit::acting(link(&a), &a, None))
        .await
        .expect("the gateway links for the player");
    // Looking a key up needs only a valid assertion.
    let found = lobby
        .get_player(by_key(&key))
        .await
        .expect("by key")
        .into_inner()
        .profile
        .expect("a profile");
    assert_eq!(found.player_id, a);
    client
        .unlink_nostr_key(chess_testkit::acting(unlink(&a), &a, None))
        .await
        .expect("the gateway unlinks for the player");
}
