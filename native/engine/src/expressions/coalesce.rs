//! `COALESCE` with Spark's evaluation: each argument is evaluated only on the rows still NULL after the ones
//! before it, so an argument that would raise an ANSI error is never evaluated where Spark does not evaluate it.
use std::fmt;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef};
use arrow::compute::kernels::boolean::is_null;
use arrow::compute::kernels::zip::zip;
use arrow::datatypes::{DataType, Schema};
use arrow::record_batch::RecordBatch;
use datafusion_common::{Result, ScalarValue};
use datafusion_expr::ColumnarValue;
use datafusion_physical_expr::PhysicalExpr;

#[derive(Debug, Hash, PartialEq, Eq)]
pub struct CoalesceExpr {
    args: Vec<Arc<dyn PhysicalExpr>>,
    data_type: DataType,
}

impl CoalesceExpr {
    pub fn new(args: Vec<Arc<dyn PhysicalExpr>>, data_type: DataType) -> Self {
        Self { args, data_type }
    }
}

impl fmt::Display for CoalesceExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "coalesce(")?;
        for (i, a) in self.args.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{a}")?;
        }
        write!(f, ")")
    }
}

impl PhysicalExpr for CoalesceExpr {
    fn data_type(&self, _input_schema: &Schema) -> Result<DataType> {
        Ok(self.data_type.clone())
    }

    fn nullable(&self, input_schema: &Schema) -> Result<bool> {
        for a in &self.args {
            if !a.nullable(input_schema)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn evaluate(&self, batch: &RecordBatch) -> Result<ColumnarValue> {
        let rows = batch.num_rows();
        let mut acc: Option<ArrayRef> = None;
        for arg in &self.args {
            let (value, remaining) = match &acc {
                None => (arg.evaluate(batch)?, None),
                Some(cur) => {
                    let still_null = is_null(cur.as_ref())?;
                    if still_null.true_count() == 0 {
                        break;
                    }
                    (arg.evaluate_selection(batch, &still_null)?, Some(still_null))
                }
            };
            let value = value.into_array(rows)?;
            acc = Some(match (acc, remaining) {
                (Some(cur), Some(mask)) => zip(&mask, &value, &cur)?,
                _ => value,
            });
            if acc.as_ref().is_some_and(|a| a.null_count() == 0) {
                break;
            }
        }
        match acc {
            Some(a) => Ok(ColumnarValue::Array(a)),
            None => Ok(ColumnarValue::Scalar(ScalarValue::try_from(&self.data_type)?)),
        }
    }

    fn children(&self) -> Vec<&Arc<dyn PhysicalExpr>> {
        self.args.iter().collect()
    }

    fn with_new_children(self: Arc<Self>, children: Vec<Arc<dyn PhysicalExpr>>) -> Result<Arc<dyn PhysicalExpr>> {
        Ok(Arc::new(Self::new(children, self.data_type.clone())))
    }

    fn fmt_sql(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expressions::test_util::FailOnTrue;
    use arrow::array::{BooleanArray, Int64Array};
    use arrow::datatypes::Field;
    use datafusion_physical_expr::expressions::Column;

    #[test]
    fn first_non_null_and_lazy() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("b", DataType::Int64, true),
            Field::new("f", DataType::Boolean, true),
        ]));
        let b = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(vec![Some(1), None, None])),
                Arc::new(Int64Array::from(vec![Some(10), Some(20), None])),
                // The third argument fails where f is true: rows 0 and 1, both decided by earlier arguments.
                Arc::new(BooleanArray::from(vec![Some(true), Some(true), Some(false)])),
            ],
        )
        .unwrap();
        let e = CoalesceExpr::new(
            vec![
                Arc::new(Column::new("a", 0)),
                Arc::new(Column::new("b", 1)),
                Arc::new(FailOnTrue::nulls(2, DataType::Int64)),
            ],
            DataType::Int64,
        );
        // FailOnTrue yields NULL Int64 values on rows where it does not fail.
        let out = e.evaluate(&b).unwrap().into_array(3).unwrap();
        let out = out.as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!(out.iter().collect::<Vec<_>>(), vec![Some(1), Some(20), None]);

        // Evaluated on every row, the failing argument raises.
        let all = CoalesceExpr::new(vec![Arc::new(FailOnTrue::nulls(2, DataType::Int64))], DataType::Int64);
        assert!(all.evaluate(&b).is_err());
    }
}
