//! A native plan for one Spark task: decoded from the proto, built as a DataFusion plan over the task's input
//! readers, memory from the task's [`MemoryBroker`], spill files in Spark's local dirs. Pulled one batch at a
//! time on the caller's thread (inside a current-thread tokio runtime's context), so JVM callbacks (input
//! batches, memory) always happen on the Spark task's own thread, and plans can nest on one thread.
use std::collections::HashMap;
use std::sync::Arc;

use arrow::compute::cast;
use arrow::datatypes::{DataType, SchemaRef};
use arrow::record_batch::RecordBatch;
use datafusion_common::config::SpillCompression;
use datafusion_common::Result;
use datafusion_execution::config::SessionConfig;
use datafusion_execution::disk_manager::{DiskManagerBuilder, DiskManagerMode};
use datafusion_execution::memory_pool::{MemoryPool, TrackConsumersPool};
use datafusion_execution::runtime_env::RuntimeEnvBuilder;
use datafusion_execution::{SendableRecordBatchStream, TaskContext};
use datafusion_physical_plan::metrics::MetricValue;
use datafusion_physical_plan::ExecutionPlan;
use ember_proto as pb;
use futures::StreamExt;
use prost::Message;

use crate::error::plan_error;
use crate::memory::{BrokerMemoryPool, MemoryBroker, DEFAULT_HEADROOM_BYTES};
use crate::operators::input::BatchReader;
use crate::operators::spilling_hash_join::SharedBuilds;
use crate::planner::spilling_hash_join::ScanSlot;
use crate::planner::{types, Planner};

/// Metrics of one Spark operator (by proto operator id), summed over the DataFusion nodes that implement it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OperatorMetrics {
    pub id: u32,
    pub output_rows: u64,
    pub elapsed_compute_ns: u64,
    pub spill_count: u64,
    pub spilled_bytes: u64,
    pub spilled_rows: u64,
    /// Operator-specific counters, gauges and timers (ns), by the name the native operator registered them
    /// under; the Spark node declares SQL metrics with the same names to show them in the SQL UI.
    pub named: Vec<(String, u64)>,
}

/// What a sort sets aside up front for merging (proto `sort_spill_reservation_bytes` 0). DataFusion's default,
/// 10 MiB, is more than a task's share of a busy executor can be, and a sort that cannot reserve it fails
/// before it can spill. No more than the pool's headroom, which serves it when Spark refuses (the reservation's
/// consumer cannot spill). The merge of spilled runs grows beyond it as the pool allows (DataFusion's
/// multi-level merge merges fewer runs per pass when it cannot).
pub const DEFAULT_SORT_SPILL_RESERVATION_BYTES: usize = DEFAULT_HEADROOM_BYTES;

pub struct NativePlan {
    // Field order matters for drop: the stream (which holds reservations and spill files) goes first.
    stream: Option<SendableRecordBatchStream>,
    nodes: Vec<(u32, Arc<dyn ExecutionPlan>)>,
    pool: Arc<TrackConsumersPool<BrokerMemoryPool>>,
    output_schema: SchemaRef,
    runtime: tokio::runtime::Runtime,
}

impl NativePlan {
    /// Decodes and builds a plan with default task settings (spill files in the OS temp dir). A malformed or
    /// unsupported plan is an error, never a panic.
    pub fn try_new(plan_bytes: &[u8], inputs: Vec<BatchReader>, broker: Arc<dyn MemoryBroker>) -> Result<Self> {
        let plan = pb::Plan::decode(plan_bytes).map_err(|e| plan_error(format!("undecodable plan: {e}")))?;
        Self::from_proto(&plan, inputs, broker)
    }

    /// [`Self::for_task`] with default task settings (spill files in the OS temp dir).
    pub fn from_proto(plan: &pb::Plan, inputs: Vec<BatchReader>, broker: Arc<dyn MemoryBroker>) -> Result<Self> {
        Self::for_task(plan, &pb::TaskSettings::default(), inputs, broker)
    }

    /// Builds `plan` (decided on the driver, the same for every task) for one task, with what only the executor
    /// knows in `task` (its spill dirs and ids).
    pub fn for_task(
        plan: &pb::Plan,
        task: &pb::TaskSettings,
        inputs: Vec<BatchReader>,
        broker: Arc<dyn MemoryBroker>,
    ) -> Result<Self> {
        let strings_as_bytes = crate::planner::strings::as_bytes(plan);
        Self::for_task_sharing(plan, task, inputs, HashMap::new(), HashMap::new(), strings_as_bytes, broker)
    }

