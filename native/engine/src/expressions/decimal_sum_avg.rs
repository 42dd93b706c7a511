//! Spark's `sum` and `avg` of DECIMAL(p, s) (Spark 4.1's `Sum` / `Average`), with Spark's buffers:
//!
//! - `sum`: result and buffer sum DECIMAL(min(38, p + 10), s); buffer `[sum, isEmpty]`, starting at `[0, true]`.
//!   Update: `sum + x` for non-NULL `x` (`DecimalAddNoOverflowCheck`), `isEmpty &= x IS NULL`. Merge: NULL when
//!   either side overflowed (`!isEmpty AND sum IS NULL`), else the sum; `isEmpty` and-ed. Result: NULL when
//!   `isEmpty`; else `CheckOverflowInSum`: a NULL sum is an overflow (NULL, or `ARITHMETIC_OVERFLOW` "Overflow
//!   in sum of decimals" under ANSI), a sum beyond the precision NULL or `NUMERIC_VALUE_OUT_OF_RANGE`.
//! - `avg`: result DECIMAL(min(38, p + 4), min(38, s + 4)); buffer `[sum: DECIMAL(min(38, p + 10), s), count]`
//!   starting at `[0, 0]`; update adds `coalesce(x, 0)` and counts non-NULL inputs; merge adds sums (NULL if
//!   either is) and counts. Result: NULL when the count is 0; a NULL sum as above; else
//!   `DecimalDivideWithOverflowCheck`: `sum / count` rounded HALF_UP to 39 digits (`Decimal./`), then HALF_UP to
//!   the result's scale, out of range → NULL or `NUMERIC_VALUE_OUT_OF_RANGE`.
//!
//! Where the sum becomes NULL: Spark adds without a check, and the check happens where the value is written
//! into an `UnsafeRow`, whose `setDecimal` / `UnsafeRowWriter.write` store NULL for a value that does not fit
//! the buffer's precision. A grouped aggregate keeps its buffers in `UnsafeRow`s, so every add is checked
//! (`bounded`); a global aggregate's generated code keeps its buffer in local variables, unbounded, and only its
//! output row (the partial state) is checked. Sums are kept in 256 bits (`i256`), which no sum of 2^63 values of
//! 38 digits can leave.
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Decimal128Array, Int64Array};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{i256, DataType, Decimal128Type, Field, FieldRef, Int64Type};
use datafusion_common::{exec_err, Result, ScalarValue};
use datafusion_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion_expr::utils::format_state_name;
use datafusion_expr::{Accumulator, AggregateUDF, AggregateUDFImpl, EmitTo, GroupsAccumulator, Signature, Volatility};

use super::arithmetic::{fits, p10};
use crate::error::SparkError;

/// The types and modes of one decimal `sum` / `avg`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DecimalSumAvgSpec {
    pub avg: bool,
    /// ANSI: overflow raises at evaluation (`try_sum` / `try_avg` of decimals behave as LEGACY).
    pub ansi: bool,
    /// Every add checked against the sum's precision (grouped aggregates), or only the state output (global).
    pub bounded: bool,
    /// The state output is checked (a NULL sum where it does not fit): Spark writes it into an `UnsafeRow` for
    /// the exchange. Not when a global partial feeds its final in the same plan (no exchange between them, one
    /// generated-code stage in Spark, which passes the unchecked sum on).
    pub check_state: bool,
    /// The buffer sum's DECIMAL(precision, scale).
    pub sum_precision: u8,
    pub scale: i8,
    /// The result's DECIMAL(precision, scale) (the sum's for `sum`).
    pub result_precision: u8,
    pub result_scale: i8,
    /// The query context id its ANSI overflow errors carry (Spark's `Sum` / `Average` pass theirs on).
    pub query_context: i32,
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct SparkDecimalSumAvg {
    signature: Signature,
    pub spec: DecimalSumAvgSpec,
}

pub fn spark_decimal_sum_avg(spec: DecimalSumAvgSpec) -> Arc<AggregateUDF> {
    Arc::new(AggregateUDF::new_from_impl(SparkDecimalSumAvg {
        signature: Signature::any(1, Volatility::Immutable),
        spec,
    }))
}

