//! Spark prints the query context of the expression that failed (the SQL fragment, or the DataFrame call site)
//! under an ANSI error's message. The JVM side puts an id of that context on the proto expressions whose Spark
//! counterpart has one (`SupportQueryContext`); this wrapper gives it to the Spark errors the wrapped expression
//! raises, and the bridge hands the id back with the error.
use std::fmt;
use std::sync::Arc;

use arrow::array::BooleanArray;
use arrow::datatypes::{DataType, Schema};
use arrow::record_batch::RecordBatch;
use datafusion_common::Result;
use datafusion_expr::ColumnarValue;
use datafusion_physical_expr::PhysicalExpr;

use crate::error::with_query_context;

#[derive(Debug, Eq)]
pub struct QueryContextExpr {
    child: Arc<dyn PhysicalExpr>,
    query_context: i32,
    /// Error classes Spark raises from this expression without a context (e.g. `CAST_OVERFLOW`).
    without: &'static [&'static str],
}

impl PartialEq for QueryContextExpr {
    fn eq(&self, other: &Self) -> bool {
        self.child.eq(&other.child) && self.query_context == other.query_context && self.without == other.without
    }
}

impl std::hash::Hash for QueryContextExpr {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.child.hash(state);
        self.query_context.hash(state);
    }
}

impl QueryContextExpr {
    /// `child` itself when there is no context to give (`query_context` 0).
    pub fn wrap(
        child: Arc<dyn PhysicalExpr>,
        query_context: i32,
        without: &'static [&'static str],
    ) -> Arc<dyn PhysicalExpr> {
        if query_context == 0 {
            child
        } else {
            Arc::new(Self { child, query_context, without })
        }
    }
}

impl fmt::Display for QueryContextExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.child, f)
    }
}

impl PhysicalExpr for QueryContextExpr {
    fn data_type(&self, input_schema: &Schema) -> Result<DataType> {
        self.child.data_type(input_schema)
    }

    fn nullable(&self, input_schema: &Schema) -> Result<bool> {
        self.child.nullable(input_schema)
    }

    fn evaluate(&self, batch: &RecordBatch) -> Result<ColumnarValue> {
        self.child.evaluate(batch).map_err(|e| with_query_context(e, self.query_context, self.without))
    }

    fn evaluate_selection(&self, batch: &RecordBatch, selection: &BooleanArray) -> Result<ColumnarValue> {
        self.child
            .evaluate_selection(batch, selection)
            .map_err(|e| with_query_context(e, self.query_context, self.without))
    }

    fn children(&self) -> Vec<&Arc<dyn PhysicalExpr>> {
        vec![&self.child]
    }

    fn with_new_children(self: Arc<Self>, children: Vec<Arc<dyn PhysicalExpr>>) -> Result<Arc<dyn PhysicalExpr>> {
        Ok(Arc::new(Self { child: Arc::clone(&children[0]), query_context: self.query_context, without: self.without }))
    }

    fn fmt_sql(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.child.fmt_sql(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{find_spark_error, SparkError};
    use arrow::datatypes::Field;
    use datafusion_common::DataFusionError;

    /// Raises a fixed Spark error, as an overflowing expression would.
    #[derive(Debug, PartialEq, Eq, Hash)]
    struct Fails(&'static str, i32);

    impl fmt::Display for Fails {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "fails")
        }
    }

    impl PhysicalExpr for Fails {
        fn data_type(&self, _: &Schema) -> Result<DataType> {
            Ok(DataType::Int64)
        }
        fn nullable(&self, _: &Schema) -> Result<bool> {
            Ok(true)
        }
        fn evaluate(&self, _: &RecordBatch) -> Result<ColumnarValue> {
            let e = SparkError::arithmetic_overflow("long overflow", "").with_query_context(self.1);
            Err(DataFusionError::External(Box::new(SparkError { error_class: self.0.into(), ..e })))
        }
        fn children(&self) -> Vec<&Arc<dyn PhysicalExpr>> {
            vec![]
        }
        fn with_new_children(self: Arc<Self>, _: Vec<Arc<dyn PhysicalExpr>>) -> Result<Arc<dyn PhysicalExpr>> {
            Ok(self)
        }
        fn fmt_sql(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "fails")
        }
    }

    fn context_of(e: Arc<dyn PhysicalExpr>) -> i32 {
        let batch = RecordBatch::new_empty(Arc::new(Schema::new(vec![Field::new("a", DataType::Int64, true)])));
        let err = e.evaluate(&batch).unwrap_err();
        find_spark_error(&err).unwrap().query_context
    }

    #[test]
    fn the_innermost_context_wins_and_excluded_classes_get_none() {
        let fails = |class, ctx| Arc::new(Fails(class, ctx)) as Arc<dyn PhysicalExpr>;
        assert_eq!(context_of(QueryContextExpr::wrap(fails("ARITHMETIC_OVERFLOW", 0), 7, &[])), 7);
        // An inner expression's context stays (Spark reports the expression that failed).
        assert_eq!(context_of(QueryContextExpr::wrap(fails("ARITHMETIC_OVERFLOW", 3), 7, &[])), 3);
        let nested = QueryContextExpr::wrap(QueryContextExpr::wrap(fails("DIVIDE_BY_ZERO", 0), 5, &[]), 9, &[]);
        assert_eq!(context_of(nested), 5);
        assert_eq!(context_of(QueryContextExpr::wrap(fails("CAST_OVERFLOW", 0), 7, &["CAST_OVERFLOW"])), 0);
        assert_eq!(context_of(QueryContextExpr::wrap(fails("ARITHMETIC_OVERFLOW", 0), 0, &[])), 0);
    }
}
