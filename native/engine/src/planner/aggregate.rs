//! Proto `Aggregate` → DataFusion: the HLL-gated [`AdaptiveAggregateExec`] for a grouped partial aggregate, the
//! radix-partitioned [`RadixAggregateExec`] for a grouped partial-merge or final one (when the proto asks for
//! it), DataFusion's `AggregateExec` otherwise, and for FINAL a projection evaluating Spark's result expressions.
//!
//! Intermediate columns are exactly Spark's aggregation buffers (`aggBufferAttributes`, checked against the
//! proto's `intermediate` fields), so a native partial feeds a Spark final and the reverse:
//! - `count`: DataFusion's (`[count: Int64]`, as Spark's);
//! - `sum` / `avg` of non-decimals: Ember's [`crate::expressions::sum_avg`] (Spark's `[sum]` and
//!   `[sum: DOUBLE, count: BIGINT]` buffers, in-order adds, ANSI overflow for BIGINT sums);
//! - `sum` / `avg` of decimals (every eval mode; TRY is LEGACY for them): Ember's
//!   [`crate::expressions::decimal_sum_avg`] (`[sum, isEmpty]` / `[sum, count]`, overflow to NULL checked at
//!   every add when grouped, at the state output of a global partial that goes through an exchange);
//! - `min` / `max`: DataFusion's (`[value]`), except over FLOAT/DOUBLE: Ember's
//!   [`crate::expressions::float_min_max`] (Spark's NaN order, the first of tied -0.0 / 0.0 kept);
//! - `first` / `last`: DataFusion's (`[value, is_set]`, Spark's `[first|last, valueSet]`) with Spark's
//!   ignore-nulls rule.
//!
//! Rejected (the JVM mirrors these in `AggregateSerde` and falls back): `try_sum` / `try_avg` of
//! non-decimals.
use std::sync::Arc;

use arrow::datatypes::{DataType, SchemaRef};
use datafusion_common::{Result, ScalarValue};
use datafusion_expr::AggregateUDF;
use datafusion_functions_aggregate::count::count_udaf;
use datafusion_functions_aggregate::first_last::{first_value_udaf, last_value_udaf};
use datafusion_functions_aggregate::min_max::{max_udaf, min_udaf};
use datafusion_physical_expr::aggregate::{AggregateExprBuilder, AggregateFunctionExpr};
use datafusion_physical_expr::expressions::{CastExpr, Literal};
use datafusion_physical_expr::PhysicalExpr;
use datafusion_physical_plan::aggregates::{AggregateExec, AggregateMode, PhysicalGroupBy};
use datafusion_physical_plan::projection::ProjectionExec;
use datafusion_physical_plan::ExecutionPlan;
use ember_proto as pb;

use super::expr::create_expr;
use super::types::{required_type, to_arrow_schema};
use crate::error::plan_error;
use crate::expressions::decimal_sum_avg::{spark_decimal_sum_avg, DecimalSumAvgSpec, SparkDecimalSumAvg};
use crate::expressions::float_min_max::spark_float_min_max;
use crate::expressions::sum_avg::{spark_avg, spark_sum};
use crate::expressions::RowPipeline;
use crate::operators::aggregate::adaptive::{AdaptiveAggregateExec, GateConfig};
use crate::operators::aggregate::radix::{RadixAggregateExec, RadixConfig};