/// The unscaled value as Spark prints a decimal in its error messages.
fn decimal_string(v: i256, scale: i8) -> String {
    let digits = v.wrapping_abs().to_string();
    let scale = scale.max(0) as usize;
    let sign = if v.is_negative() { "-" } else { "" };
    if scale == 0 {
        return format!("{sign}{digits}");
    }
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (int, frac) = padded.split_at(padded.len() - scale);
    format!("{sign}{int}.{frac}")
}

/// `sum / count` (`sum` at `scale`) as Spark's `Decimal./` computes it before `toPrecision` — the exact quotient at
/// 39 places (MAX_SCALE + 1), HALF_UP — in `BigDecimal.toString` form: the value an average's
/// NUMERIC_VALUE_OUT_OF_RANGE error prints. Long division, so no intermediate overflows.
fn spark_quotient_string(sum: i256, scale: i8, count: i64) -> String {
    const PLACES: usize = 39;
    let c = count.unsigned_abs() as i128;
    let n = sum.wrapping_abs();
    let d = i256::from_i128(c);
    let mut digits: Vec<u8> = n.wrapping_div(d).to_string().into_bytes();
    let mut r = n.wrapping_rem(d).as_i128();
    for _ in 0..(PLACES as i32 - scale as i32).max(0) {
        r *= 10;
        digits.push(b'0' + (r / c) as u8);
        r %= c;
    }
    if 2 * r >= c {
        // HALF_UP: carry the increment through trailing nines.
        let mut i = digits.len();
        loop {
            if i == 0 {
                digits.insert(0, b'1');
                break;
            }
            i -= 1;
            if digits[i] == b'9' {
                digits[i] = b'0';
            } else {
                digits[i] += 1;
                break;
            }
        }
    }
    while digits.len() <= PLACES {
        digits.insert(0, b'0');
    }
    let (int, frac) = digits.split_at(digits.len() - PLACES);
    let int = std::str::from_utf8(int).unwrap().trim_start_matches('0');
    let sign = if sum.is_negative() != (count < 0) { "-" } else { "" };
    format!("{sign}{}.{}", if int.is_empty() { "0" } else { int }, std::str::from_utf8(frac).unwrap())
}

fn sum_overflow(spec: &DecimalSumAvgSpec) -> datafusion_common::DataFusionError {
    let f = if spec.avg { "try_avg" } else { "try_sum" };
    SparkError::arithmetic_overflow(
        "Overflow in sum of decimals",
        &format!(" Use '{f}' to tolerate overflow and return NULL instead."),
    )
    .with_query_context(spec.query_context)
    .into_datafusion()
}

impl AggregateUDFImpl for SparkDecimalSumAvg {
    fn name(&self) -> &str {
        if self.spec.avg {
            "spark_decimal_avg"
        } else {
            "spark_decimal_sum"
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match &arg_types[0] {
            DataType::Decimal128(_, s) if *s == self.spec.scale => {
                Ok(DataType::Decimal128(self.spec.result_precision, self.spec.result_scale))
            }
            t => exec_err!("{}: DECIMAL(_, {}) expected, got {t}", self.name(), self.spec.scale),
        }
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        let sum = DataType::Decimal128(self.spec.sum_precision, self.spec.scale);
        Ok(vec![
            Field::new(format_state_name(args.name, "sum"), sum, true).into(),
            if self.spec.avg {
                Field::new(format_state_name(args.name, "count"), DataType::Int64, true).into()
            } else {
                Field::new(format_state_name(args.name, "isEmpty"), DataType::Boolean, false).into()
            },
        ])
    }

    fn accumulator(&self, _args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(DecimalOneGroup { inner: DecimalGroups::new(self.spec) }))
    }

    fn groups_accumulator_supported(&self, _args: AccumulatorArgs) -> bool {
        true
    }

    fn create_groups_accumulator(&self, _args: AccumulatorArgs) -> Result<Box<dyn GroupsAccumulator>> {
        Ok(Box::new(DecimalGroups::new(self.spec)))
    }

