//! Proto `Window` → [`PrefixWindowExec`]: keys (float keys normalized as Spark's `NormalizeNaNAndZero`),
//! functions, frames, Spark's result types and eval modes, decoded into the operator's [`WindowConfig`]; the
//! operator itself decides what it evaluates exactly as Spark does.
use std::sync::Arc;

use arrow::datatypes::Schema;
use datafusion_common::Result;
use datafusion_physical_plan::ExecutionPlan;
use ember_proto as pb;

use super::expr::{create_expr, eval_mode};
use super::types::required_type;
use crate::error::plan_error;
use crate::expressions::NormalizeFloatExpr;
use crate::operators::prefix_window::{Bound, Frame, FrameUnit, Function, WindowConfig, WindowExprDef};
use crate::operators::PrefixWindowExec;

pub fn create_prefix_window(w: &pb::PrefixWindow, input: Arc<dyn ExecutionPlan>) -> Result<Arc<dyn ExecutionPlan>> {
    let schema = input.schema();
    let normalized = |e: &pb::Expr| NormalizeFloatExpr::wrap_if_float(create_expr(e, &schema)?, &schema);
    let partition_by = w.partition_by.iter().map(normalized).collect::<Result<Vec<_>>>()?;
    let order_by = w
        .order_by
        .iter()
        .map(|o| normalized(o.child.as_ref().ok_or_else(|| plan_error("window order key without expression"))?))
        .collect::<Result<Vec<_>>>()?;
    let exprs = w.exprs.iter().map(|x| window_expr(x, &schema)).collect::<Result<Vec<_>>>()?;
    let config = WindowConfig {
        partition_by,
        order_by,
        exprs,
        prefix_enabled: w.prefix_enabled,
        segment_rows: usize::try_from(w.segment_rows).unwrap_or(usize::MAX),
    };
    Ok(Arc::new(PrefixWindowExec::try_new(config, input)?))
}

fn window_expr(x: &pb::WindowExpr, schema: &Schema) -> Result<WindowExprDef> {
    let function = match pb::WindowFunction::try_from(x.function)
        .map_err(|_| plan_error(format!("unknown window function {}", x.function)))?
    {
        pb::WindowFunction::RowNumber => Function::RowNumber,
        pb::WindowFunction::Rank => Function::Rank,
        pb::WindowFunction::DenseRank => Function::DenseRank,
        pb::WindowFunction::Lag => Function::Lag,
        pb::WindowFunction::Lead => Function::Lead,
        pb::WindowFunction::Sum => Function::Sum,
        pb::WindowFunction::Count => Function::Count,
        pb::WindowFunction::Avg => Function::Avg,
        pb::WindowFunction::Min => Function::Min,
        pb::WindowFunction::Max => Function::Max,
    };
    let mode = eval_mode(x.eval_mode)?;
    let args = x.args.iter().map(|a| create_expr(a, schema)).collect::<Result<Vec<_>>>()?;
    let result_type = required_type(&x.result_type)?;
    // Only aggregates read their frame; ranking and offset functions have fixed ones.
    let aggregate = matches!(function, Function::Sum | Function::Count | Function::Avg | Function::Min | Function::Max);
    let frame = if aggregate { x.frame.as_ref().map(frame).transpose()? } else { None };
    let default = x.default_value.as_ref().map(|d| create_expr(d, schema)).transpose()?;
    Ok(WindowExprDef {
        name: x.name.clone(),
        function,
        args,
        offset: x.offset,
        default,
        frame,
        result_type,
        mode,
        ignore_nulls: x.ignore_nulls,
    })
}

fn frame(f: &pb::WindowFrame) -> Result<Frame> {
    let unit = match pb::FrameType::try_from(f.frame_type).map_err(|_| plan_error("unknown frame type"))? {
        pb::FrameType::Rows => FrameUnit::Rows,
        pb::FrameType::Range => FrameUnit::Range,
    };
    Ok(Frame { unit, lower: bound(&f.lower)?, upper: bound(&f.upper)? })
}

fn bound(b: &Option<pb::FrameBound>) -> Result<Bound> {
    let b = b.as_ref().ok_or_else(|| plan_error("window frame without a bound"))?;
    let kind = pb::FrameBoundKind::try_from(b.kind).map_err(|_| plan_error("unknown frame bound"))?;
    Ok(match kind {
        pb::FrameBoundKind::UnboundedPreceding => Bound::UnboundedPreceding,
        pb::FrameBoundKind::Preceding => Bound::Preceding(b.offset),
        pb::FrameBoundKind::CurrentRow => Bound::CurrentRow,
        pb::FrameBoundKind::Following => Bound::Following(b.offset),
        pb::FrameBoundKind::UnboundedFollowing => Bound::UnboundedFollowing,
    })
}
