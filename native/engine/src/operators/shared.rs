//! Helpers shared by several operators (one home each, so no operator borrows from another).
use std::sync::Arc;

use datafusion_common::Result;
use datafusion_expr::GroupsAccumulator;
use datafusion_physical_expr::aggregate::AggregateFunctionExpr;
use datafusion_physical_expr::GroupsAccumulatorAdapter;

/// The groups accumulator of an aggregate function: its own when it has one, else its row accumulator behind
/// DataFusion's adapter (first/last without ORDER BY and other row-at-a-time accumulators).
pub(crate) fn create_group_accumulator(aggr: &Arc<AggregateFunctionExpr>) -> Result<Box<dyn GroupsAccumulator>> {
    if aggr.groups_accumulator_supported() {
        aggr.create_groups_accumulator()
    } else {
        let a = Arc::clone(aggr);
        Ok(Box::new(GroupsAccumulatorAdapter::new(move || a.create_accumulator())))
    }
}

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