    fn default_value(&self, data_type: &DataType) -> Result<ScalarValue> {
        ScalarValue::try_from(data_type)
    }
}

/// Per group: the sum (256 bits), whether it is NULL (overflowed), and `isEmpty` (sum) or the count (avg).
#[derive(Clone)]
struct DecimalGroups {
    spec: DecimalSumAvgSpec,
    sums: Vec<i256>,
    null_sum: Vec<bool>,
    empty: Vec<bool>,
    counts: Vec<i64>,
}

impl DecimalGroups {
    fn new(spec: DecimalSumAvgSpec) -> Self {
        Self { spec, sums: vec![], null_sum: vec![], empty: vec![], counts: vec![] }
    }

    fn resize(&mut self, n: usize) {
        self.sums.resize(n, i256::ZERO);
        self.null_sum.resize(n, false);
        if self.spec.avg {
            self.counts.resize(n, 0);
        } else {
            self.empty.resize(n, true);
        }
    }

    /// `sum + x` where `sum` is not NULL; a bounded buffer becomes NULL when the result does not fit.
    fn add_to(&mut self, g: usize, x: i256) {
        let s = self.sums[g].wrapping_add(x);
        // `fits` looks 10^precision up in a table: raising it per added row was most of the aggregate's time.
        if self.spec.bounded && !fits(s, self.spec.sum_precision) {
            self.null_sum[g] = true;
            self.sums[g] = i256::ZERO;
        } else {
            self.sums[g] = s;
        }
    }

    /// The sums as the state column: NULL where overflowed or (unbounded) beyond the precision.
    fn take_sums(&mut self, emit_to: EmitTo) -> ArrayRef {
        let sums = emit_to.take_needed(&mut self.sums);
        let nulls = emit_to.take_needed(&mut self.null_sum);
        let p = self.spec.sum_precision;
        let check = self.spec.check_state;
        let valid: Vec<bool> = sums.iter().zip(&nulls).map(|(s, &n)| !n && (!check || fits(*s, p))).collect();
        // Unchecked: a sum beyond 128 bits is out of range for any result; keep it out of range, saturated.
        let saturate =
            |s: &i256| s.to_i128().unwrap_or(if s.is_negative() { -(10i128.pow(38)) } else { 10i128.pow(38) });
        let values: Vec<i128> = sums.iter().zip(&valid).map(|(s, &v)| if v { saturate(s) } else { 0 }).collect();
        Arc::new(
            Decimal128Array::new(values.into(), Some(NullBuffer::from(valid)))
                .with_precision_and_scale(p, self.spec.scale)
                .expect("valid decimal type"),
        )
    }

    /// `sum / count` as `DecimalDivideWithOverflowCheck` computes it: the quotient rounded HALF_UP to 39
    /// fractional digits, then HALF_UP to the result's scale.
    fn divide(&self, sum: i256, count: i64) -> i256 {
        let shift = (self.spec.result_scale - self.spec.scale) as i32;
        let n = sum.wrapping_abs().wrapping_mul(p10(shift));
        let d = i256::from_i128(count.unsigned_abs() as i128);
        let (q, r) = (n.wrapping_div(d), n.wrapping_rem(d));
        // Rounding q + r/d at 39 - result_scale more digits first, then at the result's scale, rounds up
        // iff r/d >= 1/2 - 1/2 * 10^-k, i.e. 2 r 10^k >= d (10^k - 1).
        let k = (39 - self.spec.result_scale as i32).max(0);
        let tk = p10(k);
        let up = i256::from_i128(2).wrapping_mul(r).wrapping_mul(tk) >= d.wrapping_mul(tk.wrapping_sub(i256::ONE));
        let q = if up { q.wrapping_add(i256::ONE) } else { q };
        if sum.is_negative() != (count < 0) {
            q.wrapping_neg()
        } else {
            q
        }
    }

