//! [`ShuffleWriterExec`]: the map side of a columnar shuffle.
//!
//! Every input row is routed as Spark's `HashPartitioning` routes it (`pmod(murmur3(keys, 42), n)`, see
//! [`crate::spark_hash`]), or, for Spark's `RangePartitioning`, by [`RangePartitioner`] over the bounds Spark's
//! own `RangePartitioner` sampled on the driver; each input batch, cast to the block schema, is reordered by partition (one stable
//! `take`, skipped when its rows already are in partition order) and buffered under a memory reservation, with
//! the row range of each partition in it. At the end of the input the buffer is written out: for each partition
//! that has rows, in ascending partition order, its slices of the buffered batches (so its rows in input order)
//! are concatenated into batches of at most `batch_size` rows, each encoded as one self-contained Arrow IPC stream
//! (a *block*).
//!
//! The output is one row per block, `(partition: Int32, block: Binary)`, **in ascending partition order over the
//! whole output**, so the JVM writes the map task's shuffle output as one file, partition after partition, as
//! Spark's own writers do — never a temporary file per partition.
//!
//! Spilling: when the pool refuses more (or the buffer reaches `spill_bytes`), the buffer's blocks are encoded as
//! above into a spill file (raw IPC blocks, with an index of where each partition's blocks are) and its memory is
//! released. At the end each partition's blocks are emitted from every spill file in turn (copied verbatim), then
//! from memory. Spill files are temp files of the plan's disk manager, deleted when the stream is dropped (at the
//! end, on error or when the task is killed).
//!
//! Why sort on arrival: sorting each batch and concatenating slices when blocks are encoded measured ~40% faster
//! than gathering each partition's rows across the buffered batches with `interleave` (or a `take` per (batch,
//! partition)), ~35% end to end at 200 partitions (the ignored `timing` test in tests/engine/shuffle.rs); and
//! the buffered batches are compact, so their reservation is exact.
//!
//! **Dynamic filters** (see [`crate::operators::dynamic_filter`]). A build side's writer can *summarize* its keys
//! per reduce partition (the partition id it computes anyway, no extra hashing) and report the summary as one
//! last output row with partition -1 (empty bytes: no summary, e.g. when the pool refused its memory); a probe
//! side's writer can *drop* each row whose key fails the filter of the partition it routes the row to — a
//! partition-aware filter without re-hashing — under a cost gate: after `sample_rows` rows it stops filtering
//! unless it dropped at least `min_pruned_fraction` of them.
//!
//! Memory: the reservation covers the buffered batches. Not reserved: the block being encoded and the output
//! batch (at most ~16 MiB plus one block, handed to the JVM).

/// The writer's own metrics, by the names the JVM's SQL metrics use.
pub mod metric_names {
    metric_names!(
        BLOCKS_WRITTEN = "blocks_written",
        BLOCK_BYTES = "block_bytes",
        SHUFFLE_ROWS = "shuffle_rows",
        /// Spills forced by the pool's refusal (the others: `spill_bytes` reached).
        MEMORY_SPILLS = "memory_spills",
        /// Input rows a dynamic filter dropped (their key cannot match in the partition they went to).
        DYNAMIC_FILTER_ROWS_DROPPED = "dynamic_filter_rows_dropped",
        /// 1 when the dynamic filter's cost gate switched it off.
        DYNAMIC_FILTER_SWITCHED_OFF = "dynamic_filter_switched_off",
        /// Bytes of the key summary the writer reported (encoded).
        DYNAMIC_FILTER_SUMMARY_BYTES = "dynamic_filter_summary_bytes",
        /// Time spent summarizing keys and applying the dynamic filter.
        DYNAMIC_FILTER_TIME = "dynamic_filter_time",
    );
}
use std::collections::VecDeque;
use std::fmt;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use arrow::array::{ArrayRef, BinaryArray, Int32Array, RecordBatch, RecordBatchOptions, UInt32Array};
use arrow::buffer::OffsetBuffer;
use arrow::compute::{can_cast_types, cast, concat, filter_record_batch, take_record_batch};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::ipc::writer::{IpcWriteOptions, StreamWriter};
use arrow::ipc::MetadataVersion;
use arrow::row::{RowConverter, Rows, SortField};
use datafusion_common::tree_node::TreeNodeRecursion;
use datafusion_common::{internal_err, plan_err, DataFusionError, Result};
use datafusion_execution::memory_pool::{MemoryConsumer, MemoryReservation};
use datafusion_execution::spill_file::SpillFile;
use datafusion_execution::{RecordBatchStream, SendableRecordBatchStream, TaskContext};
use datafusion_physical_expr::{EquivalenceProperties, PhysicalExpr, PhysicalSortExpr};
use datafusion_physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion_physical_plan::metrics::{
    BaselineMetrics, Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet, SpillMetrics, Time,
};
use datafusion_physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, Partitioning, PlanProperties,
};
use futures::{Stream, StreamExt};

