//! Proto `HashJoin` → [`SpillingHashJoinExec`]: keys over each child's columns, the residual condition over
//! left ++ right columns, Spark's join type and build side, and the operator's knobs.
use std::collections::HashMap;
use std::sync::Arc;

use arrow::datatypes::Schema;
use datafusion_common::{JoinSide, JoinType, NullEquality, Result};
use datafusion_physical_plan::joins::utils::{ColumnIndex, JoinFilter};
use datafusion_physical_plan::ExecutionPlan;
use ember_proto as pb;

use super::expr::create_expr;
use crate::error::plan_error;
use crate::expressions::RowPipeline;
use crate::operators::dynamic_filter::DynamicFilterConfig;
use crate::operators::dynamic_filter::{exact_key_type, SCAN_PRUNING_VALUES};
use crate::operators::parquet_scan::DynamicScanFilters;
use crate::operators::spilling_hash_join::{
    prunes_probe, JoinDynamicFilterConfig, ProbeScan, SharedBuild, SpillingHashJoinConfig, SpillingHashJoinExec,
};
use crate::operators::InputExec;
use datafusion_physical_expr::expressions::Column;
use datafusion_physical_expr::PhysicalExprRef;
use datafusion_physical_plan::filter::FilterExec;
use datafusion_physical_plan::projection::ProjectionExec;

/// `pipelines`: the row pipelines of the left and the right rows, which each side's keys end
/// (`expressions::first_error`).
pub fn create_spilling_hash_join(
    hj: &pb::SpillingHashJoin,
    left: Arc<dyn ExecutionPlan>,
    right: Arc<dyn ExecutionPlan>,
    shared: Option<SharedBuild>,
    scans: &HashMap<usize, ScanSlot>,
    pipelines: &[Arc<RowPipeline>; 2],
) -> Result<Arc<dyn ExecutionPlan>> {
    let (ls, rs) = (left.schema(), right.schema());
    if hj.left_keys.len() != hj.right_keys.len() {
        return Err(plan_error("hash join needs as many left keys as right keys"));
    }
    let nested_loop = hj.left_keys.is_empty();
    let on = if nested_loop {
        // A nested-loop join (Spark's BroadcastNestedLoopJoinExec): one constant key on both sides, so every
        // build row matches every probe row and the condition alone decides; the spilling join's hot-key path
        // bounds its memory as for any single hot key.
        let zero = || -> Arc<dyn datafusion_physical_expr::PhysicalExpr> {
            Arc::new(datafusion_physical_expr::expressions::Literal::new(datafusion_common::ScalarValue::Int32(Some(
                0,
            ))))
        };
        vec![(zero(), zero())]
    } else {
        let stages = [pipelines[0].evaluate_stage(), pipelines[1].evaluate_stage()];
        let key = |side: usize, e: &pb::Expr, schema: &Schema| {
            Ok::<_, datafusion_common::DataFusionError>(pipelines[side].evaluate(stages[side], create_expr(e, schema)?))
        };
        hj.left_keys
            .iter()
            .zip(&hj.right_keys)
            .map(|(l, r)| Ok((key(0, l, &ls)?, key(1, r, &rs)?)))
            .collect::<Result<Vec<_>>>()?
    };
    let null_equality = if nested_loop {
        NullEquality::NullEqualsNothing
    } else if hj.null_safe.iter().all(|&s| s) && hj.null_safe.len() == on.len() {
        NullEquality::NullEqualsNull
    } else if hj.null_safe.iter().all(|&s| !s) {
        NullEquality::NullEqualsNothing
    } else {
        return Err(plan_error("hash join: null-safe (<=>) and ordinary keys mixed"));
    };
    let join_type = join_type(hj.join_type)?;
    let filter = match &hj.condition {
        None => None,
        Some(c) => {
            let fields = ls.fields().iter().chain(rs.fields().iter()).cloned().collect::<Vec<_>>();
            let joined = Arc::new(Schema::new(fields));
            // Evaluated over the joined rows, in the order the join makes them.
            let pipeline = RowPipeline::new();
            let stage = pipeline.evaluate_stage();
            let expr = pipeline.evaluate(stage, create_expr(c, &joined)?);
            let column_indices = (0..ls.fields().len())
                .map(|index| ColumnIndex { index, side: JoinSide::Left })
                .chain((0..rs.fields().len()).map(|index| ColumnIndex { index, side: JoinSide::Right }))
                .collect();
            Some(JoinFilter::new(expr, column_indices, joined))
        }
    };
    let build_right = hj.build_side == pb::BuildSide::Right as i32;
    // The scans of this task that the build side's keys prune: where dropping unmatched probe rows is exact.
    let probe_type = if build_right { join_type.swap() } else { join_type };
    let probe_scans = if hj.prune_probe_scans && !nested_loop && prunes_probe(probe_type, null_equality) {
        let (probe, keys): (_, Vec<_>) = if build_right {
            (&left, on.iter().map(|(l, _)| l.clone()).collect())
        } else {
            (&right, on.iter().map(|(_, r)| r.clone()).collect())
        };
        probe_scans(probe, &keys, scans)
    } else {
        vec![]
    };
    let defaults = SpillingHashJoinConfig::default();
    let d = JoinDynamicFilterConfig::default();
    let config = SpillingHashJoinConfig {
        max_build_buffer_bytes: hj.max_build_buffer_bytes as usize,
        bucket_bits: if hj.bucket_bits == 0 { defaults.bucket_bits } else { hj.bucket_bits },
        spill_enabled: !hj.spill_disabled,
        // Build keys that are all one constant prune nothing.
        dynamic_filter: if nested_loop {
            None
        } else if hj.dynamic_filter_enabled {
            Some(JoinDynamicFilterConfig {
                filter_probe: true,
                filter: DynamicFilterConfig {
                    max_set_values: hj.dynamic_filter_max_set_values as usize,
                    bloom_bytes: if hj.dynamic_filter_bloom_bytes == 0 {
                        d.filter.bloom_bytes
                    } else {
                        hj.dynamic_filter_bloom_bytes as usize
                    },
                },
                sample_rows: if hj.dynamic_filter_sample_rows == 0 {
                    d.sample_rows
                } else {
                    hj.dynamic_filter_sample_rows as usize
                },
                min_pruned_fraction: hj.dynamic_filter_min_pruned_fraction,
            })
        } else if !probe_scans.is_empty() {
            // For the scans alone: bounds and the few keys of an IN list, so no bloom filter worth the name.
            Some(JoinDynamicFilterConfig {
                filter_probe: false,
                filter: DynamicFilterConfig { max_set_values: SCAN_PRUNING_VALUES, bloom_bytes: 32 },
                ..d
            })
        } else {
            None
        },
    };
    SpillingHashJoinExec::try_new_with_build_side(
        left,
        right,
        on,
        filter,
        join_type,
        null_equality,
        build_right,
        config,
        shared,
        probe_scans,
    )
}

