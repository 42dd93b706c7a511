//! `RadixSortExec`: the `ExecutionPlan`, and the stream that buffers, packs, sorts and emits.
use std::fmt;
use std::sync::{Arc, Mutex};

use arrow::array::{Array, ArrayRef, RecordBatch, RecordBatchOptions, UInt32Array};
use arrow::compute::{concat, interleave, take};
use arrow::datatypes::SchemaRef;
use datafusion_common::tree_node::TreeNodeRecursion;
use datafusion_common::utils::memory::get_record_batch_memory_size;
use datafusion_common::{internal_err, Result};
use datafusion_execution::memory_pool::{MemoryConsumer, MemoryReservation};
use datafusion_execution::TaskContext;
use datafusion_physical_expr::{LexOrdering, PhysicalExpr};
use datafusion_physical_plan::metrics::{BaselineMetrics, Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet};
use datafusion_physical_plan::sorts::sort::SortExec;
use datafusion_physical_plan::stream::RecordBatchStreamAdapter;
use datafusion_physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, SendableRecordBatchStream,
};
use futures::{StreamExt, TryStreamExt};

use super::keys::{packable, radix_sort, KeyLayout, KeyValues, Packed};
use super::metric_names;
use crate::operators::once::OnceExec;

/// Spark's `SortExec` for keys that pack into one integer per row (see the module doc); what does not fit in
/// memory or in 128 bits is sorted by DataFusion's `SortExec`, which spills.
#[derive(Debug)]
pub struct RadixSortExec {
    input: Arc<dyn ExecutionPlan>,
    ordering: LexOrdering,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
    /// The DataFusion sorts this operator handed its input to, kept for their metrics (spills).
    fallbacks: Arc<Mutex<Vec<Arc<SortExec>>>>,
}

impl RadixSortExec {
    /// Whether every key of `ordering` is of a packable type over `input`'s schema.
    pub fn supports(ordering: &LexOrdering, input: &dyn ExecutionPlan) -> bool {
        let schema = input.schema();
        ordering.iter().all(|e| e.expr.data_type(&schema).map(|t| packable(&t)).unwrap_or(false))
    }

    pub fn try_new(ordering: LexOrdering, input: Arc<dyn ExecutionPlan>) -> Result<Self> {
        if !Self::supports(&ordering, input.as_ref()) {
            return internal_err!("RadixSortExec over keys that do not pack: {ordering}");
        }
        // The same output properties as the DataFusion sort it stands for (ordering, one partition).
        let properties = SortExec::new(ordering.clone(), input.clone()).properties().clone();
        Ok(Self {
            input,
            ordering,
            properties,
            metrics: ExecutionPlanMetricsSet::new(),
            fallbacks: Arc::new(Mutex::new(vec![])),
        })
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
        Ok(Arc::new(Self::try_new(self.ordering.clone(), children.remove(0))?))
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, context.clone())?;
        let sorter = Sorter {
            ordering: self.ordering.clone(),
            schema: self.schema(),
            reservation: MemoryConsumer::new(format!("RadixSortExec[{partition}]"))
                .with_can_spill(true)
                .register(context.memory_pool()),
            baseline: BaselineMetrics::new(&self.metrics, partition),
            packed_rows: MetricBuilder::new(&self.metrics).counter(metric_names::PACKED_SORT_ROWS, partition),
            fallbacks: MetricBuilder::new(&self.metrics).counter(metric_names::SORT_FALLBACKS, partition),
            fallback_plans: self.fallbacks.clone(),
            batch_size: context.session_config().batch_size().max(1),
            context,
        };
        let stream = futures::stream::once(sorter.run(input)).try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(self.schema(), stream)))
    }

    /// Its own metrics, and those of the DataFusion sorts it handed over to (their spills, rows, time).
    fn metrics(&self) -> Option<MetricsSet> {
        let mut set = self.metrics.clone_inner();
        for sort in self.fallbacks.lock().unwrap().iter() {
            if let Some(m) = sort.metrics() {
                m.iter().for_each(|metric| set.push(metric.clone()));
            }
        }
        Some(set)
    }
}

struct Sorter {
    ordering: LexOrdering,
    schema: SchemaRef,
    reservation: MemoryReservation,
    baseline: BaselineMetrics,
    packed_rows: Count,
    fallbacks: Count,
    fallback_plans: Arc<Mutex<Vec<Arc<SortExec>>>>,
    batch_size: usize,
    context: Arc<TaskContext>,
}