    /// [`Self::for_task`] where the broadcast inputs in `shared` (by input index) come with their executor's
    /// [`SharedBuilds`]: a hash join building on one probes the executor's table instead of building its own; and
    /// the Parquet scan inputs in `scans` take the dynamic filters of the joins above them. `strings_as_bytes` is
    /// [`crate::planner::strings::as_bytes`] of `plan`, which the caller decided its inputs' schemas by.
    pub fn for_task_sharing(
        plan: &pb::Plan,
        task: &pb::TaskSettings,
        inputs: Vec<BatchReader>,
        shared: HashMap<usize, Arc<SharedBuilds>>,
        scans: HashMap<usize, ScanSlot>,
        strings_as_bytes: bool,
        broker: Arc<dyn MemoryBroker>,
    ) -> Result<Self> {
        let root_op = plan.root.as_ref().ok_or_else(|| plan_error("plan without a root operator"))?;
        let config = plan.config.clone().unwrap_or_default();
        let mut planner = Planner::new(inputs).with_shared_builds(shared).with_scan_slots(scans);
        let context = crate::planner::expr::PlanContext {
            jdk_feature: config.jdk_feature,
            partition_index: task.partition_index,
            strings_as_bytes,
            text_twin: false,
        };
        let (root, output_schema) = crate::planner::expr::with_plan_context(context, || -> Result<_> {
            let output = plan.output_schema.as_ref().ok_or_else(|| plan_error("plan without an output schema"))?;
            Ok((planner.create_plan(root_op)?, Arc::new(types::to_arrow_schema(output)?)))
        })?;
        let nodes = planner.into_nodes();
        check_output_types(&root.schema(), &output_schema)?;

        let headroom = config.memory_headroom_bytes.map_or(DEFAULT_HEADROOM_BYTES, |b| b as usize);
        let float = config.memory_float_bytes.map_or(headroom, |b| b as usize);
        // A refusal names the operators holding the most, so a memory error says who took the task's share.
        let pool = Arc::new(TrackConsumersPool::new(
            BrokerMemoryPool::with_headroom_and_float(broker, headroom, float),
            std::num::NonZeroUsize::new(3).expect("3 > 0"),
        ));
        let disk_mode = if task.spill_dirs.is_empty() {
            DiskManagerMode::OsTmpDirectory
        } else {
            DiskManagerMode::Directories(task.spill_dirs.iter().map(Into::into).collect())
        };
        let runtime_env = RuntimeEnvBuilder::new()
            .with_memory_pool(pool.clone() as Arc<dyn MemoryPool>)
            .with_disk_manager_builder(DiskManagerBuilder::default().with_mode(disk_mode))
            .build_arc()?;
        let spill_compression = match config.spill_compression.as_str() {
            "" | "none" => SpillCompression::Uncompressed,
            "lz4" => SpillCompression::Lz4Frame,
            other => return Err(plan_error(format!("unknown spill compression {other:?}"))),
        };
        let batch_size = crate::defaults::batch_size(config.batch_size);
        let mut session = SessionConfig::new()
            .with_batch_size(batch_size)
            .with_target_partitions(1)
            .with_spill_compression(spill_compression);
        let sort_spill_reservation = match config.sort_spill_reservation_bytes {
            0 => DEFAULT_SORT_SPILL_RESERVATION_BYTES,
            n => n as usize,
        };
        session = session.with_sort_spill_reservation_bytes(sort_spill_reservation);
        let task_ctx = Arc::new(TaskContext::default().with_session_config(session).with_runtime(runtime_env));

        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .map_err(|e| plan_error(format!("cannot start the native runtime: {e}")))?;
        let stream = {
            let _guard = runtime.enter();
            root.execute(0, task_ctx)?
        };
        Ok(Self { stream: Some(stream), nodes, pool, output_schema, runtime })
    }

