//! The operator's state machine: buffer input until partitions are complete, evaluate each chunk of complete
//! partitions in one go, and hand the result out in batches of the session's batch size. A large open partition
//! is evaluated in segments as it grows, or (whole-partition aggregates) spilled while they fold, then read back
//! and evaluated in segments before the input is read on.
use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use arrow::array::{ArrayRef, RecordBatch, UInt32Array};
use arrow::compute::{concat, concat_batches, take_record_batch};
use arrow::datatypes::SchemaRef;
use datafusion_common::{internal_datafusion_err, DataFusionError, Result};
use datafusion_execution::memory_pool::MemoryReservation;
use datafusion_execution::spill_file::SpillFile;
use datafusion_execution::RecordBatchStream;
use datafusion_physical_plan::metrics::BaselineMetrics;
use datafusion_physical_plan::spill::SpillManager;
use datafusion_physical_plan::SendableRecordBatchStream;
use futures::{Stream, StreamExt};

use super::segment::{self, OpenPartition, Segmentation};
use super::spec::{FrameCounters, WindowSpec};
use super::whole::WholeFolds;
use crate::error::SparkError;
use crate::operators::spill::{read_compacted, CoalescingWriter};

/// The open partition being written to a spill file, its whole-partition aggregates folded on the way.
struct Spilling {
    writer: CoalescingWriter,
    folds: WholeFolds,
}

/// A spilled partition being read back (the file is deleted once the last reference to it goes).
struct Readback {
    stream: SendableRecordBatchStream,
    _file: Arc<dyn SpillFile>,
}

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
    /// The rows held: the open partition, a chunk being evaluated, a spill file's staging (can spill).
    reservation: MemoryReservation,
    /// A segment's or chunk's evaluation scratch: frame bounds, prefixes, output columns (cannot spill).
    scratch: MemoryReservation,
    baseline: BaselineMetrics,
    counters: FrameCounters,
    batch_size: usize,
    done: bool,
    /// Set while the open partition is evaluated in segments (also while a spilled one is read back).
    open: Option<OpenPartition>,
    spill_manager: SpillManager,
    /// Set while the open partition is being spilled.
    spilling: Option<Spilling>,
    /// Set while a spilled partition is read back; the input is read on only after it.
    readback: Option<Readback>,
    /// The rest of the input batch that ended a spilled partition, pushed once it is read back.
    deferred: Option<RecordBatch>,
    input_ended: bool,
}

