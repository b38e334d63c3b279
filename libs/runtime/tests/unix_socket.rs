//! A server that also serves on a Unix-domain socket, reached by a
//! `unix:` address: the same service on both sides, a stale socket file
//! replaced, a live one or another file refused, and the file gone once the
//! server stops.

use std::{os::unix::net::UnixListener as StdUnixListener, path::Path, time::Duration};

use chess_runtime::{Server, ServerArgs, server::Error};
use tonic_health::pb::{
    HealthCheckRequest, health_check_response::ServingStatus, health_client::HealthClient,
};

fn args(path: &Path) -> ServerArgs {
    ServerArgs {
        listen: Some("127.0.0.1:0".to_owned()),
        listen_fd: None,
        unix_listen: Some(path.to_owned()),
        unix_listen_fd: None,
        shutdown_grace_secs: 1,
        stop_on_stdin_eof: false,
    }
}

async fn status(addr: &str) -> Result<ServingStatus, tonic::Status> {
    let mut health = HealthClient::new(chess_runtime::channel(addr).expect("a valid address"));
    let answer = health
        .check(HealthCheckRequest {
            service: String::new(),
        })
        .await?;
    Ok(answer.into_inner().status())
}

#[tokio::test]
async fn serves_on_both_sockets_and_removes_its_own_on_stop() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("svc.sock");
    // A socket file left by a server that is gone.
    drop(StdUnixListener::bind(&path).unwrap());
    assert!(path.exists());

    let server = Server::bind("test", &args(&path), "127.0.0.1:0", &[])
        .await
        .expect("a stale socket is replaced");
    let tcp = server.local_addr().to_string();
    let health = server.health();
    let shutdown = server.shutdown();
    let serving = tokio::spawn(server.serve(tonic::service::Routes::default()));
    health.set_ready(true).await;

    let unix = format!("unix:{}", path.display());
    assert_eq!(status(&unix).await.unwrap(), ServingStatus::Serving);
    assert_eq!(status(&tcp).await.unwrap(), ServingStatus::Serving);
    let grpc_style = format!("unix://{}", path.display());
    assert_eq!(status(&grpc_style).await.unwrap(), ServingStatus::Serving);

    // A second server may not take a socket that answers.
    match Server::bind("test", &args(&path), "127.0.0.1:0", &[]).await {
        Err(Error::Listen { addr, source }) => {
            assert_eq!(addr, unix);
            assert_eq!(source.kind(), std::io::ErrorKind::AddrInUse);
        }
        other => panic!("expected the socket in use, got {other:?}"),
    }

    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("the server stops")
        .unwrap()
        .expect("a clean stop");
    assert!(!path.exists(), "the server removes the socket it bound");
    assert!(status(&unix).await.is_err());
}

#[tokio::test]
async fn a_file_that_is_not_a_socket_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data.db");
    std::fs::write(&path, b"games").unwrap();
    let bound = Server::bind("test", &args(&path), "127.0.0.1:0", &[]).await;
    assert!(matches!(bound, Err(Error::Listen { .. })), "{bound:?}");
    assert_eq!(std::fs::read(&path).unwrap(), b"games");
}

#[tokio::test]
async fn an_unreachable_socket_fails_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let missing = format!("unix:{}", dir.path().join("none.sock").display());
    let status = status(&missing).await.expect_err("nothing listens there");
    assert_eq!(status.code(), tonic::Code::Unavailable);
}
