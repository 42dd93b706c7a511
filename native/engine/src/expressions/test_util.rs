//! Expressions for tests: one that fails on the rows where it is evaluated and a boolean column is true, to
//! prove that lazy expressions do not evaluate their arguments where Spark would not.
use std::fmt;
use std::sync::Arc;

use arrow::array::{new_null_array, Array, BooleanArray};
use arrow::datatypes::{DataType, Schema};
use arrow::record_batch::RecordBatch;
use datafusion_common::Result;
use datafusion_expr::ColumnarValue;
use datafusion_physical_expr::PhysicalExpr;

use crate::error::SparkError;

/// Fails with DIVIDE_BY_ZERO if column `index` (boolean) is true in any evaluated row; else returns the
/// negation of that column (`new`) or NULLs of a given type (`nulls`, for arguments of non-boolean expressions).
#[derive(Debug, Hash, PartialEq, Eq)]
pub struct FailOnTrue {
    index: usize,
    nulls_of: Option<DataType>,
}

impl FailOnTrue {
    pub fn new(index: usize) -> Self {
        Self { index, nulls_of: None }
    }

    pub fn nulls(index: usize, data_type: DataType) -> Self {
        Self { index, nulls_of: Some(data_type) }
    }
}

impl fmt::Display for FailOnTrue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "fail_on_true(#{})", self.index)
    }
}

impl PhysicalExpr for FailOnTrue {
    fn data_type(&self, _input_schema: &Schema) -> Result<DataType> {
        Ok(self.nulls_of.clone().unwrap_or(DataType::Boolean))
    }
    fn nullable(&self, _input_schema: &Schema) -> Result<bool> {
        Ok(true)
    }
    fn evaluate(&self, batch: &RecordBatch) -> Result<ColumnarValue> {
        let col = batch.column(self.index).as_any().downcast_ref::<BooleanArray>().unwrap();
        if col.iter().any(|v| v == Some(true)) {
            return Err(SparkError::divide_by_zero().into_datafusion());
        }
        if let Some(t) = &self.nulls_of {
            return Ok(ColumnarValue::Array(new_null_array(t, batch.num_rows())));
        }
        Ok(ColumnarValue::Array(Arc::new(arrow::compute::not(col)?)))
    }
    fn children(&self) -> Vec<&Arc<dyn PhysicalExpr>> {
        vec![]
    }
    fn with_new_children(self: Arc<Self>, _c: Vec<Arc<dyn PhysicalExpr>>) -> Result<Arc<dyn PhysicalExpr>> {
        Ok(self)
    }
    fn fmt_sql(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
