//! One task's slice of Spark's `RangeExec` (`spark.range(...)`), generated natively: its first value, step and
//! row count come from the JVM, which splits the range exactly as Spark's generated code does, so the values
//! never pass through `UnsafeRow`s.

use std::sync::Arc;

use arrow::array::Int64Array;
use arrow::datatypes::{DataType, SchemaRef};
use arrow::error::ArrowError;
use arrow::record_batch::{RecordBatch, RecordBatchReader};

/// `count` values `first, first + step, ...` in batches of `batch_size` rows, as the plan's one BIGINT column.
/// `alive` runs before every batch: a killed task stops there (nothing else in a plan fed by a range may call
/// back into the JVM before its end, e.g. a global aggregate over billions of rows).
pub struct RangeReader<F> {
    schema: SchemaRef,
    next: i64,
    step: i64,
    remaining: u64,
    batch_size: usize,
    alive: F,
}

impl<F: FnMut() -> datafusion_common::Result<()>> RangeReader<F> {
    pub fn new(
        schema: SchemaRef,
        first: i64,
        step: i64,
        count: u64,
        batch_size: usize,
        alive: F,
    ) -> Result<Self, ArrowError> {
        if schema.fields().len() != 1 || schema.field(0).data_type() != &DataType::Int64 {
            return Err(ArrowError::SchemaError(format!("a range input has one BIGINT column, not {schema}")));
        }
        Ok(Self { schema, next: first, step, remaining: count, batch_size: batch_size.max(1), alive })
    }
}

impl<F: FnMut() -> datafusion_common::Result<()>> Iterator for RangeReader<F> {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.remaining == 0 {
            return None;
        }
        if let Err(e) = (self.alive)() {
            self.remaining = 0;
            return Some(Err(ArrowError::ExternalError(Box::new(e))));
        }
        let n = self.remaining.min(self.batch_size as u64);
        let (first, step) = (self.next, self.step);
        // Every value lies in the range, so wrapping arithmetic is exact; only the value after the last may wrap.
        let values: Vec<i64> = (0..n as i64).map(|k| first.wrapping_add(k.wrapping_mul(step))).collect();
        self.next = first.wrapping_add((n as i64).wrapping_mul(step));
        self.remaining -= n;
        Some(RecordBatch::try_new(self.schema.clone(), vec![Arc::new(Int64Array::from(values))]))
    }
}

impl<F: FnMut() -> datafusion_common::Result<()>> RecordBatchReader for RangeReader<F> {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::AsArray;
    use arrow::datatypes::{Field, Int64Type, Schema};

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]))
    }

    fn values(first: i64, step: i64, count: u64, batch: usize) -> (Vec<i64>, Vec<usize>) {
        let mut out = Vec::new();
        let mut sizes = Vec::new();
        for b in RangeReader::new(schema(), first, step, count, batch, || Ok(())).unwrap() {
            let b = b.unwrap();
            sizes.push(b.num_rows());
            out.extend(b.column(0).as_primitive::<Int64Type>().values().iter().copied());
        }
        (out, sizes)
    }

    #[test]
    fn values_and_batches() {
        assert_eq!(values(5, 3, 7, 3), (vec![5, 8, 11, 14, 17, 20, 23], vec![3, 3, 1]));
        assert_eq!(values(10, -4, 4, 8), (vec![10, 6, 2, -2], vec![4]));
        assert_eq!(values(0, 1, 0, 8), (vec![], vec![]));
        // Up to the ends of BIGINT: the values are exact, the one after the last wraps unseen.
        assert_eq!(values(i64::MAX - 2, 1, 3, 2).0, vec![i64::MAX - 2, i64::MAX - 1, i64::MAX]);
        assert_eq!(values(i64::MIN + 4, -2, 3, 2).0, vec![i64::MIN + 4, i64::MIN + 2, i64::MIN]);
        assert_eq!(values(i64::MIN, i64::MAX, 3, 1).0, vec![i64::MIN, -1, i64::MAX - 1]);
    }

    #[test]
    fn rejects_another_schema() {
        let s = Arc::new(Schema::new(vec![Field::new("id", DataType::Int32, false)]));
        assert!(RangeReader::new(s, 0, 1, 1, 1, || Ok(())).is_err());
    }

    #[test]
    fn stops_when_the_task_is_killed() {
        let reader = RangeReader::new(schema(), 0, 1, u64::MAX, 4, crate::operators::shared::killed_after(2)).unwrap();
        let got: Vec<_> = reader.collect();
        assert_eq!(got.len(), 3);
        assert!(got[..2].iter().all(|b| b.as_ref().unwrap().num_rows() == 4));
        assert!(got[2].as_ref().unwrap_err().to_string().contains("task killed"));
    }
}
