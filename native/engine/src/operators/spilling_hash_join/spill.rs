//! Spill files of buckets: batches staged in memory (reserved) until a full `batch_size` batch can be written, so
//! the files hold full-size batches rather than the slivers that routing to buckets produces.
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::compute::concat_batches;
use datafusion_common::utils::memory::get_record_batch_memory_size;
use datafusion_common::Result;
use datafusion_execution::spill_file::SpillFile;
use datafusion_physical_plan::spill::SpillManager;

use super::buckets::Budget;

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
        let mut in_progress = manager.create_in_progress_file("ember spilling hash join bucket")?;
        let file: SpillSink = Box::new(move |batch| match batch {
            Some(b) => in_progress.append_batch(b).map(|_| None),
            None => in_progress.finish(),
        });
        Ok(Self { file, staged: vec![], staged_rows: 0, staged_bytes: 0, rows: 0, batch_size })
    }

    /// Adds rows; writes once a full batch is staged, or at once if staging is refused memory.
    pub(crate) fn push(&mut self, batch: RecordBatch, budget: &Budget) -> Result<()> {
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
    pub(crate) fn flush(&mut self, budget: &Budget) -> Result<()> {
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

    pub(crate) fn finish(mut self, budget: &Budget) -> Result<SpilledSide> {
        self.flush(budget)?;
        Ok(SpilledSide { file: (self.file)(None)?, rows: self.rows })
    }

    /// Reserves what [`spill_batches`] left staged; writes it out if refused.
    pub(crate) fn reserve_staged(&mut self, budget: &Budget) -> Result<()> {
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
