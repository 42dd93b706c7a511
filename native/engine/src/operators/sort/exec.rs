//! `RadixSortExec`: the `ExecutionPlan`, and the stream that buffers, sorts, spills runs and emits.
use std::fmt;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, RecordBatch, RecordBatchOptions, UInt32Array};
use arrow::compute::{concat, interleave, lexsort_to_indices, take, SortColumn};
use arrow::datatypes::SchemaRef;
use arrow::row::{RowConverter, Rows, SortField};
use datafusion_common::tree_node::TreeNodeRecursion;
use datafusion_common::utils::memory::get_record_batch_memory_size;
use datafusion_common::{internal_err, DataFusionError, Result};
use datafusion_execution::memory_pool::{MemoryConsumer, MemoryReservation};
use datafusion_execution::TaskContext;
use datafusion_physical_expr::{LexOrdering, PhysicalExpr};
use datafusion_physical_plan::metrics::{
    BaselineMetrics, Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet, SpillMetrics,
};
use datafusion_physical_plan::sorts::sort::SortExec;
use datafusion_physical_plan::spill::SpillManager;
use datafusion_physical_plan::stream::RecordBatchStreamAdapter;
use datafusion_physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, SendableRecordBatchStream,
};
use futures::{StreamExt, TryStreamExt};

use super::external::{offsets, write_run, Merge, Run};
use super::keys::{packable, radix_sort, KeyLayout, KeyValues, Packed};
use super::metric_names;

/// Spark's `SortExec` (see the module doc): keys packed for a radix sort when they pack, else in arrow's row
/// format; what does not fit in memory is sorted in runs, spilled and merged.
#[derive(Debug)]
pub struct RadixSortExec {
    input: Arc<dyn ExecutionPlan>,
    ordering: LexOrdering,
    /// Whether keys are packed (every key packable, and the radix sort not switched off).
    radix: bool,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl RadixSortExec {
    /// Whether every key of `ordering` is of a packable type over `input`'s schema.
    pub fn supports(ordering: &LexOrdering, input: &dyn ExecutionPlan) -> bool {
        let schema = input.schema();
        ordering.iter().all(|e| e.expr.data_type(&schema).map(|t| packable(&t)).unwrap_or(false))
    }

    /// The sort by `ordering`, radix sorted where its keys pack.
    pub fn try_new(ordering: LexOrdering, input: Arc<dyn ExecutionPlan>) -> Result<Self> {
        let radix = Self::supports(&ordering, input.as_ref());
        Self::with_radix(ordering, input, radix)
    }

    /// The sort by `ordering`, with packed keys only if `radix` (which needs keys that pack).
    pub fn with_radix(ordering: LexOrdering, input: Arc<dyn ExecutionPlan>, radix: bool) -> Result<Self> {
        if radix && !Self::supports(&ordering, input.as_ref()) {
            return internal_err!("RadixSortExec packing keys that do not pack: {ordering}");
        }
        // The same output properties as the DataFusion sort it stands for (ordering, one partition).
        let properties = SortExec::new(ordering.clone(), input.clone()).properties().clone();
        Ok(Self { input, ordering, radix, properties, metrics: ExecutionPlanMetricsSet::new() })
    }
}

impl DisplayAs for RadixSortExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "RadixSortExec: [{}]", self.ordering)
    }
}