/// A Parquet scan input of the task, which a join's build side may prune while it runs.
#[derive(Debug, Clone)]
pub struct ScanSlot {
    pub filters: Arc<DynamicScanFilters>,
    /// The scan's data columns (its partition columns follow them and are never pruned this way).
    pub data_columns: usize,
}

/// The scans under `probe` whose column reaches one of `keys` unchanged (through filters, column projections
/// and other joins' outputs): removing a scan row whose key no build row has removes only probe rows the join
/// drops (or makes that key null, which matches nothing).
fn probe_scans(
    probe: &Arc<dyn ExecutionPlan>,
    keys: &[PhysicalExprRef],
    scans: &HashMap<usize, ScanSlot>,
) -> Vec<ProbeScan> {
    let schema = probe.schema();
    if !keys.iter().all(|k| k.data_type(&schema).is_ok_and(|t| exact_key_type(&t))) {
        return vec![];
    }
    let mut out: Vec<(usize, ProbeScan)> = vec![];
    for (k, key) in keys.iter().enumerate() {
        let Some(column) = key.downcast_ref::<Column>() else { continue };
        let Some((input, c)) = scan_column(probe, column.index()) else { continue };
        let Some(slot) = scans.get(&input).filter(|s| c < s.data_columns) else { continue };
        let at = match out.iter().position(|(i, _)| *i == input) {
            Some(at) => at,
            None => {
                slot.filters.subscribe();
                let scan = ProbeScan { filters: slot.filters.clone(), columns: vec![None; keys.len()] };
                out.push((input, scan));
                out.len() - 1
            }
        };
        out[at].1.columns[k] = Some(c);
    }
    out.into_iter().map(|(_, s)| s).collect()
}

/// The input and column that `plan`'s output column `column` is, value for value (or null).
fn scan_column(plan: &Arc<dyn ExecutionPlan>, column: usize) -> Option<(usize, usize)> {
    if let Some(input) = plan.downcast_ref::<InputExec>() {
        return Some((input.index(), column));
    }
    if plan.downcast_ref::<FilterExec>().is_some() {
        return scan_column(plan.children().first()?, column);
    }
    if let Some(p) = plan.downcast_ref::<ProjectionExec>() {
        let c = p.expr().get(column)?.expr.downcast_ref::<Column>()?.index();
        return scan_column(p.input(), c);
    }
    if let Some(j) = plan.downcast_ref::<SpillingHashJoinExec>() {
        let (child, c) = j.column_source(column)?;
        return scan_column(plan.children().get(child)?, c);
    }
    None
}

fn join_type(t: i32) -> Result<JoinType> {
    Ok(match pb::JoinType::try_from(t) {
        Ok(pb::JoinType::Inner) => JoinType::Inner,
        Ok(pb::JoinType::LeftOuter) => JoinType::Left,
        Ok(pb::JoinType::RightOuter) => JoinType::Right,
        Ok(pb::JoinType::FullOuter) => JoinType::Full,
        Ok(pb::JoinType::LeftSemi) => JoinType::LeftSemi,
        Ok(pb::JoinType::LeftAnti) => JoinType::LeftAnti,
        Ok(pb::JoinType::RightSemi) => JoinType::RightSemi,
        Ok(pb::JoinType::RightAnti) => JoinType::RightAnti,
        Ok(pb::JoinType::LeftMark) => JoinType::LeftMark,
        Ok(pb::JoinType::RightMark) => JoinType::RightMark,
        Err(_) => return Err(plan_error(format!("unknown join type {t}"))),
    })
}