    fn results(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let sums = emit_to.take_needed(&mut self.sums);
        let nulls = emit_to.take_needed(&mut self.null_sum);
        let (empty, counts) = if self.spec.avg {
            (vec![], emit_to.take_needed(&mut self.counts))
        } else {
            (emit_to.take_needed(&mut self.empty), vec![])
        };
        let spec = self.spec;
        let mut out = Vec::with_capacity(sums.len());
        for i in 0..sums.len() {
            let none = if spec.avg { counts[i] == 0 } else { empty[i] };
            if none {
                out.push(None);
                continue;
            }
            if nulls[i] {
                if spec.ansi {
                    return Err(sum_overflow(&spec));
                }
                out.push(None);
                continue;
            }
            let v = if spec.avg { self.divide(sums[i], counts[i]) } else { sums[i] };
            if fits(v, spec.result_precision) {
                out.push(Some(v.as_i128()));
            } else if spec.ansi {
                let value = if spec.avg {
                    spark_quotient_string(sums[i], spec.scale, counts[i])
                } else {
                    decimal_string(v, spec.result_scale)
                };
                return Err(SparkError::numeric_value_out_of_range(&value, spec.result_precision, spec.result_scale)
                    .with_query_context(spec.query_context)
                    .into_datafusion());
            } else {
                out.push(None);
            }
        }
        Ok(Arc::new(Decimal128Array::from(out).with_precision_and_scale(spec.result_precision, spec.result_scale)?))
    }
}

impl GroupsAccumulator for DecimalGroups {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.resize(total_num_groups);
        let v = values[0].as_primitive::<Decimal128Type>();
        for (i, &g) in group_indices.iter().enumerate() {
            if v.is_null(i) || opt_filter.is_some_and(|f| !(f.is_valid(i) && f.value(i))) {
                continue;
            }
            if self.spec.avg {
                self.counts[g] += 1;
            } else {
                self.empty[g] = false;
            }
            if !self.null_sum[g] {
                self.add_to(g, i256::from_i128(v.value(i)));
            }
        }
        Ok(())
    }

    fn merge_batch(&mut self, values: &[ArrayRef], group_indices: &[usize], total_num_groups: usize) -> Result<()> {
        self.resize(total_num_groups);
        let sums = values[0].as_primitive::<Decimal128Type>();
        if self.spec.avg {
            let counts = values[1].as_primitive::<Int64Type>();
            for (i, &g) in group_indices.iter().enumerate() {
                // sum.left + sum.right: NULL if either is.
                if sums.is_null(i) {
                    self.null_sum[g] = true;
                } else if !self.null_sum[g] {
                    self.add_to(g, i256::from_i128(sums.value(i)));
                }
                if counts.is_valid(i) {
                    self.counts[g] = self.counts[g].wrapping_add(counts.value(i));
                }
            }
        } else {
            let empty = values[1].as_boolean();
            for (i, &g) in group_indices.iter().enumerate() {
                let input_empty = empty.is_valid(i) && empty.value(i);
                let input_overflow = !input_empty && sums.is_null(i);
                let buffer_overflow = !self.empty[g] && self.null_sum[g];
                if buffer_overflow || input_overflow {
                    self.null_sum[g] = true;
                } else if sums.is_valid(i) {
                    self.add_to(g, i256::from_i128(sums.value(i)));
                }
                self.empty[g] = self.empty[g] && input_empty;
            }
        }
        Ok(())
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        self.results(emit_to)
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        let second: ArrayRef = if self.spec.avg {
            Arc::new(Int64Array::from(emit_to.take_needed(&mut self.counts)))
        } else {
            Arc::new(BooleanArray::from(emit_to.take_needed(&mut self.empty)))
        };
        Ok(vec![self.take_sums(emit_to), second])
    }

    fn convert_to_state(&self, values: &[ArrayRef], opt_filter: Option<&BooleanArray>) -> Result<Vec<ArrayRef>> {
        let v = values[0].as_primitive::<Decimal128Type>();
        let keep: Vec<bool> =
            (0..v.len()).map(|i| v.is_valid(i) && opt_filter.is_none_or(|f| f.is_valid(i) && f.value(i))).collect();
        let sums: Vec<i128> = (0..v.len()).map(|i| if keep[i] { v.value(i) } else { 0 }).collect();
        let sums: ArrayRef =
            Arc::new(Decimal128Array::from(sums).with_precision_and_scale(self.spec.sum_precision, self.spec.scale)?);
        let second: ArrayRef = if self.spec.avg {
            Arc::new(keep.iter().map(|&k| Some(k as i64)).collect::<Int64Array>())
        } else {
            Arc::new(keep.iter().map(|&k| Some(!k)).collect::<BooleanArray>())
        };
        Ok(vec![sums, second])
    }

    fn size(&self) -> usize {
        self.sums.capacity() * 32 + self.null_sum.capacity() + self.empty.capacity() + self.counts.capacity() * 8
    }
}

