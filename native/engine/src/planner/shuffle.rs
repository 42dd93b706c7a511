//! The proto `ShuffleWriter` → `operators/shuffle`'s writer: hash keys or a range partitioner (Spark's sampled
//! bounds, evaluated here into one column per key).
use std::sync::Arc;

use datafusion_common::Result;
use datafusion_physical_plan::ExecutionPlan;
use ember_proto as pb;

use super::sort::sort_exprs;
use super::{expr, types};
use crate::error::plan_error;
use crate::expressions::NormalizeFloatExpr;
use crate::operators::{RangePartitioner, ShuffleWriterExec};

/// The map side of a shuffle of `input`.
pub fn create_shuffle_writer(w: &pb::ShuffleWriter, input: Arc<dyn ExecutionPlan>) -> Result<Arc<dyn ExecutionPlan>> {
    let schema = input.schema();
    let keys = w.keys.iter().map(|k| expr::create_expr(k, &schema)).collect::<Result<Vec<_>>>()?;
    let block_schema = types::to_arrow_schema(
        w.block_schema.as_ref().ok_or_else(|| plan_error("shuffle writer without a block schema"))?,
    )?;
    let writer = ShuffleWriterExec::try_new(
        input,
        keys,
        w.num_partitions,
        Arc::new(block_schema),
        usize::try_from(w.spill_bytes).unwrap_or(usize::MAX),
    )?;
    if !w.range {
        return Ok(Arc::new(writer));
    }
    let range = range_partitioner(w, &schema)?;
    if range.num_partitions() != w.num_partitions {
        return Err(plan_error(format!(
            "range shuffle of {} partitions with {} bounds",
            w.num_partitions,
            range.num_partitions() - 1
        )));
    }
    Ok(Arc::new(writer.with_range(range)?))
}

/// A range shuffle's partitioner: the keys in Spark's sort order (floats normalized) and the bounds, literals
/// evaluated into one column per key and normalized the same way.
fn range_partitioner(w: &pb::ShuffleWriter, schema: &arrow::datatypes::SchemaRef) -> Result<RangePartitioner> {
    if !w.keys.is_empty() {
        return Err(plan_error("range shuffle with hash keys"));
    }
    // Every key, repeated ones included (a LexOrdering would drop them): each bound row has one value per key.
    let keys = sort_exprs(&w.range_order, schema)?;
    let width = keys.len();
    if width == 0 {
        return Err(plan_error("range shuffle without keys"));
    }
    if !w.range_bounds.len().is_multiple_of(width) {
        return Err(plan_error("range bounds are not whole rows"));
    }
    let one_row = arrow::record_batch::RecordBatch::try_new_with_options(
        Arc::new(arrow::datatypes::Schema::empty()),
        vec![],
        &arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(1)),
    )?;
    let empty = arrow::datatypes::Schema::empty();
    let mut columns = Vec::with_capacity(width);
    for (j, key) in keys.iter().enumerate() {
        let dt = key.expr.data_type(schema)?;
        let values = w
            .range_bounds
            .iter()
            .skip(j)
            .step_by(width)
            .map(|b| {
                let v = NormalizeFloatExpr::wrap_if_float(expr::create_expr(b, &empty)?, &empty)?
                    .evaluate(&one_row)?
                    .into_array(1)?;
                if v.data_type() == &dt {
                    Ok(v)
                } else {
                    Ok(arrow::compute::cast(&v, &dt)?)
                }
            })
            .collect::<Result<Vec<_>>>()?;
        let refs: Vec<&dyn arrow::array::Array> = values.iter().map(|a| a.as_ref()).collect();
        columns.push(if refs.is_empty() { arrow::array::new_empty_array(&dt) } else { arrow::compute::concat(&refs)? });
    }
    RangePartitioner::try_new(keys, &columns, schema)
}
