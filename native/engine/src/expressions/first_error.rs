//! Spark's first error. Spark evaluates a task's rows one at a time through the operators of a pipeline (a
//! filter's predicate, then the projection above it, then an aggregate's or a join's expressions), and within a
//! row each operator's expressions left to right; when several rows and expressions would raise, the error it
//! raises is the first its order reaches. The engine evaluates each expression over a whole batch, column by
//! column and operator by operator, so the first error it meets may be another row's.
//!
//! On the error path only, the batch is evaluated again as Spark would: row by row, each row through the
//! failing operator's expressions and then through the operators above it in the same pipeline, and the first
//! error met is the one raised. A [`RowPipeline`] holds a pipeline's stages (one per operator, bottom up, as
//! the planner builds them); each fallible expression of a stage is wrapped in a [`FirstErrorExpr`], which
//! evaluates its child as it is and, when the child raises a Spark error, asks the pipeline for the first error
//! of the batch from its stage up. The batch's own error stands when the rows raise none (an expression that
//! fails over a whole batch but on no single row), when the error is not a Spark error (memory, a JVM
//! expression's failure), and when a stage holds a nondeterministic expression (evaluated again it would not
//! give the values Spark saw).
use std::fmt;
use std::sync::{Arc, Mutex};

use arrow::array::{Array, AsArray, RecordBatch, RecordBatchOptions};
use arrow::datatypes::{DataType, Field, Schema};
use datafusion_common::{DataFusionError, Result};
use datafusion_expr::ColumnarValue;
use datafusion_physical_expr::PhysicalExpr;

use crate::error::find_spark_error;
use crate::expressions::logical::infallible;

type ExprRef = Arc<dyn PhysicalExpr>;

/// One operator of a pipeline, as Spark evaluates it on one row.
#[derive(Debug, Clone)]
enum Stage {
    /// A filter's predicate: a row it does not keep goes no further.
    Filter(ExprRef),
    /// A projection's expressions, in order: their values are the row the stage above reads.
    Project(Vec<ExprRef>),
    /// Expressions whose values no stage of the pipeline reads (an aggregate's keys and arguments, a join's
    /// keys or condition), in Spark's order; only the fallible ones are kept.
    Evaluate(Vec<ExprRef>),
}

/// The stages of one pipeline of row-at-a-time operators, bottom up. Built while planning, read only when an
/// expression of one of them fails.
#[derive(Debug, Default)]
pub struct RowPipeline {
    stages: Mutex<Vec<Stage>>,
}

impl RowPipeline {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn push(&self, stage: Stage) -> usize {
        let mut stages = self.stages.lock().unwrap();
        stages.push(stage);
        stages.len() - 1
    }

    /// Adds a filter above the pipeline's stages: its predicate, wrapped.
    pub fn filter(self: &Arc<Self>, predicate: ExprRef) -> ExprRef {
        let stage = self.push(Stage::Filter(Arc::clone(&predicate)));
        FirstErrorExpr::wrap(predicate, self, stage)
    }

    /// Adds a projection above the pipeline's stages: its expressions, wrapped.
    pub fn project(self: &Arc<Self>, exprs: Vec<ExprRef>) -> Vec<ExprRef> {
        let stage = self.push(Stage::Project(exprs.clone()));
        exprs.into_iter().map(|e| FirstErrorExpr::wrap(e, self, stage)).collect()
    }

    /// Adds a stage of expressions whose values go to no stage above (see [`Stage::Evaluate`]); its
    /// expressions join it, in Spark's order, through [`RowPipeline::evaluate`].
    pub fn evaluate_stage(&self) -> usize {
        self.push(Stage::Evaluate(vec![]))
    }

    /// `expr`, the next of stage `stage`'s expressions, wrapped.
    pub fn evaluate(self: &Arc<Self>, stage: usize, expr: ExprRef) -> ExprRef {
        if infallible(&expr) {
            return expr;
        }
        if let Some(Stage::Evaluate(exprs)) = self.stages.lock().unwrap().get_mut(stage) {
            exprs.push(Arc::clone(&expr));
        }
        FirstErrorExpr::wrap(expr, self, stage)
    }

