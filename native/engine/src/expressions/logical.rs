//! `AND` / `OR` with Spark's evaluation: three-valued (Kleene) logic, and the right side evaluated only on
//! rows the left side does not decide. DataFusion evaluates both sides on every row, which would raise an ANSI
//! error (e.g. `x <> 0 AND 10 / x > 1`) in rows where Spark never evaluates the right side. A right side that
//! cannot raise (comparisons, IS [NOT] NULL, NOT, AND/OR of columns and literals) is evaluated on every row
//! instead: the same result, without gathering the undecided rows of every column and scattering them back.
use std::fmt;
use std::hash::Hash;
use std::sync::Arc;

use arrow::array::{Array, BooleanArray};
use arrow::compute::kernels::boolean::{and_kleene, is_null, not, or, or_kleene};
use arrow::datatypes::{DataType, Schema};
use arrow::record_batch::RecordBatch;
use datafusion_common::{internal_err, Result, ScalarValue};
use datafusion_expr::ColumnarValue;
use datafusion_physical_expr::PhysicalExpr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LogicalOp {
    And,
    Or,
}

#[derive(Debug, Eq)]
pub struct LazyLogicalExpr {
    op: LogicalOp,
    left: Arc<dyn PhysicalExpr>,
    right: Arc<dyn PhysicalExpr>,
    /// The right side cannot raise an error: evaluated on every row.
    right_infallible: bool,
}

impl PartialEq for LazyLogicalExpr {
    fn eq(&self, other: &Self) -> bool {
        self.op == other.op && self.left.eq(&other.left) && self.right.eq(&other.right)
    }
}

impl Hash for LazyLogicalExpr {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.op.hash(state);
        self.left.hash(state);
        self.right.hash(state);
    }
}

impl LazyLogicalExpr {
    pub fn new(op: LogicalOp, left: Arc<dyn PhysicalExpr>, right: Arc<dyn PhysicalExpr>) -> Self {
        let right_infallible = infallible(&right);
        Self { op, left, right, right_infallible }
    }

    /// The value of the left side that decides the result alone: false for AND, true for OR.
    fn deciding(&self) -> bool {
        self.op == LogicalOp::Or
    }
}

impl fmt::Display for LazyLogicalExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = if self.op == LogicalOp::And { "AND" } else { "OR" };
        write!(f, "({} {op} {})", self.left, self.right)
    }
}

/// Whether evaluating `e` can never raise: columns, literals, comparisons (the planner made both sides one
/// type), IS [NOT] NULL, NOT, float normalization, a small decimal's unscaled value, widening casts, a query
/// context's wrapper and AND/OR of such. Anything else may (ANSI arithmetic, casts,
/// functions).
pub(crate) fn infallible(e: &Arc<dyn PhysicalExpr>) -> bool {
    use datafusion_expr::Operator::*;
    use datafusion_physical_expr::expressions::{BinaryExpr, Column, IsNotNullExpr, IsNullExpr, Literal, NotExpr};
    let children_infallible = || e.children().into_iter().all(infallible);
    if e.downcast_ref::<Column>().is_some() || e.downcast_ref::<Literal>().is_some() {
        true
    } else if let Some(b) = e.downcast_ref::<BinaryExpr>() {
        matches!(b.op(), Eq | NotEq | Lt | LtEq | Gt | GtEq | IsDistinctFrom | IsNotDistinctFrom)
            && children_infallible()
    } else {
        (e.downcast_ref::<IsNullExpr>().is_some()
            || e.downcast_ref::<IsNotNullExpr>().is_some()
            || e.downcast_ref::<NotExpr>().is_some()
            || e.downcast_ref::<LazyLogicalExpr>().is_some()
            || e.downcast_ref::<super::NormalizeFloatExpr>().is_some()
            || e.downcast_ref::<super::unscaled::UnscaledValueExpr>().is_some()
            || e.downcast_ref::<super::query_context::QueryContextExpr>().is_some()
            || e.downcast_ref::<super::cast::SparkCastExpr>().is_some_and(|c| c.widens()))
            && children_infallible()
    }
}