use crate::operators::dynamic_filter::{DynamicFilter, DynamicFilterConfig};
use crate::spark_hash::{self, SPARK_HASH_SEED};

/// How a writer summarizes its keys (see the module doc).
#[derive(Clone)]
pub struct KeySummarySpec {
    pub config: DynamicFilterConfig,
    /// The summary's bytes as the JVM forwards them to the driver (the planner's proto form).
    pub encode: SummaryEncoder,
}

/// Encodes a summary into the bytes the writer reports.
pub type SummaryEncoder = Arc<dyn Fn(&DynamicFilter) -> Result<Vec<u8>> + Send + Sync>;

impl fmt::Debug for KeySummarySpec {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "KeySummarySpec({:?})", self.config)
    }
}

/// How a writer drops rows by a build side's filter (see the module doc).
#[derive(Debug, Clone)]
pub struct DropFilterSpec {
    pub filter: Arc<DynamicFilter>,
    /// The cost gate: rows seen before deciding, and the fraction that must have been dropped by then.
    pub sample_rows: usize,
    pub min_pruned_fraction: f64,
}

struct SummaryState {
    /// None once abandoned (its memory refused) or reported.
    filter: Option<DynamicFilter>,
    reservation: MemoryReservation,
    spec: KeySummarySpec,
    reported: bool,
}

/// Spark's `RangePartitioner.getPartition` for SQL's `RangePartitioning`: a row goes to the number of bounds that
/// sort strictly before its key (Spark's linear scan and binary search both give that, its bounds being strictly
/// increasing). Keys and bounds compare in Arrow's row format under each key's sort options; float keys and bounds
/// arrive normalized (NaN one value, -0.0 as 0.0), which makes that order Spark's.
#[derive(Debug)]
pub struct RangePartitioner {
    keys: Vec<PhysicalSortExpr>,
    converter: RowConverter,
    bounds: Rows,
}

impl RangePartitioner {
    /// `bounds`: one column per key, of the key's type, one row per bound (ascending in the keys' order).
    pub fn try_new(keys: Vec<PhysicalSortExpr>, bounds: &[ArrayRef], input_schema: &Schema) -> Result<Self> {
        if keys.len() != bounds.len() {
            return plan_err!("ShuffleWriter: {} range keys but {} bound columns", keys.len(), bounds.len());
        }
        let fields = keys
            .iter()
            .zip(bounds)
            .map(|(k, b)| {
                let dt = k.expr.data_type(input_schema)?;
                if &dt != b.data_type() {
                    return plan_err!("ShuffleWriter: range key of type {dt} but bounds of type {}", b.data_type());
                }
                Ok(SortField::new_with_options(dt, k.options))
            })
            .collect::<Result<Vec<_>>>()?;
        let converter = RowConverter::new(fields)?;
        let bounds = converter.convert_columns(bounds)?;
        if bounds.num_rows() >= 1 && (1..bounds.num_rows()).any(|i| bounds.row(i - 1) >= bounds.row(i)) {
            return plan_err!("ShuffleWriter: range bounds are not strictly increasing");
        }
        Ok(Self { keys, converter, bounds })
    }

    /// The partitions a range shuffle with these bounds has.
    pub fn num_partitions(&self) -> u32 {
        self.bounds.num_rows() as u32 + 1
    }

    fn partitions(&self, batch: &RecordBatch) -> Result<Vec<u32>> {
        let n = batch.num_rows();
        let columns =
            self.keys.iter().map(|k| k.expr.evaluate(batch)?.into_array(n)).collect::<Result<Vec<ArrayRef>>>()?;
        if self.bounds.num_rows() == 0 {
            return Ok(vec![0; n]);
        }
        let rows = self.converter.convert_columns(&columns)?;
        let bounds: Vec<_> = self.bounds.iter().collect();
        Ok(rows.iter().map(|r| bounds.partition_point(|b| *b < r) as u32).collect())
    }
}

/// An output batch is closed once its blocks reach this many bytes (so it holds at most this plus one block),
/// so the JVM never holds a huge batch at once.
const OUTPUT_BATCH_BYTES: usize = 16 << 20;

/// The schema of the operator's output: one row per block.
pub fn shuffle_output_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("partition", DataType::Int32, false),
        Field::new("block", DataType::Binary, false),
    ]))
}

