//! The state machine: pull a batch, let the gate decide, then either intern it into the hash table
//! (`GroupValues` + `GroupsAccumulator`s, DataFusion's own) or convert it row by row into partial states;
//! emitted states and passed-through batches queue in `pending` and go out in input order.
use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use arrow::array::{ArrayRef, BooleanArray, RecordBatch};
use arrow::datatypes::{Schema, SchemaRef};
use datafusion_common::cast::as_boolean_array;
use datafusion_common::Result;
use datafusion_execution::memory_pool::{MemoryConsumer, MemoryReservation};
use datafusion_execution::{RecordBatchStream, SendableRecordBatchStream, TaskContext};
use datafusion_expr::{EmitTo, GroupsAccumulator};
use datafusion_physical_expr::aggregate::AggregateFunctionExpr;
use datafusion_physical_expr::PhysicalExpr;
use datafusion_physical_plan::aggregates::group_values::{new_group_values, GroupValues};
use datafusion_physical_plan::aggregates::order::GroupOrdering;
use datafusion_physical_plan::metrics::BaselineMetrics;
use futures::{Stream, StreamExt};

use super::exec::AdaptiveAggregateMetrics;
use super::gate::{Decision, Gate, GateConfig, Mode};
use super::sketch::hash_keys;
use crate::operators::shared::{batch_slices, create_group_accumulator};

pub(super) struct AdaptiveAggregateStream {
    schema: SchemaRef,
    input: SendableRecordBatchStream,
    group_exprs: Vec<Arc<dyn PhysicalExpr>>,
    arg_exprs: Vec<Vec<Arc<dyn PhysicalExpr>>>,
    filter_exprs: Vec<Option<Arc<dyn PhysicalExpr>>>,
    group_values: Box<dyn GroupValues>,
    accumulators: Vec<Box<dyn GroupsAccumulator>>,
    gate: Gate,
    hashes: Vec<u64>,
    group_ids: Vec<usize>,
    reservation: MemoryReservation,
    batch_size: usize,
    pending: VecDeque<RecordBatch>,
    input_done: bool,
    baseline: BaselineMetrics,
    metrics: AdaptiveAggregateMetrics,
}

impl AdaptiveAggregateStream {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn try_new(
        schema: SchemaRef,
        input: SendableRecordBatchStream,
        group_exprs: Vec<Arc<dyn PhysicalExpr>>,
        group_schema: SchemaRef,
        aggr_exprs: Vec<Arc<AggregateFunctionExpr>>,
        filter_exprs: Vec<Option<Arc<dyn PhysicalExpr>>>,
        config: GateConfig,
        context: &Arc<TaskContext>,
        partition: usize,
        baseline: BaselineMetrics,
        metrics: AdaptiveAggregateMetrics,
    ) -> Result<Self> {
        let arg_exprs = aggr_exprs.iter().map(|a| a.expressions()).collect();
        let accumulators = aggr_exprs.iter().map(create_group_accumulator).collect::<Result<Vec<_>>>()?;
        let group_values = new_group_values(group_schema, &GroupOrdering::None)?;
        let reservation = MemoryConsumer::new(format!("AdaptiveAggregate[{partition}]"))
            .with_can_spill(true)
            .register(context.memory_pool());
        let gate = Gate::try_new(config)?;
        if gate.mode() == Mode::PassThrough {
            metrics.switches_to_pass_through.add(1);
            metrics.pass_through_at_row.set(0);
        }
        let s = Self {
            schema,
            input,
            group_exprs,
            arg_exprs,
            filter_exprs,
            group_values,
            accumulators,
            gate,
            hashes: vec![],
            group_ids: vec![],
            reservation,
            batch_size: context.session_config().batch_size().max(1),
            pending: VecDeque::new(),
            input_done: false,
            baseline,
            metrics,
        };
        // The empty sketches (registers and caches, ~90 KiB at precision 14) are reserved up front; a pool that
        // cannot give this much cannot run any aggregate.
        s.reservation.try_grow(s.gate.size_bytes())?;
        Ok(s)
    }

    fn state_bytes(&self) -> usize {
        self.group_values.size() + self.accumulators.iter().map(|a| a.size()).sum::<usize>() + self.gate.size_bytes()
    }

    fn evaluate(exprs: &[Arc<dyn PhysicalExpr>], batch: &RecordBatch) -> Result<Vec<ArrayRef>> {
        exprs.iter().map(|e| e.evaluate(batch)?.into_array(batch.num_rows())).collect()
    }

    /// An aggregate's FILTER over the batch: the accumulators take only rows where it is true (NULL: not).
    fn evaluate_filter(filter: &Option<Arc<dyn PhysicalExpr>>, batch: &RecordBatch) -> Result<Option<BooleanArray>> {
        let Some(f) = filter else { return Ok(None) };
        let a = f.evaluate(batch)?.into_array(batch.num_rows())?;
        Ok(Some(as_boolean_array(&a)?.clone()))
    }

