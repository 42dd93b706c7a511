//! Spark's arithmetic (`+ - * / % div`, unary minus) in LEGACY, ANSI and TRY modes.
use std::sync::Arc;

use arrow::datatypes::{DataType, Schema};
use datafusion_common::Result;
use datafusion_physical_expr::PhysicalExpr;
use ember_proto as pb;

use crate::error::plan_error;

pub fn create(
    op: pb::ArithOp,
    _left: Arc<dyn PhysicalExpr>,
    _right: Arc<dyn PhysicalExpr>,
    _result_type: DataType,
    _mode: pb::EvalMode,
    _schema: &Schema,
) -> Result<Arc<dyn PhysicalExpr>> {
    Err(plan_error(format!("arithmetic {op:?} is not implemented natively yet")))
}

pub fn create_negate(
    _child: Arc<dyn PhysicalExpr>,
    _mode: pb::EvalMode,
    _schema: &Schema,
) -> Result<Arc<dyn PhysicalExpr>> {
    Err(plan_error("unary minus is not implemented natively yet"))
}