/// `pipeline`: the row pipeline of the input's rows, which a partial aggregate's keys, FILTERs and arguments
/// end (Spark evaluates them for each row in that order: `expressions::first_error`).
pub fn create_aggregate(
    agg: &pb::Aggregate,
    input: Arc<dyn ExecutionPlan>,
    pipeline: &Arc<RowPipeline>,
) -> Result<Arc<dyn ExecutionPlan>> {
    let mode = pb::AggregateMode::try_from(agg.mode).map_err(|_| plan_error("unknown aggregate mode"))?;
    let input_schema = input.schema();
    if agg.grouping.len() != agg.grouping_names.len() {
        return Err(plan_error("aggregate needs one name per grouping expression"));
    }
    // A merging aggregate's keys are columns of the partial's output, its functions' arguments not evaluated.
    let stage = (mode == pb::AggregateMode::Partial).then(|| (pipeline, pipeline.evaluate_stage()));
    let row_ordered = |e: Arc<dyn PhysicalExpr>| match stage {
        Some((pipeline, stage)) => pipeline.evaluate(stage, e),
        None => e,
    };
    let group_by = agg
        .grouping
        .iter()
        .zip(&agg.grouping_names)
        .map(|(e, n)| Ok((row_ordered(create_expr(e, &input_schema)?), n.clone())))
        .collect::<Result<Vec<_>>>()?;
    // The schema the functions' arguments refer to.
    let raw_schema: SchemaRef = match mode {
        pb::AggregateMode::Partial => input_schema.clone(),
        pb::AggregateMode::PartialMerge | pb::AggregateMode::Final => Arc::new(to_arrow_schema(
            agg.raw_input_schema.as_ref().ok_or_else(|| plan_error("merging aggregate without raw_input_schema"))?,
        )?),
        pb::AggregateMode::Unspecified => return Err(plan_error("aggregate mode not set")),
    };
    // Spark checks a grouped aggregate's decimal sums at every add (its buffers live in `UnsafeRow`s), a global
    // aggregate's only in its output (see `decimal_sum_avg`).
    let grouped = !group_by.is_empty();
    // Each function's FILTER, then its arguments, in Spark's order.
    let mut functions = Vec::with_capacity(agg.functions.len());
    let filters = agg
        .functions
        .iter()
        .map(|f| {
            let filter = filter_expr(f, mode, &raw_schema)?.map(row_ordered);
            functions.push(create_function(f, &raw_schema, grouped, &row_ordered)?);
            Ok(filter)
        })
        .collect::<Result<Vec<_>>>()?;
    let df_mode = match mode {
        pb::AggregateMode::Partial => {
            if !group_by.is_empty() {
                let config = gate_config(agg.adaptive.as_ref());
                return Ok(Arc::new(
                    AdaptiveAggregateExec::try_new(input, group_by, functions, config)?.with_filters(filters)?,
                ));
            }
            AggregateMode::Partial
        }
        pb::AggregateMode::PartialMerge => AggregateMode::PartialReduce,
        pb::AggregateMode::Final => AggregateMode::Final,
        pb::AggregateMode::Unspecified => unreachable!(),
    };
    let input = if mode != pb::AggregateMode::Partial && !grouped { unchecked_global_partial(input)? } else { input };
    let radix = match agg.radix.as_ref() {
        Some(r) if grouped => RadixAggregateExec::try_new(
            df_mode,
            Arc::clone(&input),
            group_by.clone(),
            functions.clone(),
            Arc::clone(&raw_schema),
            radix_config(r),
        )
        .ok(),
        _ => None,
    };
    let aggregate: Arc<dyn ExecutionPlan> = match radix {
        Some(r) => Arc::new(r),
        // Not laid out as keys then states (never for Spark's plans): DataFusion's own merge.
        None => Arc::new(AggregateExec::try_new(
            df_mode,
            PhysicalGroupBy::new_single(group_by),
            functions.clone(),
            filters,
            input,
            raw_schema,
        )?),
    };
    if mode != pb::AggregateMode::Final || agg.result_exprs.is_empty() {
        return Ok(aggregate);
    }
    if agg.result_exprs.len() != agg.result_names.len() {
        return Err(plan_error("aggregate needs one name per result expression"));
    }
    let schema = aggregate.schema();
    let exprs = agg.result_exprs.iter().map(|e| create_expr(e, &schema)).collect::<Result<Vec<_>>>()?;
    // Spark evaluates the result expressions one group at a time.
    let exprs = RowPipeline::new().project(exprs).into_iter().zip(agg.result_names.iter().cloned());
    Ok(Arc::new(ProjectionExec::try_new(exprs, aggregate)?))
}