    /// The first error Spark meets evaluating `batch` row by row from stage `from` up (`batch`: the rows that
    /// stage reads), or `None` when no row raises or the rows cannot be evaluated again as Spark saw them.
    pub fn first_error(&self, from: usize, batch: &RecordBatch) -> Option<DataFusionError> {
        let stages = self.stages.lock().unwrap().get(from..)?.to_vec();
        let exprs = |s: &Stage| match s {
            Stage::Filter(e) => vec![Arc::clone(e)],
            Stage::Project(es) | Stage::Evaluate(es) => es.clone(),
        };
        if stages.iter().flat_map(exprs).any(|e| volatile(&e)) {
            return None;
        }
        (0..batch.num_rows()).find_map(|row| first_error_of_row(&stages, batch.slice(row, 1)))
    }
}

/// The first error of one row (a batch of one) through `stages`.
fn first_error_of_row(stages: &[Stage], mut row: RecordBatch) -> Option<DataFusionError> {
    for stage in stages {
        match stage {
            Stage::Filter(predicate) => {
                let keep = match predicate.evaluate(&row).and_then(|v| v.into_array(1)) {
                    Ok(keep) => keep,
                    Err(e) => return Some(e),
                };
                let kept = keep.as_boolean_opt().is_some_and(|b| b.is_valid(0) && b.value(0));
                if !kept {
                    return None;
                }
            }
            Stage::Project(exprs) => {
                let mut columns = Vec::with_capacity(exprs.len());
                for e in exprs {
                    match e.evaluate(&row).and_then(|v| v.into_array(1)) {
                        Ok(c) => columns.push(c),
                        Err(e) => return Some(e),
                    }
                }
                // Only the columns' positions and types matter to the stages above.
                let fields: Vec<Field> = columns
                    .iter()
                    .enumerate()
                    .map(|(i, c)| Field::new(format!("c{i}"), c.data_type().clone(), true))
                    .collect();
                let options = RecordBatchOptions::new().with_row_count(Some(1));
                row = RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), columns, &options).ok()?;
            }
            Stage::Evaluate(exprs) => {
                for e in exprs {
                    if let Err(e) = e.evaluate(&row) {
                        return Some(e);
                    }
                }
            }
        }
    }
    None
}

fn volatile(e: &ExprRef) -> bool {
    e.is_volatile_node() || e.children().into_iter().any(volatile)
}

/// An expression of a [`RowPipeline`]'s stage: its child's values, or on a Spark error the first error Spark's
/// row order meets in the batch.
#[derive(Debug)]
pub struct FirstErrorExpr {
    child: ExprRef,
    pipeline: Arc<RowPipeline>,
    stage: usize,
}

impl FirstErrorExpr {
    /// `child` wrapped, or itself when it cannot raise.
    fn wrap(child: ExprRef, pipeline: &Arc<RowPipeline>, stage: usize) -> ExprRef {
        if infallible(&child) {
            child
        } else {
            Arc::new(Self { child, pipeline: Arc::clone(pipeline), stage })
        }
    }
}

impl PartialEq for FirstErrorExpr {
    fn eq(&self, other: &Self) -> bool {
        self.child.eq(&other.child) && self.stage == other.stage && Arc::ptr_eq(&self.pipeline, &other.pipeline)
    }
}

impl Eq for FirstErrorExpr {}

impl std::hash::Hash for FirstErrorExpr {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.child.hash(state);
        self.stage.hash(state);
    }
}

impl fmt::Display for FirstErrorExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.child, f)
    }
}

impl PhysicalExpr for FirstErrorExpr {
    fn data_type(&self, input_schema: &Schema) -> Result<DataType> {
        self.child.data_type(input_schema)
    }

    fn nullable(&self, input_schema: &Schema) -> Result<bool> {
        self.child.nullable(input_schema)
    }

