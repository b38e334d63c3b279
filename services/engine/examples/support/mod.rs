//! What the benchmarks share: starting a `chess-engine` binary and waiting
//! until it serves.

#![allow(dead_code, unreachable_pub)]

use std::{net::SocketAddr, path::PathBuf, process::Stdio, time::Duration};

use anyhow::{Context as _, bail};
use chess_proto::engine::v1::engine_service_client::EngineServiceClient;
use tonic::transport::Channel;
use tonic_health::pb::{
    HealthCheckRequest, health_check_response::ServingStatus, health_client::HealthClient,
};

/// The `chess-engine` binary: `$CHESS_ENGINE_BIN`, else the one built next
/// to this example (`target/<profile>/chess-engine`).
pub fn engine_binary() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os("CHESS_ENGINE_BIN") {
        return Ok(PathBuf::from(path));
    }
    let example = std::env::current_exe()?;
    let profile_dir = example
        .parent()
        .and_then(|examples| examples.parent())
        .context("cannot locate the target directory")?;
    let binary = profile_dir.join("chess-engine");
    if !binary.exists() {
        bail!(
            "{} not found: build it first (cargo build --release -p chess-engine)",
            binary.display()
        );
    }
    Ok(binary)
}

/// A running service, stopped when dropped.
pub struct Engine {
    pub child: tokio::process::Child,
    pub client: EngineServiceClient<Channel>,
}

impl Engine {
    /// Starts `chess-engine` with `args` and waits until it is SERVING.
    pub async fn start(args: &[String]) -> anyhow::Result<Self> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse()?;
        let mut child = tokio::process::Command::new(engine_binary()?)
            .args(["--listen", &addr.to_string(), "--stop-on-stdin-eof"])
            .args(["--log-filter", "warn"])
            .args(args)
            .stdin(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        let channel = loop {
            if let Some(status) = child.try_wait()? {
                bail!("chess-engine exited: {status}");
            }
            if let Ok(channel) = Channel::from_shared(format!("http://{addr}"))?
                .connect()
                .await
            {
                break channel;
            }
            if tokio::time::Instant::now() > deadline {
                bail!("chess-engine did not start listening");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let mut health = HealthClient::new(channel.clone());
        loop {
            let status = health
                .check(HealthCheckRequest {
                    service: String::new(),
                })
                .await
                .ok()
                .map(|r| r.into_inner().status);
            if status == Some(ServingStatus::Serving as i32) {
                break;
            }
            if tokio::time::Instant::now() > deadline {
                bail!("chess-engine did not become SERVING");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(Self {
            child,
            client: EngineServiceClient::new(channel),
        })
    }
}

/// The value after `--name` on the command line, parsed, or `default`.
pub fn flag<T: std::str::FromStr>(name: &str, default: T) -> anyhow::Result<T> {
    let args: Vec<String> = std::env::args().collect();
    match args.iter().position(|a| a == name) {
        Some(i) => args
            .get(i + 1)
            .with_context(|| format!("{name} needs a value"))?
            .parse()
            .map_err(|_| anyhow::anyhow!("invalid value for {name}")),
        None => Ok(default),
    }
}

/// The machine's load averages, for the record.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}