/// A global merging aggregate right over its global partial (no exchange between them, as Spark plans a global
/// aggregate over a single-partition input): Spark runs both in one generated-code stage, which hands the
/// partial's decimal sums on without the `UnsafeRow` check, so the partial's must not check its state either.
fn unchecked_global_partial(input: Arc<dyn ExecutionPlan>) -> Result<Arc<dyn ExecutionPlan>> {
    let Some(p) = input.downcast_ref::<AggregateExec>() else { return Ok(input) };
    if *p.mode() != AggregateMode::Partial || !p.group_expr().is_empty() {
        return Ok(input);
    }
    let mut changed = false;
    let functions = p
        .aggr_expr()
        .iter()
        .map(|f| match f.fun().inner().downcast_ref::<SparkDecimalSumAvg>() {
            Some(d) => {
                changed = true;
                let udaf = spark_decimal_sum_avg(DecimalSumAvgSpec { check_state: false, ..d.spec });
                Ok(Arc::new(
                    AggregateExprBuilder::new(udaf, f.expressions())
                        .schema(p.input_schema())
                        .alias(f.name().to_string())
                        .build()?,
                ))
            }
            None => Ok(Arc::clone(f)),
        })
        .collect::<Result<Vec<_>>>()?;
    if !changed {
        return Ok(input);
    }
    Ok(Arc::new(AggregateExec::try_new(
        AggregateMode::Partial,
        p.group_expr().clone(),
        functions,
        p.filter_expr().to_vec(),
        Arc::clone(p.input()),
        p.input_schema(),
    )?))
}

/// The radix merge's knobs from the proto (0: the default).
pub fn radix_config(r: &pb::RadixMerge) -> RadixConfig {
    let d = RadixConfig::default();
    let fanout_bits = if r.fanout_bits == 0 { d.fanout_bits } else { r.fanout_bits.min(12) };
    RadixConfig {
        min_groups: if r.min_groups == 0 { d.min_groups } else { r.min_groups as usize },
        fanout_bits,
        // 8k rows per partition and pass.
        flush_rows: 8192 << fanout_bits,
        first_seen_order: r.first_seen_order,
    }
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
            fixed_probe: a.fixed_probe,
        },
    }
}

/// A function's FILTER, over the rows its arguments read. Spark evaluates a filtered function's arguments only
/// on the rows its FILTER keeps; the accumulators get them evaluated on every row, so an argument that could
/// raise (ANSI) would fail where Spark does not. (The widening casts `create_function` adds for sum and avg
/// cannot.)
fn filter_expr(
    f: &pb::AggregateFunction,
    mode: pb::AggregateMode,
    raw_schema: &SchemaRef,
) -> Result<Option<Arc<dyn PhysicalExpr>>> {
    match &f.filter {
        None => Ok(None),
        Some(_) if mode != pb::AggregateMode::Partial => {
            Err(plan_error("an aggregate FILTER outside a partial aggregate"))
        }
        Some(e) => {
            let e = create_expr(e, raw_schema)?;
            if e.data_type(raw_schema)? != DataType::Boolean {
                return Err(plan_error("an aggregate FILTER that is not boolean"));
            }
            for a in &f.args {
                if !crate::expressions::logical::infallible(&create_expr(a, raw_schema)?) {
                    return Err(plan_error(format!(
                        "aggregate {} with a FILTER over an argument that can raise an error",
                        f.name
                    )));
                }
            }
            Ok(Some(e))
        }
    }
}