fn to_bool_array(v: ColumnarValue, rows: usize) -> Result<BooleanArray> {
    let arr = v.into_array(rows)?;
    match arr.as_any().downcast_ref::<BooleanArray>() {
        Some(b) => Ok(b.clone()),
        None => internal_err!("logical operand is not boolean: {}", arr.data_type()),
    }
}

impl PhysicalExpr for LazyLogicalExpr {
    fn data_type(&self, _input_schema: &Schema) -> Result<DataType> {
        Ok(DataType::Boolean)
    }

    fn nullable(&self, input_schema: &Schema) -> Result<bool> {
        Ok(self.left.nullable(input_schema)? || self.right.nullable(input_schema)?)
    }

    fn evaluate(&self, batch: &RecordBatch) -> Result<ColumnarValue> {
        let rows = batch.num_rows();
        let left = self.left.evaluate(batch)?;
        if let ColumnarValue::Scalar(ScalarValue::Boolean(Some(b))) = &left {
            if *b == self.deciding() {
                return Ok(ColumnarValue::Scalar(ScalarValue::Boolean(Some(*b))));
            }
        }
        let left = to_bool_array(left, rows)?;
        if self.right_infallible {
            let right = to_bool_array(self.right.evaluate(batch)?, rows)?;
            return Ok(ColumnarValue::Array(Arc::new(match self.op {
                LogicalOp::And => and_kleene(&left, &right)?,
                LogicalOp::Or => or_kleene(&left, &right)?,
            })));
        }
        // Rows whose result the left side does not decide: left is null or the non-deciding value.
        let undecided =
            if self.deciding() { or(&not(&left)?, &is_null(&left)?)? } else { or(&left, &is_null(&left)?)? };
        // A null in `undecided` cannot occur (is_null has none), so `true_count` is exact.
        let undecided = BooleanArray::new(undecided.values().clone(), None);
        if undecided.true_count() == 0 {
            return Ok(ColumnarValue::Array(Arc::new(left)));
        }
        let right = to_bool_array(self.right.evaluate_selection(batch, &undecided)?, rows)?;
        let result = match self.op {
            LogicalOp::And => and_kleene(&left, &right)?,
            LogicalOp::Or => or_kleene(&left, &right)?,
        };
        Ok(ColumnarValue::Array(Arc::new(result)))
    }

    fn children(&self) -> Vec<&Arc<dyn PhysicalExpr>> {
        vec![&self.left, &self.right]
    }

    fn with_new_children(self: Arc<Self>, children: Vec<Arc<dyn PhysicalExpr>>) -> Result<Arc<dyn PhysicalExpr>> {
        Ok(Arc::new(Self::new(self.op, Arc::clone(&children[0]), Arc::clone(&children[1]))))
    }

