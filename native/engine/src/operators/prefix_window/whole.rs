//! Whole-partition aggregates of a spilled partition, folded while its rows go to disk.
//!
//! Spark's `UnboundedWindowFunctionFrame` folds the whole partition once, forward, when the partition starts, and
//! every row of the partition reads that one value. A partition too large for memory is folded here in the same
//! order, batch by batch, as its rows are written to the spill file: the same running folds as a segmented
//! partition's running frames ([`super::segment`]) — exact and wrapping 64-bit sums, Spark's double sum, counts —
//! and MIN / MAX keeping the earlier value on ties. An ANSI `ARITHMETIC_OVERFLOW` is found by the fold, before
//! any row of the partition is handed out, as in Spark.
use arrow::array::{new_null_array, ArrayRef, RecordBatch};
use arrow::datatypes::DataType;
use datafusion_common::{DataFusionError, Result};

use super::extrema;
use super::segment::{fold_running, whole_partition, Running};
use super::spec::{Function, WindowSpec};

#[derive(Debug)]
enum Fold {
    /// SUM / COUNT / AVG: the fold and its value after the last folded row.
    Running(Running, Option<ArrayRef>),
    /// MIN / MAX so far (one value, possibly NULL).
    Extremum(Option<ArrayRef>),
}

/// One fold per whole-partition aggregate of the spec (`None` for the other expressions).
#[derive(Debug)]
pub struct WholeFolds {
    folds: Vec<Option<Fold>>,
}

impl WholeFolds {
    pub fn new(spec: &WindowSpec) -> Self {
        let folds = spec
            .exprs
            .iter()
            .map(|x| {
                whole_partition(x).then(|| match x.function {
                    Function::Min | Function::Max => Fold::Extremum(None),
                    _ => Fold::Running(Running::default(), None),
                })
            })
            .collect();
        Self { folds }
    }

    /// Folds the next rows of the partition; `true` when an ANSI sum overflows (Spark raises
    /// `ARITHMETIC_OVERFLOW` before the partition's first row).
    pub fn fold(&mut self, spec: &WindowSpec, batch: &RecordBatch) -> Result<bool> {
        let n = batch.num_rows();
        if n == 0 {
            return Ok(false);
        }
        // The measures the folds read (others left empty), and every row's frame ending after the batch.
        let mut values: Vec<ArrayRef> = vec![new_null_array(&DataType::Null, 0); spec.measures.len()];
        for (x, fold) in spec.exprs.iter().zip(&self.folds) {
            if let (Some(Fold::Running(..)), Some(m)) = (fold, x.measure) {
                if values[m].is_empty() {
                    values[m] = spec.measures[m].expr.evaluate(batch)?.into_array(n)?;
                }
            }
        }
        let ends = vec![n; n];
        for (x, fold) in spec.exprs.iter().zip(self.folds.iter_mut()) {
            match fold {
                None => {}
                Some(Fold::Running(r, last)) => {
                    // The batch starts at the partition's row `r.pos` (the rows folded so far).
                    let dropped = r.pos;
                    let (column, overflow) = fold_running(x, r, batch, &values, &ends, n - 1, n, dropped)?;
                    if overflow.is_some() {
                        return Ok(true);
                    }
                    *last = Some(column);
                }
                Some(Fold::Extremum(carry)) => {
                    let v = x.args[0].evaluate(batch)?.into_array(n)?;
                    let local = extrema::reduce(&v, x.function == Function::Max)?;
                    *carry = Some(match carry.take() {
                        Some(c) => extrema::combine(&c, &local, x.function == Function::Max)?,
                        None => local,
                    });
                }
            }
        }
        Ok(false)
    }

    /// The value of every whole-partition aggregate (one row each) once the partition's rows are all folded.
    pub fn values(self) -> Result<Vec<Option<ArrayRef>>> {
        self.folds
            .into_iter()
            .map(|f| match f {
                None => Ok(None),
                Some(Fold::Running(_, Some(v)) | Fold::Extremum(Some(v))) => Ok(Some(v)),
                Some(_) => Err(DataFusionError::Internal("a spilled window partition without rows".into())),
            })
            .collect()
    }
}
