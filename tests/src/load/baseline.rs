//! Round trips with nothing in them, measured in the same run as the load:
//! a line echoed over loopback TCP, and a tonic unary call (the standard
//! health check) to an in-process server. Every latency is reported as a
//! multiple of these, so figures from a shared, noisy machine compare.

use std::time::{Duration, Instant};

use tokio::{
    io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader},
    net::{TcpListener, TcpStream},
};
use tonic::transport::server::TcpIncoming;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

use super::stats::Samples;

/// Round trips of a short line through a loopback TCP echo server.
pub async fn tcp_echo(rounds: usize) -> std::io::Result<Samples> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        if let Ok((stream, _)) = listener.accept().await {
            // The echo ends when the client hangs up.
            let _ = stream.set_nodelay(true);
            let (read, mut write) = stream.into_split();
            let mut lines = BufReader::new(read).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if write
                    .write_all(format!("{line}\n").as_bytes())
                    .await
                    .is_err()
                {
                    break;
                }
            }
        }
    });
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read).lines();
    let mut samples = Samples::default();
    for _ in 0..rounds {
        let start = Instant::now();
        write.write_all(b"move e2e4\n").await?;
        lines.next_line().await?;
        samples.record(start.elapsed());
    }
    Ok(samples)
}

/// Round trips of a tonic unary call to an in-process server.
///
/// Both ends set `TCP_NODELAY`, as the services' servers and clients do.
/// Without it on the server's side, an answer's last frames could wait for
/// the client's delayed acknowledgement (about 40 ms) whenever the kernel
/// held them back behind the first (Nagle's algorithm), in about one call
/// in a thousand.
pub async fn tonic_unary(rounds: usize) -> Result<Samples, Box<dyn std::error::Error>> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let (_reporter, service) = tonic_health::server::health_reporter();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming(TcpIncoming::from(listener).with_nodelay(Some(true))),
    );
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))?
        .tcp_nodelay(true)
        .connect()
        .await?;
    let mut client = HealthClient::new(channel);
    let mut samples = Samples::default();
    for _ in 0..rounds {
        let start = Instant::now();
        client
            .check(HealthCheckRequest {
                service: String::new(),
            })
            .await?;
        samples.record(start.elapsed());
    }
    Ok(samples)
}

/// Both baselines' medians: (TCP echo, tonic unary).
pub async fn medians(rounds: usize) -> Result<(Duration, Duration), Box<dyn std::error::Error>> {
    // A first pass warms up both paths.
    tcp_echo(rounds / 10).await?;
    tonic_unary(rounds / 10).await?;
    let tcp = tcp_echo(rounds)
        .await?
        .summary()
        .map_or(Duration::ZERO, |s| s.p50);
    let grpc = tonic_unary(rounds)
        .await?
        .summary()
        .map_or(Duration::ZERO, |s| s.p50);
    Ok((tcp, grpc))
}

/// `chess-load baseline`: `rounds` round trips of each kind, reported.
pub async fn report(rounds: usize) -> Result<(), super::scenario::Error> {
    let tcp = tcp_echo(rounds).await?;
    let grpc = tonic_unary(rounds).await.map_err(|e| e.to_string())?;
    if let (Some(t), Some(g)) = (tcp.summary(), grpc.summary()) {
        println!("loopback TCP echo  {}", t.line(None));
        println!("tonic unary        {}", g.line(None));
    }
    Ok(())
}
