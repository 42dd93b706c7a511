//! The merging state machine: one table, then `2^fanout_bits` partitions (resident or spilled), then emission
//! partition by partition.
use std::collections::VecDeque;
use std::ops::Range;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use arrow::array::{ArrayRef, RecordBatch, UInt32Array};
use arrow::compute::{concat_batches, interleave_record_batch, take_record_batch};
use arrow::datatypes::{Schema, SchemaRef};
use datafusion_common::hash_utils::{create_hashes, RandomState};
use datafusion_common::utils::memory::get_record_batch_memory_size;
use datafusion_common::{DataFusionError, Result};
use datafusion_execution::memory_pool::{MemoryConsumer, MemoryReservation};
use datafusion_execution::{RecordBatchStream, SendableRecordBatchStream, TaskContext};
use datafusion_expr::{EmitTo, GroupsAccumulator};
use datafusion_physical_expr::aggregate::AggregateFunctionExpr;
use datafusion_physical_expr::PhysicalExpr;
use datafusion_physical_plan::aggregates::group_values::{new_group_values, GroupValues};
use datafusion_physical_plan::aggregates::order::GroupOrdering;
use datafusion_physical_plan::aggregates::AggregateMode;
use datafusion_physical_plan::metrics::{
    BaselineMetrics, Count, ExecutionPlanMetricsSet, Gauge, MetricBuilder, SpillMetrics,
};
use datafusion_physical_plan::spill::SpillManager;
use futures::{Stream, StreamExt};

use super::metric_names;
use crate::operators::shared::{batch_slices, create_group_accumulator};
use crate::operators::spill::{read_compacted, CoalescingWriter};

