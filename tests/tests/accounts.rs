//! Logins throttled per account and per source address, registrations per
//! address, and sessions that end: Logout, LogoutEverywhere and
//! ChangePassword, on the gateway that took them and on another one.
//!
//! Source addresses are told apart by connecting from different loopback
//! addresses (127.0.0.2, 127.0.0.3 …), which all reach the gateway on
//! 127.0.0.1.

use std::time::Duration;

use chess_e2e::StackProcess;
use chess_proto::gateway::v1 as pb;
use chess_runtime::{Reason, throttle};
use chess_testkit::{
    Service, free_addr,
    gateway::{Gateway, PASSWORD},
    workspace_binary,
};
use tonic::{Code, Request, Status, transport::Channel};

/// A channel to `gateway` whose connections come from `source`.
async fn channel_from(gateway: &str, source: &str) -> Channel {
    tonic::transport::Endpoint::from_shared(format!("http://{gateway}"))
        .expect("uri")
        .local_address(Some(source.parse().expect("an IP address")))
        .connect()
        .await
        .expect("connect")
}

async fn accounts_from(gateway: &str, source: &str) -> Gateway {
    Gateway::new(channel_from(gateway, source).await)
}

fn signed<T>(message: T, token: &str) -> Request<T> {
    let mut request = Request::new(message);
    request.metadata_mut().insert(
        "authorization",
        format!("Bearer {token}").parse().expect("ascii"),
    );
    request
}

async fn register(accounts: &Gateway, name: &str) -> Result<(), Status> {
    let email = format!("{name}@example.org");
    accounts.register(name, &email).await.map(drop)
}

/// Signs in as `name`; the session's token.
async fn login(accounts: &Gateway, name: &str, password: &str) -> Result<String, Status> {
    Ok(accounts.login(name, password).await?.token)
}

/// The wait a throttled refusal announces.
fn wait_of(status: &Status) -> Duration {
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert_eq!(
        Reason::of(status),
        Some(Reason::TooManyAttempts),
        "{status:?}"
    );
    throttle::wait_of(status).unwrap_or_else(|| panic!("no wait in {:?}", status.message()))
}

