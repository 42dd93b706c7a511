//! Proto `Aggregate` → DataFusion: the HLL-gated [`AdaptiveAggregateExec`] for a grouped partial aggregate,
//! DataFusion's `AggregateExec` otherwise (global partial, partial-merge, final).
//!
//! The functions are DataFusion's (`datafusion-functions-aggregate`) for now. Where they differ from Spark —
//! the Spark half must plan around these until Spark-exact versions replace them:
//! - intermediate layouts: DataFusion's `avg` buffer is (count: UInt64, sum), Spark's (sum, count: Long);
//!   `count` is Int64 in both; `first`/`last` keep (value, is_set) in both orders but DataFusion names and
//!   orders its columns its own way; so a native partial cannot yet feed a Spark final (or the reverse);
//! - `sum` of integers wraps around on overflow (Spark LEGACY also wraps for long, but ANSI raises and TRY gives
//!   NULL: both rejected here); `sum` of decimals: DataFusion's result type is decimal(min(38, p + 10), s) like
//!   Spark's, but it adds the unscaled i128 values with wrap-around and never checks the precision, where
//!   Spark gives NULL (LEGACY) on overflow; Spark's decimal sum buffer also carries an `isEmpty` flag;
//! - `avg` of integers computes in double (as Spark); `avg` of decimals: result decimal(min(38, p + 4),
//!   min(38, s + 4)) in both, but Spark's rounding and overflow-to-NULL differ;
//! - `min`/`max` of doubles: DataFusion orders NaN above everything like Spark, but -0.0 and 0.0 are distinct
//!   values to it (Spark's partial aggregate normalizes them in its grouping keys, not in min/max).
//!
//! A function whose DataFusion result type is not the type Spark resolved is rejected, so the JVM falls back.
use std::sync::Arc;

use arrow::datatypes::{DataType, Schema, SchemaRef};
use datafusion_common::{Result, ScalarValue};
use datafusion_expr::AggregateUDF;
use datafusion_functions_aggregate::average::avg_udaf;
use datafusion_functions_aggregate::count::count_udaf;
use datafusion_functions_aggregate::first_last::{first_value_udaf, last_value_udaf};
use datafusion_functions_aggregate::min_max::{max_udaf, min_udaf};
use datafusion_functions_aggregate::sum::sum_udaf;
use datafusion_physical_expr::aggregate::{AggregateExprBuilder, AggregateFunctionExpr};
use datafusion_physical_expr::expressions::{CastExpr, Literal};
use datafusion_physical_expr::PhysicalExpr;
use datafusion_physical_plan::aggregates::{AggregateExec, AggregateMode, PhysicalGroupBy};
use datafusion_physical_plan::ExecutionPlan;
use ember_proto as pb;

use super::expr::create_expr;
use super::types::{required_type, to_arrow_schema};
use crate::error::plan_error;
use crate::operators::adaptive_aggregate::{AdaptiveAggregateExec, GateConfig};

pub fn create_aggregate(agg: &pb::Aggregate, input: Arc<dyn ExecutionPlan>) -> Result<Arc<dyn ExecutionPlan>> {
    let mode = pb::AggregateMode::try_from(agg.mode).map_err(|_| plan_error("unknown aggregate mode"))?;
    let input_schema = input.schema();
    if agg.grouping.len() != agg.grouping_names.len() {
        return Err(plan_error("aggregate needs one name per grouping expression"));
    }
    let group_by = agg
        .grouping
        .iter()
        .zip(&agg.grouping_names)
        .map(|(e, n)| Ok((create_expr(e, &input_schema)?, n.clone())))
        .collect::<Result<Vec<_>>>()?;
    // The schema the functions' arguments refer to.
    let raw_schema: SchemaRef = match mode {
        pb::AggregateMode::Partial => input_schema.clone(),
        pb::AggregateMode::PartialMerge | pb::AggregateMode::Final => Arc::new(to_arrow_schema(
            agg.raw_input_schema.as_ref().ok_or_else(|| plan_error("merging aggregate without raw_input_schema"))?,
        )?),
        pb::AggregateMode::Unspecified => return Err(plan_error("aggregate mode not set")),
    };
    let functions = agg.functions.iter().map(|f| create_function(f, &raw_schema)).collect::<Result<Vec<_>>>()?;
    let df_mode = match mode {
        pb::AggregateMode::Partial => {
            if !group_by.is_empty() {
                let config = gate_config(agg.adaptive.as_ref());
                return Ok(Arc::new(AdaptiveAggregateExec::try_new(input, group_by, functions, config)?));
            }
            AggregateMode::Partial
        }
        pb::AggregateMode::PartialMerge => AggregateMode::PartialReduce,
        pb::AggregateMode::Final => AggregateMode::Final,
        pb::AggregateMode::Unspecified => unreachable!(),
    };
    let filters = vec![None; functions.len()];
    Ok(Arc::new(AggregateExec::try_new(
        df_mode,
        PhysicalGroupBy::new_single(group_by),
        functions,
        filters,
        input,
        raw_schema,
    )?))
}