impl ExecutionPlan for RadixSortExec {
    fn name(&self) -> &str {
        "RadixSortExec"
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
        for e in self.ordering.iter() {
            if f(&e.expr)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(self: Arc<Self>, mut children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        if children.len() != 1 {
            return internal_err!("RadixSortExec has one child");
        }
        Ok(Arc::new(Self::with_radix(self.ordering.clone(), children.remove(0), self.radix)?))
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, context.clone())?;
        let sorter = Sorter {
            ordering: self.ordering.clone(),
            schema: self.schema(),
            radix: self.radix,
            reservation: MemoryConsumer::new(format!("RadixSortExec[{partition}]"))
                .with_can_spill(true)
                .register(context.memory_pool()),
            merge_reservation: MemoryConsumer::new(format!("RadixSortExec[{partition}] merge"))
                .register(context.memory_pool()),
            baseline: BaselineMetrics::new(&self.metrics, partition),
            packed_rows: MetricBuilder::new(&self.metrics).counter(metric_names::PACKED_SORT_ROWS, partition),
            fallbacks: MetricBuilder::new(&self.metrics).counter(metric_names::SORT_FALLBACKS, partition),
            fell_back: Default::default(),
            passes: MetricBuilder::new(&self.metrics).counter(metric_names::SORT_MERGE_PASSES, partition),
            converter: row_converter(&self.ordering, &self.input.schema())?,
            batch_size: context.session_config().batch_size().max(1),
            spill: SpillManager::new(
                context.runtime_env(),
                SpillMetrics::new(&self.metrics, partition),
                self.input.schema(),
            )
            .with_compression_type(context.session_config().spill_compression()),
        };
        let stream = futures::stream::once(sorter.run(input)).try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(self.schema(), stream)))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}

struct Sorter {
    ordering: LexOrdering,
    schema: SchemaRef,
    /// Whether keys are packed for the radix sort (else every buffer is ordered by row-format keys).
    radix: bool,
    reservation: MemoryReservation,
    baseline: BaselineMetrics,
    packed_rows: Count,
    fallbacks: Count,
    /// Whether this sort was counted in `fallbacks` (once per sort).
    fell_back: std::cell::Cell<bool>,
    passes: Count,
    /// The keys in row format (for keys that are not packed, and runs' merges).
    converter: RowConverter,
    batch_size: usize,
    spill: SpillManager,
    /// The consumer of a merge's read buffers (it cannot spill).
    merge_reservation: MemoryReservation,
}

/// One buffered batch's sort keys.
enum BatchKeys {
    /// Each key's values, for packing.
    Packed(Vec<KeyValues>),
    /// The keys in arrow's row format.
    Rows(Rows),
}

/// The batches buffered since the last spill, with their keys (packed values, or row-format keys, per batch)
/// and what each cost the reservation.
#[derive(Default)]
struct Buffer {
    batches: Vec<RecordBatch>,
    packed: Vec<Vec<KeyValues>>,
    row_keys: Vec<Rows>,
    costs: Vec<usize>,
    /// The largest batch's bytes: reserved once more, for the output batch being gathered.
    slack: usize,
}

impl Buffer {
    fn rows(&self) -> Vec<usize> {
        self.batches.iter().map(|b| b.num_rows()).collect()
    }

    /// The buffer as two halves (by batches); the slack stays with the first.
    fn split(mut self) -> (Buffer, Buffer) {
        let mid = self.batches.len() / 2;
        let split = |len: usize| mid.min(len);
        let packed_at = split(self.packed.len());
        let rows_at = split(self.row_keys.len());
        let second = Buffer {
            batches: self.batches.split_off(mid),
            packed: self.packed.split_off(packed_at),
            row_keys: self.row_keys.split_off(rows_at),
            costs: self.costs.split_off(mid),
            slack: 0,
        };
        (self, second)
    }

    fn cost(&self) -> usize {
        self.costs.iter().sum::<usize>() + self.slack
    }
}

/// Packed values and the radix sort's scratch per row (two `u128`), then the order's `u32`.
const PACKED_BYTES_PER_ROW: usize = 32;
/// The (batch, row) pairs a row-format sort orders, and the positions they become.
const ROWS_BYTES_PER_ROW: usize = 12;