    /// The next output batch, in the schema Spark expects; `None` at the end.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        let Some(stream) = self.stream.as_mut() else { return Ok(None) };
        // Not `Runtime::block_on`: a native plan's input can be a Spark operator that itself pulls another
        // native plan on this same thread (e.g. native → Generate → native in one stage), and tokio (like
        // `futures::executor`) forbids nested `block_on`. DataFusion spawns no tasks on a current-thread
        // runtime, so polling the stream inside the runtime's context is all it needs.
        let _context = self.runtime.enter();
        match poll_to_completion(stream.next()) {
            Some(Ok(batch)) => Ok(Some(conform(batch, &self.output_schema)?)),
            Some(Err(e)) => {
                self.stream = None;
                Err(e)
            }
            None => {
                // Done: release operators' memory and spill files now rather than at task end.
                self.stream = None;
                Ok(None)
            }
        }
    }

    pub fn output_schema(&self) -> &SchemaRef {
        &self.output_schema
    }

    /// Bytes currently reserved by this plan, and the most it ever reserved at once.
    pub fn memory(&self) -> (usize, usize) {
        (self.pool.inner().reserved(), self.pool.inner().peak())
    }

    pub fn metrics(&self) -> Vec<OperatorMetrics> {
        let mut out: Vec<OperatorMetrics> = vec![];
        for (id, node) in &self.nodes {
            let Some(m) = node.metrics() else { continue };
            let m = m.aggregate_by_name();
            let entry = match out.iter_mut().find(|o| o.id == *id) {
                Some(e) => e,
                None => {
                    // An operator's top node comes first: its output rows are the operator's.
                    out.push(OperatorMetrics {
                        id: *id,
                        output_rows: m.output_rows().unwrap_or(0) as u64,
                        ..Default::default()
                    });
                    out.last_mut().unwrap()
                }
            };
            entry.elapsed_compute_ns += m.elapsed_compute().unwrap_or(0) as u64;
            entry.spill_count += m.spill_count().unwrap_or(0) as u64;
            entry.spilled_bytes += m.spilled_bytes().unwrap_or(0) as u64;
            entry.spilled_rows += m.spilled_rows().unwrap_or(0) as u64;
            for metric in m.iter() {
                let value = metric.value();
                let name = match value {
                    MetricValue::Count { name, .. }
                    | MetricValue::Gauge { name, .. }
                    | MetricValue::PeakMemoryUsage { name, .. }
                    | MetricValue::Time { name, .. } => name,
                    _ => continue,
                };
                let v = value.as_usize() as u64;
                match entry.named.iter_mut().find(|(n, _)| n == name.as_ref()) {
                    Some((_, total)) => *total += v,
                    None => entry.named.push((name.to_string(), v)),
                }
            }
        }
        out
    }
}

/// Drives a future on the calling thread, parking while it is pending. Unlike `block_on` of tokio or
/// `futures`, it may be nested: each call waits on its own flag, so a wake-up meant for an outer call that an
/// inner call happens to receive is not lost.
fn poll_to_completion<F: std::future::Future>(future: F) -> F::Output {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::task::{Context, Poll, Wake, Waker};

    struct Flag {
        notified: AtomicBool,
        thread: std::thread::Thread,
    }
    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.wake_by_ref();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.notified.store(true, Ordering::Release);
            self.thread.unpark();
        }
    }

    let flag = Arc::new(Flag { notified: AtomicBool::new(false), thread: std::thread::current() });
    let waker = Waker::from(flag.clone());
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(v) = future.as_mut().poll(&mut cx) {
            return v;
        }
        while !flag.notified.swap(false, Ordering::Acquire) {
            std::thread::park();
        }
    }
}

/// The plan's output types must be Spark's, up to Arrow's alternative layouts of the same values
/// (view and large string/binary types), which are cast back.
/// Whether the native plan's output types are the ones Spark expects (or carry the same values).
pub(crate) fn check_output_types(actual: &SchemaRef, expected: &SchemaRef) -> Result<()> {
    if actual.fields().len() != expected.fields().len() {
        return Err(plan_error(format!(
            "plan produces {} columns, Spark expects {}",
            actual.fields().len(),
            expected.fields().len()
        )));
    }
    for (a, e) in actual.fields().iter().zip(expected.fields()) {
        if a.data_type() != e.data_type() && !same_values(a.data_type(), e.data_type()) {
            return Err(plan_error(format!(
                "column {} is {} natively but {} in Spark",
                e.name(),
                a.data_type(),
                e.data_type()
            )));
        }
    }
    Ok(())
}

fn same_values(a: &DataType, b: &DataType) -> bool {
    use DataType::*;
    matches!((a, b), (Utf8View | LargeUtf8, Utf8) | (BinaryView | LargeBinary, Binary))
}

fn conform(batch: RecordBatch, schema: &SchemaRef) -> Result<RecordBatch> {
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(c, f)| if c.data_type() == f.data_type() { Ok(c.clone()) } else { cast(c, f.data_type()) })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
    )?)
}
