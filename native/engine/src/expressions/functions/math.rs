//! Spark's `pmod`: the positive remainder, `r = a % n; if (r < 0) (r + n) % n else r`, in the operands' Java
//! type (TINYINT/SMALLINT through int and narrowed back), wrapping on overflow. A zero divisor (also `-0.0`)
//! gives NULL, or `REMAINDER_BY_ZERO` under ANSI (as Spark 4.1 raises it, golden-checked).
//!
//! Ember's own kernel: DataFusion has no `pmod`; datafusion-spark's `pmod` is not used (not a dependency yet).
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, PrimitiveArray};
use arrow::datatypes::{
    ArrowPrimitiveType, DataType, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
};
use datafusion_common::{internal_err, Result};

use super::Kernel;
use crate::error::SparkError;

#[derive(Debug)]
pub struct Pmod {
    pub ansi: bool,
}

fn pmod_i64(a: i64, n: i64) -> i64 {
    let r = a.wrapping_rem(n);
    if r < 0 {
        r.wrapping_add(n).wrapping_rem(n)
    } else {
        r
    }
}

fn pmod_i32(a: i32, n: i32) -> i32 {
    let r = a.wrapping_rem(n);
    if r < 0 {
        r.wrapping_add(n).wrapping_rem(n)
    } else {
        r
    }
}

fn pmod_f64(a: f64, n: f64) -> f64 {
    let r = a % n;
    if r < 0.0 {
        (r + n) % n
    } else {
        r
    }
}

fn pmod_f32(a: f32, n: f32) -> f32 {
    let r = a % n;
    if r < 0.0 {
        (r + n) % n
    } else {
        r
    }
}

impl Pmod {
    fn apply<T: ArrowPrimitiveType>(
        &self,
        l: &ArrayRef,
        r: &ArrayRef,
        zero: impl Fn(T::Native) -> bool,
        f: impl Fn(T::Native, T::Native) -> T::Native,
    ) -> Result<ArrayRef> {
        let (l, r) = (l.as_primitive::<T>(), r.as_primitive::<T>());
        let mut out = Vec::with_capacity(l.len());
        for i in 0..l.len() {
            if l.is_null(i) || r.is_null(i) {
                out.push(None);
                continue;
            }
            let (a, n) = (l.value(i), r.value(i));
            if zero(n) {
                if self.ansi {
                    return Err(SparkError::remainder_by_zero().into_datafusion());
                }
                out.push(None);
            } else {
                out.push(Some(f(a, n)));
            }
        }
        Ok(Arc::new(out.into_iter().collect::<PrimitiveArray<T>>()))
    }
}

impl Kernel for Pmod {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let (l, r) = (&args[0], &args[1]);
        match l.data_type() {
            DataType::Int8 => self.apply::<Int8Type>(l, r, |n| n == 0, |a, n| pmod_i32(a as i32, n as i32) as i8),
            DataType::Int16 => self.apply::<Int16Type>(l, r, |n| n == 0, |a, n| pmod_i32(a as i32, n as i32) as i16),
            DataType::Int32 => self.apply::<Int32Type>(l, r, |n| n == 0, pmod_i32),
            DataType::Int64 => self.apply::<Int64Type>(l, r, |n| n == 0, pmod_i64),
            DataType::Float32 => self.apply::<Float32Type>(l, r, |n| n == 0.0, pmod_f32),
            DataType::Float64 => self.apply::<Float64Type>(l, r, |n| n == 0.0, pmod_f64),
            t => internal_err!("pmod over {t}"),
        }
    }
}

/// `&`, `|`, `^` over two integers of one type (Java's operators: no overflow possible).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BitOp {
    And,
    Or,
    Xor,
}

#[derive(Debug)]
pub struct Bitwise(pub BitOp);

macro_rules! int_dispatch {
    ($dt:expr, $f:ident, $($arg:expr),*) => {
        match $dt {
            DataType::Int8 => $f::<Int8Type>($($arg),*),
            DataType::Int16 => $f::<Int16Type>($($arg),*),
            DataType::Int32 => $f::<Int32Type>($($arg),*),
            DataType::Int64 => $f::<Int64Type>($($arg),*),
            t => internal_err!("integer function over {t}"),
        }
    };
}

