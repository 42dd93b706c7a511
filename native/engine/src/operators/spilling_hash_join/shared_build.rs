//! A broadcast join's hash table built once per executor and probed by all its tasks, as Spark's
//! `HashedRelation` is.
//!
//! The JVM keeps one [`SharedBuilds`] per broadcast value on an executor and drops it with the value (when
//! the broadcast is removed); a native plan whose join builds on that broadcast gets a [`SharedBuild`]: the
//! registry and a key saying which table (the join's keys, type, condition and schemas — one broadcast may
//! feed differently keyed joins). The first task to reach the join reads the broadcast's batches, asks Spark's
//! storage memory for what the table will hold ([`batch_cost`], as the per-task join reserves) and builds
//! DataFusion's `HashJoinExec` over them; every later task probes that same table, through a copy of the
//! `HashJoinExec` that shares its build future (`HashJoinExecBuilder::from` keeps it) and takes the task's
//! probe stream. When Spark refuses the memory, every task builds its own table under its own budget, as
//! before (the spilling join).
//!
//! Only joins whose build rows are never emitted on their own share a table (inner, probe-side outer, semi,
//! anti, mark: every broadcast hash join Spark plans): `HashJoinExec` emits unmatched build rows when the
//! last probe stream of its table ends, which across tasks would be the first task to finish.
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arrow::record_batch::RecordBatch;
use datafusion_common::{JoinType, Result};
use datafusion_physical_plan::joins::{HashJoinExec, HashJoinExecBuilder, PartitionMode};
use datafusion_physical_plan::{ExecutionPlan, SendableRecordBatchStream};
use futures::StreamExt;

use super::buckets::batch_cost;
use super::stream::JoinContext;
use crate::operators::dynamic_filter::DynamicFilter;
use crate::operators::once::{batches_stream, OnceExec};

/// Spark's storage memory, which holds broadcast values: asked once per shared table, released when it goes.
pub trait BroadcastMemory: Send + Sync {
    /// Asks for `bytes`; false when Spark refuses them (or asking failed).
    fn acquire(&self, bytes: usize) -> bool;
    fn release(&self, bytes: usize);
}

/// The tables built from one broadcast on this executor, by join key.
pub struct SharedBuilds {
    memory: Arc<dyn BroadcastMemory>,
    slots: Mutex<HashMap<Vec<u8>, Arc<futures::lock::Mutex<Slot>>>>,
}

impl SharedBuilds {
    pub fn new(memory: Arc<dyn BroadcastMemory>) -> Self {
        Self { memory, slots: Mutex::new(HashMap::new()) }
    }

    fn slot(&self, key: &[u8]) -> Arc<futures::lock::Mutex<Slot>> {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots.entry(key.to_vec()).or_default().clone()
    }
}

impl std::fmt::Debug for SharedBuilds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedBuilds")
    }
}

#[derive(Default)]
enum Slot {
    /// No task has built it yet (or the one that tried failed).
    #[default]
    Empty,
    Built(Arc<SharedTable>),
    /// Spark refused the memory: every task builds its own.
    Refused,
}

/// A join's share of a broadcast's tables: the registry and which table.
#[derive(Debug, Clone)]
pub struct SharedBuild {
    pub builds: Arc<SharedBuilds>,
    pub key: Vec<u8>,
}

/// Whether a join of this type may probe a table other tasks probe too (see the module doc).
pub fn shares_build(join_type: JoinType) -> bool {
    matches!(
        join_type,
        JoinType::Inner | JoinType::Right | JoinType::RightSemi | JoinType::RightAnti | JoinType::RightMark
    )
}

/// What the task joins against: the executor's table, or its own build stream (untouched or re-read).
pub(super) enum Build {
    Shared(Arc<SharedTable>),
    Own(SendableRecordBatchStream),
}

/// A built table: the `HashJoinExec` whose build future every task's copy shares, and Spark's grant for it.
pub(super) struct SharedTable {
    join: HashJoinExec,
    /// The build keys' summary, where the join makes one (every task filters and prunes with it).
    summary: Option<Arc<DynamicFilter>>,
    granted: usize,
    memory: Arc<dyn BroadcastMemory>,
}

impl Drop for SharedTable {
    fn drop(&mut self) {
        self.memory.release(self.granted);
    }
}

impl SharedTable {
    pub(super) fn summary(&self) -> Option<Arc<DynamicFilter>> {
        self.summary.clone()
    }

    /// The task's join: this table probed by `probe`.
    pub(super) fn probe(
        &self,
        jc: &JoinContext,
        probe: SendableRecordBatchStream,
    ) -> Result<SendableRecordBatchStream> {
        let right: Arc<dyn ExecutionPlan> = Arc::new(OnceExec::new(probe.schema(), probe));
        HashJoinExecBuilder::from(&self.join)
            .with_new_children(vec![self.join.left().clone(), right])?
            .build()?
            .execute(0, jc.inner_ctx.clone())
    }
}

impl SharedBuild {
    /// The executor's table for this join, built from `build` by the first task that gets here.
    pub(super) async fn table(&self, jc: &JoinContext, mut build: SendableRecordBatchStream) -> Result<Build> {
        let slot = self.builds.slot(&self.key);
        // Held while the first task reads and builds; the others wait for its table.
        let mut slot = slot.lock().await;
        match &*slot {
            Slot::Built(t) => return Ok(Build::Shared(t.clone())),
            Slot::Refused => return Ok(Build::Own(build)),
            Slot::Empty => {}
        }
        let mut batches: Vec<RecordBatch> = vec![];
        let mut cost = 0;
        while let Some(b) = build.next().await {
            let b = b?;
            if b.num_rows() > 0 {
                cost += batch_cost(&b);
                batches.push(b);
            }
        }
        if !self.builds.memory.acquire(cost) {
            *slot = Slot::Refused;
            return Ok(Build::Own(batches_stream(jc.build_schema.clone(), batches)));
        }
        jc.metrics.build_rows.add(batches.iter().map(RecordBatch::num_rows).sum());
        let mut summary = jc.new_dynamic_filter()?;
        for b in &batches {
            if let Err(e) = jc.summarize(&mut summary, b) {
                self.builds.memory.release(cost);
                return Err(e);
            }
        }
        let left = Arc::new(OnceExec::from_batches(jc.build_schema.clone(), batches));
        let right = Arc::new(OnceExec::from_batches(jc.probe_schema.clone(), vec![]));
        let join = HashJoinExec::try_new(
            left,
            right,
            jc.on.clone(),
            jc.filter.clone(),
            &jc.join_type,
            None,
            PartitionMode::CollectLeft,
            jc.null_equality,
            false,
        );
        let join = match join {
            Ok(j) => j,
            Err(e) => {
                self.builds.memory.release(cost);
                return Err(e);
            }
        };
        let summary = summary.map(Arc::new);
        let table = Arc::new(SharedTable { join, summary, granted: cost, memory: self.builds.memory.clone() });
        *slot = Slot::Built(table.clone());
        Ok(Build::Shared(table))
    }
}
