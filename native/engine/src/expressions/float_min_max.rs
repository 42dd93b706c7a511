//! Spark's `min` / `max` over FLOAT and DOUBLE. Spark's buffer is `[value]` (NULL until the first non-NULL
//! input), updated and merged with `least` / `greatest`, which replace the buffer only when the new value is
//! strictly smaller / greater under `SQLOrderingUtil.compareDoubles` (`x == y` is equal, else
//! `java.lang.Double.compare`): -0.0 and 0.0 are equal, every NaN equals every other NaN (whatever its sign and
//! payload) and is greater than everything else, +Infinity included. On a tie the buffer keeps the value it saw
//! first, so `max(0.0, -0.0)` is 0.0 and `max(-0.0, 0.0)` is -0.0. DataFusion's `min` / `max` order by IEEE total
//! order instead (-0.0 < 0.0, negative NaNs below -Infinity).
//!
//! The state is the value itself, so `convert_to_state` (the adaptive partial's pass-through) is the identity.
use std::cmp::Ordering;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, PrimitiveArray};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{ArrowPrimitiveType, DataType, Field, FieldRef, Float32Type, Float64Type};
use datafusion_common::{exec_err, Result, ScalarValue};
use datafusion_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion_expr::utils::format_state_name;
use datafusion_expr::{Accumulator, AggregateUDF, AggregateUDFImpl, EmitTo, GroupsAccumulator, Signature, Volatility};

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct SparkFloatMinMax {
    signature: Signature,
    max: bool,
}

/// Spark's `max` (`max == true`) or `min` of FLOAT / DOUBLE.
pub fn spark_float_min_max(max: bool) -> Arc<AggregateUDF> {
    Arc::new(AggregateUDF::new_from_impl(SparkFloatMinMax { signature: Signature::any(1, Volatility::Immutable), max }))
}

/// A float as Spark orders it (`SQLOrderingUtil.compareDoubles` / `compareFloats`).
pub trait SparkFloat: Copy + PartialOrd + Send + Sync + std::fmt::Debug + 'static {
    fn spark_cmp(self, other: Self) -> Ordering {
        #[allow(clippy::eq_op)]
        let (a_nan, b_nan) = (self != self, other != other);
        if self == other {
            Ordering::Equal
        } else if a_nan || b_nan {
            a_nan.cmp(&b_nan)
        } else {
            self.partial_cmp(&other).unwrap_or(Ordering::Equal)
        }
    }
}
impl SparkFloat for f32 {}
impl SparkFloat for f64 {}

impl AggregateUDFImpl for SparkFloatMinMax {
    fn name(&self) -> &str {
        if self.max {
            "spark_float_max"
        } else {
            "spark_float_min"
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match &arg_types[0] {
            t @ (DataType::Float32 | DataType::Float64) => Ok(t.clone()),
            t => exec_err!("{}: FLOAT or DOUBLE expected, got {t}", self.name()),
        }
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![Field::new(format_state_name(args.name, "value"), args.return_field.data_type().clone(), true).into()])
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        match args.return_field.data_type() {
            t @ DataType::Float32 => Ok(Box::new(OneGroup::new(MinMaxGroups::<Float32Type>::new(self.max), t)?)),
            t @ DataType::Float64 => Ok(Box::new(OneGroup::new(MinMaxGroups::<Float64Type>::new(self.max), t)?)),
            t => exec_err!("{}: FLOAT or DOUBLE expected, got {t}", self.name()),
        }
    }

    fn groups_accumulator_supported(&self, _args: AccumulatorArgs) -> bool {
        true
    }

    fn create_groups_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn GroupsAccumulator>> {
        match args.return_field.data_type() {
            DataType::Float32 => Ok(Box::new(MinMaxGroups::<Float32Type>::new(self.max))),
            DataType::Float64 => Ok(Box::new(MinMaxGroups::<Float64Type>::new(self.max))),
            t => exec_err!("{}: FLOAT or DOUBLE expected, got {t}", self.name()),
        }
    }