    fn fmt_sql(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expressions::test_util::FailOnTrue;
    use arrow::datatypes::Field;
    use datafusion_physical_expr::expressions::Column;

    fn batch(l: Vec<Option<bool>>, r: Vec<Option<bool>>) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("l", DataType::Boolean, true),
            Field::new("r", DataType::Boolean, true),
        ]));
        RecordBatch::try_new(schema, vec![Arc::new(BooleanArray::from(l)), Arc::new(BooleanArray::from(r))]).unwrap()
    }

    fn eval(op: LogicalOp, b: &RecordBatch, right: Arc<dyn PhysicalExpr>) -> Result<Vec<Option<bool>>> {
        let e = LazyLogicalExpr::new(op, Arc::new(Column::new("l", 0)), right);
        let out = to_bool_array(e.evaluate(b)?, b.num_rows())?;
        Ok(out.iter().collect())
    }

    #[test]
    fn kleene_truth_tables() {
        let vals = [Some(true), Some(false), None];
        let (mut l, mut r) = (vec![], vec![]);
        for a in vals {
            for b in vals {
                l.push(a);
                r.push(b);
            }
        }
        let b = batch(l.clone(), r.clone());
        let right: Arc<dyn PhysicalExpr> = Arc::new(Column::new("r", 1));
        let and = eval(LogicalOp::And, &b, right.clone()).unwrap();
        let or = eval(LogicalOp::Or, &b, right).unwrap();
        for i in 0..l.len() {
            let expect_and = match (l[i], r[i]) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            };
            let expect_or = match (l[i], r[i]) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            };
            assert_eq!(and[i], expect_and, "AND {:?} {:?}", l[i], r[i]);
            assert_eq!(or[i], expect_or, "OR {:?} {:?}", l[i], r[i]);
        }
    }

    #[test]
    fn right_side_is_not_evaluated_where_left_decides() {
        // The right side fails on any row where column r is true; those rows are decided by the left side.
        let b = batch(vec![Some(false), Some(true), None], vec![Some(true), Some(false), Some(false)]);
        let failing: Arc<dyn PhysicalExpr> = Arc::new(FailOnTrue::new(1));
        // FailOnTrue evaluates to NOT r where it does not fail.
        assert_eq!(eval(LogicalOp::And, &b, failing.clone()).unwrap(), vec![Some(false), Some(true), None]);
        let b = batch(vec![Some(true), Some(false), None], vec![Some(true), Some(false), Some(false)]);
        assert_eq!(eval(LogicalOp::Or, &b, failing.clone()).unwrap(), vec![Some(true), Some(true), Some(true)]);
        // And where the left does not decide, the right side's error surfaces.
        let b = batch(vec![Some(true)], vec![Some(true)]);
        assert!(eval(LogicalOp::And, &b, failing).is_err());
    }

    /// Casts that widen (Spark's sum and avg arguments) cannot raise; a narrowing ANSI cast can.
    #[test]
    fn widening_casts_cannot_raise() {
        use crate::expressions::mode::Mode;
        use arrow::datatypes::Field;
        let schema = Schema::new(vec![Field::new("i", DataType::Int32, true), Field::new("l", DataType::Int64, true)]);
        let cast = |i: usize, to: DataType| {
            let c: Arc<dyn PhysicalExpr> = Arc::new(Column::new(schema.field(i).name(), i));
            crate::expressions::cast::create(c, to, Mode::Ansi, "UTC", &schema).unwrap()
        };
        assert!(infallible(&cast(0, DataType::Int64)));
        assert!(infallible(&cast(0, DataType::Float64)));
        assert!(!infallible(&cast(1, DataType::Int32)));
    }

    /// The kleene tables hold on both paths: a right side that cannot raise (evaluated on every row) and one
    /// that may (evaluated on the undecided rows only); only comparisons, null tests, NOT and AND/OR of columns
    /// and literals count as unable to raise.
    #[test]
    fn a_right_side_that_cannot_raise_is_evaluated_on_every_row() {
        use datafusion_expr::Operator;
        use datafusion_physical_expr::expressions::{BinaryExpr, IsNullExpr, Literal, NotExpr};
        let col = |i: usize| -> Arc<dyn PhysicalExpr> { Arc::new(Column::new(if i == 0 { "l" } else { "r" }, i)) };
        let cmp: Arc<dyn PhysicalExpr> =
            Arc::new(BinaryExpr::new(col(1), Operator::Eq, Arc::new(Literal::new(ScalarValue::Boolean(Some(true))))));
        let not_null: Arc<dyn PhysicalExpr> = Arc::new(NotExpr::new(Arc::new(IsNullExpr::new(col(1)))));
        let nested: Arc<dyn PhysicalExpr> =
            Arc::new(LazyLogicalExpr::new(LogicalOp::Or, cmp.clone(), not_null.clone()));
        for e in [&col(1), &cmp, &not_null, &nested] {
            assert!(infallible(e), "{e}");
        }
        let failing: Arc<dyn PhysicalExpr> = Arc::new(FailOnTrue::new(1));
        let with_failing: Arc<dyn PhysicalExpr> =
            Arc::new(LazyLogicalExpr::new(LogicalOp::And, cmp.clone(), failing.clone()));
        let plus: Arc<dyn PhysicalExpr> = Arc::new(BinaryExpr::new(col(1), Operator::Plus, col(1)));
        for e in [&failing, &with_failing, &plus] {
            assert!(!infallible(e), "{e}");
        }
        let b = batch(vec![Some(true), Some(false), None, None], vec![Some(true), Some(true), Some(false), None]);
        assert_eq!(eval(LogicalOp::And, &b, cmp.clone()).unwrap(), vec![Some(true), Some(false), Some(false), None]);
        assert_eq!(eval(LogicalOp::Or, &b, cmp).unwrap(), vec![Some(true), Some(true), None, None]);
    }
}
