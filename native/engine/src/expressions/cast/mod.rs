//! Spark's CAST among boolean, integral, floating, decimal, string, binary, date and timestamp, in LEGACY, ANSI
//! and TRY modes, bit for bit as Spark 4.1's `Cast` (with `Decimal`, `UTF8String`, `DateTimeUtils` and the JDK's
//! `Double.toString`/`Double.parseDouble`/`BigDecimal`) computes it.
//!
//! [`supported`] is the single decision of what runs natively; [`create`] refuses (plan error) everything else,
//! so the JVM side can mirror the decision and fall back. Supported, in every mode:
//! - identity casts and NULL → any type below;
//! - boolean / tinyint / smallint / int / bigint / float / double / decimal(p,s) → each other and → string;
//! - string → boolean, the integral types, float, double, decimal, date, binary;
//! - date → string, timestamp, timestamp_ntz; timestamp_ntz → string, date, timestamp;
//! - timestamp → string, date, timestamp_ntz, and → boolean / numeric (epoch seconds); boolean / numeric →
//!   timestamp.
//!
//! Where a TIMESTAMP meets local time (date, timestamp_ntz, text, and ANSI timestamp → tinyint/smallint/int whose
//! error prints the value) the session zone is UTC, a fixed offset or a region zone of the tz database
//! (`zone::SessionZone`, with `java.time`'s gap and overlap rules); an unknown zone name is refused. String →
//! timestamp / timestamp_ntz (zone
//! names inside the text, time-only strings that take today's date) and binary → string (bytes that are not
//! UTF-8) are refused too.
//!
//! Evaluation is columnar: one loop over the input buffers per batch; scalars are evaluated as one-row arrays.
//!
//! Float and double → string / decimal use Java's `Double.toString` / `Float.toString` digits as specified since
//! JDK 19 (shortest uniquely-distinguishing decimal, see `text::java_double_digits`). JDK 17's algorithm
//! sometimes prints a longer string (e.g. `1.23456789012345677E18` for `1.2345678901234568E18`; about 5% of random
//! doubles); the JVM side must only offload those casts ([`depends_on_java_double_to_string`]) on a JDK ≥ 19
//! ([`FLOAT_TEXT_MIN_JDK`]).
mod num;
mod parse;
mod text;
mod time;

use std::fmt;
use std::sync::Arc;

use arrow::array::{
    new_null_array, Array, ArrayRef, AsArray, BooleanArray, BooleanBuilder, PrimitiveArray, PrimitiveBuilder,
    StringArray, StringBuilder,
};
use arrow::datatypes::{
    ArrowPrimitiveType, DataType, Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type,
    Int64Type, Int8Type, Schema, TimeUnit, TimestampMicrosecondType,
};
use arrow::record_batch::RecordBatch;
use datafusion_common::{Result, ScalarValue};
use datafusion_expr::ColumnarValue;
use datafusion_physical_expr::PhysicalExpr;

use crate::error::{plan_error, SparkError, SparkExceptionKind};

pub(crate) use parse::java_digit;
pub use text::{java_double_digits, java_double_to_string, java_float_to_string};
pub use time::{
    civil_from_days, days_from_civil, days_in_month, is_leap, parse_zone as parse_fixed_zone, write_timestamp,
    MICROS_PER_DAY,
};

use super::zone::SessionZone;

/// Casts from FLOAT/DOUBLE to STRING or DECIMAL reproduce `Double.toString` of JDK 19 and later.
pub const FLOAT_TEXT_MIN_JDK: u32 = 19;

pub use super::Mode;

fn is_integral(t: &DataType) -> bool {
    matches!(t, DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64)
}

fn is_float(t: &DataType) -> bool {
    matches!(t, DataType::Float32 | DataType::Float64)
}

fn is_numeric(t: &DataType) -> bool {
    is_integral(t) || is_float(t) || matches!(t, DataType::Decimal128(_, _))
}

fn is_ts(t: &DataType) -> bool {
    matches!(t, DataType::Timestamp(TimeUnit::Microsecond, Some(_)))
}

fn is_ntz(t: &DataType) -> bool {
    matches!(t, DataType::Timestamp(TimeUnit::Microsecond, None))
}

fn known(t: &DataType) -> bool {
    is_numeric(t)
        || is_ts(t)
        || is_ntz(t)
        || matches!(t, DataType::Null | DataType::Boolean | DataType::Utf8 | DataType::Binary | DataType::Date32)
}

