//! Accounts end to end: registration and its rules, logins and their
//! throttle, sessions ended one by one or all at once, password changes;
//! every test body run once on a SQLite file and once on PostgreSQL.

mod common;

use std::collections::HashSet;

use chess_proto::{
    common::v1::RatingSystem,
    rating::v1::{self as pb, get_player_request::Key},
};
use common::{
    Client, PASSWORD, RatingService, assert_refused, login_request, register, register_request,
};
use futures::future::join_all;
use tonic::Code;

common::on_sqlite_and_postgres!(
    registration_rules_and_duplicates,
    authentication,
    failed_logins_of_an_account_wait,
    sessions_end_one_by_one_or_all_at_once,
    a_password_change_ends_every_session,
);

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
    let requests = names
        .iter()
        .enumerate()
        .map(|(i, name)| register_request(name, &format!("racer{i}@example.org"), PASSWORD));
    one_wins(&client, requests, "username").await;
    let emails = ["Same@example.org", "same@EXAMPLE.org", "SAME@example.org"];
    let requests = (emails.iter().enumerate())
        .map(|(i, email)| register_request(&format!("same{i}"), email, PASSWORD));
    one_wins(&client, requests, "email").await;

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
    assert_refused(
        client
            .get_player(pb::GetPlayerRequest {
                key: Some(Key::Username("nobody".into())),
            })
            .await,
        Code::NotFound,
    );

    service.stop().await;
}

/// Sends `requests` together: exactly one registers, and each other is
/// refused as a duplicate of its `field`.
async fn one_wins(
    client: &common::Client,
    requests: impl Iterator<Item = pb::RegisterRequest>,
    field: &str,
) {
    let attempts = requests.map(|request| {
        let mut client = client.clone();
        async move { client.register(request).await }
    });
    let outcomes = join_all(attempts).await;
    assert_eq!(outcomes.iter().filter(|o| o.is_ok()).count(), 1);
    for outcome in outcomes.iter().filter_map(|o| o.as_ref().err()) {
        assert_eq!(outcome.code(), Code::AlreadyExists, "{outcome}");
        assert!(outcome.message().contains(field), "{outcome}");
    }
}

async fn authentication(url: &str) {
    let (service, mut client, [id]) = RatingService::with_players(url, ["Magnus"]).await;

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

/// The wait a `too-many-attempts` refusal asks for.
fn throttled_wait(status: &tonic::Status) -> std::time::Duration {
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    chess_runtime::throttle::wait_of(status).unwrap_or_else(|| panic!("no wait in {status:?}"))
}

/// Signs in as `login` with a wrong password until the login waits: how
/// many plain refusals came first, and the refusal that asks to wait.
async fn fail_until_throttled(client: &mut Client, login: &str) -> (u32, tonic::Status) {
    let mut refused = 0;
    loop {
        let status = client
            .authenticate(login_request(login, "wrong password"))
            .await
            .expect_err("wrong password accepted");
        if status.code() == Code::ResourceExhausted {
            return (refused, status);
        }
        assert_eq!(status.code(), Code::Unauthenticated);
        refused += 1;
        assert!(refused <= 8, "never throttled");
    }
}

async fn failed_logins_of_an_account_wait(url: &str) {
    let service = RatingService::start_with(url, &["--login-backoff-cap-secs", "2"]).await;
    let mut client = service.client().await;
    register(&mut client, "Target").await;

    // The free failures are plain refusals; then the account waits, and the
    // password is not even checked: the right one is refused too.
    let (refused, waiting) = fail_until_throttled(&mut client, "target").await;
    let wait = throttled_wait(&waiting);
    assert!(refused >= 5, "throttled after {refused} failures");
    assert!(wait <= std::time::Duration::from_secs(2), "{wait:?}");
    let status = client
        .authenticate(login_request("Target@example.org", PASSWORD))
        .await
        .expect_err("a waiting account checked a password");
    assert!(throttled_wait(&status) <= std::time::Duration::from_secs(2));

    // Names nobody owns wait alike, so the answers tell no names apart.
    let (_, unknown) = fail_until_throttled(&mut client, "nobody_here").await;
    throttled_wait(&unknown);

    // After the wait (the cap) the right password works, and forgives.
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    client
        .authenticate(login_request("target", PASSWORD))
        .await
        .expect("the owner signs in after the wait");
    assert_refused(
        client
            .authenticate(login_request("target", "wrong password"))
            .await,
        Code::Unauthenticated,
    );

    service.stop().await;
}

fn state(state: Option<pb::SessionState>) -> (i64, Vec<String>) {
    let state = state.expect("a session state");
    let mut revoked = state.revoked_session_ids;
    revoked.sort();
    (state.generation, revoked)
}

fn in_an_hour() -> prost_types::Timestamp {
    let now = chess_domain::Timestamp::now().secs();
    chess_domain::Timestamp::from_secs(now + 3600).to_proto()
}

/// `player_id`'s session generation and revoked sessions.
async fn session_state(client: &mut Client, player_id: &str) -> (i64, Vec<String>) {
    let request = pb::GetSessionStateRequest {
        player_id: player_id.into(),
    };
    let answer = client.get_session_state(request).await;
    state(answer.expect("session state").into_inner().state)
}

/// The session generation `login` signs in with.
async fn signed_in_generation(client: &mut Client, login: &str) -> i64 {
    let answer = client.authenticate(login_request(login, PASSWORD)).await;
    answer.expect("login").into_inner().session_generation
}

async fn sessions_end_one_by_one_or_all_at_once(url: &str) {
    let (service, mut client, [id, other]) =
        RatingService::with_players(url, ["Sessions", "Bystander"]).await;

    assert_eq!(signed_in_generation(&mut client, "sessions").await, 0);
    let get = |player_id: &str| pb::GetSessionStateRequest {
        player_id: player_id.into(),
    };
    assert_eq!(session_state(&mut client, &id).await, (0, vec![]));

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
    assert_eq!(
        session_state(&mut client, &id).await,
        (0, vec!["s-1".to_owned(), "s-2".to_owned()])
    );
    // Another player's sessions are untouched.
    assert_eq!(session_state(&mut client, &other).await, (0, vec![]));
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
    assert_refused(
        client
            .get_session_states(pb::GetSessionStatesRequest {
                player_ids: vec![id.clone(); 1001],
            })
            .await,
        Code::InvalidArgument,
    );

    let all = client
        .revoke_all_sessions(pb::RevokeAllSessionsRequest {
            player_id: id.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(state(all.state), (1, vec![]));
    assert_eq!(signed_in_generation(&mut client, "sessions").await, 1);

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
    assert_refused(
        client
            .revoke_session(revoke(&"x".repeat(65), in_an_hour()))
            .await,
        Code::InvalidArgument,
    );

    // The generation survives a restart.
    service.stop().await;
    let service = RatingService::start(url).await;
    let mut client = service.client().await;
    assert_eq!(session_state(&mut client, &id).await, (1, vec![]));
    service.stop().await;
}

async fn a_password_change_ends_every_session(url: &str) {
    let (service, mut client, [id]) = RatingService::with_players(url, ["Changer"]).await;
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
    assert_refused(
        client
            .change_password(change(PASSWORD, "another password"))
            .await,
        Code::PermissionDenied,
    );

    service.stop().await;
}