fn bitwise<T: ArrowPrimitiveType>(l: &ArrayRef, r: &ArrayRef, op: BitOp) -> Result<ArrayRef>
where
    T::Native: std::ops::BitAnd<Output = T::Native>
        + std::ops::BitOr<Output = T::Native>
        + std::ops::BitXor<Output = T::Native>,
{
    let out: PrimitiveArray<T> =
        arrow::compute::binary(l.as_primitive::<T>(), r.as_primitive::<T>(), |a, b| match op {
            BitOp::And => a & b,
            BitOp::Or => a | b,
            BitOp::Xor => a ^ b,
        })?;
    Ok(Arc::new(out))
}

impl Kernel for Bitwise {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        int_dispatch!(args[0].data_type(), bitwise, &args[0], &args[1], self.0)
    }
}

/// `~`.
#[derive(Debug)]
pub struct BitwiseNot;

fn bitwise_not<T: ArrowPrimitiveType>(a: &ArrayRef) -> Result<ArrayRef>
where
    T::Native: std::ops::Not<Output = T::Native>,
{
    let out: PrimitiveArray<T> = a.as_primitive::<T>().unary(|v| !v);
    Ok(Arc::new(out))
}

impl Kernel for BitwiseNot {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        int_dispatch!(args[0].data_type(), bitwise_not, &args[0])
    }
}

/// `shiftleft` / `shiftright` / `shiftrightunsigned` of an INT or BIGINT by an INT: Java's `<<`, `>>`, `>>>`,
/// which use only the low 5 (int) or 6 (long) bits of the shift distance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShiftOp {
    Left,
    Right,
    RightUnsigned,
}

#[derive(Debug)]
pub struct Shift(pub ShiftOp);

impl Kernel for Shift {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let n = args[1].as_primitive::<Int32Type>();
        let op = self.0;
        Ok(match args[0].data_type() {
            DataType::Int32 => {
                let out: PrimitiveArray<Int32Type> =
                    arrow::compute::binary(args[0].as_primitive::<Int32Type>(), n, |a, s| {
                        let s = (s & 31) as u32;
                        match op {
                            ShiftOp::Left => a.wrapping_shl(s),
                            ShiftOp::Right => a >> s,
                            ShiftOp::RightUnsigned => ((a as u32) >> s) as i32,
                        }
                    })?;
                Arc::new(out)
            }
            DataType::Int64 => {
                let out: PrimitiveArray<Int64Type> =
                    arrow::compute::binary(args[0].as_primitive::<Int64Type>(), n, |a, s| {
                        let s = (s & 63) as u32;
                        match op {
                            ShiftOp::Left => a.wrapping_shl(s),
                            ShiftOp::Right => a >> s,
                            ShiftOp::RightUnsigned => ((a as u64) >> s) as i64,
                        }
                    })?;
                Arc::new(out)
            }
            t => return internal_err!("shift of {t}"),
        })
    }
}

/// `isnan(x)`: never NULL (NULL is not NaN).
#[derive(Debug)]
pub struct IsNaN;

impl Kernel for IsNaN {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let a = &args[0];
        let out: arrow::array::BooleanArray = match a.data_type() {
            DataType::Float64 => {
                let a = a.as_primitive::<Float64Type>();
                (0..a.len()).map(|i| Some(a.is_valid(i) && a.value(i).is_nan())).collect()
            }
            DataType::Float32 => {
                let a = a.as_primitive::<Float32Type>();
                (0..a.len()).map(|i| Some(a.is_valid(i) && a.value(i).is_nan())).collect()
            }
            t => return internal_err!("isnan of {t}"),
        };
        Ok(Arc::new(out))
    }
}

/// `nanvl(a, b)`: `b` where `a` is NaN, else `a` (NULL `a` stays NULL).
#[derive(Debug)]
pub struct NaNvl;

