//! The two expressions Spark's `DecimalAggregates` rule wraps around `sum` and `avg` of small decimals
//! (`sum` of precision ≤ 8, `avg` of precision ≤ 11): the aggregate runs over the unscaled `long`s, and the sum is
//! made a decimal again afterwards.
//! - `UnscaledValue(x)`: a DECIMAL of precision ≤ 18 → its unscaled value as a BIGINT.
//! - `MakeDecimal(x, p, s)`: a BIGINT unscaled value → DECIMAL(p, s), as Spark's `Decimal.setOrNull`: with
//!   p ≤ 18 a value of more than p digits does not fit (any long fits p ≥ 19); then NULL (`nullOnOverflow`, ANSI off) or, as `Decimal.set`
//!   throws, `NUMERIC_VALUE_OUT_OF_RANGE.WITH_SUGGESTION` whose `value` is the fresh `Decimal` Spark was filling:
//!   `0`.
use std::fmt;
use std::sync::Arc;

use arrow::array::{Array, AsArray, Decimal128Array, Int64Array};
use arrow::datatypes::{DataType, Decimal128Type, Int64Type, Schema};
use arrow::record_batch::RecordBatch;
use datafusion_common::{internal_err, Result, ScalarValue};
use datafusion_expr::ColumnarValue;
use datafusion_physical_expr::PhysicalExpr;

use crate::error::SparkError;

#[derive(Debug, Eq)]
pub struct UnscaledValueExpr {
    child: Arc<dyn PhysicalExpr>,
}

impl PartialEq for UnscaledValueExpr {
    fn eq(&self, other: &Self) -> bool {
        self.child.eq(&other.child)
    }
}

impl std::hash::Hash for UnscaledValueExpr {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.child.hash(state);
    }
}

impl UnscaledValueExpr {
    pub fn new(child: Arc<dyn PhysicalExpr>) -> Self {
        Self { child }
    }
}

impl fmt::Display for UnscaledValueExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unscaled_value({})", self.child)
    }
}

impl PhysicalExpr for UnscaledValueExpr {
    fn data_type(&self, _input_schema: &Schema) -> Result<DataType> {
        Ok(DataType::Int64)
    }

    fn nullable(&self, input_schema: &Schema) -> Result<bool> {
        self.child.nullable(input_schema)
    }

    fn evaluate(&self, batch: &RecordBatch) -> Result<ColumnarValue> {
        // Precision ≤ 18 (checked when planned): every unscaled value fits a long.
        Ok(match self.child.evaluate(batch)? {
            ColumnarValue::Scalar(ScalarValue::Decimal128(v, _, _)) => {
                ColumnarValue::Scalar(ScalarValue::Int64(v.map(|v| v as i64)))
            }
            ColumnarValue::Array(a) if matches!(a.data_type(), DataType::Decimal128(_, _)) => {
                let a = a.as_primitive::<Decimal128Type>();
                ColumnarValue::Array(Arc::new(a.unary::<_, Int64Type>(|v| v as i64)))
            }
            other => return internal_err!("unscaled_value over {other:?}"),
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

#[derive(Debug, Eq)]
pub struct MakeDecimalExpr {
    child: Arc<dyn PhysicalExpr>,
    precision: u8,
    scale: i8,
    null_on_overflow: bool,
}

impl PartialEq for MakeDecimalExpr {
    fn eq(&self, other: &Self) -> bool {
        self.child.eq(&other.child)
            && self.precision == other.precision
            && self.scale == other.scale
            && self.null_on_overflow == other.null_on_overflow
    }
}

impl std::hash::Hash for MakeDecimalExpr {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.child.hash(state);
        (self.precision, self.scale, self.null_on_overflow).hash(state);
    }
}

impl MakeDecimalExpr {
    pub fn new(child: Arc<dyn PhysicalExpr>, precision: u8, scale: i8, null_on_overflow: bool) -> Self {
        Self { child, precision, scale, null_on_overflow }
    }

    /// Spark's `Decimal.setOrNull`: any long fits a precision of 19 or more; otherwise |unscaled| < 10^precision.
    fn fits(&self, v: i64) -> bool {
        if self.precision >= 19 {
            return true;
        }
        let bound = 10i64.pow(self.precision as u32);
        v > -bound && v < bound
    }

    fn make(&self, v: i64) -> Result<Option<i128>> {
        if self.fits(v) {
            Ok(Some(v as i128))
        } else if self.null_on_overflow {
            Ok(None)
        } else {
            Err(SparkError::numeric_value_out_of_range("0", self.precision, self.scale).into_datafusion())
        }
    }
}

impl fmt::Display for MakeDecimalExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "make_decimal({}, {}, {})", self.child, self.precision, self.scale)
    }
}