    fn default_value(&self, data_type: &DataType) -> Result<ScalarValue> {
        ScalarValue::try_from(data_type)
    }
}

struct MinMaxGroups<T: ArrowPrimitiveType> {
    max: bool,
    values: Vec<T::Native>,
    set: Vec<bool>,
}

impl<T: ArrowPrimitiveType> MinMaxGroups<T>
where
    T::Native: SparkFloat,
{
    fn new(max: bool) -> Self {
        Self { max, values: vec![], set: vec![] }
    }

    fn fold(&mut self, values: &ArrayRef, group_indices: &[usize], filter: Option<&BooleanArray>, n: usize) {
        self.values.resize(n, T::default_value());
        self.set.resize(n, false);
        let v = values.as_primitive::<T>();
        let wanted = if self.max { Ordering::Greater } else { Ordering::Less };
        for (i, &g) in group_indices.iter().enumerate() {
            if v.is_null(i) || filter.is_some_and(|f| !(f.is_valid(i) && f.value(i))) {
                continue;
            }
            let x = v.value(i);
            // greatest(buffer, x) / least(buffer, x): x replaces the buffer only when strictly beyond it.
            if !self.set[g] || x.spark_cmp(self.values[g]) == wanted {
                self.values[g] = x;
                self.set[g] = true;
            }
        }
    }

    fn take(&mut self, emit_to: EmitTo) -> ArrayRef {
        let nulls = NullBuffer::from(emit_to.take_needed(&mut self.set));
        Arc::new(PrimitiveArray::<T>::new(emit_to.take_needed(&mut self.values).into(), Some(nulls)))
    }
}

impl<T: ArrowPrimitiveType> GroupsAccumulator for MinMaxGroups<T>
where
    T::Native: SparkFloat,
{
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.fold(&values[0], group_indices, opt_filter, total_num_groups);
        Ok(())
    }

    fn merge_batch(&mut self, values: &[ArrayRef], group_indices: &[usize], total_num_groups: usize) -> Result<()> {
        self.fold(&values[0], group_indices, None, total_num_groups);
        Ok(())
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        Ok(self.take(emit_to))
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        Ok(vec![self.take(emit_to)])
    }

    fn convert_to_state(&self, values: &[ArrayRef], opt_filter: Option<&BooleanArray>) -> Result<Vec<ArrayRef>> {
        let v = values[0].as_primitive::<T>();
        Ok(vec![match opt_filter {
            None => Arc::clone(&values[0]),
            Some(f) => {
                let keep = (0..v.len()).map(|i| v.is_valid(i) && f.is_valid(i) && f.value(i));
                Arc::new(PrimitiveArray::<T>::new(v.values().clone(), Some(NullBuffer::from_iter(keep))))
            }
        }])
    }

    fn size(&self) -> usize {
        self.values.capacity() * std::mem::size_of::<T::Native>() + self.set.capacity()
    }
}

/// The non-grouped form: group 0 of a groups accumulator. Its result and state are read by taking the state
/// out and merging it back (exact for min / max: merging into an empty buffer copies it), because an
/// `Accumulator` may be asked for its state or result more than once.
pub(crate) struct OneGroup<G> {
    inner: G,
}

impl<G: GroupsAccumulator> OneGroup<G> {
    fn new(mut inner: G, state_type: &DataType) -> Result<Self> {
        inner.merge_batch(&[arrow::array::new_empty_array(state_type)], &[], 1)?;
        Ok(Self { inner })
    }

    fn peek(&mut self, result: bool) -> Result<ArrayRef> {
        let state = self.inner.state(EmitTo::All)?;
        let out = if result {
            self.inner.merge_batch(&state, &[0], 1)?;
            self.inner.evaluate(EmitTo::All)?
        } else {
            Arc::clone(&state[0])
        };
        self.inner.merge_batch(&state, &[0], 1)?;
        Ok(out)
    }
}

impl<G> std::fmt::Debug for OneGroup<G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OneGroup")
    }
}