#[derive(Debug)]
pub struct ShuffleWriterExec {
    input: Arc<dyn ExecutionPlan>,
    keys: Vec<Arc<dyn PhysicalExpr>>,
    num_partitions: u32,
    block_schema: SchemaRef,
    spill_bytes: usize,
    /// Range partitioning (then `keys` is empty and `num_partitions` is the partitioner's).
    range: Option<Arc<RangePartitioner>>,
    summary: Option<KeySummarySpec>,
    drop_filter: Option<DropFilterSpec>,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl ShuffleWriterExec {
    /// `keys` bound to `input`'s schema (empty: every row to partition 0); `block_schema` has one field per input
    /// column, each of a type the input's column casts to; `spill_bytes`: buffered input after which the buffer
    /// is spilled even if the pool would grant more (0: only when the pool refuses).
    pub fn try_new(
        input: Arc<dyn ExecutionPlan>,
        keys: Vec<Arc<dyn PhysicalExpr>>,
        num_partitions: u32,
        block_schema: SchemaRef,
        spill_bytes: usize,
    ) -> Result<Self> {
        if num_partitions == 0 || num_partitions > i32::MAX as u32 {
            return plan_err!("ShuffleWriter: {num_partitions} partitions");
        }
        let input_schema = input.schema();
        for k in &keys {
            spark_hash::check_supported(&k.data_type(&input_schema)?)?;
        }
        if input_schema.fields().len() != block_schema.fields().len() {
            return plan_err!(
                "ShuffleWriter: the input has {} columns, the block schema {}",
                input_schema.fields().len(),
                block_schema.fields().len()
            );
        }
        for (i, b) in input_schema.fields().iter().zip(block_schema.fields()) {
            if i.data_type() != b.data_type() && !can_cast_types(i.data_type(), b.data_type()) {
                return plan_err!(
                    "ShuffleWriter: column {} is {} but its block type {} cannot hold it",
                    b.name(),
                    i.data_type(),
                    b.data_type()
                );
            }
        }
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(shuffle_output_schema()),
            Partitioning::UnknownPartitioning(input.output_partitioning().partition_count()),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        let spill_bytes = if spill_bytes == 0 { usize::MAX } else { spill_bytes };
        Ok(Self {
            input,
            keys,
            num_partitions,
            block_schema,
            spill_bytes,
            range: None,
            summary: None,
            drop_filter: None,
            properties,
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }

    /// Summarizes the hash keys per partition and reports the summary, encoded by `spec.encode`, as the last
    /// output row (partition -1).
    pub fn with_summary(mut self, spec: KeySummarySpec) -> Result<Self> {
        if self.keys.is_empty() || self.range.is_some() {
            return plan_err!("ShuffleWriter: a key summary needs hash keys");
        }
        self.summary = Some(spec);
        Ok(self)
    }

    /// Drops rows whose hash keys fail `spec.filter` in the partition they go to (a filter of as many partitions
    /// as the writer's, or of one partition for all).
    pub fn with_drop_filter(mut self, spec: DropFilterSpec) -> Result<Self> {
        let n = spec.filter.num_partitions();
        if self.keys.is_empty() || self.range.is_some() || (n != 1 && n != self.num_partitions as usize) {
            return plan_err!(
                "ShuffleWriter: a dynamic filter of {n} partitions for a hash shuffle of {} partitions",
                self.num_partitions
            );
        }
        self.drop_filter = Some(spec);
        Ok(self)
    }

    /// Routes rows by `range` instead of hashing (the writer must have no hash keys).
    pub fn with_range(mut self, range: RangePartitioner) -> Result<Self> {
        if !self.keys.is_empty() {
            return plan_err!("ShuffleWriter: both hash keys and range bounds");
        }
        self.num_partitions = range.num_partitions();
        self.range = Some(Arc::new(range));
        Ok(self)
    }

    pub fn keys(&self) -> &[Arc<dyn PhysicalExpr>] {
        &self.keys
    }

    pub fn input_schema(&self) -> SchemaRef {
        self.input.schema()
    }

    pub fn num_partitions(&self) -> u32 {
        self.num_partitions
    }

    pub fn block_schema(&self) -> &SchemaRef {
        &self.block_schema
    }

    /// `usize::MAX` when only the pool's refusals spill.
    pub fn spill_bytes(&self) -> usize {
        self.spill_bytes
    }
}

impl DisplayAs for ShuffleWriterExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let keys: Vec<_> = self.keys.iter().map(|k| k.to_string()).collect();
        write!(
            f,
            "ShuffleWriterExec: hash=[{}], partitions={}, spill_bytes={}{}{}",
            keys.join(", "),
            self.num_partitions,
            self.spill_bytes,
            if self.summary.is_some() { ", summarizes keys" } else { "" },
            if self.drop_filter.is_some() { ", dynamic filter" } else { "" }
        )
    }
}

impl ExecutionPlan for ShuffleWriterExec {
    fn name(&self) -> &str {
        "ShuffleWriterExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        let mut tnr = TreeNodeRecursion::Continue;
        for k in &self.keys {
            tnr = tnr.visit_sibling(|| f(k))?;
        }
        Ok(tnr)
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![false]
    }

