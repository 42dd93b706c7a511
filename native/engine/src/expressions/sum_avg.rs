//! Spark's `sum` and `avg` over BIGINT and DOUBLE (integral inputs are cast to BIGINT for `sum`, every
//! non-decimal input to DOUBLE for `avg`), with Spark's aggregation buffers and semantics — DataFusion's differ:
//!
//! - `sum`: buffer `[sum]`, NULL until the first non-NULL input; values are added one at a time in input
//!   order (DataFusion's non-grouped `sum` adds doubles in SIMD lanes, which rounds differently). BIGINT:
//!   wrap-around (LEGACY) or `ARITHMETIC_OVERFLOW` "long overflow" (ANSI), both when adding inputs and when
//!   merging buffers, as Spark's `Add` does in `Sum`'s update and merge expressions.
//! - `avg`: buffer `[sum: DOUBLE, count: BIGINT]`, in that order, the sum starting at 0.0 (never NULL, where
//!   DataFusion's `avg` keeps `[count: UInt64, sum]` with a NULL sum for groups without values); result
//!   `sum / count`, NULL when the count is 0 (Spark divides in LEGACY mode). Doubles never raise, so ANSI does
//!   not change `avg`.
//!
//! Both implement `GroupsAccumulator::convert_to_state` (one row → one buffer), which the adaptive partial
//! aggregate uses when it passes rows through.
use std::hash::Hash;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Float64Array, Int64Array};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{DataType, Field, FieldRef, Float64Type, Int64Type};
use datafusion_common::{exec_err, Result, ScalarValue};
use datafusion_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion_expr::utils::format_state_name;
use datafusion_expr::{Accumulator, AggregateUDF, AggregateUDFImpl, EmitTo, GroupsAccumulator, Signature, Volatility};

use crate::error::SparkError;

/// `sum` (`avg == false`) or `avg`; `ansi`: BIGINT overflow raises instead of wrapping around.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct SparkSumAvg {
    signature: Signature,
    avg: bool,
    ansi: bool,
}

pub fn spark_sum(ansi: bool) -> Arc<AggregateUDF> {
    Arc::new(AggregateUDF::new_from_impl(SparkSumAvg {
        signature: Signature::any(1, Volatility::Immutable),
        avg: false,
        ansi,
    }))
}

pub fn spark_avg() -> Arc<AggregateUDF> {
    Arc::new(AggregateUDF::new_from_impl(SparkSumAvg {
        signature: Signature::any(1, Volatility::Immutable),
        avg: true,
        ansi: false,
    }))
}

/// Adds in Spark's manner for the sum's type.
#[derive(Debug, Clone, Copy)]
enum Adder {
    Long { ansi: bool },
    Double,
}

impl SparkSumAvg {
    fn adder(&self, t: &DataType) -> Result<Adder> {
        match (t, self.avg) {
            (DataType::Int64, false) => Ok(Adder::Long { ansi: self.ansi }),
            (DataType::Float64, _) => Ok(Adder::Double),
            _ => exec_err!("Spark {}: unsupported input type {t}", self.name()),
        }
    }
}

