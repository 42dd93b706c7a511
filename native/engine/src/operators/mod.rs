//! Ember's own execution operators (DataFusion `ExecutionPlan`s). Each operator is a module; larger ones are
//! folders in DataFusion's manner (`mod.rs` explains the algorithm, `exec.rs`, `stream.rs`, ...).
pub mod adaptive_aggregate;
pub mod input;
pub(crate) mod once;
pub mod parquet_scan;
pub mod prefix_window;
pub mod radix_aggregate;
pub mod radix_sort;
pub mod range_source;
pub mod shuffle_reader;
pub mod shuffle_writer;
pub(crate) mod spill;
pub mod spilling_hash_join;

pub use adaptive_aggregate::AdaptiveAggregateExec;
pub use input::InputExec;
pub use prefix_window::PrefixWindowExec;
pub use radix_aggregate::RadixAggregateExec;
pub use radix_sort::RadixSortExec;
pub use shuffle_reader::ShuffleBlockReader;
pub use shuffle_writer::ShuffleWriterExec;
pub use spilling_hash_join::SpillingHashJoinExec;

/// `batch` as zero-copy slices of at most `batch_size` rows: how an operator that emits a whole table at once
/// hands it downstream in the session's batch size.
pub(crate) fn batch_slices(
    batch: &arrow::array::RecordBatch,
    batch_size: usize,
) -> impl Iterator<Item = arrow::array::RecordBatch> + '_ {
    let size = batch_size.max(1);
    (0..batch.num_rows()).step_by(size).map(move |offset| batch.slice(offset, size.min(batch.num_rows() - offset)))
}

/// A task-liveness check for the readers' tests: alive for `calls` calls, killed from then on.
#[cfg(test)]
pub(crate) fn killed_after(calls: usize) -> impl FnMut() -> datafusion_common::Result<()> {
    let mut made = 0;
    move || {
        made += 1;
        if made > calls {
            Err(datafusion_common::DataFusionError::Execution("task killed".into()))
        } else {
            Ok(())
        }
    }
}
