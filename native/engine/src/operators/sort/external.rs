//! Sorted runs on disk and their merge with a bounded fan-in.
//!
//! A run is one sorted stretch of the input, written as Arrow IPC batches of the session's size. Merging reads
//! one batch of each run at a time; what that costs is known when the run is written: its largest batch, and
//! what the merge's cursors hold for that batch's keys. A merge pass reserves that cost run by run, in input
//! order, as long as the pool grants it (at least two runs: a sort that cannot hold two batches of two
//! runs fails); when it could not take every run, it merges those it took into a new run in their place (equal
//! keys in run order, so the sort stays stable), deletes them and starts again, so the last pass merges every run left and is the sort's output. A pass reserves everything
//! up front and never grows: its merge holds one batch per run (an output batch ends when a run's batch runs
//! out, before the next is read), that batch's keys in row format, and once per pass an output batch and the
//! spill writer's encoding of it (or, once written, a batch being read: decoded, then compacted). Runs are written in batches of at most 2 MiB (a larger row
//! alone), so a merge of two runs needs a few MiB whatever the rows.
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, RecordBatch};
use arrow::compute::interleave;
use arrow::datatypes::{DataType, SchemaRef};
use arrow::row::{RowConverter, Rows};
use datafusion_common::{DataFusionError, Result};
use datafusion_execution::memory_pool::MemoryReservation;
use datafusion_execution::spill_file::SpillFile;
use datafusion_physical_expr::LexOrdering;
use datafusion_physical_plan::metrics::{BaselineMetrics, Count};
use datafusion_physical_plan::spill::SpillManager;
use datafusion_physical_plan::stream::RecordBatchStreamAdapter;
use datafusion_physical_plan::SendableRecordBatchStream;
use futures::StreamExt;

use super::exec::{gather, row_converter};
use crate::operators::spill::read_compacted;

/// One sorted run on disk.
pub(super) struct Run {
    /// Deleted when the last reference goes (after the pass that merged it, or with the sort's stream).
    file: Arc<dyn SpillFile>,
    rows: usize,
    /// The largest batch as read back (compacted).
    batch_bytes: usize,
    /// What a merge's cursor holds for the keys of the run's largest batch.
    key_bytes: usize,
}

impl Run {
    /// What merging this run holds at most: its current batch and that batch's keys.
    fn merge_bytes(&self) -> usize {
        self.batch_bytes + self.key_bytes
    }
}

/// The most a run's batch holds (a single larger row is written alone), so that a merge holds little per run.
const RUN_BATCH_BYTES: usize = 2 << 20;

/// The bytes of `batch`'s rows (a slice counts only its part of the buffers): what reading it back holds.
fn sliced_bytes(batch: &RecordBatch) -> Result<usize> {
    let mut bytes = 0;
    for c in batch.columns() {
        bytes += c.to_data().get_slice_memory_size()?;
    }
    Ok(bytes)
}

/// Where each batch starts in the input's row positions.
pub(super) fn offsets(rows: &[usize]) -> Vec<usize> {
    rows.iter().scan(0, |sum, &n| Some(std::mem::replace(sum, *sum + n))).collect()
}

/// What a merge cursor holds for `batch`'s sort keys in arrow's row format: fixed-width keys take a byte more
/// than their width, variable-width ones their bytes in blocks (at most 9/8 of them and 36 bytes a row), plus
/// an offset per row.
fn key_bytes(ordering: &LexOrdering, batch: &RecordBatch) -> Result<usize> {
    let rows = batch.num_rows();
    let mut bytes = rows * 8;
    for e in ordering.iter() {
        let dt = e.expr.data_type(&batch.schema())?;
        bytes += match dt.primitive_width() {
            Some(w) => rows * (w + 1),
            None if dt == DataType::Boolean => rows * 2,
            None => {
                // Blocks of 32 bytes (8 for the first 32) and a continuation byte each, a null byte per row.
                let array: ArrayRef = e.expr.evaluate(batch)?.into_array(rows)?;
                array.to_data().get_slice_memory_size()? * 9 / 8 + rows * 36
            }
        };
    }
    Ok(bytes)
}

/// Writes the rows of `columns` (each column's arrays, batches starting at `offsets`) in `order` as one run of
/// `batch_size`-row batches; `None` when there are no rows.
pub(super) fn write_run(
    spill: &SpillManager,
    ordering: &LexOrdering,
    schema: &SchemaRef,
    columns: Vec<Vec<ArrayRef>>,
    offsets: &[usize],
    order: &[u32],
    batch_size: usize,
) -> Result<Option<Run>> {
    let mut writer = RunWriter::new(spill, ordering)?;
    for chunk in order.chunks(batch_size) {
        writer.push(&gather(schema, &columns, offsets, chunk)?)?;
    }
    writer.finish()
}

/// DataFusion's in-progress spill file, whose type it does not export: `Some(batch)` appends, `None` finishes.
type SpillSink = Box<dyn FnMut(Option<&RecordBatch>) -> Result<Option<Arc<dyn SpillFile>>> + Send>;