impl AggregateUDFImpl for SparkSumAvg {
    fn name(&self) -> &str {
        if self.avg {
            "spark_avg"
        } else {
            "spark_sum"
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match (&arg_types[0], self.avg) {
            (DataType::Int64, false) => Ok(DataType::Int64),
            (DataType::Float64, _) => Ok(DataType::Float64),
            (t, _) => exec_err!("Spark {}: unsupported input type {t} (cast to BIGINT or DOUBLE first)", self.name()),
        }
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        let t = args.return_field.data_type().clone();
        Ok(if self.avg {
            vec![
                Field::new(format_state_name(args.name, "sum"), DataType::Float64, false).into(),
                Field::new(format_state_name(args.name, "count"), DataType::Int64, false).into(),
            ]
        } else {
            vec![Field::new(format_state_name(args.name, "sum"), t, true).into()]
        })
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let adder = self.adder(args.return_field.data_type())?;
        Ok(Box::new(SumAvgAccumulator { inner: SumAvgGroups::new(adder, self.avg) }))
    }

    fn groups_accumulator_supported(&self, _args: AccumulatorArgs) -> bool {
        true
    }

    fn create_groups_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn GroupsAccumulator>> {
        Ok(Box::new(SumAvgGroups::new(self.adder(args.return_field.data_type())?, self.avg)))
    }

    fn default_value(&self, data_type: &DataType) -> Result<ScalarValue> {
        ScalarValue::try_from(data_type)
    }
}

/// Sums as i64 bits or f64, per group. For `sum`, `seen` says whether the group has a (non-NULL) sum; for
/// `avg`, the sum is never NULL and `counts` holds the number of non-NULL inputs.
struct SumAvgGroups {
    adder: Adder,
    avg: bool,
    longs: Vec<i64>,
    doubles: Vec<f64>,
    seen: Vec<bool>,
    counts: Vec<i64>,
}

impl SumAvgGroups {
    fn new(adder: Adder, avg: bool) -> Self {
        Self { adder, avg, longs: vec![], doubles: vec![], seen: vec![], counts: vec![] }
    }

    fn resize(&mut self, n: usize) {
        match self.adder {
            Adder::Long { .. } => self.longs.resize(n, 0),
            Adder::Double => self.doubles.resize(n, 0.0),
        }
        if self.avg {
            self.counts.resize(n, 0);
        } else {
            self.seen.resize(n, false);
        }
    }