fn nanvl<T: ArrowPrimitiveType>(l: &ArrayRef, r: &ArrayRef) -> Result<ArrayRef>
where
    T::Native: num_like::IsNan,
{
    let (l, r) = (l.as_primitive::<T>(), r.as_primitive::<T>());
    let out: PrimitiveArray<T> = (0..l.len())
        .map(|i| {
            if l.is_null(i) {
                None
            } else if num_like::IsNan::is_nan(l.value(i)) {
                r.is_valid(i).then(|| r.value(i))
            } else {
                Some(l.value(i))
            }
        })
        .collect();
    Ok(Arc::new(out))
}

mod num_like {
    pub trait IsNan: Copy {
        fn is_nan(self) -> bool;
    }
    impl IsNan for f32 {
        fn is_nan(self) -> bool {
            f32::is_nan(self)
        }
    }
    impl IsNan for f64 {
        fn is_nan(self) -> bool {
            f64::is_nan(self)
        }
    }
}

impl Kernel for NaNvl {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        match args[0].data_type() {
            DataType::Float64 => nanvl::<Float64Type>(&args[0], &args[1]),
            DataType::Float32 => nanvl::<Float32Type>(&args[0], &args[1]),
            t => internal_err!("nanvl of {t}"),
        }
    }
}

/// DOUBLE → DOUBLE functions whose results are exactly Java's: `sqrt` (IEEE 754 correctly rounded in both) and
/// `signum` (`Math.signum`: ±0.0 and NaN unchanged). Others (`cbrt`, `exp`, `ln`, trig…) are not here: Java's
/// `StrictMath`/`Math` and the platform libm may differ in the last bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DoubleFn {
    Sqrt,
    Signum,
}

#[derive(Debug)]
pub struct UnaryDouble(pub DoubleFn);

impl Kernel for UnaryDouble {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let f = self.0;
        let out: PrimitiveArray<Float64Type> = args[0].as_primitive::<Float64Type>().unary(|v| match f {
            DoubleFn::Sqrt => v.sqrt(),
            DoubleFn::Signum => {
                if v > 0.0 {
                    1.0
                } else if v < 0.0 {
                    -1.0
                } else {
                    v
                }
            }
        });
        Ok(Arc::new(out))
    }
}

/// `greatest` / `least` of arguments of one orderable type (not floats: Spark ties -0.0 with 0.0 and keeps the
/// first, Arrow's order does not): NULLs skipped, NULL only when all are; on ties the earlier argument wins.
#[derive(Debug)]
pub struct Extremum {
    pub greatest: bool,
}

impl Kernel for Extremum {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        use arrow::array::make_comparator;
        use arrow::compute::SortOptions;
        let rows = args[0].len();
        // cmps[k][b]: argument k against argument b, row by row (the same row of both).
        let cmps = args
            .iter()
            .map(|a| args.iter().map(|b| make_comparator(a.as_ref(), b.as_ref(), SortOptions::default())).collect())
            .collect::<std::result::Result<Vec<Vec<_>>, _>>()?;
        let mut indices: Vec<(usize, usize)> = Vec::with_capacity(rows);
        for i in 0..rows {
            let mut best: Option<usize> = None;
            for (k, a) in args.iter().enumerate() {
                if a.is_null(i) {
                    continue;
                }
                best = Some(match best {
                    None => k,
                    Some(b) => {
                        let c = cmps[k][b](i, i);
                        let wanted = if self.greatest { std::cmp::Ordering::Greater } else { std::cmp::Ordering::Less };
                        if c == wanted {
                            k
                        } else {
                            b
                        }
                    }
                });
            }
            // A row where every argument is NULL takes argument 0's NULL.
            indices.push((best.unwrap_or(0), i));
        }
        let refs: Vec<&dyn Array> = args.iter().map(|a| a.as_ref()).collect();
        Ok(arrow::compute::interleave(&refs, &indices)?)
    }
}

/// `abs(x)`: integers wrap at MIN in LEGACY (Java's `Math.abs`) and raise `ARITHMETIC_OVERFLOW` ("byte
/// overflow", "short overflow", "integer overflow", "long overflow") under ANSI; floats lose their sign.
#[derive(Debug)]
pub struct Abs {
    pub ansi: bool,
}

