//! Spark's `Murmur3Hash` (`hash()`) and `XxHash64` (`xxhash64()`) over any number of columns: every row starts at
//! the seed and each child's value hash is seeded by the hash so far (a NULL leaves it unchanged), with the
//! per-type rules of [`crate::spark_hash`]. The result is never NULL.
use std::fmt;
use std::sync::Arc;

use arrow::array::{Int32Array, Int64Array};
use arrow::datatypes::{DataType, Schema};
use arrow::record_batch::RecordBatch;
use datafusion_common::Result;
use datafusion_expr::ColumnarValue;
use datafusion_physical_expr::PhysicalExpr;

use crate::error::plan_error;
use crate::spark_hash::{self, Murmur3, SparkHasher, XxHash64};

#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq)]
pub enum HashFunction {
    Murmur3 { seed: i32 },
    XxHash64 { seed: i64 },
}

#[derive(Debug, Hash, PartialEq, Eq)]
pub struct HashExpr {
    function: HashFunction,
    children: Vec<Arc<dyn PhysicalExpr>>,
}

impl HashExpr {
    /// Fails when a child's type has no Spark hash here (the plan is refused rather than its first batch).
    pub fn try_new(function: HashFunction, children: Vec<Arc<dyn PhysicalExpr>>, schema: &Schema) -> Result<Self> {
        if children.is_empty() {
            return Err(plan_error("hash without arguments"));
        }
        for c in &children {
            spark_hash::check_supported(&c.data_type(schema)?)?;
        }
        Ok(Self { function, children })
    }

    fn fold<H: SparkHasher>(&self, batch: &RecordBatch, seed: H::Hash) -> Result<Vec<H::Hash>> {
        let rows = batch.num_rows();
        let values = self.children.iter().map(|c| c.evaluate(batch)?.into_array(rows)).collect::<Result<Vec<_>>>()?;
        spark_hash::hash_columns::<H>(&values, rows, seed)
    }
}

impl fmt::Display for HashExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.function {
            HashFunction::Murmur3 { seed } => write!(f, "hash[{seed}](")?,
            HashFunction::XxHash64 { seed } => write!(f, "xxhash64[{seed}](")?,
        }
        for (i, c) in self.children.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{c}")?;
        }
        write!(f, ")")
    }
}

impl PhysicalExpr for HashExpr {
    fn data_type(&self, _input_schema: &Schema) -> Result<DataType> {
        Ok(match self.function {
            HashFunction::Murmur3 { .. } => DataType::Int32,
            HashFunction::XxHash64 { .. } => DataType::Int64,
        })
    }

    fn nullable(&self, _input_schema: &Schema) -> Result<bool> {
        Ok(false)
    }

    fn evaluate(&self, batch: &RecordBatch) -> Result<ColumnarValue> {
        Ok(ColumnarValue::Array(match self.function {
            HashFunction::Murmur3 { seed } => Arc::new(Int32Array::from(self.fold::<Murmur3>(batch, seed)?)),
            HashFunction::XxHash64 { seed } => Arc::new(Int64Array::from(self.fold::<XxHash64>(batch, seed)?)),
        }))
    }

    fn children(&self) -> Vec<&Arc<dyn PhysicalExpr>> {
        self.children.iter().collect()
    }

    fn with_new_children(self: Arc<Self>, children: Vec<Arc<dyn PhysicalExpr>>) -> Result<Arc<dyn PhysicalExpr>> {
        Ok(Arc::new(Self { function: self.function, children }))
    }