impl Sorter {
    async fn run(mut self, mut input: SendableRecordBatchStream) -> Result<SendableRecordBatchStream> {
        let mut buffer = Buffer::default();
        let mut runs: Vec<Run> = vec![];
        while let Some(batch) = input.next().await {
            let batch = batch?;
            if batch.num_rows() == 0 {
                continue;
            }
            let keys = self.batch_keys(&batch)?;
            let batch_bytes = get_record_batch_memory_size(&batch);
            let cost = batch_bytes + keys_bytes(&keys, batch.num_rows());
            let slack = batch_bytes.saturating_sub(buffer.slack);
            if self.reservation.try_grow(cost + slack).is_err() {
                if buffer.batches.is_empty() {
                    return Err(self.refused(cost + slack));
                }
                let full = std::mem::take(&mut buffer);
                let time = self.baseline.elapsed_compute().clone();
                let timer = time.timer();
                self.spill(full, &mut runs)?;
                timer.done();
                // From nothing reserved: the pool serves one batch of a consumer that holds nothing when it can.
                self.reservation.try_grow(cost + batch_bytes).map_err(|_| self.refused(cost + batch_bytes))?;
                buffer.slack = batch_bytes;
            } else {
                buffer.slack += slack;
            }
            buffer.batches.push(batch);
            match keys {
                BatchKeys::Packed(values) => buffer.packed.push(values),
                BatchKeys::Rows(rows) => buffer.row_keys.push(rows),
            }
            buffer.costs.push(cost);
        }
        if runs.is_empty() {
            return self.in_memory(buffer);
        }
        if !buffer.batches.is_empty() {
            let time = self.baseline.elapsed_compute().clone();
            let timer = time.timer();
            self.spill(buffer, &mut runs)?;
            timer.done();
        }
        self.fall_back();
        let merge = Merge {
            ordering: self.ordering.clone(),
            schema: self.schema.clone(),
            batch_size: self.batch_size,
            spill: self.spill.clone(),
            baseline: self.baseline.clone(),
            passes: self.passes.clone(),
        };
        drop(self.reservation);
        merge.run(runs, self.merge_reservation).await
    }

    /// Counts this sort once in `fallbacks`: spilled and merged, or ordered by row-format keys.
    fn fall_back(&self) {
        if !self.fell_back.replace(true) {
            self.fallbacks.add(1);
        }
    }

    fn refused(&self, bytes: usize) -> DataFusionError {
        DataFusionError::ResourcesExhausted(format!(
            "{} could not reserve {bytes} bytes for one input batch and its sort keys",
            self.reservation.consumer().name()
        ))
    }

    fn batch_keys(&self, batch: &RecordBatch) -> Result<BatchKeys> {
        let arrays = self
            .ordering
            .iter()
            .map(|e| e.expr.evaluate(batch)?.into_array(batch.num_rows()))
            .collect::<Result<Vec<ArrayRef>>>()?;
        Ok(if self.radix {
            BatchKeys::Packed(arrays.iter().map(KeyValues::new).collect())
        } else {
            BatchKeys::Rows(self.converter.convert_columns(&arrays)?)
        })
    }

