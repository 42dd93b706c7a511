//! Spark's `round` / `bround` (`RoundBase`) of integers, floats, doubles and decimals, and `floor` / `ceil` of
//! decimals (of doubles and bigints: datafusion-spark's, see `planner/functions.rs`).
//!
//! `round(x, s)` is `BigDecimal(x).setScale(s, HALF_UP)` (`bround`: HALF_EVEN) converted back to `x`'s type. A
//! double (a float through `toDouble`) becomes a BigDecimal through its `Double.toString` digits, so
//! `round(0.125, 2)` is 0.13 and `round(1.005, 2)` is 1.01 even though neither value is exact in binary; the
//! kernel rounds those digits (JDK 19+'s shortest decimal, [`java_double_digits`]) and parses the result, which
//! is what `BigDecimal.doubleValue` does (correctly rounded). NaN and ±Infinity are returned as they are, a zero
//! result is +0.0 (a BigDecimal has no negative zero). Integers round in i128; a result outside the type wraps
//! to its low bits (Java's `byteValue()` … `longValue()`) in LEGACY and raises `ARITHMETIC_OVERFLOW` under ANSI.
//!
//! Ember's own kernels: datafusion-spark's `round` takes its scale only as a scalar (the planner's kernels get
//! arrays: "Unsupported type for round scale: Int32"), rounds the binary double rather than Java's digits
//! (`round(0.125, 2)`: 0.13 in Spark) and has no ANSI overflow.
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, PrimitiveArray};
use arrow::datatypes::{
    ArrowPrimitiveType, DataType, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
};
use datafusion_common::{internal_err, Result};

use super::Kernel;
use crate::error::SparkError;
use crate::expressions::cast::java_double_digits;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundMode {
    HalfUp,
    HalfEven,
}

/// `round` / `bround` with a literal scale (Spark requires it foldable; NULL gives NULL on every row).
#[derive(Debug)]
pub struct Round {
    pub mode: RoundMode,
    pub scale: Option<i32>,
    pub ansi: bool,
}

/// Whether dropping `dropped` (the digits after the kept ones) rounds the kept digits away from zero, the last
/// kept digit being odd or not.
fn rounds_up(mode: RoundMode, dropped: &[u8], last_odd: bool) -> bool {
    let Some((&first, rest)) = dropped.split_first() else { return false };
    match first.cmp(&b'5') {
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Equal => match mode {
            RoundMode::HalfUp => true,
            RoundMode::HalfEven => rest.iter().any(|&d| d != b'0') || last_odd,
        },
    }
}

/// The decimal `0.digits × 10^(exp + 1)` (sign aside) rounded to `scale` fractional digits, as text Rust parses
/// (`<digits>e<-scale>`), or `None` when it is unchanged; `Some("0")` when it rounds to zero.
fn round_digits(digits: &str, exp: i32, scale: i32, mode: RoundMode) -> Option<String> {
    let d = digits.as_bytes();
    let frac = d.len() as i64 - 1 - exp as i64;
    if frac <= scale as i64 {
        return None;
    }
    let keep = d.len() as i64 - (frac - scale as i64);
    if keep < 0 {
        return Some("0".to_string());
    }
    let keep = keep as usize;
    let (kept, dropped) = d.split_at(keep);
    let last_odd = kept.last().is_some_and(|c| (c - b'0') % 2 == 1);
    let mut out: Vec<u8> = kept.to_vec();
    if rounds_up(mode, dropped, last_odd) {
        let mut i = out.len();
        loop {
            if i == 0 {
                out.insert(0, b'1');
                break;
            }
            i -= 1;
            if out[i] == b'9' {
                out[i] = b'0';
            } else {
                out[i] += 1;
                break;
            }
        }
    }
    if out.iter().all(|&c| c == b'0') {
        return Some("0".to_string());
    }
    Some(format!("{}e{}", String::from_utf8_lossy(&out), -(scale as i64)))
}

fn round_f64(v: f64, scale: i32, mode: RoundMode) -> f64 {
    if !v.is_finite() {
        return v;
    }
    if v == 0.0 {
        return 0.0;
    }
    let (digits, exp) = java_double_digits(v);
    match round_digits(&digits, exp, scale, mode) {
        None => v,
        Some(t) if t == "0" => 0.0,
        Some(t) => {
            let r: f64 = t.parse().unwrap_or(f64::NAN);
            if v < 0.0 {
                -r
            } else {
                r
            }
        }
    }
}

/// A float goes through `f.toDouble`: the double's digits, rounded, then `BigDecimal.floatValue` (correctly
/// rounded from the decimal, not through a double).
fn round_f32(v: f32, scale: i32, mode: RoundMode) -> f32 {
    if !v.is_finite() {
        return v;
    }
    if v == 0.0 {
        return 0.0;
    }
    let (digits, exp) = java_double_digits(v as f64);
    match round_digits(&digits, exp, scale, mode) {
        // Unchanged: the double's decimal converted back to float is the float itself.
        None => v,
        Some(t) if t == "0" => 0.0,
        Some(t) => {
            let r: f32 = t.parse().unwrap_or(f32::NAN);
            if v < 0.0 {
                -r
            } else {
                r
            }
        }
    }
}

