//! Readiness: a start waits until every service reports SERVING on the
//! standard gRPC health service, and fails on the first child that exits
//! or the start-up timeout.

use std::{process::ExitStatus, time::Duration};

use tokio::{sync::mpsc, task::JoinSet, time::Instant};
use tonic_health::pb::{
    HealthCheckRequest, health_check_response::ServingStatus, health_client::HealthClient,
};

use crate::{Addresses, Exit, StartError};

/// How long the services have to become SERVING.
pub(crate) const STARTUP_TIMEOUT: Duration = Duration::from_secs(120);

/// Waits until every service of `addresses` is SERVING; the first failure
/// otherwise: a child that exited or could not start, or the start-up
/// timeout.
pub(crate) async fn wait_until_serving(
    addresses: &Addresses,
    exits: &mut mpsc::UnboundedReceiver<Exit>,
) -> Result<(), StartError> {
    let mut health = vec![
        ("engine", addresses.engine.clone()),
        ("rating", addresses.rating.clone()),
        ("matchmaking", addresses.matchmaking.clone()),
        ("gateway", addresses.gateway.clone()),
    ];
    health.extend(addresses.game_replicas.iter().map(|a| ("game", a.clone())));
    // Dropped on failure, which aborts them.
    let mut probes = JoinSet::new();
    for (name, addr) in health {
        probes.spawn(async move { (name, wait_serving(&addr).await) });
    }
    let deadline = Instant::now() + STARTUP_TIMEOUT;
    loop {
        tokio::select! {
            probe = probes.join_next() => match probe {
                None => return Ok(()),
                Some(Ok((_, true))) => {}
                Some(Ok((name, false))) => return Err(StartError::Timeout(name)),
                Some(Err(_)) => return Err(StartError::Timeout("stack")),
            },
            Some(exit) = exits.recv() => return Err(match (exit.status, exit.error) {
                (_, Some(error)) => StartError::ChildNotStarted { name: exit.name, error },
                (status, None) => StartError::ChildExited {
                    name: exit.name,
                    status: status.map_or_else(|| "unknown status".to_owned(), |s: ExitStatus| s.to_string()),
                    code: status.and_then(|s| s.code()),
                },
            }),
            () = tokio::time::sleep_until(deadline) => return Err(StartError::Timeout("stack")),
        }
    }
}

/// Waits until the gRPC server at `addr` reports SERVING; false on timeout.
pub async fn wait_serving(addr: &str) -> bool {
    let deadline = Instant::now() + STARTUP_TIMEOUT;
    let Ok(endpoint) = tonic::transport::Endpoint::from_shared(format!("http://{addr}")) else {
        return false;
    };
    let endpoint = endpoint.connect_timeout(Duration::from_secs(1));
    while Instant::now() < deadline {
        if let Ok(channel) = endpoint.connect().await {
            let mut client = HealthClient::new(channel);
            while Instant::now() < deadline {
                match client
                    .check(HealthCheckRequest {
                        service: String::new(),
                    })
                    .await
                {
                    Ok(r) if r.get_ref().status == ServingStatus::Serving as i32 => return true,
                    Ok(_) => tokio::time::sleep(Duration::from_millis(20)).await,
                    Err(_) => break,
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}