impl PhysicalExpr for MakeDecimalExpr {
    fn data_type(&self, _input_schema: &Schema) -> Result<DataType> {
        Ok(DataType::Decimal128(self.precision, self.scale))
    }

    fn nullable(&self, input_schema: &Schema) -> Result<bool> {
        Ok(self.null_on_overflow || self.child.nullable(input_schema)?)
    }

    fn evaluate(&self, batch: &RecordBatch) -> Result<ColumnarValue> {
        Ok(match self.child.evaluate(batch)? {
            ColumnarValue::Scalar(ScalarValue::Int64(v)) => ColumnarValue::Scalar(ScalarValue::Decimal128(
                match v {
                    Some(v) => self.make(v)?,
                    None => None,
                },
                self.precision,
                self.scale,
            )),
            ColumnarValue::Array(a) if a.data_type() == &DataType::Int64 => {
                let a: &Int64Array = a.as_primitive::<Int64Type>();
                let mut out = Vec::with_capacity(a.len());
                for i in 0..a.len() {
                    out.push(if a.is_null(i) { None } else { self.make(a.value(i))? });
                }
                let out = Decimal128Array::from(out).with_precision_and_scale(self.precision, self.scale)?;
                ColumnarValue::Array(Arc::new(out))
            }
            other => return internal_err!("make_decimal over {other:?}"),
        })
    }

    fn children(&self) -> Vec<&Arc<dyn PhysicalExpr>> {
        vec![&self.child]
    }

    fn with_new_children(self: Arc<Self>, children: Vec<Arc<dyn PhysicalExpr>>) -> Result<Arc<dyn PhysicalExpr>> {
        Ok(Arc::new(Self::new(Arc::clone(&children[0]), self.precision, self.scale, self.null_on_overflow)))
    }

    fn fmt_sql(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::find_spark_error;
    use arrow::datatypes::Field;
    use datafusion_physical_expr::expressions::col;

    fn batch(a: Arc<dyn Array>) -> RecordBatch {
        let schema = Schema::new(vec![Field::new("x", a.data_type().clone(), true)]);
        RecordBatch::try_new(Arc::new(schema), vec![a]).unwrap()
    }

    #[test]
    fn unscaled_value_of_decimals() {
        let d = Decimal128Array::from(vec![Some(-12345), None, Some(999_999_999_999_999_999)])
            .with_precision_and_scale(18, 3)
            .unwrap();
        let b = batch(Arc::new(d));
        let e = UnscaledValueExpr::new(col("x", &b.schema()).unwrap());
        let out = e.evaluate(&b).unwrap().into_array(3).unwrap();
        assert_eq!(
            out.as_primitive::<Int64Type>(),
            &Int64Array::from(vec![Some(-12345), None, Some(999_999_999_999_999_999)])
        );
    }

    #[test]
    fn make_decimal_bounds_null_and_error() {
        let b =
            batch(Arc::new(Int64Array::from(vec![Some(99_999), Some(-99_999), None, Some(100_000), Some(-100_000)])));
        let x = col("x", &b.schema()).unwrap();
        let e = MakeDecimalExpr::new(x.clone(), 5, 2, true);
        let out = e.evaluate(&b).unwrap().into_array(5).unwrap();
        let out = out.as_primitive::<Decimal128Type>();
        assert_eq!(out.data_type(), &DataType::Decimal128(5, 2));
        assert_eq!(out.iter().collect::<Vec<_>>(), vec![Some(99_999), Some(-99_999), None, None, None]);
        let ansi = MakeDecimalExpr::new(x, 5, 2, false);
        let err = ansi.evaluate(&b).unwrap_err();
        let spark = find_spark_error(&err).expect("a Spark error");
        assert_eq!(spark.error_class, "NUMERIC_VALUE_OUT_OF_RANGE.WITH_SUGGESTION");
        assert!(spark.params.iter().any(|(k, v)| k == "value" && v == "0"));
        // Precision 19 and more: a long always fits (Spark keeps it as a BigDecimal).
        let b = batch(Arc::new(Int64Array::from(vec![i64::MAX, i64::MIN])));
        let wide = MakeDecimalExpr::new(col("x", &b.schema()).unwrap(), 20, 0, false);
        let out = wide.evaluate(&b).unwrap().into_array(2).unwrap();
        assert_eq!(out.as_primitive::<Decimal128Type>().value(0), i64::MAX as i128);
    }
}
