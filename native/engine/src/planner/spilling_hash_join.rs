//! Proto `HashJoin` → [`SpillingHashJoinExec`]: keys over each child's columns, the residual condition over
//! left ++ right columns, Spark's join type and build side, and the operator's knobs.
use std::sync::Arc;

use arrow::datatypes::Schema;
use datafusion_common::{JoinSide, JoinType, NullEquality, Result};
use datafusion_physical_plan::joins::utils::{ColumnIndex, JoinFilter};
use datafusion_physical_plan::ExecutionPlan;
use ember_proto as pb;

use super::expr::create_expr;
use crate::error::plan_error;
use crate::operators::dynamic_filter::DynamicFilterConfig;
use crate::operators::spilling_hash_join::{
    JoinDynamicFilterConfig, SharedBuild, SpillingHashJoinConfig, SpillingHashJoinExec,
};

pub fn create_spilling_hash_join(
    hj: &pb::SpillingHashJoin,
    left: Arc<dyn ExecutionPlan>,
    right: Arc<dyn ExecutionPlan>,
    shared: Option<SharedBuild>,
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
        hj.left_keys
            .iter()
            .zip(&hj.right_keys)
            .map(|(l, r)| Ok((create_expr(l, &ls)?, create_expr(r, &rs)?)))
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
            let expr = create_expr(c, &joined)?;
            let column_indices = (0..ls.fields().len())
                .map(|index| ColumnIndex { index, side: JoinSide::Left })
                .chain((0..rs.fields().len()).map(|index| ColumnIndex { index, side: JoinSide::Right }))
                .collect();
            Some(JoinFilter::new(expr, column_indices, joined))
        }
    };
    let defaults = SpillingHashJoinConfig::default();
    let config = SpillingHashJoinConfig {
        max_build_buffer_bytes: hj.max_build_buffer_bytes as usize,
        bucket_bits: if hj.bucket_bits == 0 { defaults.bucket_bits } else { hj.bucket_bits },
        spill_enabled: !hj.spill_disabled,
        // Build keys that are all one constant prune nothing.
        dynamic_filter: (hj.dynamic_filter_enabled && !nested_loop).then(|| {
            let d = JoinDynamicFilterConfig::default();
            JoinDynamicFilterConfig {
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
            }
        }),
    };
    let build_right = hj.build_side == pb::BuildSide::Right as i32;
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
    )
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