impl<G: GroupsAccumulator + Sync> Accumulator for OneGroup<G> {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let n = values[0].len();
        self.inner.update_batch(values, &vec![0; n], None, 1)
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let n = states[0].len();
        self.inner.merge_batch(states, &vec![0; n], 1)
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        ScalarValue::try_from_array(&self.peek(true)?, 0)
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![ScalarValue::try_from_array(&self.peek(false)?, 0)?])
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.inner.size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Float32Array, Float64Array};

    fn run(max: bool, v: &[Option<f64>]) -> Option<f64> {
        let mut g = MinMaxGroups::<Float64Type>::new(max);
        let a: ArrayRef = Arc::new(Float64Array::from(v.to_vec()));
        g.update_batch(&[a], &vec![0; v.len()], None, 1).unwrap();
        let out = g.evaluate(EmitTo::All).unwrap();
        let out = out.as_primitive::<Float64Type>();
        out.is_valid(0).then(|| out.value(0))
    }

    #[test]
    fn ties_of_zeros_keep_the_first() {
        assert_eq!(run(true, &[Some(0.0), Some(-0.0)]).unwrap().to_bits(), 0.0f64.to_bits());
        assert_eq!(run(true, &[Some(-0.0), Some(0.0)]).unwrap().to_bits(), (-0.0f64).to_bits());
        assert_eq!(run(false, &[Some(-0.0), None, Some(0.0)]).unwrap().to_bits(), (-0.0f64).to_bits());
        assert_eq!(run(false, &[Some(0.0), Some(-0.0)]).unwrap().to_bits(), 0.0f64.to_bits());
    }

    #[test]
    fn nan_is_above_infinity_and_all_nans_tie() {
        let neg_nan = f64::from_bits(0xfff8_0000_0000_0001);
        assert!(
            run(true, &[Some(f64::INFINITY), Some(neg_nan), Some(f64::NAN)]).unwrap().to_bits() == neg_nan.to_bits()
        );
        assert_eq!(run(false, &[Some(f64::NAN), Some(f64::INFINITY), Some(neg_nan)]), Some(f64::INFINITY));
        assert_eq!(run(false, &[Some(neg_nan), Some(f64::NEG_INFINITY)]), Some(f64::NEG_INFINITY));
        assert_eq!(run(true, &[None, None]), None);
    }

    #[test]
    fn merge_keeps_the_buffer_on_ties_and_floats_work() {
        let mut g = MinMaxGroups::<Float32Type>::new(true);
        let s: ArrayRef = Arc::new(Float32Array::from(vec![Some(-0.0f32), Some(0.0), None, Some(1.0)]));
        g.merge_batch(&[s], &[0, 0, 1, 1], 2).unwrap();
        let out = g.evaluate(EmitTo::All).unwrap();
        let out = out.as_primitive::<Float32Type>();
        assert_eq!(out.value(0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(out.value(1), 1.0);
    }

    #[test]
    fn non_grouped_evaluates_repeatedly() {
        let udaf = SparkFloatMinMax { signature: Signature::any(1, Volatility::Immutable), max: false };
        let mut acc = OneGroup::new(MinMaxGroups::<Float64Type>::new(udaf.max), &DataType::Float64).unwrap();
        assert_eq!(acc.evaluate().unwrap(), ScalarValue::Float64(None));
        acc.update_batch(&[Arc::new(Float64Array::from(vec![Some(3.0), Some(-0.0), Some(0.0)]))]).unwrap();
        for _ in 0..2 {
            match acc.evaluate().unwrap() {
                ScalarValue::Float64(Some(v)) => assert_eq!(v.to_bits(), (-0.0f64).to_bits()),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(acc.state().unwrap().len(), 1);
        acc.update_batch(&[Arc::new(Float64Array::from(vec![Some(-1.0)]))]).unwrap();
        assert_eq!(acc.evaluate().unwrap(), ScalarValue::Float64(Some(-1.0)));
    }
}