    fn evaluate(&self, batch: &RecordBatch) -> Result<ColumnarValue> {
        self.child.evaluate(batch).map_err(|e| {
            if find_spark_error(&e).is_none() {
                return e;
            }
            self.pipeline.first_error(self.stage, batch).unwrap_or(e)
        })
    }

    fn children(&self) -> Vec<&ExprRef> {
        vec![&self.child]
    }

    fn with_new_children(self: Arc<Self>, children: Vec<ExprRef>) -> Result<ExprRef> {
        Ok(Arc::new(Self { child: Arc::clone(&children[0]), pipeline: Arc::clone(&self.pipeline), stage: self.stage }))
    }

    fn fmt_sql(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.child.fmt_sql(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::SparkError;
    use arrow::array::{BooleanArray, Int64Array};
    use datafusion_physical_expr::expressions::Column;

    /// Fails with a Spark error naming the first non-zero value of column `fails` among the rows it is
    /// evaluated on (its class: `class`); else the values of column `out`. `rows_apart`: fails only over more
    /// than one row.
    #[derive(Debug, PartialEq, Eq, Hash)]
    struct Fails {
        class: &'static str,
        fails: usize,
        out: usize,
        rows_apart: bool,
        volatile: bool,
        spark: bool,
    }

    fn fails(class: &'static str, fails: usize, out: usize) -> Fails {
        Fails { class, fails, out, rows_apart: false, volatile: false, spark: true }
    }

    impl fmt::Display for Fails {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "fails_{}", self.class)
        }
    }

    impl PhysicalExpr for Fails {
        fn data_type(&self, schema: &Schema) -> Result<DataType> {
            Ok(schema.field(self.out).data_type().clone())
        }
        fn nullable(&self, _: &Schema) -> Result<bool> {
            Ok(true)
        }
        fn evaluate(&self, batch: &RecordBatch) -> Result<ColumnarValue> {
            let values = batch.column(self.fails).as_primitive::<arrow::datatypes::Int64Type>();
            let bad = if self.rows_apart {
                (batch.num_rows() > 1).then_some(-1)
            } else {
                values.iter().flatten().find(|v| *v != 0)
            };
            if let Some(v) = bad {
                if !self.spark {
                    return Err(DataFusionError::Execution(format!("not Spark's: {v}")));
                }
                let e =
                    SparkError::new(crate::error::SparkExceptionKind::Arithmetic, self.class, &[("v", v.to_string())]);
                return Err(e.into_datafusion());
            }
            Ok(ColumnarValue::Array(Arc::clone(batch.column(self.out))))
        }
        fn children(&self) -> Vec<&ExprRef> {
            vec![]
        }
        fn with_new_children(self: Arc<Self>, _: Vec<ExprRef>) -> Result<ExprRef> {
            Ok(self)
        }
        fn fmt_sql(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            fmt::Display::fmt(self, f)
        }
        fn is_volatile_node(&self) -> bool {
            self.volatile
        }
    }

    /// Columns 0 .. of Int64 values, then a boolean column `keep` last.
    fn batch(columns: &[&[i64]], keep: &[bool]) -> RecordBatch {
        let mut fields: Vec<Field> =
            (0..columns.len()).map(|i| Field::new(format!("c{i}"), DataType::Int64, true)).collect();
        fields.push(Field::new("keep", DataType::Boolean, true));
        let mut arrays: Vec<Arc<dyn Array>> =
            columns.iter().map(|c| Arc::new(Int64Array::from(c.to_vec())) as Arc<dyn Array>).collect();
        arrays.push(Arc::new(BooleanArray::from(keep.to_vec())));
        RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap()
    }

    fn error_of(e: &ExprRef, batch: &RecordBatch) -> String {
        let err = e.evaluate(batch).unwrap_err();
        match find_spark_error(&err) {
            Some(s) => s.to_string(),
            None => err.to_string(),
        }
    }

    fn arc(f: Fails) -> ExprRef {
        Arc::new(f)
    }

