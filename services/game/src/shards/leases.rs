//! The leases of the shards, in PostgreSQL (replicas sharing a database).
//!
//! `game_shards` has a row per shard: the replica that owns it (`owner`),
//! the lease's `epoch` (raised by every takeover, so each lease is told
//! apart from all others) and until when it holds (`expires_at`), and when
//! its owner last renewed it or gave it up (`renewed_at`). `game_replicas`
//! has a row per live replica, with its address and the time of its last
//! heartbeat. Every time is the database's clock, in milliseconds since the
//! Unix epoch, so the replicas' clocks never decide who owns what.
//!
//! Taking a shard locks its row `FOR UPDATE`, which waits for any write
//! of the previous owner still under way (they hold the row `FOR KEY SHARE`,
//! see `store::writer`); once the takeover commits, the old owner's writes
//! fail. Renewing changes no key and takes no lock that conflicts with the
//! writes.

use std::collections::HashSet;

use chess_domain::Timestamp;
use sea_orm::{ConnectionTrait as _, DatabaseConnection, DbBackend, DbErr, Statement, Value};

use super::Replica;

/// The database's clock, in milliseconds since the Unix epoch.
const NOW: &str = "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint";

/// A shard's lease as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    pub shard: u16,
    pub owner: Option<String>,
    pub epoch: i64,
    pub expires_at: Timestamp,
    pub renewed_at: Timestamp,
}

/// Every lease and every live replica, read at `now` (the database's clock).
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub now: Timestamp,
    pub leases: Vec<Lease>,
    pub replicas: Vec<Replica>,
}

/// A shard just taken: the new lease's epoch, and when the shard was last
/// served before (its previous owner's last renewal or release).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Taken {
    pub shard: u16,
    pub epoch: i64,
    pub previous_renewal: Timestamp,
}

fn statement(sql: String, values: Vec<Value>) -> Statement {
    Statement::from_sql_and_values(DbBackend::Postgres, sql, values)
}