impl Sorter {
    async fn run(self, mut input: SendableRecordBatchStream) -> Result<SendableRecordBatchStream> {
        let mut batches = vec![];
        while let Some(batch) = input.next().await {
            let batch = batch?;
            if batch.num_rows() == 0 {
                continue;
            }
            if self.reservation.try_grow(get_record_batch_memory_size(&batch)).is_err() {
                return self.hand_over(batches, Some(batch), input);
            }
            batches.push(batch);
        }
        let rows: Vec<usize> = batches.iter().map(|b| b.num_rows()).collect();
        let total: usize = rows.iter().sum();
        if total == 0 {
            return Ok(Box::pin(RecordBatchStreamAdapter::new(self.schema, futures::stream::empty())));
        }
        let timer = self.baseline.elapsed_compute().timer();
        let batch_bytes = self.reservation.size();
        let mut keys = Vec::with_capacity(batches.len());
        let mut key_bytes = 0;
        for batch in &batches {
            let arrays = self
                .ordering
                .iter()
                .map(|e| e.expr.evaluate(batch)?.into_array(batch.num_rows()))
                .collect::<Result<Vec<ArrayRef>>>()?;
            let values = arrays.iter().map(KeyValues::new).collect::<Vec<_>>();
            key_bytes += values.iter().map(KeyValues::extra_bytes).sum::<usize>();
            keys.push(values);
        }
        let options: Vec<_> = self.ordering.iter().map(|e| e.options).collect();
        let layout = KeyLayout::try_new(&keys, &options, &rows);
        // Two packed values per row while sorting (the values and the radix sort's scratch).
        let width = if layout.as_ref().is_some_and(KeyLayout::fits_u64) { 8 } else { 16 };
        let sort_bytes = key_bytes + total * 2 * width;
        let layout = match layout {
            Some(layout) if self.reservation.try_grow(sort_bytes).is_ok() => layout,
            _ => {
                drop(keys);
                timer.done();
                return self.hand_over(batches, None, input);
            }
        };
        let order: Vec<u32> = if layout.fits_u64() {
            sorted_positions::<u64>(&layout, &keys, &rows)
        } else {
            sorted_positions::<u128>(&layout, &keys, &rows)
        };
        drop(keys);
        self.reservation.shrink(sort_bytes - total * 4);
        self.packed_rows.add(total);
        let columns = (0..self.schema.fields().len())
            .map(|c| batches.iter().map(|b| b.column(c).clone()).collect::<Vec<_>>())
            .collect::<Vec<_>>();
        drop(batches);
        // Gathering a whole column at a time keeps one input column in cache for random reads; it needs the
        // output's memory next to the input's. Without it, rows are gathered a batch at a time.
        let output = if self.reservation.try_grow(batch_bytes).is_ok() {
            let out = gather_by_column(columns, order, &self.schema, self.batch_size)?;
            self.reservation.shrink(batch_bytes + total * 4);
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

    /// Gives the batches read so far, then the rest of the input, to DataFusion's sort, which spills what the pool
    /// refuses. This operator's reservation is released first: the sort reserves the same batches again.
    fn hand_over(
        self,
        batches: Vec<RecordBatch>,
        refused: Option<RecordBatch>,
        rest: SendableRecordBatchStream,
    ) -> Result<SendableRecordBatchStream> {
        self.reservation.free();
        self.fallbacks.add(1);
        let replay = futures::stream::iter(batches.into_iter().chain(refused).map(Ok)).chain(rest);
        let replay = Box::pin(RecordBatchStreamAdapter::new(self.schema.clone(), replay));
        let sort = Arc::new(SortExec::new(self.ordering, Arc::new(OnceExec::new(self.schema, replay))));
        self.fallback_plans.lock().unwrap().push(sort.clone());
        sort.execute(0, self.context)
    }
}

/// The input positions of the rows in sorted order.
fn sorted_positions<P: Packed>(layout: &KeyLayout, keys: &[Vec<KeyValues>], rows: &[usize]) -> Vec<u32> {
    let mut packed: Vec<P> = layout.pack(keys, rows);
    radix_sort(&mut packed, layout.ref_bits, layout.key_bits);
    packed.into_iter().map(|p| layout.position(p)).collect()
}

/// Where each batch starts in the input's row positions.
fn offsets(rows: &[usize]) -> Vec<usize> {
    rows.iter().scan(0, |sum, &n| Some(std::mem::replace(sum, *sum + n))).collect()
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
                let positions: Vec<(usize, usize)> = order[*next..end]
                    .iter()
                    .map(|&p| {
                        let b = offsets.partition_point(|&o| o <= p as usize) - 1;
                        (b, p as usize - offsets[b])
                    })
                    .collect();
                *next = end;
                let cols = columns
                    .iter()
                    .map(|arrays| {
                        let arrays: Vec<&dyn Array> = arrays.iter().map(|a| a.as_ref()).collect();
                        interleave(&arrays, &positions)
                    })
                    .collect::<std::result::Result<Vec<_>, _>>();
                Some(cols.and_then(|c| output_batch(schema, c, positions.len())).map_err(Into::into))
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
