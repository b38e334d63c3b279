//! The public API on the gateway's Unix socket (`--unix-listen`), and the
//! per-address limit on failed logins, which its callers share.

mod common;

use chess_proto::gateway::v1::{self as pb, account_service_client::AccountServiceClient};
use common::System;
use tonic::Code;

/// A failed login for `name` through `accounts` (a client over any
/// transport); returns the refusal.
macro_rules! fail_login {
    ($accounts:expr, $name:expr) => {
        $accounts
            .login(pb::LoginRequest {
                login: $name.to_owned(),
                password: "wrong password".to_owned(),
            })
            .await
            .expect_err("an unknown login was accepted")
    };
}

#[tokio::test]
async fn callers_on_the_unix_socket_count_as_one_local_address() {
    let sockets = tempfile::tempdir().unwrap();
    let path = sockets.path().join("gateway.sock").display().to_string();
    let system =
        System::start(&["--unix-listen", &path, "--login-failures-per-address", "3"]).await;
    let on_socket = || {
        AccountServiceClient::new(chess_runtime::channel(&format!("unix:{path}")).expect("channel"))
    };

    // The public API answers on the socket.
    let mut first = on_socket();
    let user = system.sign_up("local").await;
    let me = first
        .me(user.call(pb::MeRequest {}))
        .await
        .expect("Me over the Unix socket")
        .into_inner();
    assert_eq!(me.email, "local@example.org", "{me:?}");

    // Failed logins over the socket count against one address: after the
    // three free ones, it waits.
    let mut refused = None;
    for n in 0..10 {
        let status = fail_login!(first, format!("nobody_{n}"));
        if status.code() == Code::ResourceExhausted {
            refused = Some((n, status));
            break;
        }
        assert_eq!(status.code(), Code::Unauthenticated, "{status:?}");
    }
    let (failures, status) = refused.expect("failed logins over the socket were never throttled");
    assert!(failures >= 3, "throttled after {failures}: {status:?}");
    assert!(status.message().contains("address"), "{status:?}");

    // Another connection on the socket is the same source, and so is a TCP
    // caller on the loopback address.
    let status = fail_login!(on_socket(), "someone_else");
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    let status = fail_login!(system.accounts().await, "someone_else");
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");

    // A caller from another address is not held up.
    let elsewhere =
        tonic::transport::Endpoint::from_shared(format!("http://{}", system.gateway.addr))
            .expect("uri")
            .local_address(Some("127.0.0.2".parse().expect("an IP address")))
            .connect()
            .await
            .expect("connect from 127.0.0.2");
    let status = fail_login!(AccountServiceClient::new(elsewhere), "someone_else");
    assert_eq!(status.code(), Code::Unauthenticated, "{status:?}");
}