/// Whether CAST(`from` AS `to`) reproduces `Double.toString`/`Float.toString` (FLOAT/DOUBLE → STRING or DECIMAL):
/// exact on a JVM of version [`FLOAT_TEXT_MIN_JDK`] or later only, so the JVM side must not offload these casts
/// when Spark runs on JDK 17 (whose older algorithm sometimes prints more digits).
pub fn depends_on_java_double_to_string(from: &DataType, to: &DataType) -> bool {
    is_float(from) && (*to == DataType::Utf8 || matches!(to, DataType::Decimal128(_, _)))
}

/// Whether CAST(`from` AS `to`) in `mode` with session time zone `timezone` runs natively, with the reason when
/// it does not. [`create`] makes exactly this decision.
pub fn supported(from: &DataType, to: &DataType, mode: Mode, timezone: &str) -> Result<(), String> {
    if !known(from) || !known(to) {
        return Err(format!("cast from {from} to {to}: type not supported natively"));
    }
    if from == to || *from == DataType::Null {
        return Ok(());
    }
    // The session zone matters where a TIMESTAMP meets a local date/time or its text.
    let local = |t: &DataType| matches!(t, DataType::Date32 | DataType::Utf8) || is_ntz(t);
    // ANSI TIMESTAMP → TINYINT/SMALLINT/INT overflow errors print the value as local time too.
    let ansi_seconds = mode == Mode::Ansi && matches!(to, DataType::Int8 | DataType::Int16 | DataType::Int32);
    let needs_zone = (is_ts(from) && (local(to) || ansi_seconds)) || (is_ts(to) && local(from));
    let ok = match (from, to) {
        (f, t) if (is_numeric(f) || *f == DataType::Boolean) && (is_numeric(t) || *t == DataType::Boolean) => true,
        (f, DataType::Utf8) if is_numeric(f) || *f == DataType::Boolean => true,
        (DataType::Utf8, t) if is_numeric(t) || *t == DataType::Boolean => true,
        (DataType::Utf8, DataType::Date32) => true,
        (DataType::Utf8, t) if is_ts(t) || is_ntz(t) => true,
        (DataType::Utf8, DataType::Binary) => true,
        (DataType::Date32, DataType::Utf8) => true,
        (f, DataType::Utf8) if is_ts(f) || is_ntz(f) => true,
        (DataType::Date32, t) if is_ts(t) || is_ntz(t) => true,
        (f, DataType::Date32) if is_ts(f) || is_ntz(f) => true,
        (f, t) if (is_ts(f) || is_ntz(f)) && (is_ts(t) || is_ntz(t)) => true,
        // Seconds since the epoch (TIMESTAMP only; Spark has no numeric ↔ TIMESTAMP_NTZ cast).
        (f, t) if (is_numeric(f) || *f == DataType::Boolean) && is_ts(t) => true,
        (f, t) if is_ts(f) && (is_numeric(t) || *t == DataType::Boolean) => true,
        _ => false,
    };
    if !ok {
        return Err(format!("cast from {from} to {to} is not implemented natively"));
    }
    if needs_zone && SessionZone::parse(timezone).is_none() {
        return Err(format!("cast from {from} to {to} in time zone '{timezone}': the zone is not known natively"));
    }
    Ok(())
}

pub fn create(
    child: Arc<dyn PhysicalExpr>,
    to: DataType,
    mode: Mode,
    timezone: &str,
    schema: &Schema,
) -> Result<Arc<dyn PhysicalExpr>> {
    let from = child.data_type(schema)?;
    supported(&from, &to, mode, timezone).map_err(plan_error)?;
    let zone = if is_ts(&from) || is_ts(&to) {
        SessionZone::parse(timezone).unwrap_or(SessionZone::Fixed(0))
    } else {
        SessionZone::Fixed(0)
    };
    Ok(Arc::new(SparkCastExpr { child, from, to, mode, timezone: timezone.to_string(), zone }))
}

/// CAST as Spark evaluates it. Build with [`create`].
#[derive(Debug, Eq)]
pub struct SparkCastExpr {
    child: Arc<dyn PhysicalExpr>,
    from: DataType,
    to: DataType,
    mode: Mode,
    timezone: String,
    /// The session zone (UTC when no TIMESTAMP is involved).
    zone: SessionZone,
}

impl PartialEq for SparkCastExpr {
    fn eq(&self, other: &Self) -> bool {
        self.child.eq(&other.child)
            && self.from == other.from
            && self.to == other.to
            && self.mode == other.mode
            && self.timezone == other.timezone
    }
}

impl std::hash::Hash for SparkCastExpr {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.child.hash(state);
        self.to.hash(state);
        self.mode.hash(state);
        self.timezone.hash(state);
    }
}