    /// The order of the buffer's rows (positions in the buffer), or `None` when it needs memory the pool refuses
    /// (row-format keys for packable keys wider than 128 bits).
    fn order(&self, buffer: &Buffer) -> Result<Option<Vec<u32>>> {
        let rows = buffer.rows();
        if !self.radix {
            return Ok(Some(rows_order(&buffer.row_keys.iter().collect::<Vec<_>>(), &rows)));
        }
        let keys = &buffer.packed;
        let options: Vec<_> = self.ordering.iter().map(|e| e.options).collect();
        let total: usize = rows.iter().sum();
        match KeyLayout::try_new(keys, &options, &rows) {
            Some(layout) => {
                self.packed_rows.add(total);
                Ok(Some(if layout.fits_u64() {
                    sorted_positions::<u64>(&layout, keys, &rows)
                } else {
                    sorted_positions::<u128>(&layout, keys, &rows)
                }))
            }
            None => {
                // Keys wider than 128 bits: row-format keys, beyond the packed values' share if need be.
                self.fall_back();
                let converter = &self.converter;
                let mut all = Vec::with_capacity(buffer.batches.len());
                for batch in &buffer.batches {
                    let arrays = self
                        .ordering
                        .iter()
                        .map(|e| e.expr.evaluate(batch)?.into_array(batch.num_rows()))
                        .collect::<Result<Vec<ArrayRef>>>()?;
                    all.push(converter.convert_columns(&arrays)?);
                }
                let need = all.iter().map(Rows::size).sum::<usize>() + total * ROWS_BYTES_PER_ROW;
                let extra = need.saturating_sub(total * PACKED_BYTES_PER_ROW);
                if self.reservation.try_grow(extra).is_err() {
                    return Ok(None);
                }
                let order = rows_order(&all.iter().collect::<Vec<_>>(), &rows);
                self.reservation.shrink(extra);
                Ok(Some(order))
            }
        }
    }

    /// Sorts the buffer into one or more runs written to disk and releases what it reserved.
    fn spill(&mut self, buffer: Buffer, runs: &mut Vec<Run>) -> Result<()> {
        let cost = buffer.cost();
        let order = match self.order(&buffer)? {
            Some(order) => order,
            None if buffer.batches.len() > 1 => {
                let (first, second) = buffer.split();
                self.spill(first, runs)?;
                return self.spill(second, runs);
            }
            None => {
                // One batch whose wide keys the pool refuses to hold twice: ordered by comparisons alone.
                let batch = &buffer.batches[0];
                let columns = self
                    .ordering
                    .iter()
                    .map(|e| {
                        let values = e.expr.evaluate(batch)?.into_array(batch.num_rows())?;
                        Ok(SortColumn { values, options: Some(e.options) })
                    })
                    .chain(std::iter::once(Ok(SortColumn {
                        // The position last: equal keys in input order.
                        values: Arc::new(UInt32Array::from_iter_values(0..batch.num_rows() as u32)) as ArrayRef,
                        options: None,
                    })))
                    .collect::<Result<Vec<_>>>()?;
                lexsort_to_indices(&columns, None)?.values().to_vec()
            }
        };
        let rows = buffer.rows();
        let Buffer { batches, packed, row_keys, .. } = buffer;
        drop((packed, row_keys));
        let columns = columns_of(&batches, self.schema.fields().len());
        drop(batches);
        let run =
            write_run(&self.spill, &self.ordering, &self.schema, columns, &offsets(&rows), &order, self.batch_size)?;
        runs.extend(run);
        self.reservation.shrink(cost.min(self.reservation.size()));
        Ok(())
    }