fn abs_int<T: ArrowPrimitiveType>(a: &ArrayRef, ansi: bool, min: T::Native, what: &str) -> Result<ArrayRef>
where
    T::Native: arrow::array::ArrowNativeTypeOp + PartialOrd,
{
    let a = a.as_primitive::<T>();
    if ansi && a.iter().any(|v| v == Some(min)) {
        return Err(SparkError::arithmetic_overflow(&format!("{what} overflow"), "").into_datafusion());
    }
    let zero = T::Native::default();
    let out: PrimitiveArray<T> =
        a.unary(|v| if v < zero { arrow::array::ArrowNativeTypeOp::neg_wrapping(v) } else { v });
    Ok(Arc::new(out))
}

impl Kernel for Abs {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let a = &args[0];
        match a.data_type() {
            DataType::Int8 => abs_int::<Int8Type>(a, self.ansi, i8::MIN, "byte"),
            DataType::Int16 => abs_int::<Int16Type>(a, self.ansi, i16::MIN, "short"),
            DataType::Int32 => abs_int::<Int32Type>(a, self.ansi, i32::MIN, "integer"),
            DataType::Int64 => abs_int::<Int64Type>(a, self.ansi, i64::MIN, "long"),
            DataType::Float32 => Ok(Arc::new(a.as_primitive::<Float32Type>().unary::<_, Float32Type>(f32::abs))),
            DataType::Float64 => Ok(Arc::new(a.as_primitive::<Float64Type>().unary::<_, Float64Type>(f64::abs))),
            DataType::Decimal128(p, s) => Ok(Arc::new(
                a.as_primitive::<Decimal128Type>()
                    .unary::<_, Decimal128Type>(i128::wrapping_abs)
                    .with_precision_and_scale(*p, *s)?,
            )),
            t => internal_err!("abs of {t}"),
        }
    }
}

/// DOUBLE → DOUBLE functions Spark computes with `java.lang.StrictMath` (or `Math`, which delegates to it on
/// JDK 17–21), bit for bit: fdlibm's algorithms, from the `libm` crate where its function is fdlibm's
/// (`exp`, `expm1`, `asin`, `acos`, `atan`) and from [`super::fdlibm`] where musl changed it (`log1p`, which
/// `atanh` uses too). Rust's
/// `f64` methods are not used: they call the platform's libm, whose last bit differs from Java's for some
/// inputs (glibc's `exp(1.0)` is 2.718281828459045, `StrictMath.exp(1.0)` 2.7182818284590455). `sin`, `cos`,
/// `tan` and `cot` are not here: Java computes them with `Math`'s JIT intrinsics, which are not fdlibm.
/// The logarithms give NULL at or below 0 (`log1p` at or below -1), as Spark does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transcendental {
    Cbrt,
    Exp,
    Expm1,
    Ln,
    Log2,
    Log10,
    Log1p,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Tanh,
    Asinh,
    Acosh,
    Atanh,
    Degrees,
    Radians,
}

impl Transcendental {
    pub fn by_name(name: &str) -> Option<Self> {
        use Transcendental::*;
        Some(match name {
            "cbrt" => Cbrt,
            "exp" => Exp,
            "expm1" => Expm1,
            "ln" => Ln,
            "log2" => Log2,
            "log10" => Log10,
            "log1p" => Log1p,
            "asin" => Asin,
            "acos" => Acos,
            "atan" => Atan,
            "sinh" => Sinh,
            "cosh" => Cosh,
            "tanh" => Tanh,
            "asinh" => Asinh,
            "acosh" => Acosh,
            "atanh" => Atanh,
            "degrees" => Degrees,
            "radians" => Radians,
            _ => return None,
        })
    }