/// Wrong passwords for `name` until refused without a check; returns the
/// refusal and how many plain failures came before it.
async fn fail_until_throttled(accounts: &Gateway, name: &str) -> (Status, u32) {
    for failures in 0..20 {
        let status = login(accounts, name, "wrong password")
            .await
            .expect_err("a wrong password was accepted");
        if status.code() == Code::ResourceExhausted {
            return (status, failures);
        }
        assert_eq!(status.code(), Code::Unauthenticated, "{status:?}");
    }
    panic!("20 wrong passwords for {name} and never throttled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_logins_and_registrations_wait() {
    const ACCOUNT_CAP_SECS: u64 = 3;
    let cap = ACCOUNT_CAP_SECS.to_string();
    let stack = StackProcess::start(
        &[],
        &[
            ("CHESS_RATING_LOGIN_BACKOFF_CAP_SECS", cap.as_str()),
            ("CHESS_GATEWAY_LOGIN_FAILURES_PER_ADDRESS", "8"),
            ("CHESS_GATEWAY_REGISTRATIONS_PER_ADDRESS", "3"),
        ],
    )
    .await;
    let gateway = stack.gateway.clone();
    let attacker = accounts_from(&gateway, "127.0.0.2").await;
    let owner = accounts_from(&gateway, "127.0.0.3").await;
    register(&owner, "victim").await.expect("register");

    // Wrong passwords from one address: after a few, the account waits.
    let (refused, failures) = fail_until_throttled(&attacker, "victim").await;
    // Five are free; the sixth imposes the first wait.
    assert!(failures >= 6, "throttled after {failures} failures");
    let wait = wait_of(&refused);
    assert!(wait <= Duration::from_secs(ACCOUNT_CAP_SECS), "{refused:?}");

    // The owner, from another address, waits no longer than the account's
    // cap, however long the attack goes on.
    for _ in 0..3 {
        let _ = login(&attacker, "victim", "wrong password").await;
    }
    match login(&owner, "victim", PASSWORD).await {
        Ok(_) => {}
        Err(status) => {
            assert!(
                wait_of(&status) <= Duration::from_secs(ACCOUNT_CAP_SECS),
                "{status:?}"
            );
            tokio::time::sleep(wait_of(&status)).await;
            login(&owner, "victim", PASSWORD)
                .await
                .expect("the owner signs in after the account's wait");
        }
    }

    // Many accounts from one address: the address waits, others do not.
    let prober = accounts_from(&gateway, "127.0.0.4").await;
    let mut throttled = None;
    for n in 0..12 {
        let status = login(&prober, &format!("nobody_{n}"), "wrong password")
            .await
            .expect_err("an unknown login was accepted");
        if status.code() == Code::ResourceExhausted {
            throttled = Some((n, status));
            break;
        }
    }
    let (attempts, status) = throttled.expect("the address was never throttled");
    // Eight are free; the ninth imposes the first wait.
    assert!(
        attempts >= 9,
        "throttled after {attempts} failures: {status:?}"
    );
    assert!(status.message().contains("address"), "{status:?}");
    wait_of(&status);
    login(&owner, "victim", PASSWORD)
        .await
        .expect("another address is not held up");

    // Registrations: a few per address, then a wait; another address goes on.
    let signups = accounts_from(&gateway, "127.0.0.5").await;
    let mut registered = 0;
    let status = loop {
        match register(&signups, &format!("new_{registered}")).await {
            Ok(()) => registered += 1,
            Err(status) => break status,
        }
        assert!(registered <= 10, "registrations were never throttled");
    };
    assert_eq!(registered, 3, "{status:?}");
    wait_of(&status);
    let elsewhere = accounts_from(&gateway, "127.0.0.6").await;
    register(&elsewhere, "elsewhere")
        .await
        .expect("another address registers");

    stack.stop().await;
}

async fn me(accounts: &Gateway, token: &str) -> Result<(), Status> {
    let request = signed(pb::MeRequest {}, token);
    accounts.accounts().me(request).await.map(drop)
}

fn assert_refused(result: Result<(), Status>, what: &str) {
    let status = result.expect_err(what);
    assert_eq!(status.code(), Code::Unauthenticated, "{what}: {status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_end_by_logout_everywhere_and_password_change() {
    let stack = StackProcess::start(&[], &[]).await;
    let channel = StackProcess::channel(&stack.gateway).await;
    let gateway = Gateway::new(channel);
    let mut accounts = gateway.accounts();
    let mut play = gateway.play();
    register(&gateway, "alice").await.expect("register");
    let laptop = login(&gateway, "alice", PASSWORD).await.unwrap();
    let phone = login(&gateway, "alice", PASSWORD).await.unwrap();
    me(&gateway, &laptop).await.expect("laptop");
    me(&gateway, &phone).await.expect("phone");

    // Logout ends this session only.
    accounts
        .logout(signed(pb::LogoutRequest {}, &laptop))
        .await
        .expect("logout");
    assert_refused(me(&gateway, &laptop).await, "a signed-out token");
    let status = play
        .list_my_games(signed(pb::ListMyGamesRequest::default(), &laptop))
        .await
        .expect_err("a signed-out token plays");
    assert_eq!(status.code(), Code::Unauthenticated);
    assert_refused(
        accounts
            .logout(signed(pb::LogoutRequest {}, &laptop))
            .await
            .map(drop),
        "a second logout",
    );
    me(&gateway, &phone).await.expect("the other session");

    // LogoutEverywhere ends all of them.
    let tablet = login(&gateway, "alice", PASSWORD).await.unwrap();
    accounts
        .logout_everywhere(signed(pb::LogoutEverywhereRequest {}, &phone))
        .await
        .expect("logout everywhere");
    assert_refused(me(&gateway, &phone).await, "the caller's session");
    assert_refused(me(&gateway, &tablet).await, "another session");

    // ChangePassword: the old password is checked, every session ends, the
    // caller gets a new one.
    let laptop = login(&gateway, "alice", PASSWORD).await.unwrap();
    let phone = login(&gateway, "alice", PASSWORD).await.unwrap();
    let change = |old: &str| pb::ChangePasswordRequest {
        old_password: old.to_owned(),
        new_password: "a brand new password".to_owned(),
    };
    let status = accounts
        .change_password(signed(change("not my password"), &laptop))
        .await
        .expect_err("a wrong old password");
    assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
    me(&gateway, &laptop).await.expect("nothing changed");
    let changed = accounts
        .change_password(signed(change(PASSWORD), &laptop))
        .await
        .expect("change password")
        .into_inner();
    assert_eq!(changed.username, "alice");
    assert!(changed.expires_at.is_some());
    assert_refused(me(&gateway, &laptop).await, "the old token");
    assert_refused(me(&gateway, &phone).await, "another old token");
    me(&gateway, &changed.token)
        .await
        .expect("the token ChangePassword returned");
    let status = login(&gateway, "alice", PASSWORD)
        .await
        .expect_err("the old password");
    assert_eq!(status.code(), Code::Unauthenticated);
    let fresh = login(&gateway, "alice", "a brand new password")
        .await
        .expect("the new password");
    me(&gateway, &fresh).await.expect("a new session");

    stack.stop().await;
}

/// Two gateways on one rating service, as replicas behind a load balancer,
/// and a client of each. Account calls need only the rating service; the
/// others are never called.
struct Replicas {
    _dir: tempfile::TempDir,
    /// The two gateways, then the rating service: the order they stop in.
    services: [Service; 3],
    first: Gateway,
    second: Gateway,
    /// How long each keeps a session's state.
    cache: Duration,
}

impl Replicas {
    /// Starts them, the gateways caching session states for `cache_secs`.
    async fn start(cache_secs: u64) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = format!(
            "sqlite://{}?mode=rwc",
            dir.path().join("rating.sqlite").display()
        );
        let rating =
            Service::start(workspace_binary("chess-rating"), &["--database-url", &db]).await;
        let nowhere = free_addr();
        let cache = cache_secs.to_string();
        let mail = dir.path().to_str().expect("utf-8 path");
        let args = [
            "--uqchess-listen",
            "",
            "--rating-addr",
            &rating.addr,
            "--game-addr",
            &nowhere,
            "--matchmaking-addr",
            &nowhere,
            "--token-key",
            "one key that every replica shares",
            "--session-cache-secs",
            &cache,
            "--mail-dir",
            mail,
            "--notify-daily-moves",
            "false",
        ];
        let one = Service::start(workspace_binary("chess-gateway"), &args).await;
        let two = Service::start(workspace_binary("chess-gateway"), &args).await;
        let first = Gateway::new(one.channel().await);
        let second = Gateway::new(two.channel().await);
        Self {
            _dir: dir,
            services: [one, two, rating],
            first,
            second,
            cache: Duration::from_secs(cache_secs),
        }
    }

    async fn stop(self) {
        for service in self.services {
            service.stop().await;
        }
    }
}

/// Registers `name` through the first of `gateways` and signs in once
/// through each; the two sessions' tokens.
async fn sessions(gateways: [&Gateway; 2], name: &str) -> [String; 2] {
    register(gateways[0], name).await.expect("register");
    let mut tokens = Vec::new();
    for gateway in gateways {
        tokens.push(login(gateway, name, PASSWORD).await.expect("sign in"));
    }
    tokens.try_into().expect("two tokens")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_gateway_refuses_an_ended_session_within_its_cache_time() {
    let replicas = Replicas::start(2).await;
    let (first, second) = (&replicas.first, &replicas.second);
    let [token, other] = sessions([first, second], "bob").await;
    // Both replicas accept both tokens, and now hold bob's state.
    for token in [&token, &other] {
        me(first, token).await.expect("first replica");
        me(second, token).await.expect("second replica");
    }

    first
        .accounts()
        .logout(signed(pb::LogoutRequest {}, &token))
        .await
        .expect("logout");
    assert_refused(me(first, &token).await, "at once where it was ended");
    // The second replica's cached state was fetched before the logout; once
    // it is older than the cache time, the state is fetched again.
    tokio::time::sleep(replicas.cache + Duration::from_millis(200)).await;
    assert_refused(me(second, &token).await, "on the other replica");
    me(second, &other).await.expect("the other session");

    // A password changed through the second replica: the first refuses the
    // old tokens within the cache time, and accepts the new one at once
    // (a token newer than its cached state makes it look again).
    me(first, &other)
        .await
        .expect("cached on the first replica");
    let changed = second
        .accounts()
        .change_password(signed(
            pb::ChangePasswordRequest {
                old_password: PASSWORD.to_owned(),
                new_password: "another password".to_owned(),
            },
            &other,
        ))
        .await
        .expect("change password")
        .into_inner();
    me(first, &changed.token)
        .await
        .expect("the new token, on the other replica");
    assert_refused(me(first, &other).await, "the old token");

    replicas.stop().await;
}

/// A player in play has their state kept fresh in the background: an
/// ending made through one replica is refused by the other within three
/// quarters of its cache time, not only once the cached state expires.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_player_in_play_has_an_ending_elsewhere_seen_before_the_cache_expires() {
    // A cache time long enough that the refresh (half to three quarters
    // of it after the fetch) and the expiry are seconds apart on a slow
    // machine.
    let replicas = Replicas::start(12).await;
    let (first, second) = (&replicas.first, &replicas.second);
    let [token, other] = sessions([first, first], "carol").await;
    me(second, &token)
        .await
        .expect("cached on the second replica");

    first
        .accounts()
        .logout(signed(pb::LogoutRequest {}, &token))
        .await
        .expect("logout");
    let ended = tokio::time::Instant::now();
    // Carol goes on with her other session through the second replica.
    // Her state there was fetched before the logout and is good for
    // the cache time; refreshed in the background once half of that has
    // passed (checked every quarter), it ends the session within nine
    // seconds.
    loop {
        me(second, &other).await.expect("the other session");
        if me(second, &token).await.is_err() {
            break;
        }
        assert!(
            ended.elapsed() < replicas.cache - Duration::from_secs(1),
            "the ended session was still accepted after {:?}",
            ended.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_refused(me(second, &token).await, "on the other replica");

    replicas.stop().await;
}
