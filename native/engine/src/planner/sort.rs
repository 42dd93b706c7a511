//! The proto `Sort` → Ember's sort (`operators/sort`: packed keys and a radix sort where they pack and
//! `radix` is asked, else row-format keys; spilled runs merged with a bounded fan-in) when no fetch is asked,
//! else DataFusion's `SortExec` (the top-k); and Spark's sort order as DataFusion's.
use std::sync::Arc;

use arrow::compute::SortOptions;
use datafusion_common::Result;
use datafusion_physical_expr::{LexOrdering, PhysicalSortExpr};
use datafusion_physical_plan::sorts::sort::SortExec;
use datafusion_physical_plan::ExecutionPlan;
use ember_proto as pb;

use super::expr;
use crate::error::plan_error;
use crate::expressions::NormalizeFloatExpr;
use crate::operators::RadixSortExec;

/// The sort of `input` that `s` asks for.
pub fn create_sort(s: &pb::Sort, input: Arc<dyn ExecutionPlan>) -> Result<Arc<dyn ExecutionPlan>> {
    let ordering = sort_ordering(&s.order, &input.schema())?;
    let fetch = (s.fetch > 0).then_some(s.fetch as usize);
    Ok(match fetch {
        None => {
            let radix = s.radix && RadixSortExec::supports(&ordering, input.as_ref());
            Arc::new(RadixSortExec::with_radix(ordering, input, radix)?)
        }
        Some(_) => Arc::new(SortExec::new(ordering, input).with_fetch(fetch)),
    })
}

/// Spark's sort order: float keys normalized (all NaNs equal and largest, -0.0 = 0.0), nulls as asked.
pub fn sort_ordering(order: &[pb::SortOrder], schema: &arrow::datatypes::Schema) -> Result<LexOrdering> {
    LexOrdering::new(sort_exprs(order, schema)?).ok_or_else(|| plan_error("sort without keys"))
}

pub(crate) fn sort_exprs(order: &[pb::SortOrder], schema: &arrow::datatypes::Schema) -> Result<Vec<PhysicalSortExpr>> {
    order
        .iter()
        .map(|o| {
            let e =
                expr::create_expr(o.child.as_ref().ok_or_else(|| plan_error("sort key without expression"))?, schema)?;
            Ok(PhysicalSortExpr::new(
                NormalizeFloatExpr::wrap_if_float(e, schema)?,
                SortOptions { descending: !o.ascending, nulls_first: o.nulls_first },
            ))
        })
        .collect::<Result<Vec<_>>>()
}
