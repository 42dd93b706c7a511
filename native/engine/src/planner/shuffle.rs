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
use crate::operators::dynamic_filter::{DynamicFilter, DynamicFilterConfig};
use crate::operators::{DropFilterSpec, KeySummarySpec, RangePartitioner, ShuffleWriterExec};
use crate::planner::dynamic_filter::{decode_dynamic_filter, encode_dynamic_filter};
use prost::Message;

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
        return Ok(Arc::new(with_dynamic_filters(w, writer)?));
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

/// A hash shuffle's dynamic filter roles: summarizing its keys (a join's build side), dropping rows by a filter
/// (its probe side).
fn with_dynamic_filters(w: &pb::ShuffleWriter, mut writer: ShuffleWriterExec) -> Result<ShuffleWriterExec> {
    if w.summarize_keys {
        let config = DynamicFilterConfig {
            max_set_values: w.summary_max_set_values as usize,
            bloom_bytes: usize::try_from(w.summary_bloom_bytes).unwrap_or(usize::MAX),
        };
        let encode = Arc::new(|f: &DynamicFilter| Ok(encode_dynamic_filter(f)?.encode_to_vec()));
        writer = writer.with_summary(KeySummarySpec { config, encode })?;
    }
    if let Some(f) = &w.drop_filter {
        let filter = decode_dynamic_filter(f)?;
        let types = writer.keys().iter().map(|k| k.data_type(&writer.input_schema())).collect::<Result<Vec<_>>>()?;
        // The join's two sides have keys of one type each (Spark's analysis casts them); a filter over other
        // types only ever saves work, so it is left out rather than failing the task.
        if filter.key_types() != types.as_slice() {
            log::warn!("dynamic filter over {:?} for shuffle keys of types {types:?}: not applied", filter.key_types());
            return Ok(writer);
        }
        writer = writer.with_drop_filter(DropFilterSpec {
            filter: Arc::new(filter),
            sample_rows: usize::try_from(w.drop_sample_rows).unwrap_or(usize::MAX),
            min_pruned_fraction: w.drop_min_pruned_fraction,
        })?;
    }
    Ok(writer)
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