    /// `f(x)`, `None` for a logarithm's NULL.
    pub fn eval(self, x: f64) -> Option<f64> {
        use super::fdlibm;
        use Transcendental::*;
        // sqrt(Double.MaxValue): Spark 4.1's asinh/acosh switch to log(2) + log(|x|) from there (x * x overflows).
        const SQRT_MAX: f64 = 1.3407807929942596e154;
        Some(match self {
            Cbrt => fdlibm::cbrt(x),
            Exp => libm::exp(x),
            Expm1 => libm::expm1(x),
            Ln if x <= 0.0 => return None,
            Ln => fdlibm::log(x),
            Log2 if x <= 0.0 => return None,
            // Spark: StrictMath.log(x) / StrictMath.log(2).
            Log2 => fdlibm::log(x) / fdlibm::log(2.0),
            Log10 if x <= 0.0 => return None,
            Log10 => fdlibm::log10(x),
            // Spark's Log1p: NULL at or below -1 (its asymptote), NaN stays NaN.
            Log1p if x <= -1.0 => return None,
            Log1p => fdlibm::log1p(x),
            Asin => libm::asin(x),
            Acos => libm::acos(x),
            Atan => libm::atan(x),
            Sinh => fdlibm::sinh(x),
            Cosh => fdlibm::cosh(x),
            Tanh => fdlibm::tanh(x),
            Asinh if x.abs() >= SQRT_MAX - 1.0 => java_signum(x) * (fdlibm::log(2.0) + fdlibm::log(x.abs())),
            Asinh => fdlibm::log(x + (x * x + 1.0).sqrt()),
            Acosh if x >= SQRT_MAX => fdlibm::log(2.0) + fdlibm::log(x),
            Acosh if x < 1.0 => f64::NAN,
            Acosh => fdlibm::log(x + (x * x - 1.0).sqrt()),
            // Spark (SPARK-28519): 0.5 * (StrictMath.log1p(x) - StrictMath.log1p(-x)), never NULL.
            Atanh => 0.5 * (fdlibm::log1p(x) - fdlibm::log1p(-x)),
            // Math.toDegrees / toRadians: one multiplication by Java's constant.
            Degrees => x * 57.29577951308232,
            Radians => x * 0.017453292519943295,
        })
    }
}

/// `Math.signum`: ±0.0 and NaN unchanged.
fn java_signum(x: f64) -> f64 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else {
        x
    }
}

#[derive(Debug)]
pub struct UnaryMath(pub Transcendental);

impl Kernel for UnaryMath {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let f = self.0;
        let a = args[0].as_primitive::<Float64Type>();
        let out: PrimitiveArray<Float64Type> = a.iter().map(|v| v.and_then(|x| f.eval(x))).collect();
        Ok(Arc::new(out))
    }
}

/// (DOUBLE, DOUBLE) → DOUBLE: `atan2(y, x)` (Spark adds 0.0 to both, turning -0.0 into 0.0), `power`
/// (StrictMath.pow: the `libm` crate's is FreeBSD's e_pow.c, fdlibm's but for C99's special cases), `hypot` and `log(base, x)`
/// (`StrictMath.log(x) / StrictMath.log(base)`, NULL when either is at most 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryMathFn {
    Atan2,
    Power,
    Hypot,
    Log,
}

impl BinaryMathFn {
    pub fn eval(self, a: f64, b: f64) -> Option<f64> {
        use super::fdlibm;
        Some(match self {
            BinaryMathFn::Atan2 => fdlibm::atan2(a + 0.0, b + 0.0),
            // Java, unlike C99 (and musl): a NaN exponent gives NaN even for 1, and (±1)^±∞ is NaN.
            BinaryMathFn::Power if b.is_nan() || (a.abs() == 1.0 && b.is_infinite()) => f64::NAN,
            BinaryMathFn::Power => libm::pow(a, b),
            BinaryMathFn::Hypot => fdlibm::hypot(a, b),
            BinaryMathFn::Log if a <= 0.0 || b <= 0.0 => return None,
            BinaryMathFn::Log => fdlibm::log(b) / fdlibm::log(a),
        })
    }
}

#[derive(Debug)]
pub struct BinaryMath(pub BinaryMathFn);

impl Kernel for BinaryMath {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let f = self.0;
        let (l, r) = (args[0].as_primitive::<Float64Type>(), args[1].as_primitive::<Float64Type>());
        let out: PrimitiveArray<Float64Type> = l
            .iter()
            .zip(r.iter())
            .map(|(a, b)| match (a, b) {
                (Some(a), Some(b)) => f.eval(a, b),
                _ => None,
            })
            .collect();
        Ok(Arc::new(out))
    }
}