    fn process(&mut self, batch: RecordBatch) -> Result<()> {
        let n = batch.num_rows();
        if n == 0 {
            return Ok(());
        }
        let keys = Self::evaluate(&self.group_exprs, &batch)?;
        let decision = if self.gate.sketching() {
            let timer = self.metrics.sketch_time.timer();
            hash_keys(&keys, n, &mut self.hashes)?;
            let d = self.gate.observe(&self.hashes, self.reservation.size());
            timer.done();
            d
        } else {
            self.gate.observe_unsketched(n);
            Decision::Keep
        };
        match decision {
            Decision::ToPassThrough => {
                self.metrics.switches_to_pass_through.add(1);
                if self.metrics.pass_through_at_row.value() == 0 {
                    self.metrics.pass_through_at_row.set(self.gate.rows_seen() - n);
                }
                self.emit_state()?;
            }
            Decision::ToAggregate => self.metrics.switches_to_aggregate.add(1),
            Decision::Keep => {}
        }
        match self.gate.mode() {
            Mode::Aggregate => {
                if self.gate.sketching() {
                    let timer = self.metrics.sketch_time.timer();
                    self.gate.record_state(&self.hashes);
                    timer.done();
                }
                let timer = self.metrics.aggregate_time.timer();
                self.group_values.intern(&keys, &mut self.group_ids)?;
                let total = self.group_values.len();
                for ((acc, args), filter) in self.accumulators.iter_mut().zip(&self.arg_exprs).zip(&self.filter_exprs) {
                    let values = Self::evaluate(args, &batch)?;
                    let filter = Self::evaluate_filter(filter, &batch)?;
                    acc.update_batch(&values, &self.group_ids, filter.as_ref(), total)?;
                }
                timer.done();
                if self.gate.probe(self.group_values.len()) == Decision::ToPassThrough {
                    self.metrics.switches_to_pass_through.add(1);
                    self.metrics.pass_through_at_row.set(self.gate.rows_seen());
                    self.emit_state()?;
                    return Ok(());
                }
                let want = self.state_bytes();
                if self.reservation.try_resize(want).is_err() {
                    // A partial aggregate may always flush: emit what we have rather than fail.
                    self.metrics.memory_emits.add(1);
                    self.emit_state()?;
                    self.gate.memory_flush();
                    if self.reservation.try_resize(self.state_bytes()).is_err() {
                        self.gate.shed();
                        let _ = self.reservation.try_resize(self.state_bytes());
                    }
                }
            }
            Mode::PassThrough => {
                let timer = self.metrics.aggregate_time.timer();
                let mut columns = keys;
                // Each row → a one-row partial state, no hash table (`convert_to_state`; DataFusion's adapter
                // for row-at-a-time accumulators such as first/last implements it too).
                for ((acc, args), filter) in self.accumulators.iter().zip(&self.arg_exprs).zip(&self.filter_exprs) {
                    let values = Self::evaluate(args, &batch)?;
                    let filter = Self::evaluate_filter(filter, &batch)?;
                    columns.extend(acc.convert_to_state(&values, filter.as_ref())?);
                }
                timer.done();
                self.metrics.rows_passed_through.add(n);
                self.pending.push_back(RecordBatch::try_new(self.schema.clone(), columns)?);
                // Only the sketches can have grown. Refused: they give back what they can, and what remains
                // (bounded by the precision) is kept.
                if self.reservation.try_resize(self.state_bytes()).is_err() {
                    self.gate.shed();
                    let _ = self.reservation.try_resize(self.state_bytes());
                }
            }
        }
        Ok(())
    }

    /// Emits the hash table's groups as partial states (in `batch_size` slices) and empties it.
    fn emit_state(&mut self) -> Result<()> {
        let groups = self.group_values.len();
        if groups == 0 {
            return Ok(());
        }
        let timer = self.metrics.aggregate_time.timer();
        let mut columns = self.group_values.emit(EmitTo::All)?;
        for acc in self.accumulators.iter_mut() {
            columns.extend(acc.state(EmitTo::All)?);
        }
        self.group_values.clear_shrink(self.batch_size);
        timer.done();
        let estimate = self.gate.state_emitted();
        self.metrics.actual_groups.add(groups);
        self.metrics.estimated_groups.add(estimate.round() as usize);
        let batch = RecordBatch::try_new(self.schema.clone(), columns)?;
        self.pending.extend(batch_slices(&batch, self.batch_size));
        // The emitted batch is handed downstream; what stays is the emptied table.
        self.reservation.resize(self.state_bytes());
        Ok(())
    }
}

impl Stream for AdaptiveAggregateStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if let Some(batch) = self.pending.pop_front() {
                self.baseline.record_output(batch.num_rows());
                return Poll::Ready(Some(Ok(batch)));
            }
            if self.input_done {
                return Poll::Ready(None);
            }
            match self.input.poll_next_unpin(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(batch))) => {
                    let elapsed = self.baseline.elapsed_compute().clone();
                    let timer = elapsed.timer();
                    let result = self.process(batch);
                    timer.done();
                    if let Err(e) = result {
                        self.input_done = true;
                        self.pending.clear();
                        return Poll::Ready(Some(Err(e)));
                    }
                }
                Poll::Ready(Some(Err(e))) => {
                    self.input_done = true;
                    return Poll::Ready(Some(Err(e)));
                }
                Poll::Ready(None) => {
                    self.input_done = true;
                    let elapsed = self.baseline.elapsed_compute().clone();
                    let timer = elapsed.timer();
                    let result = self.emit_state();
                    timer.done();
                    if let Err(e) = result {
                        return Poll::Ready(Some(Err(e)));
                    }
                    self.reservation.free();
                }
            }
        }
    }
}

impl RecordBatchStream for AdaptiveAggregateStream {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// The schema of the grouping columns alone (what `GroupValues` stores).
pub(super) fn group_schema(group_by: &[(Arc<dyn PhysicalExpr>, String)], input: &Schema) -> Result<SchemaRef> {
    let fields = group_by
        .iter()
        .map(|(e, name)| Ok(arrow::datatypes::Field::new(name, e.data_type(input)?, e.nullable(input)?)))
        .collect::<Result<Vec<_>>>()?;
    Ok(Arc::new(Schema::new(fields)))
}
