//! Float keys as Spark compares them: `-0.0` equals `0.0` and every NaN equals every other NaN and sorts above
//! all numbers. Arrow's kernels use IEEE total order (`-0.0 < 0.0`, negative NaNs first), so float operands of
//! comparisons, IN lists and sort keys are normalized (`-0.0` → `0.0`, any NaN → the canonical NaN) first.
use std::fmt;
use std::sync::Arc;

use arrow::array::{Array, Float32Array, Float64Array};
use arrow::datatypes::{DataType, Schema};
use arrow::record_batch::RecordBatch;
use datafusion_common::{internal_err, Result, ScalarValue};
use datafusion_expr::ColumnarValue;
use datafusion_physical_expr::PhysicalExpr;

#[derive(Debug, Eq)]
pub struct NormalizeFloatExpr {
    child: Arc<dyn PhysicalExpr>,
}

impl PartialEq for NormalizeFloatExpr {
    fn eq(&self, other: &Self) -> bool {
        self.child.eq(&other.child)
    }
}

impl std::hash::Hash for NormalizeFloatExpr {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.child.hash(state);
    }
}

impl NormalizeFloatExpr {
    pub fn new(child: Arc<dyn PhysicalExpr>) -> Self {
        Self { child }
    }

    /// Wraps `expr` when its type is FLOAT or DOUBLE; returns it unchanged otherwise.
    pub fn wrap_if_float(expr: Arc<dyn PhysicalExpr>, schema: &Schema) -> Result<Arc<dyn PhysicalExpr>> {
        Ok(match expr.data_type(schema)? {
            DataType::Float32 | DataType::Float64 => Arc::new(Self::new(expr)),
            _ => expr,
        })
    }
}

/// A double as Spark compares it: any NaN as the canonical NaN, -0.0 as 0.0.
#[inline]
pub(crate) fn norm64(v: f64) -> f64 {
    if v.is_nan() {
        f64::NAN
    } else {
        v + 0.0 // -0.0 + 0.0 == +0.0
    }
}

#[inline]
fn norm32(v: f32) -> f32 {
    if v.is_nan() {
        f32::NAN
    } else {
        v + 0.0
    }
}

impl fmt::Display for NormalizeFloatExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "normalize_float({})", self.child)
    }
}

impl PhysicalExpr for NormalizeFloatExpr {
    fn data_type(&self, input_schema: &Schema) -> Result<DataType> {
        self.child.data_type(input_schema)
    }

    fn nullable(&self, input_schema: &Schema) -> Result<bool> {
        self.child.nullable(input_schema)
    }

    fn evaluate(&self, batch: &RecordBatch) -> Result<ColumnarValue> {
        Ok(match self.child.evaluate(batch)? {
            ColumnarValue::Scalar(ScalarValue::Float64(v)) => {
                ColumnarValue::Scalar(ScalarValue::Float64(v.map(norm64)))
            }
            ColumnarValue::Scalar(ScalarValue::Float32(v)) => {
                ColumnarValue::Scalar(ScalarValue::Float32(v.map(norm32)))
            }
            ColumnarValue::Array(a) => match a.data_type() {
                DataType::Float64 => {
                    let a = a.as_any().downcast_ref::<Float64Array>().unwrap();
                    ColumnarValue::Array(Arc::new(a.unary::<_, arrow::datatypes::Float64Type>(norm64)))
                }
                DataType::Float32 => {
                    let a = a.as_any().downcast_ref::<Float32Array>().unwrap();
                    ColumnarValue::Array(Arc::new(a.unary::<_, arrow::datatypes::Float32Type>(norm32)))
                }
                other => return internal_err!("normalize_float over {other}"),
            },
            other => return internal_err!("normalize_float over {other:?}"),
        })
    }

    fn children(&self) -> Vec<&Arc<dyn PhysicalExpr>> {
        vec![&self.child]
    }

    fn with_new_children(self: Arc<Self>, children: Vec<Arc<dyn PhysicalExpr>>) -> Result<Arc<dyn PhysicalExpr>> {
        Ok(Arc::new(Self::new(Arc::clone(&children[0]))))
    }

    fn fmt_sql(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_and_nan_are_canonical() {
        assert_eq!(norm64(-0.0).to_bits(), 0.0f64.to_bits());
        assert_eq!(norm64(-f64::NAN).to_bits(), f64::NAN.to_bits());
        assert_eq!(norm32(-0.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(norm64(-1.5), -1.5);
    }
}
