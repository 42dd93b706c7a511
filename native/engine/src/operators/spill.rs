//! Spill files written in full-size batches: rows are gathered (reserved) in arrow's `BatchCoalescer` until a
//! full `batch_size` batch can be written, so the files hold full-size batches rather than the slivers that
//! routing rows (to the join's buckets) or slicing input batches (at the window's partition boundaries)
//! produces. Shared by the spilling hash join, the radix aggregate and the window operator; public so that
//! `benches/spill.rs` measures this code itself (against the slivers-and-concat staging it replaced: 0.71–0.90x
//! the time at the same peak memory, docs/benchmarks.md).
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::array::UInt32Array;
use arrow::compute::{take_record_batch, BatchCoalescer};
use datafusion_common::Result;
use datafusion_execution::spill_file::SpillFile;
use datafusion_physical_plan::spill::SpillManager;
use datafusion_physical_plan::stream::RecordBatchStreamAdapter;
use datafusion_physical_plan::SendableRecordBatchStream;
use futures::StreamExt;

use datafusion_execution::memory_pool::MemoryReservation;

/// Where gathered rows are reserved: the join's capped budget, or a plain reservation.
pub trait SpillBudget {
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
pub struct SpilledSide {
    pub file: Option<Arc<dyn SpillFile>>,
    pub rows: usize,
}

/// DataFusion's in-progress spill file, whose type it does not export: `Some(batch)` appends, `None` finishes.
type SpillSink = Box<dyn FnMut(Option<&RecordBatch>) -> Result<Option<Arc<dyn SpillFile>>> + Send>;

/// One spill file being written: rows gathered into full batches, what is gathered reserved from the caller's
/// budget (`SpillBudget`); when the budget refuses, what is gathered is written at once as a shorter batch.
pub struct CoalescingWriter {
    file: SpillSink,
    coalescer: BatchCoalescer,
    /// Bytes reserved for the coalescer's buffers (its `size()` when last reserved).
    reserved: usize,
    rows: usize,
}

impl CoalescingWriter {
    pub fn new(manager: &SpillManager, batch_size: usize) -> Result<Self> {
        Self::with_label(manager, batch_size, "ember spilling hash join bucket")
    }

    /// A writer whose temp file is described as `label`.
    pub fn with_label(manager: &SpillManager, batch_size: usize, label: &str) -> Result<Self> {
        let mut in_progress = manager.create_in_progress_file(label)?;
        let file: SpillSink = Box::new(move |batch| match batch {
            Some(b) => in_progress.append_batch(b).map(|_| None),
            None => in_progress.finish(),
        });
        let coalescer = BatchCoalescer::new(Arc::clone(manager.schema()), batch_size.max(1));
        Ok(Self { file, coalescer, reserved: 0, rows: 0 })
    }

    /// Adds rows; writes every full batch, and what is gathered at once if reserving it is refused.
    pub fn push(&mut self, batch: RecordBatch, budget: &(impl SpillBudget + ?Sized)) -> Result<()> {
        self.gather(batch)?;
        self.reserve(budget)
    }

    /// Writes out whatever is gathered as one batch.
    pub fn flush(&mut self, budget: &(impl SpillBudget + ?Sized)) -> Result<()> {
        self.coalescer.finish_buffered_batch()?;
        self.write_completed()?;
        budget.shrink(std::mem::take(&mut self.reserved));
        Ok(())
    }

    pub fn finish(mut self, budget: &(impl SpillBudget + ?Sized)) -> Result<SpilledSide> {
        self.flush(budget)?;
        Ok(SpilledSide { file: (self.file)(None)?, rows: self.rows })
    }

    /// Reserves what the coalescer holds now ([`spill_batches`] leaves rows gathered unreserved); writes it out
    /// if refused.
    pub(crate) fn reserve(&mut self, budget: &(impl SpillBudget + ?Sized)) -> Result<()> {
        let size = self.coalescer.size();
        if size <= self.reserved {
            budget.shrink(self.reserved - size);
            self.reserved = size;
            return Ok(());
        }
        if budget.try_grow(size - self.reserved).is_ok() {
            self.reserved = size;
            Ok(())
        } else {
            self.flush(budget)
        }
    }

    /// Adds rows and writes every completed batch, reserving nothing.
    fn gather(&mut self, batch: RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        self.rows += batch.num_rows();
        self.coalescer.push_batch(batch)?;
        self.write_completed()
    }

    fn write_completed(&mut self) -> Result<()> {
        while let Some(b) = self.coalescer.next_completed_batch() {
            (self.file)(Some(&b))?;
        }
        Ok(())
    }
}

/// Writes `batches` (already held) to a new writer in full batches. The rest stays gathered, unreserved: the
/// caller reserves it ([`CoalescingWriter::reserve`]) once it has released the batches' own reservation.
pub(crate) fn spill_batches(
    manager: &SpillManager,
    batch_size: usize,
    batches: Vec<RecordBatch>,
) -> Result<CoalescingWriter> {
    let mut w = CoalescingWriter::new(manager, batch_size)?;
    for b in batches {
        w.gather(b)?;
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