    fn with_new_children(self: Arc<Self>, mut children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        if children.len() != 1 {
            return internal_err!("ShuffleWriterExec has one child");
        }
        let mut new = Self::try_new(
            children.remove(0),
            self.keys.clone(),
            self.num_partitions,
            self.block_schema.clone(),
            self.spill_bytes,
        )?;
        new.range = self.range.clone();
        new.summary = self.summary.clone();
        new.drop_filter = self.drop_filter.clone();
        Ok(Arc::new(new))
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, Arc::clone(&context))?;
        let reservation = MemoryConsumer::new(format!("ShuffleWriter[{partition}]"))
            .with_can_spill(true)
            .register(context.memory_pool());
        let summary = match &self.summary {
            Some(spec) => {
                let types = self.keys.iter().map(|k| k.data_type(&self.input.schema())).collect::<Result<Vec<_>>>()?;
                Some(SummaryState {
                    filter: Some(DynamicFilter::try_new(types, self.num_partitions as usize, spec.config)?),
                    reservation: MemoryConsumer::new(format!("ShuffleWriterKeySummary[{partition}]"))
                        .register(context.memory_pool()),
                    spec: spec.clone(),
                    reported: false,
                })
            }
            None => None,
        };
        Ok(Box::pin(ShuffleWriterStream {
            input,
            keys: self.keys.clone(),
            num_partitions: self.num_partitions,
            range: self.range.clone(),
            summary,
            drop_filter: self.drop_filter.clone(),
            drop_seen: 0,
            drop_dropped: 0,
            block_schema: self.block_schema.clone(),
            spill_bytes: self.spill_bytes,
            batch_size: context.session_config().batch_size().max(1),
            buffer: Buffer::default(),
            reservation,
            context,
            spills: vec![],
            in_memory: None,
            input_done: false,
            baseline: BaselineMetrics::new(&self.metrics, partition),
            spill_metrics: SpillMetrics::new(&self.metrics, partition),
            metrics: ShuffleWriterMetrics::new(&self.metrics, partition),
        }))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}

/// Counters the JVM shows under the exchange's Spark node (by these names), besides the baseline and DataFusion's
/// spill metrics (`spill_count`, `spilled_bytes`, `spilled_rows`).
#[derive(Debug, Clone)]
struct ShuffleWriterMetrics {
    /// IPC streams written (to the output or to a spill file, each block once).
    blocks_written: Count,
    /// Their total size: what the shuffle writes before Spark's own compression.
    block_bytes: Count,
    /// Rows routed to a partition.
    shuffle_rows: Count,
    /// Spills forced by the memory pool refusing more (the others: `spill_bytes` reached).
    memory_spills: Count,
    dynamic_filter_rows_dropped: Count,
    dynamic_filter_switched_off: Count,
    dynamic_filter_summary_bytes: Count,
    dynamic_filter_time: Time,
}

impl ShuffleWriterMetrics {
    fn new(set: &ExecutionPlanMetricsSet, partition: usize) -> Self {
        let b = || MetricBuilder::new(set);
        Self {
            blocks_written: b().counter(metric_names::BLOCKS_WRITTEN, partition),
            block_bytes: b().counter(metric_names::BLOCK_BYTES, partition),
            shuffle_rows: b().counter(metric_names::SHUFFLE_ROWS, partition),
            memory_spills: b().counter(metric_names::MEMORY_SPILLS, partition),
            dynamic_filter_rows_dropped: b().counter(metric_names::DYNAMIC_FILTER_ROWS_DROPPED, partition),
            dynamic_filter_switched_off: b().counter(metric_names::DYNAMIC_FILTER_SWITCHED_OFF, partition),
            dynamic_filter_summary_bytes: b().counter(metric_names::DYNAMIC_FILTER_SUMMARY_BYTES, partition),
            dynamic_filter_time: b().subset_time(metric_names::DYNAMIC_FILTER_TIME, partition),
        }
    }
}

/// Input batches in the block schema, each in partition order, with the rows of each partition in each.
#[derive(Default)]
struct Buffer {
    batches: Vec<RecordBatch>,
    /// (partition, batch, first row, rows) of every non-empty partition of every batch, in input order.
    slices: Vec<Slice>,
    bytes: usize,
    rows: usize,
}

#[derive(Debug, Clone, Copy)]
struct Slice {
    partition: u32,
    batch: usize,
    offset: usize,
    len: usize,
}

/// A buffer cut into blocks (by partition, then input order), encoded one after the other.
struct Blocks {
    batches: Vec<RecordBatch>,
    /// The slices of every block, by partition then input order.
    slices: Vec<Slice>,
    /// Each block: its partition and its range in `slices`.
    blocks: VecDeque<(u32, std::ops::Range<usize>)>,
}

/// One spill file: the blocks of one spilled buffer, in partition order, each at a known place in the file.
struct SpillRun {
    /// Keeps the temp file alive (it is deleted when the last reference goes).
    _file: Arc<dyn SpillFile>,
    reader: std::fs::File,
    /// (partition, offset, length) of every block not yet emitted.
    blocks: VecDeque<(u32, u64, usize)>,
}

struct ShuffleWriterStream {
    input: SendableRecordBatchStream,
    keys: Vec<Arc<dyn PhysicalExpr>>,
    num_partitions: u32,
    range: Option<Arc<RangePartitioner>>,
    summary: Option<SummaryState>,
    drop_filter: Option<DropFilterSpec>,
    /// Rows the drop filter saw and dropped (for its cost gate).
    drop_seen: usize,
    drop_dropped: usize,
    block_schema: SchemaRef,
    spill_bytes: usize,
    batch_size: usize,
    buffer: Buffer,
    /// Holds exactly `buffer.bytes` (and, at the end, the buffer being written out).
    reservation: MemoryReservation,
    /// For its disk manager (spill files).
    context: Arc<TaskContext>,
    spills: Vec<SpillRun>,
    /// The in-memory buffer being written out, after the end of the input.
    in_memory: Option<Blocks>,
    input_done: bool,
    baseline: BaselineMetrics,
    spill_metrics: SpillMetrics,
    metrics: ShuffleWriterMetrics,
}

impl ShuffleWriterStream {
    /// Each row's partition, and the hash keys' values (empty for a range shuffle).
    fn partitions(&self, batch: &RecordBatch) -> Result<(Vec<u32>, Vec<ArrayRef>)> {
        if let Some(range) = &self.range {
            return Ok((range.partitions(batch)?, vec![]));
        }
        let n = batch.num_rows();
        let mut hashes = vec![SPARK_HASH_SEED; n];
        let mut keys = Vec::with_capacity(self.keys.len());
        for k in &self.keys {
            // Evaluated even for one partition, as Spark evaluates its partition id expression for every row:
            // a key that fails (e.g. an ANSI overflow) fails here too.
            let column = k.evaluate(batch)?.into_array(n)?;
            if self.num_partitions > 1 {
                spark_hash::update_hashes(column.as_ref(), &mut hashes)?;
            }
            keys.push(column);
        }
        if self.keys.is_empty() || self.num_partitions == 1 {
            return Ok((vec![0; n], keys));
        }
        Ok((hashes.into_iter().map(|h| spark_hash::pmod(h, self.num_partitions)).collect(), keys))
    }