/// The non-grouped form: group 0, read on a copy (an `Accumulator` may be asked more than once).
struct DecimalOneGroup {
    inner: DecimalGroups,
}

impl std::fmt::Debug for DecimalOneGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DecimalOneGroup({:?})", self.inner.spec)
    }
}

impl Accumulator for DecimalOneGroup {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let n = values[0].len();
        self.inner.update_batch(values, &vec![0; n], None, 1)
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let n = states[0].len();
        self.inner.merge_batch(states, &vec![0; n], 1)
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let mut copy = self.inner.clone();
        copy.resize(1);
        ScalarValue::try_from_array(&copy.evaluate(EmitTo::All)?, 0)
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let mut copy = self.inner.clone();
        copy.resize(1);
        copy.state(EmitTo::All)?.iter().map(|a| ScalarValue::try_from_array(a, 0)).collect()
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.inner.size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::find_spark_error;

    fn spec(avg: bool, ansi: bool, bounded: bool) -> DecimalSumAvgSpec {
        // decimal(38, 2) input: sum decimal(38, 2), avg decimal(38, 6).
        DecimalSumAvgSpec {
            avg,
            ansi,
            bounded,
            check_state: true,
            sum_precision: 38,
            scale: 2,
            result_precision: 38,
            result_scale: if avg { 6 } else { 2 },
            query_context: 0,
        }
    }

    fn dec(v: &[Option<i128>]) -> ArrayRef {
        Arc::new(Decimal128Array::from(v.to_vec()).with_precision_and_scale(38, 2).unwrap())
    }

    fn out(a: &ArrayRef) -> Vec<Option<i128>> {
        a.as_primitive::<Decimal128Type>().iter().collect()
    }

    const BIG: i128 = 90_000_000_000_000_000_000_000_000_000_000_000_000; // 9e37 (< 10^38)

    #[test]
    fn bounded_sum_becomes_null_on_overflow_and_stays_null() {
        let mut g = DecimalGroups::new(spec(false, false, true));
        g.update_batch(&[dec(&[Some(BIG), Some(BIG), Some(-BIG), None])], &[0, 0, 0, 1], None, 2).unwrap();
        let state = g.clone().state(EmitTo::All).unwrap();
        assert_eq!(out(&state[0]), vec![None, Some(0)]);
        assert_eq!(state[1].as_boolean().iter().collect::<Vec<_>>(), vec![Some(false), Some(true)]);
        assert_eq!(out(&g.clone().evaluate(EmitTo::All).unwrap()), vec![None, None]);
        // ANSI: the overflow raises when the result is evaluated.
        let mut a = DecimalGroups::new(spec(false, true, true));
        a.update_batch(&[dec(&[Some(BIG), Some(BIG)])], &[0, 0], None, 1).unwrap();
        let e = a.evaluate(EmitTo::All).unwrap_err();
        assert_eq!(find_spark_error(&e).unwrap().error_class, "ARITHMETIC_OVERFLOW");
    }

