//! A lone replica (SQLite): it serves every shard, and its heartbeat in the
//! database tells, after a restart, since when no replica ran the games, so
//! that time is given back to the players to move, as replicas taking over
//! a shard do.

use std::{sync::Arc, time::Duration};

use chess_runtime::Shutdown;

use crate::{
    error::Error,
    registry::Registry,
    store::{self, WriteOp},
};

/// How often a lone replica records that it is alive.
const HEARTBEAT: Duration = Duration::from_secs(1);

/// Starts every active game, each given back the time since the last
/// heartbeat (or since its last move, if later); returns how many.
pub async fn resume(registry: &Arc<Registry>) -> Result<usize, Error> {
    let ctx = registry.context();
    let last_alive = ctx.store.last_heartbeat().await?;
    let mut games = ctx.store.load_active(None).await?;
    let now = ctx.time.now();
    let mut credits = Vec::new();
    for game in &mut games {
        if let Some(credit) = game.credit_ownerless(last_alive, now) {
            credits.push(store::credit_op(game, &credit));
        }
    }
    ctx.store.write(None, credits).await?;
    let count = games.len();
    registry.start_all(games)?;
    Ok(count)
}

/// Records a heartbeat every second until shutdown, and a last one then.
pub async fn keep_alive(registry: Arc<Registry>, shutdown: Shutdown) {
    let ctx = Arc::clone(registry.context());
    loop {
        let beat = vec![WriteOp::Heartbeat(ctx.time.now())];
        if let Err(e) = ctx.store.write(None, beat).await {
            tracing::warn!(error = %e, "cannot record the heartbeat");
        }
        tokio::select! {
            () = tokio::time::sleep(HEARTBEAT) => {}
            () = shutdown.cancelled() => break,
        }
    }
    let _ = ctx
        .store
        .write(None, vec![WriteOp::Heartbeat(ctx.time.now())])
        .await;
}