    /// Drops the rows the dynamic filter rules out (until its cost gate switches it off).
    fn apply_drop_filter(
        &mut self,
        batch: RecordBatch,
        partitions: Vec<u32>,
        keys: Vec<ArrayRef>,
    ) -> Result<(RecordBatch, Vec<u32>, Vec<ArrayRef>)> {
        let Some(spec) = &self.drop_filter else { return Ok((batch, partitions, keys)) };
        let _timer = self.metrics.dynamic_filter_time.timer();
        let pass = if spec.filter.num_partitions() == 1 {
            spec.filter.might_contain(&keys)?
        } else {
            spec.filter.might_contain_routed(&partitions, &keys)?
        };
        let kept = pass.true_count();
        let dropped = batch.num_rows() - kept;
        self.drop_seen += batch.num_rows();
        self.drop_dropped += dropped;
        self.metrics.dynamic_filter_rows_dropped.add(dropped);
        if self.drop_seen >= spec.sample_rows
            && (self.drop_dropped as f64) < spec.min_pruned_fraction * self.drop_seen as f64
        {
            self.metrics.dynamic_filter_switched_off.add(1);
            self.drop_filter = None;
        }
        if dropped == 0 {
            return Ok((batch, partitions, keys));
        }
        let batch = filter_record_batch(&batch, &pass)?;
        let partitions = partitions.iter().zip(pass.values().iter()).filter(|(_, k)| *k).map(|(p, _)| *p).collect();
        let keys = keys.iter().map(|k| arrow::compute::filter(k.as_ref(), &pass)).collect::<Result<Vec<_>, _>>()?;
        Ok((batch, partitions, keys))
    }

    /// Adds the rows' keys to the summary, under its own reservation; a refusal abandons the summary (the
    /// writer then reports none, and its consumers filter nothing).
    fn summarize(&mut self, partitions: &[u32], keys: &[ArrayRef]) -> Result<()> {
        let Some(state) = &mut self.summary else { return Ok(()) };
        let Some(filter) = &mut state.filter else { return Ok(()) };
        let _timer = self.metrics.dynamic_filter_time.timer();
        filter.update_routed(partitions, keys)?;
        let size = filter.size();
        if state.reservation.try_resize(size).is_err() {
            state.filter = None;
            state.reservation.free();
        }
        Ok(())
    }