/// `row_ordered` wraps each argument as Spark's row order asks (see `create_aggregate`).
fn create_function(
    f: &pb::AggregateFunction,
    schema: &SchemaRef,
    grouped: bool,
    row_ordered: &dyn Fn(Arc<dyn PhysicalExpr>) -> Arc<dyn PhysicalExpr>,
) -> Result<Arc<AggregateFunctionExpr>> {
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
        K::Sum | K::Avg
            if matches!(args.first().map(|a| a.data_type(schema)).transpose()?, Some(DataType::Decimal128(..))) =>
        {
            expect_args(1)?;
            decimal_sum_avg(f, kind == K::Avg, grouped)?
        }
        K::Sum => {
            expect_args(1)?;
            let ansi = spark_eval_mode(f)?;
            // Spark sums integral types as BIGINT and floating types as DOUBLE.
            let arg = args.remove(0);
            let t = arg.data_type(schema)?;
            let to = if t.is_integer() {
                DataType::Int64
            } else if t.is_floating() {
                DataType::Float64
            } else {
                return Err(plan_error(format!("sum of {t} is not supported natively")));
            };
            args = vec![cast_to(arg, &t, to)];
            spark_sum(ansi)
        }
        K::Min | K::Max => {
            expect_args(1)?;
            if args[0].data_type(schema)?.is_floating() {
                spark_float_min_max(kind == K::Max)
            } else if kind == K::Min {
                min_udaf()
            } else {
                max_udaf()
            }
        }
        K::Avg => {
            expect_args(1)?;
            spark_eval_mode(f)?;
            // Spark averages every non-decimal type in DOUBLE.
            let arg = args.remove(0);
            let t = arg.data_type(schema)?;
            if !(t.is_integer() || t.is_floating()) {
                return Err(plan_error(format!("avg of {t} is not supported natively")));
            }
            args = vec![cast_to(arg, &t, DataType::Float64)];
            spark_avg()
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
    let args = args.into_iter().map(row_ordered).collect();
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
    // The buffer must be Spark's, column for column (names aside).
    let state = expr.state_fields()?;
    let state_types: Vec<DataType> = state.iter().map(|f| f.data_type().clone()).collect();
    let spark_types = f.intermediate.iter().map(|field| required_type(&field.r#type)).collect::<Result<Vec<_>>>()?;
    if state_types != spark_types {
        return Err(plan_error(format!(
            "{kind:?}: native aggregation buffer {state_types:?} is not Spark's {spark_types:?}"
        )));
    }
    Ok(Arc::new(expr))
}

/// Spark's decimal `sum` / `avg`: the buffer's and the result's decimal types come from the proto.
fn decimal_sum_avg(f: &pb::AggregateFunction, avg: bool, grouped: bool) -> Result<Arc<AggregateUDF>> {
    let decimal = |t: DataType, what: &str| match t {
        DataType::Decimal128(p, s) => Ok((p, s)),
        t => Err(plan_error(format!("decimal {what} is {t}"))),
    };
    let (sum_precision, scale) = decimal(
        required_type(&f.intermediate.first().ok_or_else(|| plan_error("decimal sum without a buffer"))?.r#type)?,
        "sum buffer",
    )?;
    let (result_precision, result_scale) = decimal(required_type(&f.result_type)?, "result")?;
    // `try_sum` / `try_avg` of decimals are LEGACY: overflow is NULL (Spark's TRY adds no TryEval for them).
    let ansi = pb::EvalMode::try_from(f.eval_mode).map_err(|_| plan_error("unknown eval mode"))? == pb::EvalMode::Ansi;
    Ok(spark_decimal_sum_avg(DecimalSumAvgSpec {
        avg,
        ansi,
        bounded: grouped,
        check_state: true,
        sum_precision,
        scale,
        result_precision,
        result_scale,
        query_context: f.query_context,
    }))
}

/// ANSI (true) or LEGACY (false); TRY (`try_sum`, `try_avg`) is not supported natively.
fn spark_eval_mode(f: &pb::AggregateFunction) -> Result<bool> {
    match pb::EvalMode::try_from(f.eval_mode).map_err(|_| plan_error("unknown eval mode"))? {
        pb::EvalMode::Legacy => Ok(false),
        pb::EvalMode::Ansi => Ok(true),
        pb::EvalMode::Try => Err(plan_error("TRY aggregates are not supported natively")),
    }
}

fn cast_to(e: Arc<dyn PhysicalExpr>, from: &DataType, to: DataType) -> Arc<dyn PhysicalExpr> {
    if *from == to {
        e
    } else {
        Arc::new(CastExpr::new(e, to, None))
    }
}