    #[test]
    fn unbounded_sum_checks_only_its_output() {
        let mut g = DecimalGroups::new(spec(false, false, false));
        g.update_batch(&[dec(&[Some(BIG), Some(BIG), Some(-BIG)])], &[0, 0, 0], None, 1).unwrap();
        assert_eq!(out(&g.clone().evaluate(EmitTo::All).unwrap()), vec![Some(BIG)]);
        g.update_batch(&[dec(&[Some(BIG)])], &[0], None, 1).unwrap();
        // 1.8e38 does not fit: NULL state, NULL result (LEGACY) or NUMERIC_VALUE_OUT_OF_RANGE (ANSI).
        assert_eq!(out(&g.clone().state(EmitTo::All).unwrap()[0]), vec![None]);
        assert_eq!(out(&g.clone().evaluate(EmitTo::All).unwrap()), vec![None]);
        let mut a = g.clone();
        a.spec.ansi = true;
        let e = a.evaluate(EmitTo::All).unwrap_err();
        assert_eq!(find_spark_error(&e).unwrap().error_class, "NUMERIC_VALUE_OUT_OF_RANGE.WITH_SUGGESTION");
    }

    #[test]
    fn unchecked_state_passes_an_out_of_range_sum_on() {
        let mut g = DecimalGroups::new(DecimalSumAvgSpec { check_state: false, ..spec(false, true, false) });
        g.update_batch(&[dec(&[Some(BIG), Some(BIG / 2), Some(BIG), Some(BIG)])], &[0, 0, 1, 1], None, 2).unwrap();
        let state = g.state(EmitTo::All).unwrap();
        // 1.35e38 as it is; 1.8e38 (beyond 128 bits) saturated to 1e38, out of range all the same.
        assert_eq!(out(&state[0]), vec![Some(BIG + BIG / 2), Some(10i128.pow(38))]);
        let state = vec![state[0].slice(0, 1), state[1].slice(0, 1)];
        let mut f = DecimalGroups::new(spec(false, true, false));
        f.merge_batch(&state, &[0], 1).unwrap();
        let e = f.evaluate(EmitTo::All).unwrap_err();
        assert_eq!(find_spark_error(&e).unwrap().error_class, "NUMERIC_VALUE_OUT_OF_RANGE.WITH_SUGGESTION");
    }

    #[test]
    fn merge_propagates_overflow_and_is_empty() {
        let mut g = DecimalGroups::new(spec(false, false, true));
        let empty: ArrayRef = Arc::new(BooleanArray::from(vec![false, true, true, false]));
        // Group 0: an overflowed state (NULL, not empty) then a value; group 1: empty then value 5.
        g.merge_batch(&[dec(&[None, Some(0), Some(0), Some(5)]), empty], &[0, 1, 0, 1], 2).unwrap();
        assert_eq!(out(&g.evaluate(EmitTo::All).unwrap()), vec![None, Some(5)]);
    }

    #[test]
    fn avg_rounds_half_up_after_rounding_to_39_digits() {
        let g = DecimalGroups::new(spec(true, false, true));
        // 0.01 / 3 = 0.003333.. → 0.003333; 0.05 / 8 = 0.00625 → 0.006250; -0.02 / 3 → -0.006667.
        assert_eq!(g.divide(i256::from_i128(1), 3), i256::from_i128(3333));
        assert_eq!(g.divide(i256::from_i128(5), 8), i256::from_i128(6250));
        assert_eq!(g.divide(i256::from_i128(-2), 3), i256::from_i128(-6667));
        // 1/7 * 10^-2 = 0.00142857.. → 0.001429.
        assert_eq!(g.divide(i256::from_i128(1), 7), i256::from_i128(1429));
        // decimal(38, 30) input, decimal(38, 34) avg: Spark rounds to 39 digits first, 5 more than the result's.
        let s = DecimalSumAvgSpec { scale: 30, result_scale: 34, ..spec(true, false, true) };
        let g = DecimalGroups::new(s);
        // sum = 1 unit of 10^-30, count = 20000: 10^-30 / 20000 = 5 * 10^-35 → HALF_UP at 34 digits: 1.
        assert_eq!(g.divide(i256::from_i128(1), 20000), i256::from_i128(1));
        // 20002 / 20001 units: 10000.499975 → 39 digits: 10000.49998 → 10000.
        assert_eq!(g.divide(i256::from_i128(20002), 20001), i256::from_i128(10000));
        // 200011 / 200001 units: 10000.4999975 → 39 digits: 10000.50000 (double rounding) → 10001.
        assert_eq!(g.divide(i256::from_i128(200011), 200_001), i256::from_i128(10001));
    }