/// `x` rounded to `scale` (negative: to a multiple of 10^-scale) in i128, before narrowing.
fn round_i128(x: i128, scale: i32, mode: RoundMode) -> i128 {
    if scale >= 0 || x == 0 {
        return x;
    }
    // |x| < 2^63 < 0.5 × 10^20: any coarser rounding gives 0.
    if scale < -20 {
        return 0;
    }
    let p = 10i128.pow((-scale) as u32);
    let (q, r) = (x / p, (x % p).abs());
    let up = match (2 * r).cmp(&p) {
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Equal => mode == RoundMode::HalfUp || q % 2 != 0,
    };
    let q = if up { q + x.signum() } else { q };
    q * p
}

fn round_int<T: ArrowPrimitiveType>(
    a: &ArrayRef,
    scale: i32,
    mode: RoundMode,
    ansi: bool,
    to_i128: impl Fn(T::Native) -> i128,
    narrow: impl Fn(i128) -> (T::Native, bool),
) -> Result<ArrayRef> {
    let a = a.as_primitive::<T>();
    let mut out = Vec::with_capacity(a.len());
    for v in a.iter() {
        out.push(match v {
            None => None,
            Some(v) => {
                let (r, exact) = narrow(round_i128(to_i128(v), scale, mode));
                if !exact && ansi {
                    return Err(SparkError::arithmetic_overflow("Overflow", "").into_datafusion());
                }
                Some(r)
            }
        });
    }
    Ok(Arc::new(out.into_iter().collect::<PrimitiveArray<T>>()))
}

impl Kernel for Round {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let a = &args[0];
        let Some(s) = self.scale else { return Ok(arrow::array::new_null_array(a.data_type(), a.len())) };
        let m = self.mode;
        match a.data_type() {
            DataType::Float64 => {
                Ok(Arc::new(a.as_primitive::<Float64Type>().unary::<_, Float64Type>(|v| round_f64(v, s, m))))
            }
            DataType::Float32 => {
                Ok(Arc::new(a.as_primitive::<Float32Type>().unary::<_, Float32Type>(|v| round_f32(v, s, m))))
            }
            DataType::Int8 => {
                round_int::<Int8Type>(a, s, m, self.ansi, |v| v as i128, |r| (r as i8, r as i8 as i128 == r))
            }
            DataType::Int16 => {
                round_int::<Int16Type>(a, s, m, self.ansi, |v| v as i128, |r| (r as i16, r as i16 as i128 == r))
            }
            DataType::Int32 => {
                round_int::<Int32Type>(a, s, m, self.ansi, |v| v as i128, |r| (r as i32, r as i32 as i128 == r))
            }
            DataType::Int64 => {
                round_int::<Int64Type>(a, s, m, self.ansi, |v| v as i128, |r| (r as i64, r as i64 as i128 == r))
            }
            t => internal_err!("round of {t}"),
        }
    }
}

/// How a DECIMAL drops digits: `round` (HALF_UP), `bround` (HALF_EVEN), `floor`, `ceil`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecimalRounding {
    HalfUp,
    HalfEven,
    Floor,
    Ceil,
}

/// `v / 10^k` rounded as `how` says (k > 38: every i128 decimal is below half of 10^k).
fn div_round(v: i128, k: u32, how: DecimalRounding) -> i128 {
    if k == 0 {
        return v;
    }
    if k > 38 {
        return match how {
            DecimalRounding::Floor if v < 0 => -1,
            DecimalRounding::Ceil if v > 0 => 1,
            _ => 0,
        };
    }
    let p = 10i128.pow(k);
    let (q, r) = (v / p, v % p);
    let half = || (r.unsigned_abs() * 2).cmp(&p.unsigned_abs());
    let step = match how {
        DecimalRounding::HalfUp => half() != std::cmp::Ordering::Less,
        DecimalRounding::HalfEven => match half() {
            std::cmp::Ordering::Less => false,
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Equal => q % 2 != 0,
        },
        DecimalRounding::Floor => r < 0,
        DecimalRounding::Ceil => r > 0,
    };
    match (step, how) {
        (false, _) => q,
        (true, DecimalRounding::Floor) => q - 1,
        (true, DecimalRounding::Ceil) => q + 1,
        (true, _) => q + v.signum(),
    }
}

/// `round` / `bround` / `floor` / `ceil` of a DECIMAL(p, s) to the DECIMAL type Spark resolved (`RoundBase` and
/// `Decimal.floor`/`ceil`): to `scale` fractional digits (`min(s, scale)` kept), or for a negative scale to a
/// multiple of 10^-scale at scale 0. A result too wide for the type (only possible from a DECIMAL(38, 0) with a
/// negative scale, which the planner leaves to Spark) is an internal error.
#[derive(Debug)]
pub struct RoundDecimal {
    pub how: DecimalRounding,
    /// The rounding position (`None`: a NULL scale, every row NULL).
    pub scale: Option<i32>,
    pub in_scale: i8,
    pub out_precision: u8,
    pub out_scale: i8,
}