impl WindowStream {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        input: SendableRecordBatchStream,
        spec: Arc<WindowSpec>,
        schema: SchemaRef,
        reservation: MemoryReservation,
        scratch: MemoryReservation,
        spill_manager: SpillManager,
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
            scratch,
            baseline,
            counters,
            batch_size: batch_size.max(1),
            done: false,
            open: None,
            spill_manager,
            spilling: None,
            readback: None,
            deferred: None,
            input_ended: false,
        }
    }

    /// The partitions of the last row seen followed by a batch's `n` rows with partition keys `keys` (row 0 is
    /// that last row: the first range ends past 1 when the batch continues its partition).
    fn partitions_after_last_row(&self, keys: &[ArrayRef], n: usize) -> Result<Vec<std::ops::Range<usize>>> {
        let joined = keys
            .iter()
            .zip(&self.last_key)
            .map(|(k, l)| concat(&[l.as_ref(), k.as_ref()]))
            .collect::<Result<Vec<_>, _>>()?;
        self.spec.partitions_of(&joined, n + 1)
    }

    fn pending_rows(&self) -> usize {
        self.pending.iter().map(|b| b.num_rows()).sum()
    }

    /// How the open partition is evaluated in segments, if it can be: its spec's segmentation, or for a
    /// spilled partition read back, that of its expressions other than the whole-partition aggregates.
    fn segmentation(&self) -> Option<Segmentation> {
        segmentation_of(&self.spec, self.open.as_ref())
    }

    /// Reserves what the pending rows hold. A refusal is an error when the rows can neither be evaluated in
    /// segments nor spill (the spec needs whole partitions, or one peer group is larger than memory).
    fn reserve_pending(&mut self) -> Result<()> {
        let mut bytes: usize = self.pending.iter().map(|b| b.get_array_memory_size()).sum();
        let segmentation = self.segmentation();
        if segmentation.is_some() || self.spec.spill.is_some() {
            // Room to evaluate them too, so that a refusal leaves room for a segment.
            bytes += self.spec.scratch_bytes_per_row() * self.pending_rows();
        }
        self.reservation.try_resize(bytes).map_err(|e| {
            let why = match (segmentation, &self.spec.spill_blocker) {
                (Some(_), _) => "its current peer group cannot be cut into segments".to_string(),
                (None, Some(b)) => format!(
                    "{b} needs the whole partition in memory (this window spec can neither be evaluated in \
                     segments nor spill)"
                ),
                (None, None) => "this window spec needs whole partitions".to_string(),
            };
            DataFusionError::ResourcesExhausted(format!(
                "Ember window: a partition of {} rows (so far) does not fit in memory, and {why}: {e}",
                self.pending_rows(),
            ))
        })
    }

    /// Accounts the pending rows whatever the pool says: they are in memory already, read before it refused, and
    /// segmenting them is what gives memory back.
    fn hold_pending(&mut self) {
        let bytes = self.pending.iter().map(|b| b.get_array_memory_size()).sum();
        self.reservation.resize(bytes);
    }

    fn push(&mut self, batch: RecordBatch) -> Result<()> {
        let n = batch.num_rows();
        if n == 0 {
            return Ok(());
        }
        if self.spilling.is_some() {
            return self.push_spilling(batch);
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
            let ranges = self.partitions_after_last_row(&keys, n)?;
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

    /// An input batch while the open partition spills: its rows that continue the partition go to the spill
    /// file; if others follow, the partition is complete and is read back before they are pushed.
    fn push_spilling(&mut self, batch: RecordBatch) -> Result<()> {
        let n = batch.num_rows();
        let keys = self.spec.partition_keys(&batch)?;
        let continuing = if keys.is_empty() { n } else { self.partitions_after_last_row(&keys, n)?[0].end - 1 };
        if continuing > 0 {
            self.spill_rows(batch.slice(0, continuing))?;
            if self.done {
                return Ok(());
            }
        }
        if continuing < n {
            self.end_spill()?;
            self.deferred = Some(batch.slice(continuing, n - continuing));
        }
        Ok(())
    }

    /// The pool refused the open partition of a spec whose only whole-partition expressions are aggregates over
    /// the whole partition: write its rows to a spill file, folding those aggregates on the way.
    fn start_spill(&mut self) -> Result<()> {
        let writer = CoalescingWriter::with_label(&self.spill_manager, self.batch_size, "ember window partition")?;
        self.spilling = Some(Spilling { writer, folds: WholeFolds::new(&self.spec) });
        self.counters.spilled_partitions.add(1);
        let pending = std::mem::take(&mut self.pending);
        // The pending rows are written out now; what stays is the writer's staging, reserved as it grows.
        self.reservation.free();
        for batch in pending {
            self.spill_rows(batch)?;
            if self.done {
                break;
            }
        }
        Ok(())
    }

    /// Folds the next rows of the spilling partition and writes them out. An ANSI overflow in a fold ends the
    /// output before any row of the partition, as Spark raises it when the partition starts.
    fn spill_rows(&mut self, batch: RecordBatch) -> Result<()> {
        let elapsed = self.baseline.elapsed_compute().clone();
        let _timer = elapsed.timer();
        let spilling =
            self.spilling.as_mut().ok_or_else(|| internal_datafusion_err!("window: no spilling partition"))?;
        if spilling.folds.fold(&self.spec, &batch)? {
            self.output.push_back(Err(SparkError::long_sum_overflow().into_datafusion()));
            self.abandon();
            return Ok(());
        }
        spilling.writer.push(batch, &self.reservation)
    }

    /// The spilling partition is complete: finish its file and start reading it back, with the folded values.
    fn end_spill(&mut self) -> Result<()> {
        let Some(spilling) = self.spilling.take() else {
            return Ok(());
        };
        let written = spilling.writer.finish(&self.reservation)?;
        let wholes = spilling.folds.values()?;
        let file = written
            .file
            .ok_or_else(|| DataFusionError::Internal("Ember window: a spilled partition without a file".into()))?;
        self.open = Some(OpenPartition::spilled(&self.spec, wholes));
        let stream = read_compacted(&self.spill_manager, file.clone())?;
        self.readback = Some(Readback { stream, _file: file });
        Ok(())
    }

    /// The next rows of a spilled partition, read back: evaluated in segments as they come.
    fn read_back(&mut self, batch: RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        self.pending.push(batch);
        self.grow_open()
    }

    /// A spilled partition is read back: evaluate its last rows, delete its file, and go on with the input.
    fn end_readback(&mut self) -> Result<()> {
        self.readback = None;
        let pending = std::mem::take(&mut self.pending);
        let open =
            self.open.take().ok_or_else(|| internal_datafusion_err!("window: no spilled partition to read back"))?;
        self.finish_segmented(pending, open)?;
        if self.done {
            return Ok(());
        }
        if let Some(rest) = self.deferred.take() {
            self.push(rest)?;
            if self.done {
                return Ok(());
            }
        }
        if self.input_ended && self.readback.is_none() {
            self.finish()?;
        }
        Ok(())
    }

    /// Stops for good (an error): drops every row held, spill files included, and the reservation.
    fn abandon(&mut self) {
        self.done = true;
        self.pending.clear();
        self.open = None;
        self.spilling = None;
        self.readback = None;
        self.deferred = None;
        self.reservation.free();
        self.scratch.free();
    }

    /// The open partition grew: evaluate it in segments while it holds more than a segment (or the pool refuses
    /// to hold it) and its spec allows, then reserve what it keeps. A spec that cannot be evaluated in segments
    /// spills the partition when the pool refuses it, if its spec allows.
    fn grow_open(&mut self) -> Result<()> {
        let Some(seg) = self.segmentation() else {
            return match self.reserve_pending() {
                Err(_) if self.spec.spill.is_some() => self.start_spill(),
                other => other,
            };
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
        let progressed = self.segment()?;
        if self.done {
            return Ok(());
        }
        // What the partition keeps (or, when no segment could be cut in one peer group, all of it). Refused after
        // segments were evaluated, the rest is held as it is and the next batch segments again; refused without
        // any, the peer group is larger than memory.
        match self.reserve_pending() {
            Err(_) if progressed => {
                self.hold_pending();
                Ok(())
            }
            other => other,
        }
    }

    /// Evaluates the open partition's rows that have their lookahead, keeping the lookback rows. Returns whether
    /// any row was evaluated.
    fn segment(&mut self) -> Result<bool> {
        let chunk = concat_batches(&self.input.schema(), &self.pending)?;
        // The chunk replaces the pending batches.
        self.pending.clear();
        let n = chunk.num_rows();
        let mut open = self.open.take().unwrap_or_else(|| OpenPartition::new(&self.spec));
        let first = open.emitted == 0;
        let rest = self.run_segments(chunk, &mut open, false);
        // The scratch lives while segments are evaluated, not while the partition waits for its next rows.
        self.scratch.free();
        let rest = rest?;
        if first && open.emitted > 0 && !open.spilled {
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
        if open.emitted > 0 || open.spilled {
            self.open = Some(open);
        }
        Ok(progressed)
    }

    /// The last rows of a partition evaluated in segments.
    fn finish_segmented(&mut self, parts: Vec<RecordBatch>, mut open: OpenPartition) -> Result<()> {
        let chunk = concat_batches(&self.input.schema(), &parts)?;
        drop(parts);
        self.run_segments(chunk, &mut open, true)?;
        // Nothing of the partition is held any more (its output batches are handed on as they are pulled).
        self.reservation.free();
        self.scratch.free();
        Ok(())
    }

    /// Evaluates the rows of the open partition in `chunk` (its rows from `open.dropped` on) that can be: all when
    /// the partition ends there (`last`), else those with their lookahead; in segments of at most the segment
    /// size, halved while the pool refuses their scratch. Returns the rows still needed (the last segment's
    /// lookback and the rows after it).
    fn run_segments(&mut self, mut chunk: RecordBatch, open: &mut OpenPartition, last: bool) -> Result<RecordBatch> {
        let seg = segmentation_of(&self.spec, Some(open))
            .ok_or_else(|| internal_datafusion_err!("window: segments of a spec that cannot be segmented"))?;
        let elapsed = self.baseline.elapsed_compute().clone();
        let _timer = elapsed.timer();
        let per_row = self.spec.scratch_bytes_per_row();
        // The chunk's rows are in memory already; evaluating them is what frees them.
        self.reservation.resize(chunk.get_array_memory_size());
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
                segment::cut(&self.spec, seg, &chunk, a, b)
            };
            let Some(mut b) =
                cut(target.min(a + self.spec.segment_rows))?.map_or_else(|| cut(target), |b| Ok(Some(b)))?
            else {
                return Ok(chunk);
            };
            // The rows evaluated: the chunk up to the segment's lookahead (or the partition's end).
            let end = loop {
                let end = if last && b == target { n } else { (b + seg.lookahead).min(n) };
                match self.scratch.try_resize(per_row * end) {
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
        // The chunk's rows are in memory already; its scratch (frame bounds, prefixes, output columns) is
        // reserved while it is evaluated.
        self.reservation.resize(chunk.get_array_memory_size());
        let scratch = self.spec.scratch_bytes_per_row() * chunk.num_rows();
        self.scratch.try_grow(scratch).map_err(|e| {
            let why = match &self.spec.spill_blocker {
                Some(b) => format!(" ({b} needs whole partitions in memory)"),
                None => String::new(),
            };
            DataFusionError::ResourcesExhausted(format!(
                "Ember window: {} rows of complete partitions do not fit in memory to be evaluated{why}: {e}",
                chunk.num_rows()
            ))
        })?;
        let mut columns = chunk.columns().to_vec();
        let evaluated = self.spec.evaluate(&chunk, &self.counters);
        self.scratch.shrink(scratch);
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
            self.output.push_back(Err(SparkError::long_sum_overflow().into_datafusion()));
            self.abandon();
        }
    }

    /// The input has ended: evaluate (or spill, and start reading back) what is left.
    fn finish(&mut self) -> Result<()> {
        if self.spilling.is_some() {
            return self.end_spill();
        }
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
        self.scratch.free();
        if self.readback.is_none() {
            self.done = true;
        }
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
                    self.abandon();
                    return Poll::Ready(Some(Err(e)));
                }
                None => {}
            }
            let result = if let Some(readback) = self.readback.as_mut() {
                match readback.stream.poll_next_unpin(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Some(Ok(batch))) => self.read_back(batch),
                    Poll::Ready(Some(Err(e))) => Err(e),
                    Poll::Ready(None) => self.end_readback(),
                }
            } else if self.done {
                return Poll::Ready(None);
            } else {
                match self.input.poll_next_unpin(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Some(Ok(batch))) => self.push(batch),
                    Poll::Ready(Some(Err(e))) => Err(e),
                    Poll::Ready(None) => {
                        self.input_ended = true;
                        self.finish()
                    }
                }
            };
            if let Err(e) = result {
                self.output.clear();
                self.abandon();
                return Poll::Ready(Some(Err(e)));
            }
        }
    }
}

/// How a partition in `open` (or a new one) is evaluated in segments, if it can be.
fn segmentation_of(spec: &WindowSpec, open: Option<&OpenPartition>) -> Option<Segmentation> {
    if open.is_some_and(|o| o.spilled) {
        spec.spill
    } else {
        spec.segmentation
    }
}

impl RecordBatchStream for WindowStream {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}
