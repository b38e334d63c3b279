//! Logins throttled per account and per source address, and registrations
//! per address.
//!
//! Source addresses are told apart by connecting from different loopback
//! addresses (127.0.0.2, 127.0.0.3 …), which all reach the gateway on
//! 127.0.0.1.

use std::time::Duration;

use chess_e2e::StackProcess;
use chess_proto::gateway::v1::{self as pb, account_service_client::AccountServiceClient};
use chess_runtime::{Reason, throttle};
use tonic::{Code, Status, transport::Channel};

const PASSWORD: &str = "correct horse battery";

/// A channel to `gateway` whose connections come from `source`.
async fn channel_from(gateway: &str, source: &str) -> Channel {
    tonic::transport::Endpoint::from_shared(format!("http://{gateway}"))
        .expect("uri")
        .local_address(Some(source.parse().expect("an IP address")))
        .connect()
        .await
        .expect("connect")
}

async fn accounts_from(gateway: &str, source: &str) -> AccountServiceClient<Channel> {
    AccountServiceClient::new(channel_from(gateway, source).await)
}

async fn register(accounts: &mut AccountServiceClient<Channel>, name: &str) -> Result<(), Status> {
    accounts
        .register(pb::RegisterRequest {
            username: name.to_owned(),
            email: format!("{name}@example.org"),
            password: PASSWORD.to_owned(),
        })
        .await
        .map(drop)
}

async fn login(
    accounts: &mut AccountServiceClient<Channel>,
    name: &str,
    password: &str,
) -> Result<String, Status> {
    accounts
        .login(pb::LoginRequest {
            login: name.to_owned(),
            password: password.to_owned(),
        })
        .await
        .map(|r| r.into_inner().token)
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
async fn fail_until_throttled(
    accounts: &mut AccountServiceClient<Channel>,
    name: &str,
) -> (Status, u32) {
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
    let mut attacker = accounts_from(&gateway, "127.0.0.2").await;
    let mut owner = accounts_from(&gateway, "127.0.0.3").await;
    register(&mut owner, "victim").await.expect("register");

    // Wrong passwords from one address: after a few, the account waits.
    let (refused, failures) = fail_until_throttled(&mut attacker, "victim").await;
    // Five are free; the sixth imposes the first wait.
    assert!(failures >= 6, "throttled after {failures} failures");
    let wait = wait_of(&refused);
    assert!(wait <= Duration::from_secs(ACCOUNT_CAP_SECS), "{refused:?}");

    // The owner, from another address, waits no longer than the account's
    // cap, however long the attack goes on.
    for _ in 0..3 {
        let _ = login(&mut attacker, "victim", "wrong password").await;
    }
    match login(&mut owner, "victim", PASSWORD).await {
        Ok(_) => {}
        Err(status) => {
            assert!(
                wait_of(&status) <= Duration::from_secs(ACCOUNT_CAP_SECS),
                "{status:?}"
            );
            tokio::time::sleep(wait_of(&status)).await;
            login(&mut owner, "victim", PASSWORD)
                .await
                .expect("the owner signs in after the account's wait");
        }
    }

    // Many accounts from one address: the address waits, others do not.
    let mut prober = accounts_from(&gateway, "127.0.0.4").await;
    let mut throttled = None;
    for n in 0..12 {
        let status = login(&mut prober, &format!("nobody_{n}"), "wrong password")
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
    login(&mut owner, "victim", PASSWORD)
        .await
        .expect("another address is not held up");

    // Registrations: a few per address, then a wait; another address goes on.
    let mut signups = accounts_from(&gateway, "127.0.0.5").await;
    let mut registered = 0;
    let status = loop {
        match register(&mut signups, &format!("new_{registered}")).await {
            Ok(()) => registered += 1,
            Err(status) => break status,
        }
        assert!(registered <= 10, "registrations were never throttled");
    };
    assert_eq!(registered, 4, "{status:?}");
    wait_of(&status);
    let mut elsewhere = accounts_from(&gateway, "127.0.0.6").await;
    register(&mut elsewhere, "elsewhere")
        .await
        .expect("another address registers");

    stack.stop().await;
}
