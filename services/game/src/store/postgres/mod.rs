//! What the store does only on PostgreSQL: fencing the writes of replicas
//! that share the database.
//!
//! Every write of a game is fenced by the lease of its shard: it carries
//! the shard and the lease's epoch as its replica knows them, and the same
//! transaction (the same statement, for moves alone) checks that the
//! replica still holds that lease, taking a `FOR KEY SHARE` lock on the
//! lease row. A replica taking the shard over locks that row `FOR UPDATE`
//! (see `shards::leases`), so it waits for the writes already under way and
//! every later write of the deposed replica finds the new epoch and fails
//! with [`StoreError::Fenced`] instead of forking the game. Lease renewals
//! change no key and take no lock that conflicts with the writes.

use std::collections::{HashMap, HashSet};

use sea_orm::{
    ConnectionTrait as _, DatabaseConnection, DatabaseTransaction, DbBackend, DbErr, Statement,
    TransactionTrait as _, Value,
};

use super::{
    Fence, StoreError, WriteOp, plan,
    writer::{Answers, Job, together_or_alone},
};

/// The replica whose leases the writes are checked against.
pub(super) struct Fencing {
    pub(super) replica: String,
}

impl Fencing {
    /// Commits a batch, each job only under its lease. Moves alone go in
    /// one statement that checks the leases itself; anything else in a
    /// transaction that checks them first.
    pub(super) async fn commit(&self, db: &DatabaseConnection, batch: &[Job]) -> Answers {
        let together = if batch.iter().all(|j| plan::only_moves(&j.ops)) {
            self.insert_moves(db, batch).await
        } else {
            self.commit_in_transaction(db, batch).await
        };
        together_or_alone(batch, together, |job| async move {
            match self
                .commit_in_transaction(db, std::slice::from_ref(job))
                .await
            {
                Ok(mut r) => r.pop().unwrap_or(Ok(())),
                Err(e) => Err(e.into()),
            }
        })
        .await
    }

    /// The leases of `fences` among the replica's, as a SQL condition on
    /// `game_shards` (the numbers are ours, never a caller's text).
    fn lease_condition(&self, fences: &HashSet<Fence>) -> String {
        let pairs: Vec<String> = fences
            .iter()
            .map(|f| format!("({}, {})", f.shard, f.epoch))
            .collect();
        if pairs.is_empty() {
            "FALSE".to_owned()
        } else {
            format!("owner = $1 AND (shard, epoch) IN ({})", pairs.join(", "))
        }
    }

    /// Moves of many games in one statement: only those whose lease the
    /// replica still holds are inserted (`RETURNING` tells which).
    async fn insert_moves(&self, db: &DatabaseConnection, batch: &[Job]) -> Result<Answers, DbErr> {
        let fences: HashSet<Fence> = batch.iter().filter_map(|j| j.fence).collect();
        let mut values: Vec<Value> = vec![self.replica.clone().into()];
        let mut rows = Vec::new();
        for job in batch {
            let shard = job.fence.map_or(-1, |f| i32::from(f.shard));
            for op in &job.ops {
                let WriteOp::InsertMove(mv) = op else {
                    continue;
                };
                let n = values.len();
                rows.push(format!(
                    "(${}, ${}::integer, ${}, ${}, ${}, ${}::bigint, ${}::bigint, {shard})",
                    n + 1,
                    n + 2,
                    n + 3,
                    n + 4,
                    n + 5,
                    n + 6,
                    n + 7,
                ));
                values.extend([
                    mv.game_id.clone().into(),
                    mv.ply.into(),
                    mv.uci.clone().into(),
                    mv.san.clone().into(),
                    mv.submitted.clone().into(),
                    mv.played_at.into(),
                    mv.clock_after_ms.into(),
                ]);
            }
        }
        let sql = format!(
            "WITH lease AS MATERIALIZED \
               (SELECT shard FROM game_shards WHERE {} FOR KEY SHARE) \
             INSERT INTO moves (game_id, ply, uci, san, submitted, played_at, clock_after_ms) \
             SELECT v.game_id, v.ply, v.uci, v.san, v.submitted, v.played_at, v.clock_after_ms \
             FROM (VALUES {}) AS v(game_id, ply, uci, san, submitted, played_at, clock_after_ms, shard) \
             WHERE v.shard IN (SELECT shard FROM lease) \
             RETURNING game_id, ply",
            self.lease_condition(&fences),
            rows.join(", ")
        );
        let inserted: HashSet<(String, i32)> = db
            .query_all_raw(Statement::from_sql_and_values(
                DbBackend::Postgres,
                sql,
                values,
            ))
            .await?
            .into_iter()
            .map(|row| Ok((row.try_get("", "game_id")?, row.try_get("", "ply")?)))
            .collect::<Result<_, DbErr>>()?;
        Ok(batch
            .iter()
            .map(|job| {
                let all_in = job.ops.iter().all(|op| match op {
                    WriteOp::InsertMove(mv) => inserted.contains(&(mv.game_id.clone(), mv.ply)),
                    _ => true,
                });
                if all_in {
                    Ok(())
                } else {
                    Err(fenced(job.fence))
                }
            })
            .collect())
    }

    /// A transaction that locks the batch's leases, drops the jobs whose
    /// lease the replica no longer holds, and commits the others' writes.
    async fn commit_in_transaction(
        &self,
        db: &DatabaseConnection,
        batch: &[Job],
    ) -> Result<Answers, DbErr> {
        let txn = db.begin().await?;
        let fences: HashSet<Fence> = batch.iter().filter_map(|j| j.fence).collect();
        let held = held_leases(&txn, &self.replica, &self.lease_condition(&fences)).await?;
        let mut results = Vec::with_capacity(batch.len());
        let mut ops: Vec<&WriteOp> = Vec::new();
        for job in batch {
            match job.fence {
                Some(fence) if held.get(&fence.shard) != Some(&fence.epoch) => {
                    results.push(Err(fenced(job.fence)));
                }
                _ => {
                    ops.extend(job.ops.iter());
                    results.push(Ok(()));
                }
            }
        }
        plan::write_ops(&txn, &ops).await?;
        txn.commit().await?;
        Ok(results)
    }
}

/// The leases matching `condition` (binding `$1` to `replica`), locked
/// against a takeover until the transaction ends: shard → epoch.
async fn held_leases(
    txn: &DatabaseTransaction,
    replica: &str,
    condition: &str,
) -> Result<HashMap<u16, i64>, DbErr> {
    if condition == "FALSE" {
        return Ok(HashMap::new());
    }
    let sql = format!("SELECT shard, epoch FROM game_shards WHERE {condition} FOR KEY SHARE");
    txn.query_all_raw(Statement::from_sql_and_values(
        DbBackend::Postgres,
        sql,
        [replica.into()],
    ))
    .await?
    .into_iter()
    .map(|row| {
        let shard: i32 = row.try_get("", "shard")?;
        let epoch: i64 = row.try_get("", "epoch")?;
        Ok((shard as u16, epoch))
    })
    .collect()
}

fn fenced(fence: Option<Fence>) -> StoreError {
    let fence = fence.unwrap_or(Fence { shard: 0, epoch: 0 });
    StoreError::Fenced {
        shard: fence.shard,
        epoch: fence.epoch,
    }
}