/// `width_bucket(value, min, max, n)` over doubles (Spark's `WidthBucket.computeBucketNumber`): NULL for
/// `n <= 0`, `n = Long.MaxValue`, a NaN value, `min = max` or a NaN/infinite bound; 0 below the range, `n + 1`
/// at or above its end, else `(n * (value - lower) / (upper - lower)).toLong + 1` (mirrored when `min > max`).
///
/// Ember's own kernel: datafusion-spark's `width_bucket` gives NULL for an infinite value (Spark: 0 or n + 1),
/// overflows on `n = Long.MaxValue` (Spark: NULL), and divides by the bucket width instead of multiplying by
/// `n` first, which rounds differently at bucket edges.
#[derive(Debug)]
pub struct WidthBucket;

pub fn width_bucket(value: f64, min: f64, max: f64, n: i64) -> Option<i64> {
    if n <= 0 || n == i64::MAX || value.is_nan() || min == max || !min.is_finite() || !max.is_finite() {
        return None;
    }
    let (lower, upper) = (min.min(max), min.max(max));
    Some(if min < max {
        if value < lower {
            0
        } else if value >= upper {
            n + 1
        } else {
            (n as f64 * (value - lower) / (upper - lower)) as i64 + 1
        }
    } else if value > upper {
        0
    } else if value <= lower {
        n + 1
    } else {
        (n as f64 * (upper - value) / (upper - lower)) as i64 + 1
    })
}

impl Kernel for WidthBucket {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let v = args[0].as_primitive::<Float64Type>();
        let lo = args[1].as_primitive::<Float64Type>();
        let hi = args[2].as_primitive::<Float64Type>();
        let n = args[3].as_primitive::<Int64Type>();
        let out: PrimitiveArray<Int64Type> = (0..v.len())
            .map(|i| {
                if v.is_null(i) || lo.is_null(i) || hi.is_null(i) || n.is_null(i) {
                    None
                } else {
                    width_bucket(v.value(i), lo.value(i), hi.value(i), n.value(i))
                }
            })
            .collect();
        Ok(Arc::new(out))
    }
}

/// `bit_get(n, pos)` / `getbit(n, pos)`: bit `pos` of an integer as a TINYINT. Ember's own kernel: Spark raises
/// `INVALID_PARAMETER_VALUE.BIT_POSITION_RANGE` (a `SparkIllegalArgumentException` without a query context, in
/// every mode) for a position outside `0..bits`, naming the function as it was called; datafusion-spark's
/// `bit_get` raises a plain error.
#[derive(Debug)]
pub struct BitGet {
    /// `bit_get` or `getbit`: the expression's `prettyName`, which the error carries.
    pub name: String,
}

/// The error class [`BitGet`] raises (Spark attaches no query context to it).
pub const BIT_POSITION_RANGE: &str = "INVALID_PARAMETER_VALUE.BIT_POSITION_RANGE";

fn bit_get<T: ArrowPrimitiveType>(v: &ArrayRef, pos: &ArrayRef, name: &str) -> Result<ArrayRef>
where
    T::Native: Into<i64>,
{
    let bits = (std::mem::size_of::<T::Native>() * 8) as i32;
    let (v, pos) = (v.as_primitive::<T>(), pos.as_primitive::<Int32Type>());
    let mut out = arrow::array::Int8Builder::with_capacity(v.len());
    for i in 0..v.len() {
        if v.is_null(i) || pos.is_null(i) {
            out.append_null();
            continue;
        }
        let p = pos.value(i);
        if !(0..bits).contains(&p) {
            return Err(SparkError::new(
                crate::error::SparkExceptionKind::IllegalArgument,
                BIT_POSITION_RANGE,
                &[
                    ("parameter", "`pos`".to_string()),
                    ("functionName", format!("`{name}`")),
                    ("upper", bits.to_string()),
                    ("invalidValue", p.to_string()),
                ],
            )
            .into_datafusion());
        }
        let x: i64 = v.value(i).into();
        out.append_value(((x >> p) & 1) as i8);
    }
    Ok(Arc::new(out.finish()))
}

impl Kernel for BitGet {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        int_dispatch!(args[0].data_type(), bit_get, &args[0], &args[1], &self.name)
    }
}