    /// The summary row (partition -1), once, after the last block.
    fn summary_output(&mut self) -> Result<Option<RecordBatch>> {
        let Some(state) = &mut self.summary else { return Ok(None) };
        if state.reported {
            return Ok(None);
        }
        state.reported = true;
        let bytes = match state.filter.take() {
            Some(filter) => (state.spec.encode)(&filter)?,
            None => vec![],
        };
        state.reservation.free();
        self.metrics.dynamic_filter_summary_bytes.add(bytes.len());
        let blocks = BinaryArray::from_vec(vec![bytes.as_slice()]);
        Ok(Some(RecordBatch::try_new(
            shuffle_output_schema(),
            vec![Arc::new(Int32Array::from(vec![-1])) as ArrayRef, Arc::new(blocks)],
        )?))
    }

    /// The batch with the block schema's types and names (the JVM reader decodes exactly Spark's types).
    fn to_block_schema(&self, batch: RecordBatch) -> Result<RecordBatch> {
        if batch.schema_ref() == &self.block_schema {
            return Ok(batch);
        }
        let columns = batch
            .columns()
            .iter()
            .zip(self.block_schema.fields())
            .map(|(c, f)| if c.data_type() == f.data_type() { Ok(c.clone()) } else { cast(c, f.data_type()) })
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
        Ok(RecordBatch::try_new_with_options(self.block_schema.clone(), columns, &options)?)
    }

    /// Routes an input batch's rows and buffers it (in the block schema, in partition order).
    fn route(&mut self, batch: RecordBatch) -> Result<()> {
        let (partitions, keys) = self.partitions(&batch)?;
        let (batch, partitions, keys) = self.apply_drop_filter(batch, partitions, keys)?;
        self.summarize(&partitions, &keys)?;
        if batch.num_rows() == 0 {
            return Ok(());
        }
        self.metrics.shuffle_rows.add(batch.num_rows());
        let batch = self.to_block_schema(batch)?;
        let (batch, slices) = sort_by_partition(batch, &partitions, self.num_partitions)?;
        let bytes = batch.get_array_memory_size() + slices.len() * std::mem::size_of::<Slice>();
        self.push(batch, slices, bytes)
    }

    /// Buffers a batch under the reservation. On a refusal the buffer is spilled and the batch asked for again.
    fn push(&mut self, batch: RecordBatch, slices: Vec<Slice>, bytes: usize) -> Result<()> {
        if let Err(e) = self.reservation.try_grow(bytes) {
            if !matches!(e, DataFusionError::ResourcesExhausted(_)) {
                return Err(e);
            }
            self.metrics.memory_spills.add(1);
            self.spill()?;
            if self.reservation.try_grow(bytes).is_err() {
                // Nothing buffered and still refused: the batch already exists (the child produced it, it is in
                // memory whatever this operator does), and spilling it right away is the least memory any
                // shuffle of it can take. So account it anyway (the infallible `grow`, which Spark's accounting
                // tracks as over budget) and spill it at once. Failing here instead would kill a task only
                // because a single input batch is larger than the memory left.
                self.reservation.grow(bytes);
                self.buffer_batch(batch, slices, bytes);
                return self.spill();
            }
        }
        self.buffer_batch(batch, slices, bytes);
        if self.buffer.bytes >= self.spill_bytes {
            self.spill()?;
        }
        Ok(())
    }

    fn buffer_batch(&mut self, batch: RecordBatch, slices: Vec<Slice>, bytes: usize) {
        let index = self.buffer.batches.len();
        self.buffer.rows += batch.num_rows();
        self.buffer.bytes += bytes;
        self.buffer.batches.push(batch);
        self.buffer.slices.extend(slices.into_iter().map(|s| Slice { batch: index, ..s }));
    }

    /// The buffer cut into blocks: its slices ordered by partition (a stable sort, so input order within a
    /// partition), each partition's rows in blocks of at most `batch_size` rows. None when nothing is buffered.
    fn take_buffer(&mut self) -> Option<Blocks> {
        let Buffer { batches, mut slices, rows, .. } = std::mem::take(&mut self.buffer);
        if rows == 0 {
            return None;
        }
        slices.sort_by_key(|s| s.partition);
        // A block may end inside a slice: slices are split at block boundaries, so each block is a run of them.
        let mut cut: Vec<Slice> = Vec::with_capacity(slices.len());
        let mut blocks = VecDeque::new();
        let (mut block_start, mut block_rows) = (0, 0);
        for mut s in slices {
            loop {
                let open = cut.len() > block_start;
                if open && (cut[block_start].partition != s.partition || block_rows == self.batch_size) {
                    blocks.push_back((cut[block_start].partition, block_start..cut.len()));
                    (block_start, block_rows) = (cut.len(), 0);
                }
                let take = s.len.min(self.batch_size - block_rows);
                cut.push(Slice { len: take, ..s });
                block_rows += take;
                if take == s.len {
                    break;
                }
                s = Slice { offset: s.offset + take, len: s.len - take, ..s };
            }
        }
        if cut.len() > block_start {
            blocks.push_back((cut[block_start].partition, block_start..cut.len()));
        }
        Some(Blocks { batches, slices: cut, blocks })
    }