    /// The whole input sorted in memory: the buffer's reservation covers the keys and one output batch; the
    /// column-wise gather asks for a second copy of the input, else rows are gathered a batch at a time.
    fn in_memory(self, buffer: Buffer) -> Result<SendableRecordBatchStream> {
        let rows = buffer.rows();
        let total: usize = rows.iter().sum();
        if total == 0 {
            return Ok(Box::pin(RecordBatchStreamAdapter::new(self.schema, futures::stream::empty())));
        }
        let timer = self.baseline.elapsed_compute().timer();
        let order = match self.order(&buffer)? {
            Some(order) => order,
            None => {
                // Packable keys too wide to pack, whose row-format keys the pool refuses: spill and merge.
                timer.done();
                let mut this = self;
                let mut runs = vec![];
                this.spill(buffer, &mut runs)?;
                let merge = Merge {
                    ordering: this.ordering.clone(),
                    schema: this.schema.clone(),
                    batch_size: this.batch_size,
                    spill: this.spill.clone(),
                    baseline: this.baseline.clone(),
                    passes: this.passes.clone(),
                };
                let reservation = this.merge_reservation;
                return Ok(Box::pin(RecordBatchStreamAdapter::new(
                    this.schema.clone(),
                    futures::stream::once(merge.run(runs, reservation)).try_flatten(),
                )));
            }
        };
        let Buffer { batches, packed, row_keys, .. } = buffer;
        drop((packed, row_keys));
        let batch_bytes: usize = batches.iter().map(get_record_batch_memory_size).sum();
        // What stays reserved: the batches and the order.
        self.reservation.shrink(self.reservation.size().saturating_sub(batch_bytes + total * 4));
        let columns = columns_of(&batches, self.schema.fields().len());
        drop(batches);
        // Gathering a whole column at a time keeps one input column in cache for random reads; it needs the
        // output's memory next to the input's. Without it, rows are gathered a batch at a time.
        let output = if self.reservation.try_grow(batch_bytes).is_ok() {
            let out = gather_by_column(columns, order, &self.schema, self.batch_size)?;
            self.reservation.shrink(total * 4);
            self.reservation.shrink(self.reservation.size().saturating_sub(batch_bytes));
            SortedOutput::Ready(out.into())
        } else {
            SortedOutput::Chunked { columns, offsets: offsets(&rows), order, next: 0, batch_size: self.batch_size }
        };
        timer.done();
        let output = OutputStream {
            output,
            schema: self.schema.clone(),
            baseline: self.baseline,
            reservation: self.reservation,
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(self.schema, futures::stream::iter(output))))
    }
}

/// Arrow's row format for `ordering`'s keys over `schema`.
pub(super) fn row_converter(ordering: &LexOrdering, schema: &SchemaRef) -> Result<RowConverter> {
    let fields = ordering
        .iter()
        .map(|e| Ok(SortField::new_with_options(e.expr.data_type(schema)?, e.options)))
        .collect::<Result<Vec<_>>>()?;
    Ok(RowConverter::new(fields)?)
}

/// Bytes a batch's keys hold (beyond the batch) and what ordering its rows takes, per [`Buffer`] cost.
fn keys_bytes(keys: &BatchKeys, rows: usize) -> usize {
    match keys {
        BatchKeys::Packed(values) => {
            values.iter().map(KeyValues::extra_bytes).sum::<usize>() + rows * PACKED_BYTES_PER_ROW
        }
        BatchKeys::Rows(r) => r.size() + rows * ROWS_BYTES_PER_ROW,
    }
}

/// The order of rows given as row-format keys per batch: positions over the batches in order, equal keys in
/// input order.
fn rows_order(keys: &[&Rows], rows: &[usize]) -> Vec<u32> {
    let mut pairs: Vec<(u32, u32)> =
        rows.iter().enumerate().flat_map(|(b, &n)| (0..n as u32).map(move |r| (b as u32, r))).collect();
    pairs.sort_unstable_by(|a, b| {
        keys[a.0 as usize].row(a.1 as usize).cmp(&keys[b.0 as usize].row(b.1 as usize)).then(a.cmp(b))
    });
    let starts = offsets(rows);
    pairs.into_iter().map(|(b, r)| (starts[b as usize] + r as usize) as u32).collect()
}

/// Per output column, that column of every batch.
fn columns_of(batches: &[RecordBatch], columns: usize) -> Vec<Vec<ArrayRef>> {
    (0..columns).map(|c| batches.iter().map(|b| b.column(c).clone()).collect()).collect()
}

