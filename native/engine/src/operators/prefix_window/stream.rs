//! The operator's state machine: buffer input until partitions are complete, evaluate each chunk of complete
//! partitions in one go, and hand the result out in batches of the session's batch size.
use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use arrow::array::{ArrayRef, RecordBatch};
use arrow::compute::{concat, concat_batches};
use arrow::datatypes::SchemaRef;
use datafusion_common::{DataFusionError, Result};
use datafusion_execution::memory_pool::MemoryReservation;
use datafusion_execution::RecordBatchStream;
use datafusion_physical_plan::metrics::BaselineMetrics;
use datafusion_physical_plan::SendableRecordBatchStream;
use futures::{Stream, StreamExt};

use super::prefix::long_overflow;
use super::spec::{FrameCounters, WindowSpec};

pub struct WindowStream {
    input: SendableRecordBatchStream,
    spec: Arc<WindowSpec>,
    schema: SchemaRef,
    /// Rows of the partition still open (the last one seen), as slices of input batches.
    pending: Vec<RecordBatch>,
    /// Partition keys of the last pending row (one-row arrays).
    last_key: Vec<ArrayRef>,
    /// Batches to hand out, and possibly an error after them (ANSI overflow at a row of the last chunk).
    output: VecDeque<Result<RecordBatch>>,
    reservation: MemoryReservation,
    baseline: BaselineMetrics,
    counters: FrameCounters,
    batch_size: usize,
    done: bool,
}

impl WindowStream {
    pub fn new(
        input: SendableRecordBatchStream,
        spec: Arc<WindowSpec>,
        schema: SchemaRef,
        reservation: MemoryReservation,
        baseline: BaselineMetrics,
        counters: FrameCounters,
        batch_size: usize,
    ) -> Self {
        Self {
            input,
            spec,
            schema,
            pending: vec![],
            last_key: vec![],
            output: VecDeque::new(),
            reservation,
            baseline,
            counters,
            batch_size: batch_size.max(1),
            done: false,
        }
    }

    fn pending_rows(&self) -> usize {
        self.pending.iter().map(|b| b.num_rows()).sum()
    }

    /// Reserves what the pending rows hold; a refusal is an error for now (no spilling of a partition yet).
    fn reserve_pending(&mut self) -> Result<()> {
        let bytes: usize = self.pending.iter().map(|b| b.get_array_memory_size()).sum();
        self.reservation.try_resize(bytes).map_err(|e| {
            DataFusionError::ResourcesExhausted(format!(
                "Ember window: a partition of {} rows (so far) does not fit in memory and window partitions \
                 cannot spill yet: {e}",
                self.pending_rows()
            ))
        })
    }

    fn push(&mut self, batch: RecordBatch) -> Result<()> {
        let n = batch.num_rows();
        if n == 0 {
            return Ok(());
        }
        let keys = self.spec.partition_keys(&batch)?;
        // Where the last partition of this batch starts (it may continue in the next batch), and whether the
        // batch's first rows continue the pending partition.
        let (last_start, continues) = if self.pending.is_empty() || keys.is_empty() {
            let ranges = self.spec.partitions_of(&keys, n)?;
            (ranges.last().map_or(0, |r| r.start), !self.pending.is_empty())
        } else {
            let joined = keys
                .iter()
                .zip(&self.last_key)
                .map(|(k, l)| concat(&[l.as_ref(), k.as_ref()]))
                .collect::<Result<Vec<_>, _>>()?;
            let ranges = self.spec.partitions_of(&joined, n + 1)?;
            let last = ranges.last().map_or(0, |r| r.start);
            (last.saturating_sub(1), ranges.len() == 1 || ranges[0].end > 1)
        };
        self.last_key = keys.iter().map(|k| k.slice(n - 1, 1)).collect();
        let mut complete =
            if continues || self.pending.is_empty() { vec![] } else { std::mem::take(&mut self.pending) };
        if last_start == 0 && continues {
            // The whole batch continues the open partition.
            self.pending.push(batch);
            return self.reserve_pending();
        }
        if continues {
            complete.append(&mut self.pending);
        }
        if last_start > 0 {
            complete.push(batch.slice(0, last_start));
        }
        self.pending = vec![batch.slice(last_start, n - last_start)];
        self.reserve_pending()?;
        if !complete.is_empty() {
            self.evaluate(complete)?;
        }
        Ok(())
    }

    fn evaluate(&mut self, parts: Vec<RecordBatch>) -> Result<()> {
        let _timer = self.baseline.elapsed_compute().timer();
        let chunk = concat_batches(&self.input.schema(), &parts)?;
        drop(parts);
        if chunk.num_rows() == 0 {
            return Ok(());
        }
        // The chunk and its scratch (frame bounds, prefixes, output columns) are reserved while it is evaluated.
        let scratch = self.spec.scratch_bytes_per_row() * chunk.num_rows() + chunk.get_array_memory_size();
        self.reservation.try_grow(scratch).map_err(|e| {
            DataFusionError::ResourcesExhausted(format!(
                "Ember window: {} rows of complete partitions do not fit in memory to be evaluated and window \
                 partitions cannot spill yet: {e}",
                chunk.num_rows()
            ))
        })?;
        let mut columns = chunk.columns().to_vec();
        let evaluated = self.spec.evaluate(&chunk, &self.counters);
        self.reservation.shrink(scratch);
        let (window_columns, overflow_at) = evaluated?;
        columns.extend(window_columns);
        let out = RecordBatch::try_new(self.schema.clone(), columns)?;
        // Rows before an overflow go out first, as Spark produces them before it reaches the overflowing frame.
        let rows = overflow_at.unwrap_or(out.num_rows());
        let mut offset = 0;
        while offset < rows {
            let len = self.batch_size.min(rows - offset);
            self.output.push_back(Ok(out.slice(offset, len)));
            offset += len;
        }
        if overflow_at.is_some() {
            self.output.push_back(Err(long_overflow()));
            self.done = true;
            self.pending.clear();
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        let pending = std::mem::take(&mut self.pending);
        if !pending.is_empty() {
            self.evaluate(pending)?;
        }
        self.reservation.free();
        Ok(())
    }
}

impl Stream for WindowStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            match self.output.pop_front() {
                Some(Ok(b)) => {
                    self.baseline.record_output(b.num_rows());
                    return Poll::Ready(Some(Ok(b)));
                }
                Some(Err(e)) => {
                    self.output.clear();
                    self.reservation.free();
                    return Poll::Ready(Some(Err(e)));
                }
                None => {}
            }
            if self.done {
                return Poll::Ready(None);
            }
            let next = match self.input.poll_next_unpin(cx) {
                Poll::Ready(next) => next,
                Poll::Pending => return Poll::Pending,
            };
            let result = match next {
                Some(Ok(batch)) => self.push(batch),
                Some(Err(e)) => Err(e),
                None => {
                    self.done = true;
                    self.finish()
                }
            };
            if let Err(e) = result {
                self.done = true;
                self.output.clear();
                self.pending.clear();
                self.reservation.free();
                return Poll::Ready(Some(Err(e)));
            }
        }
    }
}

impl RecordBatchStream for WindowStream {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}