impl Kernel for RoundDecimal {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        use arrow::datatypes::Decimal128Type;
        let out_type = DataType::Decimal128(self.out_precision, self.out_scale);
        let Some(scale) = self.scale else { return Ok(arrow::array::new_null_array(&out_type, args[0].len())) };
        let a = args[0].as_primitive::<Decimal128Type>();
        let s = self.in_scale as i32;
        let limit = 10i128.pow(self.out_precision as u32);
        let mut out = Vec::with_capacity(a.len());
        for v in a.iter() {
            let Some(v) = v else {
                out.push(None);
                continue;
            };
            let r = if scale >= 0 {
                // Keeps min(s, scale) digits: the output scale.
                div_round(v, (s - self.out_scale as i32) as u32, self.how)
            } else {
                let q = div_round(v, (s - scale) as u32, self.how);
                match 10i128.checked_pow((-scale) as u32).and_then(|m| q.checked_mul(m)) {
                    Some(x) if x.abs() < limit => x,
                    _ if q == 0 => 0,
                    _ => return internal_err!("round of a decimal beyond its result type"),
                }
            };
            out.push(Some(r));
        }
        let arr = out.into_iter().collect::<PrimitiveArray<Decimal128Type>>();
        Ok(Arc::new(arr.with_precision_and_scale(self.out_precision, self.out_scale)?))
    }
}

/// `format_number(x, d)` of an integer or decimal `x`: Java's `DecimalFormat("#,###,…,##0.00…")` in
/// `Locale.US` — HALF_EVEN to `d` decimals (exact, as for a `long` or `BigDecimal`), groups of three, and a '-'
/// for any negative `x`, also one that rounds to zero (`-0.00`); NULL for a NULL or negative `d`. `d` is a
/// literal of at most [`FORMAT_NUMBER_MAX_DIGITS`] (Java caps a long's fraction digits at 340, not a
/// BigDecimal's). Floats and doubles (`DecimalFormat`'s binary-to-decimal rounding) and string patterns stay in
/// Spark.
#[derive(Debug)]
pub struct FormatNumber {
    /// The scale of a decimal `x` (0 for integers).
    pub scale: i8,
    pub digits: Option<i32>,
}

pub const FORMAT_NUMBER_MAX_DIGITS: i32 = 300;

impl Kernel for FormatNumber {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let unscaled: Vec<Option<i128>> = match args[0].data_type() {
            DataType::Int8 => args[0].as_primitive::<Int8Type>().iter().map(|v| v.map(i128::from)).collect(),
            DataType::Int16 => args[0].as_primitive::<Int16Type>().iter().map(|v| v.map(i128::from)).collect(),
            DataType::Int32 => args[0].as_primitive::<Int32Type>().iter().map(|v| v.map(i128::from)).collect(),
            DataType::Int64 => args[0].as_primitive::<Int64Type>().iter().map(|v| v.map(i128::from)).collect(),
            DataType::Decimal128(_, _) => args[0].as_primitive::<arrow::datatypes::Decimal128Type>().iter().collect(),
            t => return internal_err!("format_number of {t}"),
        };
        let mut out = arrow::array::StringBuilder::with_capacity(unscaled.len(), unscaled.len() * 16);
        let scale = self.scale.max(0) as u32;
        for v in &unscaled {
            let (Some(v), Some(d)) = (v, self.digits) else {
                out.append_null();
                continue;
            };
            if d < 0 {
                out.append_null();
                continue;
            }
            let d = d as u32;
            let abs = v.unsigned_abs();
            // The integer part and the first min(d, scale) fraction digits, HALF_EVEN-rounded.
            let kept = d.min(scale);
            let drop = 10u128.pow(scale - kept);
            let (mut q, r) = (abs / drop, abs % drop);
            if drop > 1 && (r > drop / 2 || (r == drop / 2 && q % 2 == 1)) {
                q += 1;
            }
            let unit = 10u128.pow(kept);
            let (int_part, frac) = (q / unit, q % unit);
            let mut s = String::new();
            if *v < 0 {
                s.push('-');
            }
            let int_digits = int_part.to_string();
            for (k, c) in int_digits.chars().enumerate() {
                if k > 0 && (int_digits.len() - k) % 3 == 0 {
                    s.push(',');
                }
                s.push(c);
            }
            if d > 0 {
                s.push('.');
                if kept > 0 {
                    s.push_str(&format!("{frac:0width$}", width = kept as usize));
                }
                s.extend(std::iter::repeat_n('0', (d - kept) as usize));
            }
            out.append_value(&s);
        }
        Ok(Arc::new(out.finish()))
    }
}