    #[test]
    fn avg_state_and_result() {
        let mut g = DecimalGroups::new(spec(true, false, true));
        g.update_batch(&[dec(&[Some(100), None, Some(201), None])], &[0, 0, 0, 1], None, 2).unwrap();
        let state = g.state(EmitTo::All).unwrap();
        assert_eq!(out(&state[0]), vec![Some(301), Some(0)]);
        assert_eq!(state[1].as_primitive::<Int64Type>().values().to_vec(), vec![2, 0]);
        let mut f = DecimalGroups::new(spec(true, false, true));
        f.merge_batch(&state, &[0, 1], 2).unwrap();
        // 3.01 / 2 = 1.505000 (scale 6); the empty group is NULL.
        assert_eq!(out(&f.evaluate(EmitTo::All).unwrap()), vec![Some(1_505_000), None]);
    }

    #[test]
    fn avg_result_out_of_range() {
        // avg of decimal(38, 2) is decimal(38, 6): 32 integral digits only.
        let mut g = DecimalGroups::new(spec(true, false, true));
        g.update_batch(&[dec(&[Some(BIG)])], &[0], None, 1).unwrap();
        assert_eq!(out(&g.clone().evaluate(EmitTo::All).unwrap()), vec![None]);
        g.spec.ansi = true;
        let e = g.evaluate(EmitTo::All).unwrap_err();
        assert_eq!(find_spark_error(&e).unwrap().error_class, "NUMERIC_VALUE_OUT_OF_RANGE.WITH_SUGGESTION");
    }

    #[test]
    fn convert_to_state_is_one_update() {
        let g = DecimalGroups::new(spec(false, false, true));
        let s = g.convert_to_state(&[dec(&[Some(7), None])], None).unwrap();
        assert_eq!(out(&s[0]), vec![Some(7), Some(0)]);
        assert_eq!(s[1].as_boolean().iter().collect::<Vec<_>>(), vec![Some(false), Some(true)]);
    }

    #[test]
    fn spark_quotients_at_39_places_half_up() {
        let q = |sum: i128, scale: i8, count: i64| spark_quotient_string(i256::from_i128(sum), scale, count);
        // BigDecimal("9999999999999999999999999999999999").divide(BigDecimal(1), 39, HALF_UP).toString
        assert_eq!(
            q(9_999_999_999_999_999_999_999_999_999_999_999, 0, 1),
            format!("{}.{}", "9".repeat(34), "0".repeat(39))
        );
        // 2/3 at 39 places rounds the last 6 up; -2/3 likewise away from zero.
        assert_eq!(q(2, 0, 3), format!("0.{}7", "6".repeat(38)));
        assert_eq!(q(-2, 0, 3), format!("-0.{}7", "6".repeat(38)));
        // 1.5 (scale 1) / 2 = 0.75; the largest sum at scale 0 (no i256 overflow in long division).
        assert_eq!(q(15, 1, 2), format!("0.75{}", "0".repeat(37)));
        let max = 10i128.pow(38) - 1;
        assert_eq!(q(max, 0, 1), format!("{}.{}", "9".repeat(38), "0".repeat(39)));
        // Expected values from Python's decimal (quantize to 39 places, ROUND_HALF_UP).
        assert_eq!(q(2 * 10i128.pow(37) - 1, 38, 2), "0.099999999999999999999999999999999999995");
        assert_eq!(q(1, 0, 7), "0.142857142857142857142857142857142857143");
        assert_eq!(
            q(-(10i128.pow(38) - 1), 0, 3),
            "-33333333333333333333333333333333333333.000000000000000000000000000000000000000"
        );
        // The round-up carries through trailing nines (...099|8 -> ...100).
        assert_eq!(q(1, 0, 1255), "0.000796812749003984063745019920318725100");
    }

    #[test]
    fn decimal_strings() {
        assert_eq!(decimal_string(i256::from_i128(-5), 2), "-0.05");
        assert_eq!(decimal_string(i256::from_i128(12345), 2), "123.45");
        assert_eq!(decimal_string(i256::from_i128(12345), 0), "12345");
    }
}