/// `shards` as a SQL list (our own numbers, never a caller's text).
fn list(shards: impl IntoIterator<Item = u16>) -> String {
    shards
        .into_iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Records that `me` (this process: `instance`) is alive.
pub async fn heartbeat(db: &DatabaseConnection, me: &Replica, instance: &str) -> Result<(), DbErr> {
    db.execute_raw(statement(
        format!(
            "INSERT INTO game_replicas (id, address, instance, heartbeat_at) \
             VALUES ($1, $2, $3, {NOW}) \
             ON CONFLICT (id) DO UPDATE SET address = EXCLUDED.address, \
             instance = EXCLUDED.instance, heartbeat_at = EXCLUDED.heartbeat_at"
        ),
        vec![
            me.id.clone().into(),
            me.address.clone().into(),
            instance.into(),
        ],
    ))
    .await?;
    Ok(())
}

/// Extends the leases `held` (shard, epoch) that `replica` still has by
/// `ttl_ms`; returns the shards renewed (the others are lost).
pub async fn renew(
    db: &DatabaseConnection,
    replica: &str,
    held: &[(u16, i64)],
    ttl_ms: i64,
) -> Result<HashSet<u16>, DbErr> {
    if held.is_empty() {
        return Ok(HashSet::new());
    }
    let pairs: Vec<String> = held.iter().map(|(s, e)| format!("({s}, {e})")).collect();
    let rows = db
        .query_all_raw(statement(
            format!(
                "UPDATE game_shards SET expires_at = {NOW} + $2, renewed_at = {NOW} \
                 WHERE owner = $1 AND (shard, epoch) IN ({}) RETURNING shard",
                pairs.join(", ")
            ),
            vec![replica.into(), ttl_ms.into()],
        ))
        .await?;
    rows.into_iter()
        .map(|row| Ok(row.try_get::<i32>("", "shard")? as u16))
        .collect()
}

/// Every lease, and the replicas whose heartbeat is younger than `ttl_ms`.
pub async fn read(db: &DatabaseConnection, ttl_ms: i64) -> Result<Snapshot, DbErr> {
    let now = db
        .query_one_raw(statement(format!("SELECT {NOW} AS now"), Vec::new()))
        .await?
        .ok_or_else(|| DbErr::Custom("the database did not tell its time".to_owned()))?
        .try_get("", "now")
        .map(Timestamp::from_millis)?;
    let leases = db
        .query_all_raw(statement(
            "SELECT shard, owner, epoch, expires_at, renewed_at FROM game_shards ORDER BY shard"
                .to_owned(),
            Vec::new(),
        ))
        .await?
        .into_iter()
        .map(|row| {
            Ok(Lease {
                shard: row.try_get::<i32>("", "shard")? as u16,
                owner: row.try_get("", "owner")?,
                epoch: row.try_get("", "epoch")?,
                expires_at: Timestamp::from_millis(row.try_get("", "expires_at")?),
                renewed_at: Timestamp::from_millis(row.try_get("", "renewed_at")?),
            })
        })
        .collect::<Result<Vec<_>, DbErr>>()?;
    let replicas = db
        .query_all_raw(statement(
            "SELECT id, address FROM game_replicas WHERE heartbeat_at > $1 ORDER BY id".to_owned(),
            vec![now.plus_millis(-ttl_ms).millis().into()],
        ))
        .await?
        .into_iter()
        .map(|row| {
            Ok(Replica {
                id: row.try_get("", "id")?,
                address: row.try_get("", "address")?,
            })
        })
        .collect::<Result<Vec<_>, DbErr>>()?;
    Ok(Snapshot {
        now,
        leases,
        replicas,
    })
}

/// Takes those of `shards` whose lease is free or has expired (or, with
/// `reclaim`, is held by `replica` itself: a restarted replica taking back
/// what its previous process held) for `ttl_ms`, each under a new epoch.
pub async fn take(
    db: &DatabaseConnection,
    replica: &str,
    shards: &[u16],
    ttl_ms: i64,
    reclaim: bool,
) -> Result<Vec<Taken>, DbErr> {
    if shards.is_empty() {
        return Ok(Vec::new());
    }
    let own = if reclaim { " OR owner = $1" } else { "" };
    let rows = db
        .query_all_raw(statement(
            format!(
                "UPDATE game_shards g SET owner = $1, epoch = g.epoch + 1, \
                 expires_at = {NOW} + $2, renewed_at = {NOW} \
                 FROM (SELECT shard, renewed_at FROM game_shards \
                       WHERE shard IN ({}) AND (owner IS NULL OR expires_at < {NOW}{own}) \
                       FOR UPDATE) previous \
                 WHERE g.shard = previous.shard \
                 RETURNING g.shard, g.epoch, previous.renewed_at AS previous_renewal",
                list(shards.iter().copied())
            ),
            vec![replica.into(), ttl_ms.into()],
        ))
        .await?;
    rows.into_iter()
        .map(|row| {
            Ok(Taken {
                shard: row.try_get::<i32>("", "shard")? as u16,
                epoch: row.try_get("", "epoch")?,
                previous_renewal: Timestamp::from_millis(row.try_get("", "previous_renewal")?),
            })
        })
        .collect()
}

/// Gives up `replica`'s lease of `shard` under `epoch`, so that another
/// replica may take it at once; false if it was no longer held.
pub async fn release(
    db: &DatabaseConnection,
    replica: &str,
    shard: u16,
    epoch: i64,
) -> Result<bool, DbErr> {
    let done = db
        .execute_raw(statement(
            format!(
                "UPDATE game_shards SET owner = NULL, expires_at = 0, renewed_at = {NOW} \
                 WHERE shard = {shard} AND owner = $1 AND epoch = {epoch}"
            ),
            vec![replica.into()],
        ))
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Removes the heartbeat of `replica` (this process: `instance`), so that
/// the others stop counting on it at once.
pub async fn leave(db: &DatabaseConnection, replica: &str, instance: &str) -> Result<(), DbErr> {
    db.execute_raw(statement(
        "DELETE FROM game_replicas WHERE id = $1 AND instance = $2".to_owned(),
        vec![replica.into(), instance.into()],
    ))
    .await?;
    Ok(())
}

/// Forgets replicas not heard from for `ms`.
pub async fn forget_replicas_older_than(db: &DatabaseConnection, ms: i64) -> Result<(), DbErr> {
    db.execute_raw(statement(
        format!("DELETE FROM game_replicas WHERE heartbeat_at < {NOW} - $1"),
        vec![ms.into()],
    ))
    .await?;
    Ok(())
}