/// Partition hash of a split level: seeded unlike the sub-tables' own hashing, whose top bits hashbrown keeps as
/// its tag (a partition drawn from the same bits would give all its groups one tag), and differently at every
/// level, so that a spilled partition merged again splits on bits it does not share.
fn radix_hash(level: u32) -> RandomState {
    RandomState::with_seed(0x454d_4245_525f_5258 ^ u64::from(level).wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// Spilled partitions are merged again, split afresh, at most this deep: a partition that still does not fit
/// then (its groups' states alone exceed the pool) is an error, not an endless recursion.
const MAX_LEVEL: u32 = 6;

#[derive(Debug, Clone)]
pub(super) struct RadixMetrics {
    /// Partitions after the split (0: one table sufficed).
    radix_partitions: Gauge,
    spilled_partitions: Count,
    spill: SpillMetrics,
}

impl RadixMetrics {
    pub(super) fn new(set: &ExecutionPlanMetricsSet, partition: usize) -> Self {
        Self {
            radix_partitions: MetricBuilder::new(set).gauge(metric_names::RADIX_PARTITIONS, partition),
            spilled_partitions: MetricBuilder::new(set).counter(metric_names::SPILLED_PARTITIONS, partition),
            spill: SpillMetrics::new(set, partition),
        }
    }
}

/// One hash table: DataFusion's group values and accumulators, merging states.
struct Table {
    group_values: Box<dyn GroupValues>,
    accumulators: Vec<Box<dyn GroupsAccumulator>>,
}

impl Table {
    fn new(group_schema: &SchemaRef, aggr_expr: &[Arc<AggregateFunctionExpr>]) -> Result<Self> {
        Ok(Self {
            group_values: new_group_values(Arc::clone(group_schema), &GroupOrdering::None)?,
            accumulators: aggr_expr.iter().map(create_group_accumulator).collect::<Result<_>>()?,
        })
    }

    fn size(&self) -> usize {
        self.group_values.size() + self.accumulators.iter().map(|a| a.size()).sum::<usize>()
    }

    fn groups(&self) -> usize {
        self.group_values.len()
    }

    /// Merges rows laid out as the input: `keys` grouping columns, then each accumulator's state columns.
    fn merge(
        &mut self,
        columns: &[ArrayRef],
        keys: usize,
        states: &[Range<usize>],
        ids: &mut Vec<usize>,
    ) -> Result<()> {
        self.group_values.intern(&columns[..keys], ids)?;
        let total = self.group_values.len();
        for (acc, range) in self.accumulators.iter_mut().zip(states) {
            acc.merge_batch(&columns[range.clone()], ids, total)?;
        }
        Ok(())
    }

    /// Every group: the keys, then each accumulator's states (`results == false`, the input's layout) or result.
    fn emit(mut self, results: bool) -> Result<Vec<ArrayRef>> {
        let mut columns = self.group_values.emit(EmitTo::All)?;
        for acc in self.accumulators.iter_mut() {
            if results {
                columns.push(acc.evaluate(EmitTo::All)?);
            } else {
                columns.extend(acc.state(EmitTo::All)?);
            }
        }
        Ok(columns)
    }
}

/// No group was created here (`created_at`), or the partition is not resident (`OrderedEmit::slot`).
const NO_GROUP: u16 = u16::MAX;

/// The resident partitions' groups, emitted in the order they were created.
#[derive(Default)]
struct OrderedEmit {
    /// One batch per resident partition: its groups in creation order.
    batches: Vec<RecordBatch>,
    /// Partition → its batch (`NO_GROUP`: spilled, its groups are emitted later from disk).
    slot: Vec<u16>,
    creation: Vec<u16>,
    at: usize,
    cursors: Vec<usize>,
}

impl OrderedEmit {
    /// The next `batch_size` groups in creation order; `None` when all are out.
    fn next_batch(&mut self, batch_size: usize) -> Result<Option<RecordBatch>> {
        let mut rows = Vec::with_capacity(batch_size);
        while rows.len() < batch_size && self.at < self.creation.len() {
            let slot = self.slot[self.creation[self.at] as usize];
            self.at += 1;
            if slot != NO_GROUP {
                let b = slot as usize;
                rows.push((b, self.cursors[b]));
                self.cursors[b] += 1;
            }
        }
        if rows.is_empty() {
            let lost = self.cursors.iter().zip(&self.batches).any(|(&c, b)| c != b.num_rows());
            if lost {
                return Err(DataFusionError::Internal(
                    "radix aggregate: groups missing from the creation order".into(),
                ));
            }
            return Ok(None);
        }
        let refs: Vec<&RecordBatch> = self.batches.iter().collect();
        Ok(Some(interleave_record_batch(&refs, &rows)?))
    }
}

enum Part {
    Resident(Table),
    Spilled(CoalescingWriter),
    Emitted,
}

pub(super) struct RadixAggregateStream {
    schema: SchemaRef,
    input: SendableRecordBatchStream,
    mode: AggregateMode,
    group_by: Vec<(Arc<dyn PhysicalExpr>, String)>,
    aggr_expr: Vec<Arc<AggregateFunctionExpr>>,
    raw_schema: SchemaRef,
    config: super::RadixConfig,
    partition: usize,
    level: u32,
    hash: RandomState,
    /// The input's schema with every field nullable: buffered and spilled batches, whose states a table emits
    /// with whatever nullability its accumulators declare.
    rows_schema: SchemaRef,
    group_schema: SchemaRef,
    keys: usize,
    states: Vec<Range<usize>>,
    batch_size: usize,
    context: Arc<TaskContext>,
    /// Before the split.
    single: Option<Table>,
    /// After it, by the top `fanout_bits` bits of the partition hash.
    parts: Vec<Part>,
    /// The partition of every group created since the split, in the order the groups were first met: the
    /// output follows it, so that groups leave in first-seen order — Spark's hash aggregate's order, and one
    /// table's — rather than partition by partition.
    creation: Vec<u16>,
    /// Per flush: which partition (if any) created a group at each buffered row.
    created_at: Vec<u16>,
    /// Resident partitions being emitted in `creation` order.
    ordered: Option<OrderedEmit>,
    buffer: Vec<RecordBatch>,
    buffered_rows: usize,
    buffered_bytes: usize,
    hashes: Vec<u64>,
    group_ids: Vec<usize>,
    /// The tables and the buffer.
    tables: MemoryReservation,
    /// Rows gathered by the spill writers.
    staging: MemoryReservation,
    spill: SpillManager,
    pending: VecDeque<RecordBatch>,
    next_part: usize,
    /// A spilled partition being merged again, one level deeper.
    replay: Option<Box<RadixAggregateStream>>,
    input_done: bool,
    done: bool,
    baseline: BaselineMetrics,
    metrics: RadixMetrics,
}

impl RadixAggregateStream {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn try_new(
        schema: SchemaRef,
        input: SendableRecordBatchStream,
        mode: AggregateMode,
        group_by: Vec<(Arc<dyn PhysicalExpr>, String)>,
        aggr_expr: Vec<Arc<AggregateFunctionExpr>>,
        raw_schema: SchemaRef,
        config: super::RadixConfig,
        context: Arc<TaskContext>,
        partition: usize,
        level: u32,
        baseline: BaselineMetrics,
        metrics: RadixMetrics,
    ) -> Result<Self> {
        let input_schema = input.schema();
        let keys = group_by.len();
        let rows_schema = Arc::new(Schema::new(
            input_schema.fields().iter().map(|f| f.as_ref().clone().with_nullable(true)).collect::<Vec<_>>(),
        ));
        let group_schema = Arc::new(Schema::new(input_schema.fields()[..keys].to_vec()));
        let mut states = vec![];
        let mut at = keys;
        for a in &aggr_expr {
            let n = a.state_fields()?.len();
            states.push(at..at + n);
            at += n;
        }
        let pool = context.memory_pool();
        let tables = MemoryConsumer::new(format!("RadixAggregate[{partition}] level {level}"))
            .with_can_spill(true)
            .register(pool);
        let staging =
            MemoryConsumer::new(format!("RadixAggregate[{partition}] level {level} spill staging")).register(pool);
        let spill = SpillManager::new(context.runtime_env(), metrics.spill.clone(), Arc::clone(&rows_schema))
            .with_compression_type(context.session_config().spill_compression());
        let single = Some(Table::new(&group_schema, &aggr_expr)?);
        Ok(Self {
            schema,
            input,
            mode,
            group_by,
            aggr_expr,
            raw_schema,
            rows_schema,
            group_schema,
            keys,
            states,
            config,
            partition,
            level,
            hash: radix_hash(level),
            batch_size: context.session_config().batch_size().max(1),
            context,
            single,
            parts: vec![],
            creation: vec![],
            created_at: vec![],
            ordered: None,
            buffer: vec![],
            buffered_rows: 0,
            buffered_bytes: 0,
            hashes: vec![],
            group_ids: vec![],
            tables,
            staging,
            spill,
            pending: VecDeque::new(),
            next_part: 0,
            replay: None,
            input_done: false,
            done: false,
            baseline,
            metrics,
        })
    }

    fn resident_bytes(&self) -> usize {
        let parts: usize = self.parts.iter().map(|p| if let Part::Resident(t) = p { t.size() } else { 0 }).sum();
        let order = 2 * (self.creation.capacity() + self.created_at.capacity());
        self.single.as_ref().map_or(0, Table::size) + parts + order + self.buffered_bytes
    }

    fn process(&mut self, batch: RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        if let Some(t) = self.single.as_mut() {
            t.merge(batch.columns(), self.keys, &self.states, &mut self.group_ids)?;
            if t.groups() > self.config.min_groups {
                return self.split();
            }
            return self.fit();
        }
        let batch = RecordBatch::try_new(Arc::clone(&self.rows_schema), batch.columns().to_vec())?;
        self.buffered_rows += batch.num_rows();
        self.buffered_bytes += get_record_batch_memory_size(&batch);
        self.buffer.push(batch);
        if self.buffered_rows >= self.config.flush_rows || self.tables.try_resize(self.resident_bytes()).is_err() {
            self.flush()?;
        }
        Ok(())
    }

    /// The single table's groups, as states, become the first rows of the partitions.
    fn split(&mut self) -> Result<()> {
        let Some(table) = self.single.take() else { return Ok(()) };
        let states = match table.groups() {
            0 => RecordBatch::new_empty(Arc::clone(&self.rows_schema)),
            _ => RecordBatch::try_new(Arc::clone(&self.rows_schema), table.emit(false)?)?,
        };
        let fanout = 1usize << self.config.fanout_bits;
        self.parts = (0..fanout)
            .map(|_| Table::new(&self.group_schema, &self.aggr_expr).map(Part::Resident))
            .collect::<Result<_>>()?;
        self.metrics.radix_partitions.set(fanout);
        self.buffered_rows += states.num_rows();
        self.buffered_bytes += get_record_batch_memory_size(&states);
        self.buffer.insert(0, states);
        self.flush()
    }

    /// Reorders the buffered rows by partition in one pass, then merges (or spills) each partition's run.
    fn flush(&mut self) -> Result<()> {
        let batches = std::mem::take(&mut self.buffer);
        let total = std::mem::take(&mut self.buffered_rows);
        self.buffered_bytes = 0;
        if !batches.is_empty() {
            let fanout = self.parts.len();
            let shift = 64 - self.config.fanout_bits;
            let mut part_of: Vec<u16> = Vec::with_capacity(total);
            let mut counts = vec![0usize; fanout];
            for b in &batches {
                self.hashes.clear();
                self.hashes.resize(b.num_rows(), 0);
                create_hashes(&b.columns()[..self.keys], &self.hash, &mut self.hashes)?;
                for &h in &self.hashes {
                    let p = (h >> shift) as usize;
                    counts[p] += 1;
                    part_of.push(p as u16);
                }
            }
            let mut starts = Vec::with_capacity(fanout);
            let mut at = 0;
            for c in &counts {
                starts.push(at);
                at += c;
            }
            // A counting sort of row positions by partition (stable: arrival order within a partition), then
            // one gather over the rows made contiguous.
            let mut cursor = starts.clone();
            let mut indices = vec![0u32; total];
            for (row, &p) in part_of.iter().enumerate() {
                let p = p as usize;
                indices[cursor[p]] = row as u32;
                cursor[p] += 1;
            }
            drop(part_of);
            let all = if batches.len() == 1 {
                batches.into_iter().next().unwrap()
            } else {
                concat_batches(&self.rows_schema, &batches)?
            };
            let ordered = take_record_batch(&all, &UInt32Array::from_iter_values(indices.iter().copied()))?;
            drop(all);
            let track = self.config.first_seen_order;
            if track {
                self.created_at.clear();
                self.created_at.resize(total, NO_GROUP);
            }
            for (p, (&start, &len)) in starts.iter().zip(&counts).enumerate() {
                if len == 0 {
                    continue;
                }
                let run = ordered.slice(start, len);
                match &mut self.parts[p] {
                    Part::Resident(t) if !track => {
                        t.merge(run.columns(), self.keys, &self.states, &mut self.group_ids)?
                    }
                    Part::Resident(t) => {
                        let known = t.groups();
                        t.merge(run.columns(), self.keys, &self.states, &mut self.group_ids)?;
                        // New groups get consecutive ids at their first row in the run.
                        let mut next = known;
                        for (i, &g) in self.group_ids.iter().enumerate() {
                            if g == next {
                                self.created_at[indices[start + i] as usize] = p as u16;
                                next += 1;
                            }
                        }
                    }
                    Part::Spilled(w) => {
                        // A compact copy: a slice would keep (and be reserved at) the whole reordered batch.
                        let run = take_record_batch(&run, &UInt32Array::from_iter_values(0..len as u32))?;
                        w.push(run, &self.staging)?
                    }
                    Part::Emitted => unreachable!("partitions are emitted after the input ends"),
                }
            }
            if track {
                self.creation.extend(self.created_at.iter().copied().filter(|&p| p != NO_GROUP));
            }
        }
        self.fit()
    }

    /// Merges the last buffered rows and writes out the rows the spill writers still stage, so that the
    /// partitions merged from disk later have the pool to themselves.
    fn end_input(&mut self) -> Result<()> {
        self.flush()?;
        for part in self.parts.iter_mut() {
            if let Part::Spilled(w) = part {
                w.flush(&self.staging)?;
            }
        }
        Ok(())
    }

    /// Reserves what is resident; when the pool refuses, splits (if still one table) and spills the largest
    /// partitions until it does not.
    fn fit(&mut self) -> Result<()> {
        loop {
            let want = self.resident_bytes();
            if self.tables.try_resize(want).is_ok() {
                return Ok(());
            }
            if self.single.is_some() {
                // Only partitions can spill.
                return self.split();
            }
            if self.level >= MAX_LEVEL {
                return Err(DataFusionError::ResourcesExhausted(format!(
                    "radix aggregate: {want} bytes of groups still do not fit after {MAX_LEVEL} splits"
                )));
            }
            let largest = self
                .parts
                .iter()
                .enumerate()
                .filter_map(|(i, p)| match p {
                    Part::Resident(t) if t.groups() > 0 => Some((t.size(), i)),
                    _ => None,
                })
                .max();
            match largest {
                Some((_, p)) => self.spill_part(p)?,
                None => {
                    // Nothing left to spill but empty tables: hold them anyway.
                    self.tables.resize(want);
                    return Ok(());
                }
            }
        }
    }

    fn spill_part(&mut self, p: usize) -> Result<()> {
        let Part::Resident(table) = std::mem::replace(&mut self.parts[p], Part::Emitted) else {
            return Ok(());
        };
        let states = RecordBatch::try_new(Arc::clone(&self.rows_schema), table.emit(false)?)?;
        let mut writer = CoalescingWriter::with_label(&self.spill, self.batch_size, "ember radix aggregate partition")?;
        writer.push(states, &self.staging)?;
        self.parts[p] = Part::Spilled(writer);
        self.metrics.spilled_partitions.add(1);
        Ok(())
    }

    /// Queues the next partition's groups (or starts replaying a spilled one); false when none is left.
    fn emit_next(&mut self) -> Result<bool> {
        let results = self.mode == AggregateMode::Final;
        if let Some(table) = self.single.take() {
            if table.groups() > 0 {
                let columns = table.emit(results)?;
                self.queue(columns)?;
            }
            self.tables.free();
            return Ok(true);
        }
        // Resident partitions first, so that their memory is free before any spilled one is merged: one by one,
        // or all together in first-seen order.
        if !self.config.first_seen_order {
            if let Some(p) = self.parts.iter().position(|p| matches!(p, Part::Resident(_))) {
                if let Part::Resident(table) = std::mem::replace(&mut self.parts[p], Part::Emitted) {
                    if table.groups() > 0 {
                        let columns = table.emit(results)?;
                        self.queue(columns)?;
                    }
                    self.tables.resize(self.resident_bytes());
                }
                return Ok(true);
            }
        }
        if self.ordered.is_none() && self.parts.iter().any(|p| matches!(p, Part::Resident(_))) {
            let mut slot = vec![NO_GROUP; self.parts.len()];
            let mut batches = vec![];
            for (p, part) in self.parts.iter_mut().enumerate() {
                if !matches!(part, Part::Resident(_)) {
                    continue;
                }
                if let Part::Resident(table) = std::mem::replace(part, Part::Emitted) {
                    // (Row-at-a-time accumulators cannot emit zero groups.)
                    if table.groups() > 0 {
                        slot[p] = batches.len() as u16;
                        batches.push(RecordBatch::try_new(Arc::clone(&self.schema), table.emit(results)?)?);
                    }
                }
            }
            let creation = std::mem::take(&mut self.creation);
            self.ordered = Some(OrderedEmit { cursors: vec![0; batches.len()], batches, slot, creation, at: 0 });
        }
        if let Some(ordered) = self.ordered.as_mut() {
            match ordered.next_batch(self.batch_size)? {
                Some(batch) => self.pending.push_back(batch),
                None => {
                    self.ordered = Some(OrderedEmit::default());
                    self.tables.resize(self.resident_bytes());
                }
            }
            if !self.pending.is_empty() {
                return Ok(true);
            }
        }
        while self.next_part < self.parts.len() {
            let p = self.next_part;
            self.next_part += 1;
            match std::mem::replace(&mut self.parts[p], Part::Emitted) {
                Part::Resident(_) => unreachable!("resident partitions are emitted first"),
                Part::Spilled(writer) => {
                    let side = writer.finish(&self.staging)?;
                    let Some(file) = side.file else { continue };
                    let rows = read_compacted(&self.spill, file)?;
                    // Its output rows and time count once, in this operator's baseline.
                    let unrecorded = BaselineMetrics::new(&ExecutionPlanMetricsSet::new(), self.partition);
                    self.replay = Some(Box::new(RadixAggregateStream::try_new(
                        Arc::clone(&self.schema),
                        rows,
                        self.mode,
                        self.group_by.clone(),
                        self.aggr_expr.clone(),
                        Arc::clone(&self.raw_schema),
                        self.config.clone(),
                        Arc::clone(&self.context),
                        self.partition,
                        self.level + 1,
                        unrecorded,
                        self.metrics.clone(),
                    )?));
                    return Ok(true);
                }
                Part::Emitted => {}
            }
        }
        Ok(false)
    }

    /// Output columns → `batch_size` batches of the output schema.
    fn queue(&mut self, columns: Vec<ArrayRef>) -> Result<()> {
        let batch = RecordBatch::try_new(Arc::clone(&self.schema), columns)?;
        self.pending.extend(batch_slices(&batch, self.batch_size));
        Ok(())
    }

    fn fail(&mut self, e: DataFusionError) -> Poll<Option<Result<RecordBatch>>> {
        self.done = true;
        self.pending.clear();
        self.replay = None;
        self.ordered = None;
        self.parts.clear();
        self.single = None;
        self.tables.free();
        self.staging.free();
        Poll::Ready(Some(Err(e)))
    }
}

impl Stream for RadixAggregateStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if let Some(batch) = self.pending.pop_front() {
                self.baseline.record_output(batch.num_rows());
                return Poll::Ready(Some(Ok(batch)));
            }
            if self.done {
                return Poll::Ready(None);
            }
            let elapsed = self.baseline.elapsed_compute().clone();
            if let Some(replay) = self.replay.as_mut() {
                let timer = elapsed.timer();
                let polled = replay.poll_next_unpin(cx);
                timer.done();
                match polled {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Some(Ok(b))) => self.pending.push_back(b),
                    Poll::Ready(Some(Err(e))) => return self.fail(e),
                    Poll::Ready(None) => self.replay = None,
                }
                continue;
            }
            if !self.input_done {
                match self.input.poll_next_unpin(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Some(Ok(batch))) => {
                        let timer = elapsed.timer();
                        let result = self.process(batch);
                        timer.done();
                        if let Err(e) = result {
                            return self.fail(e);
                        }
                    }
                    Poll::Ready(Some(Err(e))) => return self.fail(e),
                    Poll::Ready(None) => {
                        self.input_done = true;
                        let timer = elapsed.timer();
                        let result = if self.single.is_none() { self.end_input() } else { Ok(()) };
                        timer.done();
                        if let Err(e) = result {
                            return self.fail(e);
                        }
                    }
                }
                continue;
            }
            let timer = elapsed.timer();
            let more = self.emit_next();
            timer.done();
            match more {
                Ok(true) => {}
                Ok(false) => {
                    self.done = true;
                    self.tables.free();
                    self.staging.free();
                }
                Err(e) => return self.fail(e),
            }
        }
    }
}

impl RecordBatchStream for RadixAggregateStream {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }
}
