//! The operator's state machine: buffer input until partitions are complete, evaluate each chunk of complete
//! partitions in one go, and hand the result out in batches of the session's batch size.
use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use arrow::array::{ArrayRef, RecordBatch, UInt32Array};
use arrow::compute::{concat, concat_batches, take_record_batch};
use arrow::datatypes::SchemaRef;
use datafusion_common::{DataFusionError, Result};
use datafusion_execution::memory_pool::MemoryReservation;
use datafusion_execution::RecordBatchStream;
use datafusion_physical_plan::metrics::BaselineMetrics;
use datafusion_physical_plan::SendableRecordBatchStream;
use futures::{Stream, StreamExt};

use super::prefix::long_overflow;
use super::segment::{self, OpenPartition};
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
    /// Set while the open partition is evaluated in segments.
    open: Option<OpenPartition>,
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
            open: None,
        }
    }

    fn pending_rows(&self) -> usize {
        self.pending.iter().map(|b| b.num_rows()).sum()
    }

    /// Reserves what the pending rows hold. A refusal is an error when the rows cannot be evaluated in segments
    /// (the spec needs whole partitions, or one peer group is larger than memory): such partitions do not spill.
    fn reserve_pending(&mut self) -> Result<()> {
        let mut bytes: usize = self.pending.iter().map(|b| b.get_array_memory_size()).sum();
        if self.spec.segmentation.is_some() {
            // Room to evaluate them too, so that a refusal leaves room for a segment.
            bytes += self.spec.scratch_bytes_per_row() * self.pending_rows();
        }
        self.reservation.try_resize(bytes).map_err(|e| {
            DataFusionError::ResourcesExhausted(format!(
                "Ember window: a partition of {} rows (so far) does not fit in memory, and {}: {e}",
                self.pending_rows(),
                if self.spec.segmentation.is_some() {
                    "its current peer group cannot be cut into segments"
                } else {
                    "this window spec needs whole partitions (it cannot be evaluated in segments, nor spill)"
                }
            ))
        })
    }

    fn push(&mut self, batch: RecordBatch) -> Result<()> {
        let n = batch.num_rows();
        if n == 0 {
            return Ok(());
        }
        let keys = self.spec.partition_keys(&batch)?;
        // In batch rows: where the pending (open) partition ends if the batch's first rows continue it, and where
        // the batch's last partition starts (it may continue in the next batch).
        let (first_end, last_start, continues) = if keys.is_empty() {
            (n, 0, !self.pending.is_empty())
        } else if self.pending.is_empty() {
            let ranges = self.spec.partitions_of(&keys, n)?;
            (0, ranges.last().map_or(0, |r| r.start), false)
        } else {
            let joined = keys
                .iter()
                .zip(&self.last_key)
                .map(|(k, l)| concat(&[l.as_ref(), k.as_ref()]))
                .collect::<Result<Vec<_>, _>>()?;
            let ranges = self.spec.partitions_of(&joined, n + 1)?;
            let last = ranges.last().map_or(0, |r| r.start);
            let continues = ranges[0].end > 1;
            (if continues { ranges[0].end - 1 } else { 0 }, last.saturating_sub(1), continues)
        };
        self.last_key = keys.iter().map(|k| k.slice(n - 1, 1)).collect();
        if last_start == 0 && continues {
            // The whole batch continues the open partition.
            self.pending.push(batch);
            return self.grow_open();
        }
        let first_end = if continues { first_end } else { 0 };
        if continues {
            self.pending.push(batch.slice(0, first_end));
        }
        let open = std::mem::take(&mut self.pending);
        let mut complete = vec![];
        match self.open.take() {
            Some(state) => self.finish_segmented(open, state)?,
            None => complete = open,
        }
        if self.done {
            return Ok(());
        }
        if last_start > first_end {
            complete.push(batch.slice(first_end, last_start - first_end));
        }
        self.pending = vec![batch.slice(last_start, n - last_start)];
        if !complete.is_empty() {
            // What was reserved for the completed rows: `evaluate` reserves the chunk they become.
            self.reservation.free();
            self.evaluate(complete)?;
            if self.done {
                return Ok(());
            }
        }
        self.grow_open()
    }

    /// The open partition grew: evaluate it in segments while it holds more than a segment (or the pool refuses
    /// to hold it) and its spec allows, then reserve what it keeps.
    fn grow_open(&mut self) -> Result<()> {
        let Some(seg) = self.spec.segmentation else {
            return self.reserve_pending();
        };
        let rows = self.pending_rows();
        let a = self.open.as_ref().map_or(0, |o| o.emitted - o.dropped);
        if rows < a + self.spec.segment_rows + seg.lookahead {
            match self.reserve_pending() {
                Ok(()) => return Ok(()),
                // Refused: evaluate what can be evaluated now, if anything.
                Err(e) if rows <= a + seg.lookahead => return Err(e),
                Err(_) => {}
            }
        }
        self.segment()?;
        if self.done {
            return Ok(());
        }
        // What the partition keeps (or, when no segment could be cut in one peer group, all of it).
        self.reserve_pending()
    }

    /// Evaluates the open partition's rows that have their lookahead, keeping the lookback rows.
    fn segment(&mut self) -> Result<()> {
        let chunk = concat_batches(&self.input.schema(), &self.pending)?;
        // The chunk replaces the pending batches.
        self.pending.clear();
        let n = chunk.num_rows();
        let mut open = self.open.take().unwrap_or_else(|| OpenPartition::new(&self.spec));
        let first = open.emitted == 0;
        let rest = self.run_segments(chunk, &mut open, false)?;
        if first && open.emitted > 0 {
            self.counters.segmented_partitions.add(1);
        }
        let progressed = rest.num_rows() < n;
        // Keep the rows still needed, copied out of the chunk so its buffers can go.
        self.pending = if progressed {
            let indices = UInt32Array::from_iter_values(0..rest.num_rows() as u32);
            vec![take_record_batch(&rest, &indices)?]
        } else {
            vec![rest]
        };
        if open.emitted > 0 {
            self.open = Some(open);
        }
        Ok(())
    }

    /// The last rows of a partition evaluated in segments.
    fn finish_segmented(&mut self, parts: Vec<RecordBatch>, mut open: OpenPartition) -> Result<()> {
        let chunk = concat_batches(&self.input.schema(), &parts)?;
        drop(parts);
        self.run_segments(chunk, &mut open, true)?;
        // Nothing of the partition is held any more (its output batches are handed on as they are pulled).
        self.reservation.free();
        Ok(())
    }

    /// Evaluates the rows of the open partition in `chunk` (its rows from `open.dropped` on) that can be: all when
    /// the partition ends there (`last`), else those with their lookahead; in segments of at most the segment
    /// size, halved while the pool refuses their scratch. Returns the rows still needed (the last segment's
    /// lookback and the rows after it).
    fn run_segments(&mut self, mut chunk: RecordBatch, open: &mut OpenPartition, last: bool) -> Result<RecordBatch> {
        let seg = self.spec.segmentation.expect("a segmented partition has a segmentable spec");
        let elapsed = self.baseline.elapsed_compute().clone();
        let _timer = elapsed.timer();
        let per_row = self.spec.scratch_bytes_per_row();
        loop {
            let n = chunk.num_rows();
            let target = if last { n } else { n.saturating_sub(seg.lookahead) };
            let a = open.emitted - open.dropped;
            if a >= target {
                return Ok(chunk);
            }
            let cut = |b: usize| -> Result<Option<usize>> {
                if last && b >= target {
                    return Ok(Some(target));
                }
                segment::cut(&self.spec, &chunk, a, b)
            };
            let Some(mut b) =
                cut(target.min(a + self.spec.segment_rows))?.map_or_else(|| cut(target), |b| Ok(Some(b)))?
            else {
                return Ok(chunk);
            };
            // The rows evaluated: the chunk up to the segment's lookahead (or the partition's end).
            let end = loop {
                let end = if last && b == target { n } else { (b + seg.lookahead).min(n) };
                let bytes = chunk.get_array_memory_size() + per_row * end;
                match self.reservation.try_resize(bytes) {
                    Ok(()) => break end,
                    Err(e) => match cut(a + (b - a) / 2)? {
                        Some(h) if h > a && h < b => b = h,
                        _ => {
                            return Err(DataFusionError::ResourcesExhausted(format!(
                                "Ember window: a segment of {} rows (with its context) does not fit in memory: {e}",
                                end
                            )))
                        }
                    },
                }
            };
            let part = chunk.slice(0, end);
            let evaluated = segment::evaluate_segment(&self.spec, &part, open, b, &self.counters);
            let (window_columns, overflow_at) = evaluated?;
            self.counters.segments.add(1);
            let mut columns = chunk.slice(a, b - a).columns().to_vec();
            columns.extend(window_columns);
            self.emit(RecordBatch::try_new(self.schema.clone(), columns)?, overflow_at);
            if overflow_at.is_some() {
                return Ok(chunk.slice(0, 0));
            }
            // The next segment needs the lookback rows before it.
            let keep = b.saturating_sub(seg.lookback);
            chunk = chunk.slice(keep, n - keep);
            open.dropped += keep;
        }
    }

    fn evaluate(&mut self, parts: Vec<RecordBatch>) -> Result<()> {
        let elapsed = self.baseline.elapsed_compute().clone();
        let _timer = elapsed.timer();
        let chunk = concat_batches(&self.input.schema(), &parts)?;
        drop(parts);
        if chunk.num_rows() == 0 {
            return Ok(());
        }
        // The chunk and its scratch (frame bounds, prefixes, output columns) are reserved while it is evaluated.
        let scratch = self.spec.scratch_bytes_per_row() * chunk.num_rows() + chunk.get_array_memory_size();
        self.reservation.try_grow(scratch).map_err(|e| {
            DataFusionError::ResourcesExhausted(format!(
                "Ember window: {} rows of complete partitions do not fit in memory to be evaluated, and this \
                 window spec needs whole partitions (it cannot be evaluated in segments): {e}",
                chunk.num_rows()
            ))
        })?;
        let mut columns = chunk.columns().to_vec();
        let evaluated = self.spec.evaluate(&chunk, &self.counters);
        self.reservation.shrink(scratch);
        let (window_columns, overflow_at) = evaluated?;
        columns.extend(window_columns);
        self.emit(RecordBatch::try_new(self.schema.clone(), columns)?, overflow_at);
        Ok(())
    }

    /// Queues evaluated rows in batches of the batch size; rows before an overflow go out first, as Spark
    /// produces them before it reaches the overflowing frame.
    fn emit(&mut self, out: RecordBatch, overflow_at: Option<usize>) {
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
            self.open = None;
        }
    }

    fn finish(&mut self) -> Result<()> {
        let pending = std::mem::take(&mut self.pending);
        match self.open.take() {
            Some(open) => self.finish_segmented(pending, open)?,
            None if !pending.is_empty() => {
                self.reservation.free();
                self.evaluate(pending)?
            }
            None => {}
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
                self.open = None;
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