    /// Encodes the next block of `blocks` onto `out`; returns its partition (None when none is left).
    fn encode_next(&self, blocks: &mut Blocks, out: &mut Vec<u8>) -> Result<Option<u32>> {
        let Some((partition, range)) = blocks.blocks.pop_front() else { return Ok(None) };
        let start = out.len();
        encode_block(&blocks.batches, &blocks.slices[range], &self.block_schema, out)?;
        self.metrics.blocks_written.add(1);
        self.metrics.block_bytes.add(out.len() - start);
        Ok(Some(partition))
    }

    /// Writes the buffer's blocks to a new spill file and releases its memory.
    fn spill(&mut self) -> Result<()> {
        let Some(mut blocks) = self.take_buffer() else { return Ok(()) };
        let rows: usize = blocks.slices.iter().map(|s| s.len).sum();
        let file = self.context.runtime_env().disk_manager.create_tmp_file("ember shuffle writer spill")?;
        let path = file
            .path()
            .ok_or_else(|| {
                DataFusionError::Execution("shuffle writer spill: the disk manager gives no local file".into())
            })?
            .to_owned();
        let mut writer = file.open_writer()?;
        let mut index = VecDeque::with_capacity(blocks.blocks.len());
        let (mut offset, mut bytes) = (0u64, Vec::new());
        loop {
            bytes.clear();
            let Some(partition) = self.encode_next(&mut blocks, &mut bytes)? else { break };
            writer.write_all(&bytes)?;
            index.push_back((partition, offset, bytes.len()));
            offset += bytes.len() as u64;
        }
        writer.flush()?;
        writer.finish()?;
        drop(blocks);
        self.reservation.free();
        self.spill_metrics.spill_file_count.add(1);
        self.spill_metrics.spilled_bytes.add(offset as usize);
        self.spill_metrics.spilled_rows.add(rows);
        let reader = std::fs::File::open(&path)?;
        self.spills.push(SpillRun { _file: file, reader, blocks: index });
        Ok(())
    }

    /// The next output batch of up to ~[`OUTPUT_BATCH_BYTES`] of blocks, in ascending partition order: for each
    /// partition its blocks from every spill file (in spill order), then from memory. At the end everything is
    /// released (memory, and the spill files with the runs).
    fn next_output(&mut self) -> Result<Option<RecordBatch>> {
        // The blocks are appended one after the other to the values buffer of the output's Binary column.
        let mut partitions = vec![];
        let mut offsets = vec![0i32];
        let mut values = Vec::new();
        let mut in_memory = self.in_memory.take();
        while values.len() < OUTPUT_BATCH_BYTES {
            // The earliest spill file whose next block has the lowest partition; its block goes before the
            // in-memory one of the same partition.
            let run = self.spills.iter_mut().filter(|r| !r.blocks.is_empty()).min_by_key(|r| r.blocks[0].0);
            let memory_next = in_memory.as_ref().and_then(|b| b.blocks.front().map(|b| b.0));
            match run {
                Some(run) if memory_next.is_none_or(|m| run.blocks[0].0 <= m) => {
                    let Some((partition, at, len)) = run.blocks.pop_front() else { break };
                    let start = values.len();
                    values.resize(start + len, 0);
                    run.reader.read_exact_at(&mut values[start..], at)?;
                    partitions.push(partition as i32);
                }
                _ => {
                    let Some(blocks) = in_memory.as_mut() else { break };
                    let Some(partition) = self.encode_next(blocks, &mut values)? else { break };
                    partitions.push(partition as i32);
                }
            }
            offsets.push(output_offset(values.len())?);
        }
        let done =
            in_memory.as_ref().is_none_or(|b| b.blocks.is_empty()) && self.spills.iter().all(|r| r.blocks.is_empty());
        if done {
            // Written out: the buffered batches go, and their memory and spill files with them.
            drop(in_memory);
            self.reservation.free();
            self.spills.clear();
        } else {
            self.in_memory = in_memory;
        }
        if partitions.is_empty() {
            return Ok(None);
        }
        let blocks = BinaryArray::new(OffsetBuffer::new(offsets.into()), arrow::buffer::Buffer::from_vec(values), None);
        let out = RecordBatch::try_new(
            shuffle_output_schema(),
            vec![Arc::new(Int32Array::from(partitions)) as ArrayRef, Arc::new(blocks)],
        )?;
        Ok(Some(out))
    }