/// The rows at `order`'s positions (over batches starting at `offsets`) as one batch.
pub(super) fn gather(
    schema: &SchemaRef,
    columns: &[Vec<ArrayRef>],
    offsets: &[usize],
    order: &[u32],
) -> Result<RecordBatch> {
    let positions: Vec<(usize, usize)> = order
        .iter()
        .map(|&p| {
            let b = offsets.partition_point(|&o| o <= p as usize) - 1;
            (b, p as usize - offsets[b])
        })
        .collect();
    let cols = columns
        .iter()
        .map(|arrays| {
            let arrays: Vec<&dyn Array> = arrays.iter().map(|a| a.as_ref()).collect();
            interleave(&arrays, &positions)
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(output_batch(schema, cols, positions.len())?)
}

/// The input positions of the rows in sorted order.
fn sorted_positions<P: Packed>(layout: &KeyLayout, keys: &[Vec<KeyValues>], rows: &[usize]) -> Vec<u32> {
    let mut packed: Vec<P> = layout.pack(keys, rows);
    radix_sort(&mut packed, layout.ref_bits, layout.key_bits);
    packed.into_iter().map(|p| layout.position(p)).collect()
}

/// The sorted output in batches of `batch_size`, built one column at a time: concatenate the column's
/// arrays, then take every output batch's rows from it.
fn gather_by_column(
    mut columns: Vec<Vec<ArrayRef>>,
    order: Vec<u32>,
    schema: &SchemaRef,
    batch_size: usize,
) -> Result<Vec<RecordBatch>> {
    let order = UInt32Array::from(order);
    let chunks: Vec<UInt32Array> =
        (0..order.len()).step_by(batch_size).map(|s| order.slice(s, batch_size.min(order.len() - s))).collect();
    let mut out: Vec<Vec<ArrayRef>> = vec![Vec::with_capacity(columns.len()); chunks.len()];
    for arrays in columns.iter_mut() {
        let arrays = std::mem::take(arrays);
        let refs: Vec<&dyn Array> = arrays.iter().map(|a| a.as_ref()).collect();
        let whole = concat(&refs)?;
        drop(refs);
        drop(arrays);
        for (cols, idx) in out.iter_mut().zip(&chunks) {
            cols.push(take(whole.as_ref(), idx, None)?);
        }
    }
    out.into_iter().zip(&chunks).map(|(cols, idx)| Ok(output_batch(schema, cols, idx.len())?)).collect()
}

/// An output batch of `rows` rows (a schema without columns still has its rows).
fn output_batch(schema: &SchemaRef, columns: Vec<ArrayRef>, rows: usize) -> arrow::error::Result<RecordBatch> {
    RecordBatch::try_new_with_options(schema.clone(), columns, &RecordBatchOptions::new().with_row_count(Some(rows)))
}

enum SortedOutput {
    Ready(std::collections::VecDeque<RecordBatch>),
    /// Per output column, that column of every input batch; rows gathered `batch_size` at a time.
    Chunked {
        columns: Vec<Vec<ArrayRef>>,
        offsets: Vec<usize>,
        order: Vec<u32>,
        next: usize,
        batch_size: usize,
    },
}

impl SortedOutput {
    fn next_batch(&mut self, schema: &SchemaRef) -> Option<Result<RecordBatch>> {
        match self {
            SortedOutput::Ready(batches) => batches.pop_front().map(Ok),
            SortedOutput::Chunked { columns, offsets, order, next, batch_size } => {
                if *next >= order.len() {
                    return None;
                }
                let end = (*next + *batch_size).min(order.len());
                let batch = gather(schema, columns, offsets, &order[*next..end]);
                *next = end;
                Some(batch)
            }
        }
    }
}

/// Emits the sorted batches; the reservation shrinks as ready batches leave and is released with the stream.
struct OutputStream {
    output: SortedOutput,
    schema: SchemaRef,
    baseline: BaselineMetrics,
    reservation: MemoryReservation,
}

impl Iterator for OutputStream {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        let timer = self.baseline.elapsed_compute().timer();
        let batch = self.output.next_batch(&self.schema);
        timer.done();
        if let Some(Ok(b)) = &batch {
            self.baseline.record_output(b.num_rows());
            if matches!(self.output, SortedOutput::Ready(_)) {
                self.reservation.shrink(get_record_batch_memory_size(b).min(self.reservation.size()));
            }
        }
        batch
    }
}