struct RunWriter<'a> {
    file: SpillSink,
    ordering: &'a LexOrdering,
    rows: usize,
    batch_bytes: usize,
    key_bytes: usize,
}

impl<'a> RunWriter<'a> {
    fn new(spill: &SpillManager, ordering: &'a LexOrdering) -> Result<Self> {
        let mut in_progress = spill.create_in_progress_file("ember sort run")?;
        let file: SpillSink = Box::new(move |batch| match batch {
            Some(b) => in_progress.append_batch(b).map(|_| None),
            None => in_progress.finish(),
        });
        Ok(Self { file, ordering, rows: 0, batch_bytes: 0, key_bytes: 0 })
    }

    /// Appends `batch`, in slices of at most [`RUN_BATCH_BYTES`] (or one row).
    fn push(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let bytes = sliced_bytes(batch)?;
        if bytes > RUN_BATCH_BYTES && batch.num_rows() > 1 {
            let mid = batch.num_rows() / 2;
            self.push(&batch.slice(0, mid))?;
            return self.push(&batch.slice(mid, batch.num_rows() - mid));
        }
        (self.file)(Some(batch))?;
        self.rows += batch.num_rows();
        self.batch_bytes = self.batch_bytes.max(bytes);
        self.key_bytes = self.key_bytes.max(key_bytes(self.ordering, batch)?);
        Ok(())
    }

    fn finish(mut self) -> Result<Option<Run>> {
        Ok((self.file)(None)?.map(|file| Run {
            file,
            rows: self.rows,
            batch_bytes: self.batch_bytes,
            key_bytes: self.key_bytes,
        }))
    }
}

/// The merge of a sort's runs into its output.
pub(super) struct Merge {
    pub ordering: LexOrdering,
    pub schema: SchemaRef,
    pub batch_size: usize,
    pub spill: SpillManager,
    pub baseline: BaselineMetrics,
    pub passes: Count,
}

impl Merge {
    /// Merges `runs` in passes of as many runs as `reservation` is granted for (see the module doc); the last
    /// pass's stream is the output, holding its reservation until it ends or is dropped.
    pub async fn run(self, mut runs: Vec<Run>, reservation: MemoryReservation) -> Result<SendableRecordBatchStream> {
        loop {
            // Runs stay in input order and a pass merges the first ones into one that takes their place, equal keys
            // in run order: the sort is stable, whatever the memory.
            let last = runs.len();
            let taken = self.reserve(&runs, &reservation)?;
            self.passes.add(1);
            if taken == last {
                let merger = self.merger(std::mem::take(&mut runs))?;
                let baseline = self.baseline.clone();
                let out = futures::stream::unfold(Some((merger, reservation)), move |state| {
                    let baseline = baseline.clone();
                    async move {
                        let (mut merger, reservation) = state?;
                        let timer = baseline.elapsed_compute().timer();
                        let next = merger.next().await;
                        timer.done();
                        match next {
                            Ok(Some(b)) => {
                                baseline.record_output(b.num_rows());
                                Some((Ok(b), Some((merger, reservation))))
                            }
                            Ok(None) => None,
                            Err(e) => Some((Err(e), None)),
                        }
                    }
                });
                return Ok(Box::pin(RecordBatchStreamAdapter::new(self.schema.clone(), out)));
            }
            let rest = runs.split_off(taken);
            let mut merger = self.merger(std::mem::replace(&mut runs, rest))?;
            let mut writer = RunWriter::new(&self.spill, &self.ordering)?;
            loop {
                let timer = self.baseline.elapsed_compute().timer();
                let next = merger.next().await?;
                timer.done();
                match next {
                    Some(batch) => writer.push(&batch)?,
                    None => break,
                }
            }
            drop(merger);
            if let Some(run) = writer.finish()? {
                runs.insert(0, run);
            }
            reservation.free();
        }
    }

    /// Reserves the merge of the first runs, as many as the pool grants (all, or at least two); how many.
    fn reserve(&self, runs: &[Run], reservation: &MemoryReservation) -> Result<usize> {
        let mut largest = 0;
        for (taken, run) in runs.iter().enumerate() {
            // Once per pass, as large as the largest batch: the output batch and the spill writer's encoding of
            // it, or (after it is written) a batch being read, decoded and compacted.
            let pass = 2 * run.batch_bytes.saturating_sub(largest);
            if reservation.try_grow(run.merge_bytes() + pass).is_err() {
                if taken >= 2 || taken == runs.len() {
                    return Ok(taken);
                }
                let need = runs.iter().take(2).map(|r| r.merge_bytes() + 2 * r.batch_bytes).sum::<usize>();
                reservation.free();
                return Err(DataFusionError::ResourcesExhausted(format!(
                    "{} could not reserve {need} bytes to merge two sorted runs of {} and {} rows",
                    reservation.consumer().name(),
                    runs[0].rows,
                    runs.get(1).map_or(0, |r| r.rows),
                )));
            }
            largest = largest.max(run.batch_bytes);
        }
        Ok(runs.len())
    }