/// The gate's knobs from the proto; absent: a plain partial aggregate (gate off).
pub fn gate_config(a: Option<&pb::AdaptivePartial>) -> GateConfig {
    let d = GateConfig::default();
    match a {
        None => GateConfig { enabled: false, ..d },
        Some(a) => GateConfig {
            enabled: a.enabled,
            min_rows: if a.min_rows == 0 { d.min_rows } else { a.min_rows as usize },
            min_state_bytes: a.min_state_bytes as usize,
            min_reduction: a.min_reduction,
            precision: if a.precision == 0 { d.precision } else { a.precision.min(255) as u8 },
            force_pass_through: a.force_pass_through,
        },
    }
}

fn create_function(f: &pb::AggregateFunction, schema: &SchemaRef) -> Result<Arc<AggregateFunctionExpr>> {
    use pb::AggregateFunctionKind as K;
    let kind = K::try_from(f.kind).map_err(|_| plan_error("unknown aggregate function"))?;
    let mut args = f.args.iter().map(|e| create_expr(e, schema)).collect::<Result<Vec<_>>>()?;
    let expect_args = |n: usize| -> Result<()> {
        if f.args.len() == n {
            Ok(())
        } else {
            Err(plan_error(format!("{kind:?} takes {n} argument(s), has {}", f.args.len())))
        }
    };
    let udaf: Arc<AggregateUDF> = match kind {
        K::CountStar => {
            expect_args(0)?;
            args = vec![Arc::new(Literal::new(ScalarValue::Int64(Some(1))))];
            count_udaf()
        }
        K::Count => {
            expect_args(1)?;
            count_udaf()
        }
        K::Sum => {
            expect_args(1)?;
            let mode = pb::EvalMode::try_from(f.eval_mode).map_err(|_| plan_error("unknown eval mode"))?;
            if mode != pb::EvalMode::Legacy {
                return Err(plan_error("sum: only LEGACY overflow behaviour is supported natively for now"));
            }
            // Spark sums integral types as long.
            args = vec![widen_integral(args.remove(0), schema, DataType::Int64)?];
            sum_udaf()
        }
        K::Min => {
            expect_args(1)?;
            min_udaf()
        }
        K::Max => {
            expect_args(1)?;
            max_udaf()
        }
        K::Avg => {
            expect_args(1)?;
            let mode = pb::EvalMode::try_from(f.eval_mode).map_err(|_| plan_error("unknown eval mode"))?;
            if mode != pb::EvalMode::Legacy {
                return Err(plan_error("avg: only LEGACY overflow behaviour is supported natively for now"));
            }
            // Spark averages integral and float input in double.
            let t = args[0].data_type(schema)?;
            if t.is_integer() || t == DataType::Float32 {
                args = vec![Arc::new(CastExpr::new(args.remove(0), DataType::Float64, None))];
            }
            avg_udaf()
        }
        K::First => {
            expect_args(1)?;
            first_value_udaf()
        }
        K::Last => {
            expect_args(1)?;
            last_value_udaf()
        }
        K::Unspecified => return Err(plan_error("aggregate function kind not set")),
    };
    let name = if f.name.is_empty() { format!("{kind:?}").to_lowercase() } else { f.name.clone() };
    let expr = AggregateExprBuilder::new(udaf, args)
        .schema(schema.clone())
        .alias(name)
        .with_ignore_nulls(f.ignore_nulls)
        .build()?;
    let expected = required_type(&f.result_type)?;
    if expr.field().data_type() != &expected {
        return Err(plan_error(format!(
            "{kind:?}: DataFusion's result is {}, Spark's {expected}",
            expr.field().data_type()
        )));
    }
    Ok(Arc::new(expr))
}

fn widen_integral(e: Arc<dyn PhysicalExpr>, schema: &Schema, to: DataType) -> Result<Arc<dyn PhysicalExpr>> {
    let t = e.data_type(schema)?;
    Ok(if t.is_integer() && t != to { Arc::new(CastExpr::new(e, to, None)) } else { e })
}
