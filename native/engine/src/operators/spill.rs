//! Spill files written in full-size batches: rows staged in memory (reserved) until a full `batch_size` batch can
//! be written, so the files hold full-size batches rather than the slivers that routing rows (to the join's
//! buckets) or slicing input batches (at the window's partition boundaries) produces. Shared by the spilling hash
//! join and the window operator.
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::array::UInt32Array;
use arrow::compute::{concat_batches, take_record_batch};
use datafusion_common::utils::memory::get_record_batch_memory_size;
use datafusion_common::Result;
use datafusion_execution::spill_file::SpillFile;
use datafusion_physical_plan::spill::SpillManager;
use datafusion_physical_plan::stream::RecordBatchStreamAdapter;
use datafusion_physical_plan::SendableRecordBatchStream;
use futures::StreamExt;

use datafusion_execution::memory_pool::MemoryReservation;

/// Where staged rows are reserved: the join's capped budget, or a plain reservation.
pub(crate) trait SpillBudget {
    fn try_grow(&self, bytes: usize) -> Result<()>;
    fn shrink(&self, bytes: usize);
}

impl SpillBudget for MemoryReservation {
    fn try_grow(&self, bytes: usize) -> Result<()> {
        MemoryReservation::try_grow(self, bytes)
    }

    fn shrink(&self, bytes: usize) {
        MemoryReservation::shrink(self, bytes.min(self.size()))
    }
}

/// A finished spill file of one bucket side, with its row count.
#[derive(Clone, Default)]
pub(crate) struct SpilledSide {
    pub(crate) file: Option<Arc<dyn SpillFile>>,
    pub(crate) rows: usize,
}

/// DataFusion's in-progress spill file, whose type it does not export: `Some(batch)` appends, `None` finishes.
type SpillSink = Box<dyn FnMut(Option<&RecordBatch>) -> Result<Option<Arc<dyn SpillFile>>> + Send>;

pub(crate) struct CoalescingWriter {
    file: SpillSink,
    staged: Vec<RecordBatch>,
    staged_rows: usize,
    staged_bytes: usize,
    rows: usize,
    batch_size: usize,
}

impl CoalescingWriter {
    pub(crate) fn new(manager: &SpillManager, batch_size: usize) -> Result<Self> {
        Self::with_label(manager, batch_size, "ember spilling hash join bucket")
    }

    /// A writer whose temp file is described as `label`.
    pub(crate) fn with_label(manager: &SpillManager, batch_size: usize, label: &str) -> Result<Self> {
        let mut in_progress = manager.create_in_progress_file(label)?;
        let file: SpillSink = Box::new(move |batch| match batch {
            Some(b) => in_progress.append_batch(b).map(|_| None),
            None => in_progress.finish(),
        });
        Ok(Self { file, staged: vec![], staged_rows: 0, staged_bytes: 0, rows: 0, batch_size })
    }

    /// Adds rows; writes once a full batch is staged, or at once if staging is refused memory.
    pub(crate) fn push(&mut self, batch: RecordBatch, budget: &(impl SpillBudget + ?Sized)) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        self.rows += batch.num_rows();
        if self.staged_rows + batch.num_rows() >= self.batch_size {
            self.staged.push(batch);
            return self.flush(budget);
        }
        let bytes = get_record_batch_memory_size(&batch);
        if budget.try_grow(bytes).is_ok() {
            self.staged_bytes += bytes;
            self.staged_rows += batch.num_rows();
            self.staged.push(batch);
            Ok(())
        } else {
            self.staged.push(batch);
            self.flush(budget)
        }
    }

    /// Writes out whatever is staged as one batch.
    pub(crate) fn flush(&mut self, budget: &(impl SpillBudget + ?Sized)) -> Result<()> {
        if self.staged.is_empty() {
            return Ok(());
        }
        let staged = std::mem::take(&mut self.staged);
        let batch = if staged.len() == 1 {
            staged.into_iter().next().unwrap()
        } else {
            concat_batches(&staged[0].schema(), &staged)?
        };
        // Batches of at most `batch_size` rows, so that a chunk of one batch is as small as the input's batches.
        let mut offset = 0;
        while offset < batch.num_rows() {
            let len = self.batch_size.min(batch.num_rows() - offset);
            (self.file)(Some(&batch.slice(offset, len)))?;
            offset += len;
        }
        budget.shrink(self.staged_bytes);
        self.staged_bytes = 0;
        self.staged_rows = 0;
        Ok(())
    }

    pub(crate) fn finish(mut self, budget: &(impl SpillBudget + ?Sized)) -> Result<SpilledSide> {
        self.flush(budget)?;
        Ok(SpilledSide { file: (self.file)(None)?, rows: self.rows })
    }

    /// Reserves what [`spill_batches`] left staged; writes it out if refused.
    pub(crate) fn reserve_staged(&mut self, budget: &(impl SpillBudget + ?Sized)) -> Result<()> {
        let bytes: usize = self.staged.iter().map(get_record_batch_memory_size).sum();
        if budget.try_grow(bytes).is_ok() {
            self.staged_bytes = bytes;
            Ok(())
        } else {
            self.flush(budget)
        }
    }
}

/// Writes `batches` (already held) to a new writer in coalesced batches.
pub(crate) fn spill_batches(
    manager: &SpillManager,
    batch_size: usize,
    batches: Vec<RecordBatch>,
) -> Result<CoalescingWriter> {
    let mut w = CoalescingWriter::new(manager, batch_size)?;
    let mut group: Vec<RecordBatch> = vec![];
    let mut group_rows = 0;
    for b in batches {
        w.rows += b.num_rows();
        group_rows += b.num_rows();
        group.push(b);
        if group_rows >= batch_size {
            (w.file)(Some(&concat_batches(&group[0].schema(), &group)?))?;
            group.clear();
            group_rows = 0;
        }
    }
    if !group.is_empty() {
        // Left staged for the next push to complete; the caller reserves it (`reserve_staged`) once it has
        // released the bucket's own reservation.
        w.staged_rows = group_rows;
        w.staged = group;
    }
    Ok(w)
}

/// The batches of a spill file, compacted: the IPC reader leaves buffers that were not worth compressing as
/// slices of the whole message body, which would keep (and be reserved at) several times the rows' size.
pub(crate) fn read_compacted(manager: &SpillManager, file: Arc<dyn SpillFile>) -> Result<SendableRecordBatchStream> {
    let stream = manager.read_spill_as_stream_unbuffered(file, None)?;
    let compacted = stream.map(|b| {
        let b = b?;
        let all = UInt32Array::from_iter_values(0..b.num_rows() as u32);
        Ok(take_record_batch(&b, &all)?)
    });
    Ok(Box::pin(RecordBatchStreamAdapter::new(manager.schema().clone(), compacted)))
}
