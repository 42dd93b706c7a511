//! Spark's CAST among boolean, integral, floating, decimal, string, date and timestamp, in LEGACY, ANSI and
//! TRY modes.
use std::sync::Arc;

use arrow::datatypes::{DataType, Schema};
use datafusion_common::Result;
use datafusion_physical_expr::PhysicalExpr;
use ember_proto as pb;

use crate::error::plan_error;

pub fn create(
    child: Arc<dyn PhysicalExpr>,
    to: DataType,
    _mode: pb::EvalMode,
    _timezone: &str,
    schema: &Schema,
) -> Result<Arc<dyn PhysicalExpr>> {
    let from = child.data_type(schema)?;
    Err(plan_error(format!("cast from {from} to {to} is not implemented natively yet")))
}