    fn poll_inner(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<RecordBatch>>> {
        let elapsed = self.baseline.elapsed_compute().clone();
        loop {
            if self.input_done {
                let timer = elapsed.timer();
                let out = match self.next_output() {
                    Ok(None) => self.summary_output(),
                    other => other,
                };
                timer.done();
                return Poll::Ready(out.transpose());
            }
            match futures::ready!(self.input.poll_next_unpin(cx)) {
                Some(Ok(batch)) => {
                    if batch.num_rows() == 0 {
                        continue;
                    }
                    let timer = elapsed.timer();
                    let pushed = self.route(batch);
                    timer.done();
                    if let Err(e) = pushed {
                        return Poll::Ready(Some(Err(e)));
                    }
                }
                Some(Err(e)) => return Poll::Ready(Some(Err(e))),
                None => {
                    self.input_done = true;
                    self.in_memory = self.take_buffer();
                }
            }
        }
    }
}

/// A block's end in the output batch's values (the Binary column's i32 offsets).
fn output_offset(len: usize) -> Result<i32> {
    i32::try_from(len)
        .map_err(|_| DataFusionError::Execution(format!("shuffle blocks of {len} bytes in one output batch")))
}

/// The batch in partition order (a stable counting sort: rows keep their input order within a partition; no copy
/// when they already are in order, e.g. one partition) and the row range of each non-empty partition in it.
fn sort_by_partition(batch: RecordBatch, partitions: &[u32], n: u32) -> Result<(RecordBatch, Vec<Slice>)> {
    let runs = |partitions: &[u32]| {
        let mut slices: Vec<Slice> = vec![];
        for (row, &p) in partitions.iter().enumerate() {
            match slices.last_mut() {
                Some(s) if s.partition == p => s.len += 1,
                _ => slices.push(Slice { partition: p, batch: 0, offset: row, len: 1 }),
            }
        }
        slices
    };
    if partitions.windows(2).all(|w| w[0] <= w[1]) {
        return Ok((batch, runs(partitions)));
    }
    let indices: Vec<u32> = if (n as usize) <= partitions.len() {
        let mut next = vec![0u32; n as usize + 1];
        for &p in partitions {
            next[p as usize + 1] += 1;
        }
        for i in 0..n as usize {
            next[i + 1] += next[i];
        }
        let mut indices = vec![0u32; partitions.len()];
        for (row, &p) in partitions.iter().enumerate() {
            indices[next[p as usize] as usize] = row as u32;
            next[p as usize] += 1;
        }
        indices
    } else {
        // More partitions than rows: sorting (partition, row) keys beats counting over every partition.
        let mut keys: Vec<u64> = partitions.iter().enumerate().map(|(r, &p)| (p as u64) << 32 | r as u64).collect();
        keys.sort_unstable();
        keys.into_iter().map(|k| k as u32).collect()
    };
    let sorted: Vec<u32> = indices.iter().map(|&r| partitions[r as usize]).collect();
    let batch = take_record_batch(&batch, &UInt32Array::from(indices))?;
    Ok((batch, runs(&sorted)))
}

/// One block: the rows of `slices` (in order), appended to `out` as one Arrow IPC stream (schema, one record
/// batch, end marker). Not compressed: Spark compresses the shuffle stream itself.
fn encode_block(batches: &[RecordBatch], slices: &[Slice], schema: &SchemaRef, out: &mut Vec<u8>) -> Result<()> {
    let rows = slices.iter().map(|s| s.len).sum();
    let columns = match slices {
        // One slice: no copy at all.
        [s] => batches[s.batch].columns().iter().map(|c| c.slice(s.offset, s.len)).collect(),
        _ => (0..schema.fields().len())
            .map(|c| {
                let parts: Vec<ArrayRef> =
                    slices.iter().map(|s| batches[s.batch].column(c).slice(s.offset, s.len)).collect();
                concat(&parts.iter().map(|a| a.as_ref()).collect::<Vec<_>>())
            })
            .collect::<std::result::Result<Vec<_>, _>>()?,
    };
    out.reserve(columns.iter().map(|c| c.to_data().get_slice_memory_size().unwrap_or(0)).sum::<usize>() + 1024);
    // With the row count: a block of zero columns (e.g. the shuffle under a `count(*)`) still carries its rows.
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    let batch = RecordBatch::try_new_with_options(schema.clone(), columns, &options)?;
    // 8-byte alignment (the IPC format's minimum, what Arrow Java writes) rather than 64: less padding in the
    // many small blocks of a wide shuffle.
    let options = IpcWriteOptions::try_new(8, false, MetadataVersion::V5)?;
    let mut writer = StreamWriter::try_new_with_options(out, schema, options)?;
    writer.write(&batch)?;
    writer.finish()?;
    Ok(())
}

impl Stream for ShuffleWriterStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let poll = self.poll_inner(cx);
        self.baseline.record_poll(poll)
    }
}

impl RecordBatchStream for ShuffleWriterStream {
    fn schema(&self) -> SchemaRef {
        shuffle_output_schema()
    }
}