impl fmt::Display for SparkCastExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = match self.mode {
            Mode::Legacy => "",
            Mode::Ansi => "ansi_",
            Mode::Try => "try_",
        };
        write!(f, "{m}cast({} AS {})", self.child, self.to)
    }
}

impl PhysicalExpr for SparkCastExpr {
    fn data_type(&self, _input_schema: &Schema) -> Result<DataType> {
        Ok(self.to.clone())
    }

    fn nullable(&self, input_schema: &Schema) -> Result<bool> {
        // Conservative: most casts can produce NULL from a non-null input (LEGACY/TRY failures).
        Ok(self.child.nullable(input_schema)? || self.from != self.to)
    }

    fn evaluate(&self, batch: &RecordBatch) -> Result<ColumnarValue> {
        match self.child.evaluate(batch)? {
            ColumnarValue::Array(a) => Ok(ColumnarValue::Array(self.cast_array(&a)?)),
            ColumnarValue::Scalar(s) => {
                let a = s.to_array_of_size(1)?;
                let out = self.cast_array(&a)?;
                Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?))
            }
        }
    }

    fn children(&self) -> Vec<&Arc<dyn PhysicalExpr>> {
        vec![&self.child]
    }

    fn with_new_children(self: Arc<Self>, children: Vec<Arc<dyn PhysicalExpr>>) -> Result<Arc<dyn PhysicalExpr>> {
        Ok(Arc::new(SparkCastExpr {
            child: Arc::clone(&children[0]),
            from: self.from.clone(),
            to: self.to.clone(),
            mode: self.mode,
            timezone: self.timezone.clone(),
            zone: self.zone,
        }))
    }

    fn fmt_sql(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Java's `ArithmeticException("long overflow")`, which Spark does not wrap in an error class.
fn long_overflow() -> datafusion_common::DataFusionError {
    datafusion_common::DataFusionError::Execution("long overflow".to_string())
}

/// Spark's SQL name of a type, as error messages print it.
pub(crate) fn sql_type(t: &DataType) -> String {
    match t {
        DataType::Null => "VOID".into(),
        DataType::Boolean => "BOOLEAN".into(),
        DataType::Int8 => "TINYINT".into(),
        DataType::Int16 => "SMALLINT".into(),
        DataType::Int32 => "INT".into(),
        DataType::Int64 => "BIGINT".into(),
        DataType::Float32 => "FLOAT".into(),
        DataType::Float64 => "DOUBLE".into(),
        DataType::Decimal128(p, s) => format!("DECIMAL({p},{s})"),
        DataType::Utf8 => "STRING".into(),
        DataType::Binary => "BINARY".into(),
        DataType::Date32 => "DATE".into(),
        DataType::Timestamp(_, Some(_)) => "TIMESTAMP".into(),
        DataType::Timestamp(_, None) => "TIMESTAMP_NTZ".into(),
        other => other.to_string(),
    }
}

/// Maps a primitive array through a fallible function; `Ok(None)` is a NULL result.
fn try_map<I, O, F>(a: &PrimitiveArray<I>, to: &DataType, mut f: F) -> Result<ArrayRef>
where
    I: ArrowPrimitiveType,
    O: ArrowPrimitiveType,
    F: FnMut(I::Native) -> Result<Option<O::Native>>,
{
    let mut b = PrimitiveBuilder::<O>::with_capacity(a.len());
    let values = a.values();
    for (i, &v) in values.iter().enumerate() {
        if a.is_null(i) {
            b.append_null();
        } else {
            match f(v)? {
                Some(r) => b.append_value(r),
                None => b.append_null(),
            }
        }
    }
    Ok(Arc::new(b.finish().with_data_type(to.clone())))
}

/// Maps a primitive array to strings.
fn map_to_string<I, F>(a: &PrimitiveArray<I>, mut f: F) -> Result<ArrayRef>
where
    I: ArrowPrimitiveType,
    F: FnMut(I::Native, &mut String),
{
    let mut b = StringBuilder::with_capacity(a.len(), a.len() * 8);
    let mut buf = String::new();
    for (i, &v) in a.values().iter().enumerate() {
        if a.is_null(i) {
            b.append_null();
        } else {
            buf.clear();
            f(v, &mut buf);
            b.append_value(&buf);
        }
    }
    Ok(Arc::new(b.finish()))
}

fn map_strings<O, F>(a: &StringArray, to: &DataType, mut f: F) -> Result<ArrayRef>
where
    O: ArrowPrimitiveType,
    F: FnMut(&str) -> Result<Option<O::Native>>,
{
    let mut b = PrimitiveBuilder::<O>::with_capacity(a.len());
    for i in 0..a.len() {
        if a.is_null(i) {
            b.append_null();
        } else {
            match f(a.value(i))? {
                Some(r) => b.append_value(r),
                None => b.append_null(),
            }
        }
    }
    Ok(Arc::new(b.finish().with_data_type(to.clone())))
}

impl SparkCastExpr {
    /// Whether this cast can never raise, whatever the mode: an integer to a wider integer or to DOUBLE, FLOAT
    /// to DOUBLE (Spark's sum and avg widen their arguments so).
    pub fn widens(&self) -> bool {
        use DataType::*;
        matches!(
            (&self.from, &self.to),
            (Int8, Int16 | Int32 | Int64 | Float64)
                | (Int16, Int32 | Int64 | Float64)
                | (Int32, Int64 | Float64)
                | (Int64, Float64)
                | (Float32, Float64)
        )
    }

    /// The result of a value that Spark rejects: NULL in LEGACY/TRY, `err` in ANSI.
    fn fail<T>(&self, err: impl FnOnce() -> SparkError) -> Result<Option<T>> {
        match self.mode {
            Mode::Ansi => Err(err().into_datafusion()),
            _ => Ok(None),
        }
    }

    fn overflow<T>(&self, value: impl FnOnce() -> String) -> Result<Option<T>> {
        self.fail(|| SparkError::cast_overflow(&value(), &sql_type(&self.from), &sql_type(&self.to)))
    }

    fn invalid<T>(&self, kind: SparkExceptionKind, s: &str) -> Result<Option<T>> {
        self.fail(|| SparkError::cast_invalid_input(kind, &text::escape_sql_string(s), "STRING", &sql_type(&self.to)))
    }

    fn decimal_out_of_range<T>(&self, value: impl FnOnce() -> String) -> Result<Option<T>> {
        let (p, s) = match self.to {
            DataType::Decimal128(p, s) => (p, s),
            _ => (0, 0),
        };
        self.fail(|| SparkError::numeric_value_out_of_range(&value(), p, s))
    }

    pub(crate) fn cast_array(&self, a: &ArrayRef) -> Result<ArrayRef> {
        let from = &self.from;
        let to = &self.to;
        if from == to {
            return Ok(Arc::clone(a));
        }
        if *from == DataType::Null {
            return Ok(new_null_array(to, a.len()));
        }
        match from {
            DataType::Boolean => self.cast_boolean(a.as_boolean()),
            t if is_integral(t) => {
                let wide = arrow::compute::cast(a, &DataType::Int64)?;
                self.cast_integral(wide.as_primitive::<Int64Type>())
            }
            DataType::Float32 => {
                let wide = arrow::compute::cast(a, &DataType::Float64)?;
                self.cast_float(wide.as_primitive::<Float64Type>())
            }
            DataType::Float64 => self.cast_float(a.as_primitive::<Float64Type>()),
            DataType::Decimal128(p, s) => self.cast_decimal(a.as_primitive::<Decimal128Type>(), *p, *s),
            DataType::Utf8 => self.cast_string(a.as_string::<i32>()),
            DataType::Date32 => self.cast_date(a.as_primitive::<Date32Type>()),
            DataType::Timestamp(_, _) => self.cast_timestamp(a.as_primitive::<TimestampMicrosecondType>()),
            other => Err(plan_error(format!("cast from {other} is not implemented natively"))),
        }
    }

    fn cast_boolean(&self, a: &BooleanArray) -> Result<ArrayRef> {
        if self.to == DataType::Utf8 {
            let out: StringArray = a.iter().map(|v| v.map(|b| if b { "true" } else { "false" })).collect();
            return Ok(Arc::new(out));
        }
        if is_ts(&self.to) {
            // Spark: true → 1 microsecond (not second), false → 0.
            let out: PrimitiveArray<TimestampMicrosecondType> = a.iter().map(|v| v.map(|b| b as i64)).collect();
            return Ok(Arc::new(out.with_data_type(self.to.clone())));
        }
        // Spark: true → 1, false → 0 in the target type.
        let ints: PrimitiveArray<Int64Type> = a.iter().map(|v| v.map(|b| b as i64)).collect();
        let saved = SparkCastExpr {
            child: Arc::clone(&self.child),
            from: DataType::Int64,
            to: self.to.clone(),
            mode: self.mode,
            timezone: String::new(),
            zone: SessionZone::Fixed(0),
        };
        saved.cast_integral(&ints)
    }

    fn cast_integral(&self, a: &PrimitiveArray<Int64Type>) -> Result<ArrayRef> {
        let to = &self.to;
        let from = &self.from;
        let lit = |v: i64| num::integral_literal(v, from);
        match to {
            DataType::Boolean => Ok(Arc::new(a.iter().map(|v| v.map(|x| x != 0)).collect::<BooleanArray>())),
            DataType::Int8 => try_map::<_, Int8Type, _>(a, to, |v| match i8::try_from(v) {
                Ok(r) => Ok(Some(r)),
                Err(_) if self.mode == Mode::Legacy => Ok(Some(v as i8)),
                Err(_) => self.overflow(|| lit(v)),
            }),
            DataType::Int16 => try_map::<_, Int16Type, _>(a, to, |v| match i16::try_from(v) {
                Ok(r) => Ok(Some(r)),
                Err(_) if self.mode == Mode::Legacy => Ok(Some(v as i16)),
                Err(_) => self.overflow(|| lit(v)),
            }),
            DataType::Int32 => try_map::<_, Int32Type, _>(a, to, |v| match i32::try_from(v) {
                Ok(r) => Ok(Some(r)),
                Err(_) if self.mode == Mode::Legacy => Ok(Some(v as i32)),
                Err(_) => self.overflow(|| lit(v)),
            }),
            DataType::Int64 => try_map::<_, Int64Type, _>(a, to, |v| Ok(Some(v))),
            // Java's int/long → float/double conversions round to nearest, as Rust's `as` does.
            DataType::Float32 => try_map::<_, Float32Type, _>(a, to, |v| Ok(Some(v as f32))),
            DataType::Float64 => try_map::<_, Float64Type, _>(a, to, |v| Ok(Some(v as f64))),
            DataType::Decimal128(p, s) => {
                let (p, s) = (*p, *s);
                try_map::<_, Decimal128Type, _>(a, to, |v| match num::rescale(v as i128, 0, p, s) {
                    Some(r) => Ok(Some(r)),
                    None => self.decimal_out_of_range(|| v.to_string()),
                })
            }
            DataType::Utf8 => map_to_string(a, |v, buf| {
                use std::fmt::Write;
                let _ = write!(buf, "{v}");
            }),
            // SECONDS.toMicros saturates.
            DataType::Timestamp(_, _) => {
                try_map::<_, TimestampMicrosecondType, _>(a, to, |v| Ok(Some(v.saturating_mul(1_000_000))))
            }
            other => Err(plan_error(format!("cast from {from} to {other} is not implemented natively"))),
        }
    }

    fn cast_float(&self, a: &PrimitiveArray<Float64Type>) -> Result<ArrayRef> {
        let to = &self.to;
        let is_f32 = self.from == DataType::Float32;
        let lit = |v: f64| num::float_literal(v, is_f32);
        let mode = self.mode;
        // Spark (ANSI): `Math.floor(x) <= MAX && Math.ceil(x) >= MIN` with the bounds as doubles, then Java's
        // conversion; LEGACY: Java's conversion (NaN → 0, saturating to int/long, then narrowing).
        macro_rules! to_int {
            ($t:ty, $native:ty, $conv:expr) => {
                try_map::<_, $t, _>(a, to, |v| {
                    if mode == Mode::Legacy || (v.floor() <= <$native>::MAX as f64 && v.ceil() >= <$native>::MIN as f64)
                    {
                        Ok(Some($conv(v)))
                    } else {
                        self.overflow(|| lit(v))
                    }
                })
            };
        }
        match to {
            DataType::Boolean => Ok(Arc::new(a.iter().map(|v| v.map(|x| x != 0.0)).collect::<BooleanArray>())),
            DataType::Int8 => to_int!(Int8Type, i8, |v: f64| (v as i32) as i8),
            DataType::Int16 => to_int!(Int16Type, i16, |v: f64| (v as i32) as i16),
            DataType::Int32 => to_int!(Int32Type, i32, |v: f64| v as i32),
            DataType::Int64 => to_int!(Int64Type, i64, |v: f64| v as i64),
            DataType::Float32 => try_map::<_, Float32Type, _>(a, to, |v| Ok(Some(v as f32))),
            DataType::Float64 => try_map::<_, Float64Type, _>(a, to, |v| Ok(Some(v))),
            DataType::Decimal128(p, s) => {
                let (p, s) = (*p, *s);
                try_map::<_, Decimal128Type, _>(a, to, |v| {
                    // Spark: Decimal(double) = BigDecimal(Double.toString(d)); NaN/∞ → NULL in every mode.
                    if !v.is_finite() {
                        return Ok(None);
                    }
                    let big = parse::BigDec::from_java_double(v);
                    match big.round_to(p, s) {
                        Some(r) => Ok(Some(r)),
                        None => self.decimal_out_of_range(|| big.to_java_string()),
                    }
                })
            }
            DataType::Timestamp(_, _) => try_map::<_, TimestampMicrosecondType, _>(a, to, |v| {
                // doubleToTimestamp: NaN/∞ → NULL (ANSI: CAST_INVALID_INPUT of the double), else d × 10^6 as a
                // long (LEGACY: Java's saturating d2l; ANSI: CAST_OVERFLOW of the product, DOUBLE → BIGINT).
                if !v.is_finite() {
                    return self.fail(|| {
                        SparkError::new(
                            SparkExceptionKind::DateTime,
                            "CAST_INVALID_INPUT",
                            &[
                                ("expression", num::float_literal(v, false)),
                                ("sourceType", "\"DOUBLE\"".to_string()),
                                ("targetType", format!("\"{}\"", sql_type(to))),
                                ("ansiConfig", "\"spark.sql.ansi.enabled\"".to_string()),
                            ],
                        )
                    });
                }
                let x = v * 1_000_000.0;
                if mode == Mode::Legacy || (x.floor() <= i64::MAX as f64 && x.ceil() >= i64::MIN as f64) {
                    Ok(Some(x as i64))
                } else {
                    self.fail(|| SparkError::cast_overflow(&num::float_literal(x, false), "DOUBLE", "BIGINT"))
                }
            }),
            DataType::Utf8 => map_to_string(a, |v, buf| {
                if is_f32 {
                    text::write_java_float(v as f32, buf)
                } else {
                    text::write_java_double(v, buf)
                }
            }),
            other => Err(plan_error(format!("cast from {} to {other} is not implemented natively", self.from))),
        }
    }

    fn cast_decimal(&self, a: &PrimitiveArray<Decimal128Type>, p: u8, s: i8) -> Result<ArrayRef> {
        let to = &self.to;
        let mode = self.mode;
        let lit = |v: i128| format!("{}BD", num::decimal_to_java_string(v, s));
        let pow = num::pow10(s as u32);
        // LEGACY: the truncated value narrowed as Java does (low bits). ANSI/TRY: Spark's roundToByte/Short/Int
        // check the truncated value for precision ≤ 18 and go through the (correctly rounded) double otherwise.
        macro_rules! to_int {
            ($t:ty, $native:ty) => {
                try_map::<_, $t, _>(a, to, |v| {
                    let q = v / pow;
                    if mode == Mode::Legacy {
                        return Ok(Some(q as $native));
                    }
                    if p <= 18 || std::mem::size_of::<$native>() == 8 {
                        match <$native>::try_from(q) {
                            Ok(r) => Ok(Some(r)),
                            Err(_) => self.overflow(|| lit(v)),
                        }
                    } else {
                        let d = num::decimal_to_f64(v, s);
                        if d.floor() <= <$native>::MAX as f64 && d.ceil() >= <$native>::MIN as f64 {
                            Ok(Some((d as i32) as $native))
                        } else {
                            self.overflow(|| lit(v))
                        }
                    }
                })
            };
        }
        match to {
            DataType::Boolean => Ok(Arc::new(a.iter().map(|v| v.map(|x| x != 0)).collect::<BooleanArray>())),
            DataType::Int8 => to_int!(Int8Type, i8),
            DataType::Int16 => to_int!(Int16Type, i16),
            DataType::Int32 => to_int!(Int32Type, i32),
            DataType::Int64 => to_int!(Int64Type, i64),
            DataType::Float32 => try_map::<_, Float32Type, _>(a, to, |v| Ok(Some(num::decimal_to_f32(v, s)))),
            DataType::Float64 => try_map::<_, Float64Type, _>(a, to, |v| Ok(Some(num::decimal_to_f64(v, s)))),
            DataType::Decimal128(p2, s2) => {
                let (p2, s2) = (*p2, *s2);
                try_map::<_, Decimal128Type, _>(a, to, |v| match num::rescale(v, s, p2, s2) {
                    Some(r) => Ok(Some(r)),
                    None => self.decimal_out_of_range(|| num::decimal_to_java_string(v, s)),
                })
            }
            DataType::Timestamp(_, _) => {
                // Scala's `(d.toBigDecimal * 1000000).longValue`: the product is rounded to 34 significant
                // digits (MathContext.DECIMAL128, HALF_EVEN), truncated toward zero, then the low 64 bits kept.
                try_map::<_, TimestampMicrosecondType, _>(a, to, |v| Ok(Some(num::decimal_seconds_to_micros(v, s))))
            }
            DataType::Utf8 => {
                // LEGACY prints BigDecimal.toString (scientific for small values), ANSI/TRY toPlainString.
                let plain = mode != Mode::Legacy;
                map_to_string(a, |v, buf| {
                    if plain {
                        buf.push_str(&num::decimal_to_plain_string(v, s))
                    } else {
                        buf.push_str(&num::decimal_to_java_string(v, s))
                    }
                })
            }
            other => Err(plan_error(format!("cast from {} to {other} is not implemented natively", self.from))),
        }
    }

    fn cast_string(&self, a: &StringArray) -> Result<ArrayRef> {
        let to = &self.to;
        let strict = self.mode != Mode::Legacy;
        let nf = SparkExceptionKind::NumberFormat;
        macro_rules! to_int {
            ($t:ty, $native:ty) => {
                map_strings::<$t, _>(a, to, |s| match parse::parse_long(s.as_bytes(), !strict) {
                    Some(v) => match <$native>::try_from(v) {
                        Ok(r) => Ok(Some(r)),
                        Err(_) => self.invalid(nf, s),
                    },
                    None => self.invalid(nf, s),
                })
            };
        }
        match to {
            DataType::Boolean => {
                let mut b = BooleanBuilder::with_capacity(a.len());
                for i in 0..a.len() {
                    if a.is_null(i) {
                        b.append_null();
                        continue;
                    }
                    let s = a.value(i);
                    match parse::parse_bool(s.as_bytes()) {
                        Some(v) => b.append_value(v),
                        None => {
                            self.invalid::<()>(SparkExceptionKind::Runtime, s)?;
                            b.append_null()
                        }
                    }
                }
                Ok(Arc::new(b.finish()))
            }
            DataType::Int8 => to_int!(Int8Type, i8),
            DataType::Int16 => to_int!(Int16Type, i16),
            DataType::Int32 => to_int!(Int32Type, i32),
            DataType::Int64 => to_int!(Int64Type, i64),
            DataType::Float32 => map_strings::<Float32Type, _>(a, to, |s| match parse::parse_java_float(s) {
                Some(v) => Ok(Some(v)),
                None => self.invalid(nf, s),
            }),
            DataType::Float64 => map_strings::<Float64Type, _>(a, to, |s| match parse::parse_java_double(s) {
                Some(v) => Ok(Some(v)),
                None => self.invalid(nf, s),
            }),
            DataType::Decimal128(p, sc) => {
                let (p, sc) = (*p, *sc);
                map_strings::<Decimal128Type, _>(a, to, |s| match parse::BigDec::parse(parse::java_trim(s)) {
                    None => self.invalid(nf, s),
                    // Java fails to build a huge power of ten: a plain ArithmeticException, in every mode.
                    Some(big) if big.java_big_integer_overflow(sc) => {
                        Err(datafusion_common::DataFusionError::Execution(
                            "BigInteger would overflow supported range".to_string(),
                        ))
                    }
                    // (`precision - scale` is an Int in Spark: when it wraps, the check does not fire.)
                    Some(big) if (39..=i32::MAX as i64).contains(&big.integral_digits()) => {
                        self.fail(|| SparkError::numeric_out_of_supported_range(s))
                    }
                    Some(big) => match big.round_to(p, sc) {
                        Some(r) => Ok(Some(r)),
                        None => self.decimal_out_of_range(|| big.to_java_string()),
                    },
                })
            }
            DataType::Date32 => map_strings::<Date32Type, _>(a, to, |s| match time::parse_date(s.as_bytes()) {
                Some(d) => Ok(Some(d)),
                None => self.invalid(SparkExceptionKind::DateTime, s),
            }),
            DataType::Binary => Ok(Arc::new(arrow::array::BinaryArray::from(a.clone()))),
            DataType::Timestamp(_, Some(_)) => {
                // A text without a date is on today's date, the clock read per row as Spark does.
                let now = || {
                    std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| d.as_micros() as i64)
                };
                map_strings::<TimestampMicrosecondType, _>(a, to, |s| {
                    match time::string_to_timestamp(s.as_bytes(), &self.zone, now) {
                        Some(us) => Ok(Some(us)),
                        None => self.invalid(SparkExceptionKind::DateTime, s),
                    }
                })
            }
            DataType::Timestamp(_, None) => map_strings::<TimestampMicrosecondType, _>(a, to, |s| {
                match time::string_to_timestamp_ntz(s.as_bytes()) {
                    Some(us) => Ok(Some(us)),
                    None => self.invalid(SparkExceptionKind::DateTime, s),
                }
            }),
            other => Err(plan_error(format!("cast from STRING to {other} is not implemented natively"))),
        }
    }

    fn cast_date(&self, a: &PrimitiveArray<Date32Type>) -> Result<ArrayRef> {
        let to = &self.to;
        match to {
            DataType::Utf8 => map_to_string(a, |d, buf| time::write_date(d as i64, buf)),
            DataType::Timestamp(_, tz) => {
                let zone = if tz.is_some() { self.zone } else { SessionZone::Fixed(0) };
                // Spark's Math.multiplyExact throws a plain ArithmeticException (not an error class) unless TRY.
                try_map::<_, TimestampMicrosecondType, _>(a, to, |d| {
                    match zone.start_of_day(d as i64).checked_mul(1_000_000) {
                        Some(us) => Ok(Some(us)),
                        None if self.mode == Mode::Try => Ok(None),
                        None => Err(long_overflow()),
                    }
                })
            }
            other => Err(plan_error(format!("cast from DATE to {other} is not implemented natively"))),
        }
    }

    /// TIMESTAMP → TINYINT/SMALLINT/INT: whole seconds (floor); out of range is NULL in LEGACY and TRY (not a
    /// wrap) and CAST_OVERFLOW of the TIMESTAMP literal in ANSI.
    fn timestamp_seconds<O: ArrowPrimitiveType>(
        &self,
        a: &PrimitiveArray<TimestampMicrosecondType>,
        narrow: impl Fn(i64) -> Option<O::Native>,
    ) -> Result<ArrayRef> {
        try_map::<_, O, _>(a, &self.to, |us| match narrow(us.div_euclid(1_000_000)) {
            Some(v) => Ok(Some(v)),
            None => self.overflow(|| {
                let mut t = String::from("TIMESTAMP '");
                time::write_timestamp(us, self.zone.offset_us_at(us), &mut t);
                t.push('\'');
                t
            }),
        })
    }

    fn cast_timestamp(&self, a: &PrimitiveArray<TimestampMicrosecondType>) -> Result<ArrayRef> {
        let to = &self.to;
        let zone = if is_ts(&self.from) { self.zone } else { SessionZone::Fixed(0) };
        match to {
            DataType::Utf8 => map_to_string(a, |us, buf| time::write_timestamp(us, zone.offset_us_at(us), buf)),
            DataType::Date32 => {
                try_map::<_, Date32Type, _>(a, to, |us| Ok(Some(time::micros_to_date(us, zone.offset_us_at(us)))))
            }
            DataType::Boolean => Ok(Arc::new(a.iter().map(|v| v.map(|x| x != 0)).collect::<BooleanArray>())),
            DataType::Int64 => try_map::<_, Int64Type, _>(a, to, |us| Ok(Some(us.div_euclid(1_000_000)))),
            DataType::Int32 => self.timestamp_seconds::<Int32Type>(a, |x| i32::try_from(x).ok()),
            DataType::Int16 => self.timestamp_seconds::<Int16Type>(a, |x| i16::try_from(x).ok()),
            DataType::Int8 => self.timestamp_seconds::<Int8Type>(a, |x| i8::try_from(x).ok()),
            DataType::Float64 => try_map::<_, Float64Type, _>(a, to, |us| Ok(Some(us as f64 / 1e6))),
            DataType::Float32 => try_map::<_, Float32Type, _>(a, to, |us| Ok(Some((us as f64 / 1e6) as f32))),
            DataType::Decimal128(p, s) => {
                let (p, s) = (*p, *s);
                try_map::<_, Decimal128Type, _>(a, to, |us| match num::rescale(us as i128, 6, p, s) {
                    Some(r) => Ok(Some(r)),
                    None => self.decimal_out_of_range(|| num::decimal_to_java_string(us as i128, 6)),
                })
            }
            DataType::Timestamp(_, tz) => {
                // TIMESTAMP → TIMESTAMP_NTZ: the local wall clock; the reverse is `ZonedDateTime.ofLocal`.
                let (to_local, to_utc) = (is_ts(&self.from) && tz.is_none(), !is_ts(&self.from) && tz.is_some());
                let zone = self.zone;
                try_map::<_, TimestampMicrosecondType, _>(a, to, |us| {
                    let r = if to_local {
                        zone.local_us(us)
                    } else if to_utc {
                        zone.local_us_to_utc(us as i128, None)
                    } else {
                        us as i128
                    };
                    match i64::try_from(r).ok() {
                        Some(r) => Ok(Some(r)),
                        None if self.mode == Mode::Try => Ok(None),
                        None => Err(long_overflow()),
                    }
                })
            }
            other => Err(plan_error(format!("cast from {} to {other} is not implemented natively", self.from))),
        }
    }
}

#[cfg(test)]
mod golden;
#[cfg(test)]
mod jdk_golden;
#[cfg(test)]
mod tests;