    /// Adds `values` (the sum's type) row by row to the groups; `counts`: avg's counts to add (merge), or
    /// None to count non-NULL values (update).
    fn add(
        &mut self,
        values: &ArrayRef,
        counts: Option<&Int64Array>,
        group_indices: &[usize],
        filter: Option<&BooleanArray>,
    ) -> Result<()> {
        let keep = |i: usize| filter.is_none_or(|f| f.is_valid(i) && f.value(i));
        match self.adder {
            Adder::Long { ansi } => {
                let v = values.as_primitive::<Int64Type>();
                for (i, &g) in group_indices.iter().enumerate() {
                    if !keep(i) || v.is_null(i) {
                        continue;
                    }
                    let x = v.value(i);
                    // Spark: coalesce(coalesce(sum, 0) + x, sum); the first value is 0 + x.
                    let s = self.longs[g];
                    self.longs[g] = if ansi {
                        s.checked_add(x).ok_or_else(|| SparkError::long_sum_overflow().into_datafusion())?
                    } else {
                        s.wrapping_add(x)
                    };
                    self.seen[g] = true;
                }
            }
            Adder::Double => {
                let v = values.as_primitive::<Float64Type>();
                for (i, &g) in group_indices.iter().enumerate() {
                    if !keep(i) {
                        continue;
                    }
                    if v.is_null(i) {
                        // avg: sum + coalesce(x, 0.0) (0.0 + -0.0 is 0.0, the sum starts at 0.0 and so can
                        // never be -0.0: adding 0.0 changes nothing); sum: unchanged.
                        continue;
                    }
                    self.doubles[g] += v.value(i);
                    if self.avg {
                        self.counts[g] += counts.map_or(1, |c| c.value(i));
                    } else {
                        self.seen[g] = true;
                    }
                }
                if let (true, Some(c)) = (self.avg, counts) {
                    // Buffers whose sum was NULL cannot come from Spark or from us; their counts still merge.
                    for (i, &g) in group_indices.iter().enumerate() {
                        if keep(i) && v.is_null(i) && c.is_valid(i) {
                            self.counts[g] += c.value(i);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn take_sums(&mut self, emit_to: EmitTo) -> ArrayRef {
        let nulls = (!self.avg).then(|| NullBuffer::from(emit_to.take_needed(&mut self.seen)));
        match self.adder {
            Adder::Long { .. } => Arc::new(Int64Array::new(emit_to.take_needed(&mut self.longs).into(), nulls)),
            Adder::Double => Arc::new(Float64Array::new(emit_to.take_needed(&mut self.doubles).into(), nulls)),
        }
    }
}

impl GroupsAccumulator for SumAvgGroups {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.resize(total_num_groups);
        self.add(&values[0], None, group_indices, opt_filter)
    }

    fn merge_batch(&mut self, values: &[ArrayRef], group_indices: &[usize], total_num_groups: usize) -> Result<()> {
        self.resize(total_num_groups);
        if self.avg {
            let counts = values[1].as_primitive::<Int64Type>().clone();
            self.add(&values[0], Some(&counts), group_indices, None)
        } else {
            self.add(&values[0], None, group_indices, None)
        }
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        if !self.avg {
            return Ok(self.take_sums(emit_to));
        }
        let sums = emit_to.take_needed(&mut self.doubles);
        let counts = emit_to.take_needed(&mut self.counts);
        Ok(Arc::new(sums.iter().zip(&counts).map(|(s, &c)| (c != 0).then(|| s / c as f64)).collect::<Float64Array>()))
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        if !self.avg {
            return Ok(vec![self.take_sums(emit_to)]);
        }
        let counts = Int64Array::from(emit_to.take_needed(&mut self.counts));
        Ok(vec![self.take_sums(emit_to), Arc::new(counts)])
    }

    fn convert_to_state(&self, values: &[ArrayRef], opt_filter: Option<&BooleanArray>) -> Result<Vec<ArrayRef>> {
        let v = &values[0];
        let keep = |i: usize| v.is_valid(i) && opt_filter.is_none_or(|f| f.is_valid(i) && f.value(i));
        if !self.avg {
            return Ok(vec![match opt_filter {
                None => Arc::clone(v),
                Some(_) => {
                    let nulls = NullBuffer::from((0..v.len()).map(keep).collect::<Vec<_>>());
                    match self.adder {
                        Adder::Long { .. } => {
                            Arc::new(Int64Array::new(v.as_primitive::<Int64Type>().values().clone(), Some(nulls)))
                        }
                        Adder::Double => {
                            Arc::new(Float64Array::new(v.as_primitive::<Float64Type>().values().clone(), Some(nulls)))
                        }
                    }
                }
            }]);
        }
        let d = v.as_primitive::<Float64Type>();
        let sums: Float64Array = (0..v.len()).map(|i| Some(if keep(i) { 0.0 + d.value(i) } else { 0.0 })).collect();
        let counts: Int64Array = (0..v.len()).map(|i| Some(keep(i) as i64)).collect();
        Ok(vec![Arc::new(sums), Arc::new(counts)])
    }

    fn size(&self) -> usize {
        self.longs.capacity() * 8 + self.doubles.capacity() * 8 + self.seen.capacity() + self.counts.capacity() * 8
    }
}

/// The non-grouped form: one group.
struct SumAvgAccumulator {
    inner: SumAvgGroups,
}

impl std::fmt::Debug for SumAvgAccumulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SumAvgAccumulator(avg={})", self.inner.avg)
    }
}

impl SumAvgAccumulator {
    fn groups(n: usize) -> Vec<usize> {
        vec![0; n]
    }

    fn peek(&mut self, f: impl FnOnce(&mut SumAvgGroups) -> Result<Vec<ArrayRef>>) -> Result<Vec<ScalarValue>> {
        // Evaluate on a copy: an `Accumulator` may be asked for its state or result more than once.
        let mut copy = SumAvgGroups {
            adder: self.inner.adder,
            avg: self.inner.avg,
            longs: self.inner.longs.clone(),
            doubles: self.inner.doubles.clone(),
            seen: self.inner.seen.clone(),
            counts: self.inner.counts.clone(),
        };
        copy.resize(1);
        f(&mut copy)?.iter().map(|a| ScalarValue::try_from_array(a, 0)).collect()
    }
}

impl Accumulator for SumAvgAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let n = values[0].len();
        self.inner.update_batch(values, &Self::groups(n), None, 1)
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let n = states[0].len();
        self.inner.merge_batch(states, &Self::groups(n), 1)
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(self.peek(|g| Ok(vec![g.evaluate(EmitTo::All)?]))?.remove(0))
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.peek(|g| g.state(EmitTo::All))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.inner.size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::find_spark_error;

    fn longs(v: &[Option<i64>]) -> ArrayRef {
        Arc::new(Int64Array::from(v.to_vec()))
    }

    fn doubles(v: &[Option<f64>]) -> ArrayRef {
        Arc::new(Float64Array::from(v.to_vec()))
    }

    fn sum_groups(ansi: bool) -> SumAvgGroups {
        SumAvgGroups::new(Adder::Long { ansi }, false)
    }

    #[test]
    fn long_sum_wraps_in_legacy_and_raises_in_ansi() {
        let input = longs(&[Some(i64::MAX), Some(1), Some(-1), None]);
        let mut legacy = sum_groups(false);
        legacy.update_batch(&[Arc::clone(&input)], &[0, 0, 0, 1], None, 2).unwrap();
        let out = legacy.evaluate(EmitTo::All).unwrap();
        // MAX + 1 wraps to MIN, then -1 wraps back to MAX; group 1 saw only NULL.
        assert_eq!(out.as_primitive::<Int64Type>(), &Int64Array::from(vec![Some(i64::MAX), None]));

        // ANSI raises at MAX + 1 even though the final sum would fit again (as Spark's row-by-row Add).
        let err = sum_groups(true).update_batch(&[input], &[0, 0, 0, 1], None, 2).unwrap_err();
        let e = find_spark_error(&err).expect("a SparkError");
        assert_eq!(e.error_class, "ARITHMETIC_OVERFLOW");
    }

    #[test]
    fn long_sum_merge_checks_overflow_in_ansi() {
        let mut g = sum_groups(true);
        g.merge_batch(&[longs(&[Some(i64::MAX), None])], &[0, 0], 1).unwrap();
        assert!(g.merge_batch(&[longs(&[Some(1)])], &[0], 1).is_err());
    }

    #[test]
    fn avg_buffer_is_sum_then_count_with_zero_sum_for_empty_groups() {
        let mut g = SumAvgGroups::new(Adder::Double, true);
        g.update_batch(&[doubles(&[Some(1.0), None, Some(2.0)])], &[0, 1, 0], None, 2).unwrap();
        let state = g.state(EmitTo::All).unwrap();
        assert_eq!(state[0].as_primitive::<Float64Type>(), &Float64Array::from(vec![3.0, 0.0]));
        assert_eq!(state[1].as_primitive::<Int64Type>(), &Int64Array::from(vec![2, 0]));
        let mut f = SumAvgGroups::new(Adder::Double, true);
        f.merge_batch(&state, &[0, 1], 2).unwrap();
        let out = f.evaluate(EmitTo::All).unwrap();
        assert_eq!(out.as_primitive::<Float64Type>(), &Float64Array::from(vec![Some(1.5), None]));
    }

    #[test]
    fn convert_to_state_matches_update() {
        let g = SumAvgGroups::new(Adder::Double, true);
        let s = g.convert_to_state(&[doubles(&[Some(-0.0), None])], None).unwrap();
        assert_eq!(s[0].as_primitive::<Float64Type>(), &Float64Array::from(vec![0.0, 0.0]));
        assert!(s[0].as_primitive::<Float64Type>().value(0).is_sign_positive());
        assert_eq!(s[1].as_primitive::<Int64Type>(), &Int64Array::from(vec![1, 0]));
    }

    #[test]
    fn non_grouped_sums_in_input_order() {
        // Sequential: ((0 + 1e16) + 1) + 1 = 1e16 (each +1 rounds away); a pairwise sum would give 1e16 + 2.
        let mut a = SumAvgAccumulator { inner: SumAvgGroups::new(Adder::Double, false) };
        a.update_batch(&[doubles(&[Some(1e16), Some(1.0), Some(1.0)])]).unwrap();
        assert_eq!(a.evaluate().unwrap(), ScalarValue::Float64(Some(1e16)));
        assert_eq!(a.evaluate().unwrap(), ScalarValue::Float64(Some(1e16)));
    }
}
