//! `chess-load idle`: the gateway's memory per idle uqchess connection,
//! and after the connections leave.

use std::{collections::BTreeMap, time::Duration};

use super::{
    procs,
    scenario::{Error, Setup, print_usage, service_usage},
    uqchess,
};

/// Runs the scenario with `connections` idle connections.
pub async fn run(setup: &Setup, connections: usize) -> Result<(), Error> {
    // The gateway's allocator hands freed memory back within about ten
    // seconds.
    const SETTLE: Duration = Duration::from_secs(15);
    let (stack, _) = setup.start_stack().await;
    let port = stack.uqchess_port();
    let gateway = || service_usage(&stack, "chess-gateway").ok_or("no gateway process");
    // Warm the gateway up so one-off allocations are not charged to the
    // connections.
    drop(uqchess::idle_connections(port, 100).await?);
    tokio::time::sleep(SETTLE).await;
    let before = gateway()?;
    let open = uqchess::idle_connections(port, connections).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let during = gateway()?;
    let cpu = during.cpu_secs;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let held = gateway()?;
    drop(open);
    tokio::time::sleep(SETTLE).await;
    let after = gateway()?;
    // A second crowd: nothing the first one left behind adds up.
    drop(uqchess::idle_connections(port, connections).await?);
    tokio::time::sleep(SETTLE).await;
    let again = gateway()?;
    let per = (during.rss_kib as f64 - before.rss_kib as f64) / connections as f64;
    println!("gateway RSS before: {} KiB", before.rss_kib);
    println!(
        "gateway RSS with {connections} idle connections: {} KiB = {per:.2} KiB per connection",
        during.rss_kib
    );
    println!(
        "gateway CPU over 5 s holding them idle: {:.3} s",
        held.cpu_secs - cpu
    );
    println!(
        "gateway RSS {} s after they left: {} KiB; after a second crowd came and went: {} KiB",
        SETTLE.as_secs(),
        after.rss_kib,
        again.rss_kib
    );
    let idle_usage = procs::tree_usage(stack.pid());
    print_usage("processes:", &idle_usage, &BTreeMap::new(), 1.0);
    stack.stop().await;
    Ok(())
}