    fn merger(&self, runs: Vec<Run>) -> Result<Merger> {
        let streams = runs.into_iter().map(|r| read_compacted(&self.spill, r.file)).collect::<Result<Vec<_>>>()?;
        Ok(Merger {
            converter: row_converter(&self.ordering, &self.schema)?,
            ordering: self.ordering.clone(),
            schema: self.schema.clone(),
            batch_size: self.batch_size,
            cursors: streams.into_iter().map(|s| Cursor { stream: Some(s), batch: None, keys: None, row: 0 }).collect(),
            heap: vec![],
            started: false,
            refill: None,
            picked: Vec::with_capacity(self.batch_size),
        })
    }
}

/// One run being merged: its stream and its current batch with the batch's keys in row format.
struct Cursor {
    stream: Option<SendableRecordBatchStream>,
    batch: Option<RecordBatch>,
    keys: Option<Rows>,
    row: usize,
}

/// A k-way merge that holds one batch per run: an output batch ends when a run's batch runs out (before the
/// next is read) or at `batch_size` rows. A binary heap of runs by their current row's key (row format), ties
/// to the earlier run.
struct Merger {
    converter: RowConverter,
    ordering: LexOrdering,
    schema: SchemaRef,
    batch_size: usize,
    cursors: Vec<Cursor>,
    heap: Vec<usize>,
    started: bool,
    /// A run whose batch ran out at the end of the last output batch, to read next.
    refill: Option<usize>,
    picked: Vec<(usize, usize)>,
}

impl Merger {
    async fn next(&mut self) -> Result<Option<RecordBatch>> {
        if !self.started {
            self.started = true;
            for c in 0..self.cursors.len() {
                if self.load(c).await? {
                    self.push(c);
                }
            }
        }
        if let Some(c) = self.refill.take() {
            if self.load(c).await? {
                self.push(c);
            }
        }
        while let Some(&top) = self.heap.first() {
            let cursor = &mut self.cursors[top];
            self.picked.push((top, cursor.row));
            cursor.row += 1;
            if cursor.row == cursor.batch.as_ref().map_or(0, |b| b.num_rows()) {
                self.pop();
                self.refill = Some(top);
                break;
            }
            self.sift_down(0);
            if self.picked.len() >= self.batch_size {
                break;
            }
        }
        if self.picked.is_empty() {
            return Ok(None);
        }
        // The runs holding a batch, and the picked rows as (index among them, row).
        let mut slot = vec![usize::MAX; self.cursors.len()];
        let mut batches = vec![];
        for (c, cursor) in self.cursors.iter().enumerate() {
            if let Some(b) = &cursor.batch {
                slot[c] = batches.len();
                batches.push(b);
            }
        }
        let indices: Vec<(usize, usize)> = self.picked.drain(..).map(|(c, r)| (slot[c], r)).collect();
        let columns = (0..self.schema.fields().len())
            .map(|i| {
                let arrays: Vec<&dyn Array> = batches.iter().map(|b| b.column(i).as_ref()).collect();
                interleave(&arrays, &indices)
            })
            .collect::<std::result::Result<Vec<_>, _>>()?;
        Ok(Some(RecordBatch::try_new(self.schema.clone(), columns)?))
    }

    /// Reads run `c`'s next non-empty batch; false at its end.
    async fn load(&mut self, c: usize) -> Result<bool> {
        let cursor = &mut self.cursors[c];
        cursor.batch = None;
        cursor.keys = None;
        cursor.row = 0;
        let Some(stream) = cursor.stream.as_mut() else { return Ok(false) };
        while let Some(batch) = stream.next().await {
            let batch = batch?;
            if batch.num_rows() == 0 {
                continue;
            }
            let arrays = self
                .ordering
                .iter()
                .map(|e| e.expr.evaluate(&batch)?.into_array(batch.num_rows()))
                .collect::<Result<Vec<ArrayRef>>>()?;
            cursor.keys = Some(self.converter.convert_columns(&arrays)?);
            cursor.batch = Some(batch);
            return Ok(true);
        }
        cursor.stream = None;
        Ok(false)
    }

    fn less(&self, a: usize, b: usize) -> bool {
        let (x, y) = (&self.cursors[a], &self.cursors[b]);
        let (kx, ky) = (x.keys.as_ref().expect("loaded"), y.keys.as_ref().expect("loaded"));
        kx.row(x.row).cmp(&ky.row(y.row)).then(a.cmp(&b)) == std::cmp::Ordering::Less
    }

    fn push(&mut self, c: usize) {
        self.heap.push(c);
        let mut i = self.heap.len() - 1;
        while i > 0 {
            let parent = (i - 1) / 2;
            if !self.less(self.heap[i], self.heap[parent]) {
                break;
            }
            self.heap.swap(i, parent);
            i = parent;
        }
    }

    fn pop(&mut self) {
        let last = self.heap.len() - 1;
        self.heap.swap(0, last);
        self.heap.pop();
        if !self.heap.is_empty() {
            self.sift_down(0);
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut least = i;
            if l < n && self.less(self.heap[l], self.heap[least]) {
                least = l;
            }
            if r < n && self.less(self.heap[r], self.heap[least]) {
                least = r;
            }
            if least == i {
                return;
            }
            self.heap.swap(i, least);
            i = least;
        }
    }
}
