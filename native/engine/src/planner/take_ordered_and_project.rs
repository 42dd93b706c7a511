//! Spark's `TakeOrderedAndProjectExec`, final step: a top-k sort (DataFusion's `SortExec` with a fetch, which
//! keeps only `limit` rows in memory), the offset dropped, then the projection. The per-partition top-k under
//! the single-partition exchange is an ordinary `Sort` with `fetch`.
use std::sync::Arc;

use datafusion_common::Result;
use datafusion_physical_plan::limit::GlobalLimitExec;
use datafusion_physical_plan::projection::ProjectionExec;
use datafusion_physical_plan::sorts::sort::SortExec;
use datafusion_physical_plan::ExecutionPlan;
use ember_proto as pb;

use super::expr;
use super::sort::sort_ordering;
use crate::error::plan_error;
use crate::expressions::RowPipeline;

pub fn create_take_ordered_and_project(
    t: &pb::TakeOrderedAndProject,
    input: Arc<dyn ExecutionPlan>,
) -> Result<Arc<dyn ExecutionPlan>> {
    if t.limit == 0 {
        return Err(plan_error("TakeOrderedAndProject with limit 0"));
    }
    if t.offset >= t.limit {
        return Err(plan_error(format!("TakeOrderedAndProject offset {} not below its limit {}", t.offset, t.limit)));
    }
    if t.names.len() != t.exprs.len() {
        return Err(plan_error("TakeOrderedAndProject needs one name per expression"));
    }
    let limit = usize::try_from(t.limit).map_err(|_| plan_error("TakeOrderedAndProject limit too large"))?;
    let offset = t.offset as usize;
    let ordering = sort_ordering(&t.order, &input.schema())?;
    let mut plan: Arc<dyn ExecutionPlan> = Arc::new(SortExec::new(ordering, input).with_fetch(Some(limit)));
    if offset > 0 {
        plan = Arc::new(GlobalLimitExec::new(plan, offset, Some(limit - offset)));
    }
    if !t.exprs.is_empty() {
        let schema = plan.schema();
        let exprs = t.exprs.iter().map(|e| expr::create_expr(e, &schema)).collect::<Result<Vec<_>>>()?;
        // Spark projects the top rows one at a time, in order.
        let exprs = RowPipeline::new().project(exprs).into_iter().zip(t.names.iter().cloned());
        plan = Arc::new(ProjectionExec::try_new(exprs, plan)?);
    }
    Ok(plan)
}