    #[test]
    fn a_projection_raises_the_first_failing_cell_in_row_order() {
        // Column 0 fails on row 2 (7), column 1 on row 1 (5): row 1's comes first.
        let b = batch(&[&[0, 0, 7], &[0, 5, 9]], &[true, true, true]);
        let exprs = RowPipeline::new().project(vec![arc(fails("A", 0, 0)), arc(fails("B", 1, 1))]);
        assert_eq!(error_of(&exprs[0], &b), "[B] v=5");
        // Failing on the same row: the first expression's.
        let b = batch(&[&[0, 3, 7], &[0, 5, 9]], &[true, true, true]);
        assert_eq!(error_of(&exprs[0], &b), "[A] v=3");
        // Unwrapped, the first expression's own first row.
        let b = batch(&[&[0, 0, 7], &[0, 5, 9]], &[true, true, true]);
        assert_eq!(error_of(&arc(fails("A", 0, 0)), &b), "[A] v=7");
    }

    #[test]
    fn a_failing_filter_lets_the_projection_above_fail_first_on_a_row_it_keeps() {
        // The predicate fails on row 2; the projection above on rows 0 (not kept) and 1 (kept).
        let b = batch(&[&[0, 0, 4], &[6, 5, 0]], &[false, true, true]);
        let pipeline = RowPipeline::new();
        let predicate = pipeline.filter(arc(fails("P", 0, 2)));
        let projected = pipeline.project(vec![Arc::new(Column::new("c0", 0)), arc(fails("B", 1, 1))]);
        assert_eq!(error_of(&predicate, &b), "[B] v=5");
        // Over the rows the filter keeps, the projection's own first.
        let kept = arrow::compute::filter_record_batch(&b, &BooleanArray::from(vec![false, true, false])).unwrap();
        assert_eq!(error_of(&projected[1], &kept), "[B] v=5");
        // A column stays unwrapped.
        assert!(projected[0].downcast_ref::<Column>().is_some());
    }

    #[test]
    fn a_projection_feeds_the_stages_above_its_values() {
        // The projection's first column (column 1's values) is what the aggregate above fails on.
        let b = batch(&[&[0, 0, 8], &[0, 2, 0]], &[true, true, true]);
        let pipeline = RowPipeline::new();
        let projected = pipeline.project(vec![arc(fails("A", 0, 1)), Arc::new(Column::new("c0", 0))]);
        let stage = pipeline.evaluate_stage();
        let key = pipeline.evaluate(stage, Arc::new(Column::new("c1", 1)));
        let argument = pipeline.evaluate(stage, arc(fails("S", 0, 1)));
        assert!(key.downcast_ref::<Column>().is_some(), "infallible expressions are not wrapped");
        assert_eq!(error_of(&projected[0], &b), "[S] v=2");
        // The aggregate's own failure, over the projection's output, in row order.
        let out = batch(&[&[0, 0, 3], &[0, 0, 0]], &[true, true, true]);
        assert_eq!(error_of(&argument, &out), "[S] v=3");
    }

    #[test]
    fn the_batch_error_stands_when_rows_cannot_tell() {
        let b = batch(&[&[0, 1, 2], &[0, 0, 0]], &[true, true, true]);
        // No single row fails.
        let apart = Fails { rows_apart: true, ..fails("W", 1, 1) };
        let exprs = RowPipeline::new().project(vec![arc(apart), arc(fails("B", 1, 1))]);
        assert_eq!(error_of(&exprs[0], &b), "[W] v=-1");
        // A nondeterministic expression in the stages.
        let b = batch(&[&[0, 0, 7], &[0, 5, 9]], &[true, true, true]);
        let volatile = Fails { volatile: true, ..fails("V", 1, 1) };
        let exprs = RowPipeline::new().project(vec![arc(fails("A", 0, 0)), arc(volatile)]);
        assert_eq!(error_of(&exprs[0], &b), "[A] v=7");
        // Not a Spark error: as it is.
        let plain = Fails { spark: false, ..fails("N", 0, 0) };
        let exprs = RowPipeline::new().project(vec![arc(plain), arc(fails("B", 1, 1))]);
        assert_eq!(error_of(&exprs[0], &b), "Execution error: not Spark's: 7");
    }
}