/// `conv(num, from_base, to_base)`: Spark's `NumberConverter.convert` over the string with its ASCII spaces
/// trimmed. Ember's own kernel (DataFusion has no `conv`): the digits go through an unsigned 64-bit value; a
/// leading `-` negates it, reading stops at the first character that is not a digit of `from_base`, a base
/// outside 2..36 (`|to_base|` for the target) gives NULL, as does an empty string. A negative `to_base` prints a
/// signed value. Overflow of the unsigned value gives `18446744073709551615` (Spark's -1) or, under ANSI,
/// `ARITHMETIC_OVERFLOW` "Overflow in function conv()".
#[derive(Debug)]
pub struct Conv {
    pub ansi: bool,
}

/// `Character.digit(b, radix)` of a byte as Spark passes it (sign-extended: no byte above 0x7F is a digit).
fn conv_digit(b: u8, radix: u32) -> Option<u64> {
    (b as char).to_digit(radix).filter(|_| b < 0x80).map(u64::from)
}

/// The converted text, `None` for NULL; an overflow under ANSI is Spark's `ARITHMETIC_OVERFLOW`.
pub fn conv(num: &[u8], from: i32, to: i32, ansi: bool) -> Result<Option<String>> {
    // Java's Math.abs(Int.MinValue) stays negative, below MIN_RADIX: wrapping_abs keeps that.
    let to_abs = to.wrapping_abs();
    if !(2..=36).contains(&from) || !(2..=36).contains(&to_abs) {
        return Ok(None);
    }
    // UTF8String.trim(): ASCII spaces only.
    let start = num.iter().position(|&b| b != b' ').unwrap_or(num.len());
    let end = num.iter().rposition(|&b| b != b' ').map_or(start, |e| e + 1);
    let n = &num[start..end];
    if n.is_empty() {
        return Ok(None);
    }
    let (mut negative, digits) = match n[0] {
        b'-' => (true, &n[1..]),
        _ => (false, n),
    };
    let mut v: u64 = 0;
    for &b in digits {
        let Some(d) = conv_digit(b, from as u32) else { break };
        match v.checked_mul(from as u64).and_then(|x| x.checked_add(d)) {
            Some(x) => v = x,
            None if ansi => {
                return Err(SparkError::arithmetic_overflow("Overflow in function conv()", "").into_datafusion())
            }
            None => {
                v = u64::MAX;
                break;
            }
        }
    }
    if negative && to > 0 {
        v = if (v as i64) < 0 { u64::MAX } else { (v as i64).wrapping_neg() as u64 };
    }
    if to < 0 && (v as i64) < 0 {
        v = (v as i64).wrapping_neg() as u64;
        negative = true;
    }
    let radix = to_abs as u64;
    let mut out = Vec::with_capacity(66);
    loop {
        let d = (v % radix) as u32;
        out.push(std::char::from_digit(d, radix as u32).unwrap().to_ascii_uppercase() as u8);
        v /= radix;
        if v == 0 {
            break;
        }
    }
    if negative && to < 0 {
        out.push(b'-');
    }
    out.reverse();
    Ok(Some(String::from_utf8(out).expect("ASCII digits")))
}

impl Kernel for Conv {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let (DataType::Utf8, DataType::Int32, DataType::Int32) =
            (args[0].data_type(), args[1].data_type(), args[2].data_type())
        else {
            return internal_err!("conv of {}, {}, {}", args[0].data_type(), args[1].data_type(), args[2].data_type());
        };
        let (s, from, to) =
            (args[0].as_string::<i32>(), args[1].as_primitive::<Int32Type>(), args[2].as_primitive::<Int32Type>());
        let mut out = arrow::array::StringBuilder::with_capacity(s.len(), s.len() * 8);
        for i in 0..s.len() {
            if s.is_null(i) || from.is_null(i) || to.is_null(i) {
                out.append_null();
                continue;
            }
            match conv(s.value(i).as_bytes(), from.value(i), to.value(i), self.ansi)? {
                Some(t) => out.append_value(t),
                None => out.append_null(),
            }
        }
        Ok(Arc::new(out.finish()))
    }
}