    fn fmt_sql(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::expr::create_expr;
    use arrow::array::{Array, ArrayRef, AsArray, Float64Array, Int32Array, ListArray, StringArray};
    use arrow::datatypes::{Field, Int32Type, Int64Type};
    use ember_proto as pb;

    fn column(index: u32, id: pb::TypeId) -> pb::Expr {
        pb::Expr {
            kind: Some(pb::expr::Kind::Column(pb::ColumnRef {
                index,
                r#type: Some(pb::DataType { id: id as i32, ..Default::default() }),
                nullable: true,
            })),
        }
    }

    fn literal(id: pb::TypeId, value: Option<i64>) -> pb::Expr {
        pb::Expr {
            kind: Some(pb::expr::Kind::Literal(pb::Literal {
                r#type: Some(pb::DataType { id: id as i32, ..Default::default() }),
                is_null: value.is_none(),
                value: value.map(pb::literal::Value::LongValue),
            })),
        }
    }

    fn hash(function: pb::HashFunction, children: Vec<pb::Expr>) -> pb::Expr {
        pb::Expr { kind: Some(pb::expr::Kind::Hash(pb::Hash { function: function as i32, children, seed: 42 })) }
    }

    fn batch(columns: Vec<ArrayRef>) -> RecordBatch {
        let fields: Vec<Field> =
            columns.iter().enumerate().map(|(i, c)| Field::new(format!("c{i}"), c.data_type().clone(), true)).collect();
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
    }

    fn eval(e: &pb::Expr, b: &RecordBatch) -> ArrayRef {
        let expr = create_expr(e, &b.schema()).unwrap();
        assert!(!expr.nullable(&b.schema()).unwrap());
        let out = expr.evaluate(b).unwrap().into_array(b.num_rows()).unwrap();
        assert_eq!(out.null_count(), 0);
        out
    }

    // Expected values: Spark 4.1.3 (PySpark), as in `spark_hash`'s tests.
    #[test]
    fn planned_from_proto_with_nulls_and_literals() {
        let b = batch(vec![
            Arc::new(Int32Array::from(vec![Some(1), None, Some(1)])),
            Arc::new(StringArray::from(vec![Some("abc"), Some("abc"), None])),
        ]);
        let children = || vec![column(0, pb::TypeId::Int32), column(1, pb::TypeId::Utf8)];
        // hash(1, 'abc'), hash(cast(null as int), 'abc'), hash(1, cast(null as string))
        let out = eval(&hash(pb::HashFunction::Murmur3, children()), &b);
        assert_eq!(out.as_primitive::<Int32Type>().values(), &[-1267584506, 1322437556, -559580957]);
        // xxhash64 of the same rows
        let out = eval(&hash(pb::HashFunction::Xxhash64, children()), &b);
        assert_eq!(
            out.as_primitive::<Int64Type>().values(),
            &[-3712979484889829503, 1423657621850124518, -6698625589789238999]
        );
        // Literal children: hash(cast(null as int), 5L) = 1607884268, xxhash64(cast(null as int), 5L) =
        // 6251837290343458373, on every row.
        let lits = || vec![literal(pb::TypeId::Int32, None), literal(pb::TypeId::Int64, Some(5))];
        let out = eval(&hash(pb::HashFunction::Murmur3, lits()), &b);
        assert_eq!(out.as_primitive::<Int32Type>().values(), &[1607884268; 3]);
        let out = eval(&hash(pb::HashFunction::Xxhash64, lits()), &b);
        assert_eq!(out.as_primitive::<Int64Type>().values(), &[6251837290343458373; 3]);
        // A NULL-typed child: hash(null) = 42 = xxhash64(null).
        let out = eval(&hash(pb::HashFunction::Xxhash64, vec![literal(pb::TypeId::Null, None)]), &b);
        assert_eq!(out.as_primitive::<Int64Type>().values(), &[42; 3]);
    }

    #[test]
    fn seeds_types_and_empty_batches() {
        // xxhash64(cast(-0.0 as double)) = xxhash64(0L), hash(cast(-0.0 as double)) = hash(0L)
        let b = batch(vec![Arc::new(Float64Array::from(vec![-0.0, 0.0]))]);
        let out = eval(&hash(pb::HashFunction::Xxhash64, vec![column(0, pb::TypeId::Float64)]), &b);
        assert_eq!(out.as_primitive::<Int64Type>().values(), &[-5252525462095825812; 2]);
        let out = eval(&hash(pb::HashFunction::Murmur3, vec![column(0, pb::TypeId::Float64)]), &b);
        assert_eq!(out.as_primitive::<Int32Type>().values(), &[-1670924195; 2]);
        // Another seed is the seed of every row (no value: the row's hash is the seed).
        let mut e = hash(pb::HashFunction::Xxhash64, vec![literal(pb::TypeId::Int32, None)]);
        if let Some(pb::expr::Kind::Hash(h)) = &mut e.kind {
            h.seed = -7_000_000_000;
        }
        assert_eq!(eval(&e, &b).as_primitive::<Int64Type>().values(), &[-7_000_000_000; 2]);
        // A murmur3 seed must be an int.
        let mut e = hash(pb::HashFunction::Murmur3, vec![column(0, pb::TypeId::Float64)]);
        if let Some(pb::expr::Kind::Hash(h)) = &mut e.kind {
            h.seed = 1 << 40;
        }
        assert!(create_expr(&e, &b.schema()).is_err());
        // No rows.
        let empty = b.slice(0, 0);
        let out = eval(&hash(pb::HashFunction::Murmur3, vec![column(0, pb::TypeId::Float64)]), &empty);
        assert_eq!(out.len(), 0);
        assert_eq!(out.data_type(), &DataType::Int32);
    }

    #[test]
    fn unsupported_children_are_plan_errors() {
        let list = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![Some(vec![Some(1)])]);
        let b = batch(vec![Arc::new(list)]);
        let child: Arc<dyn PhysicalExpr> = Arc::new(datafusion_physical_expr::expressions::Column::new("c0", 0));
        let err = HashExpr::try_new(HashFunction::XxHash64 { seed: 42 }, vec![child], &b.schema()).unwrap_err();
        assert!(err.to_string().contains("not supported"), "{err}");
        assert!(HashExpr::try_new(HashFunction::Murmur3 { seed: 42 }, vec![], &b.schema()).is_err());
    }
}
