//! Spark's TIMESTAMP functions in the session time zone (UTC, fixed offsets and region zones, see
//! `expressions::zone`), and the date functions whose answer goes through `java.time` calendars (`add_months`,
//! `months_between`, `next_day`, `make_date`).
//!
//! Ember's own kernels: DataFusion's `date_trunc`, `from_utc_timestamp` & co. resolve DST gaps and overlaps as
//! chrono does (`LocalResult::None` is an error or NULL, not `java.time`'s shift by the gap), and its
//! `make_date`/`add_months` neither raise Spark's errors nor wrap as Spark does.
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Date32Array, Float64Array, Int32Array, Int64Array,
    TimestampMicrosecondArray,
};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Int32Type, Int64Type, TimestampMicrosecondType};
use datafusion_common::{internal_err, DataFusionError, Result};

use super::datetime::{civil_from_days, days_from_civil, trunc_date, TruncLevel};
use super::Kernel;
use crate::error::{SparkError, SparkExceptionKind};
use crate::expressions::cast::{days_in_month, MICROS_PER_DAY};
use crate::expressions::zone::SessionZone;

fn timestamps(a: &ArrayRef) -> Result<&TimestampMicrosecondArray> {
    match a.data_type() {
        DataType::Timestamp(_, _) => Ok(a.as_primitive::<TimestampMicrosecondType>()),
        t => internal_err!("timestamp function over {t}"),
    }
}

fn timestamp_array(values: Vec<Option<i64>>, tz: Option<Arc<str>>) -> ArrayRef {
    Arc::new(TimestampMicrosecondArray::from(values).with_timezone_opt(tz))
}

/// Java's `ArithmeticException("long overflow")` (`Math.multiplyExact`, `instantToMicros`), not an error class.
fn long_overflow() -> DataFusionError {
    DataFusionError::Execution("long overflow".to_string())
}

fn to_i64(v: i128) -> Result<i64> {
    i64::try_from(v).map_err(|_| long_overflow())
}

/// `MathUtils.toIntExact` of a day number.
fn to_days(v: i64) -> Result<i32> {
    i32::try_from(v).map_err(|_| SparkError::arithmetic_overflow("integer overflow", "").into_datafusion())
}

/// `daysToMicros(days, zone)`: the start of the day in the zone, `Math.multiplyExact`'s overflow included.
fn days_to_micros(zone: &SessionZone, days: i64) -> Result<i64> {
    zone.start_of_day(days).checked_mul(1_000_000).ok_or_else(long_overflow)
}

/// The wall clock fields `hour`, `minute`, `second` of a TIMESTAMP in the session zone
/// (`getLocalDateTime(micros, zone).getHour` …).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeField {
    Hour,
    Minute,
    Second,
}

#[derive(Debug)]
pub struct ExtractTime {
    pub field: TimeField,
    pub zone: SessionZone,
}

impl Kernel for ExtractTime {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let zone = self.zone;
        let field = self.field;
        let out: Int32Array = timestamps(&args[0])?.unary(|us| {
            let secs = (zone.local_us(us).rem_euclid(MICROS_PER_DAY as i128) / 1_000_000) as i32;
            match field {
                TimeField::Hour => secs / 3600,
                TimeField::Minute => secs / 60 % 60,
                TimeField::Second => secs % 60,
            }
        });
        Ok(Arc::new(out))
    }
}

/// `date_trunc(format, ts)`: `DateTimeUtils.truncTimestamp` in the session zone. MICROSECOND … SECOND without
/// the zone; MINUTE, HOUR, DAY truncate the wall clock and go back through `ZonedDateTime.ofLocal` preferring
/// the instant's own offset (`ZonedDateTime.truncatedTo`); WEEK … YEAR truncate the local date and take the
/// start of that day (`atStartOfDay`). An unknown or NULL format is NULL.
#[derive(Debug)]
pub struct TruncTimestamp {
    pub zone: SessionZone,
}

#[derive(Debug, Clone, Copy)]
enum TsLevel {
    Micro,
    Milli,
    Second,
    Minute,
    Hour,
    Day,
    Date(TruncLevel),
}

fn ts_level(format: &str) -> Option<TsLevel> {
    Some(match format.to_uppercase().as_str() {
        "MICROSECOND" => TsLevel::Micro,
        "MILLISECOND" => TsLevel::Milli,
        "SECOND" => TsLevel::Second,
        "MINUTE" => TsLevel::Minute,
        "HOUR" => TsLevel::Hour,
        "DAY" | "DD" => TsLevel::Day,
        "WEEK" => TsLevel::Date(TruncLevel::Week),
        "MON" | "MONTH" | "MM" => TsLevel::Date(TruncLevel::Month),
        "QUARTER" => TsLevel::Date(TruncLevel::Quarter),
        "YEAR" | "YYYY" | "YY" => TsLevel::Date(TruncLevel::Year),
        _ => return None,
    })
}

fn trunc_timestamp(zone: &SessionZone, us: i64, level: TsLevel) -> Result<i64> {
    let unit: i128 = match level {
        TsLevel::Micro => return Ok(us),
        // Java's long arithmetic: wraps at Long.MIN_VALUE.
        TsLevel::Milli => return Ok(us.wrapping_sub(us.rem_euclid(1_000))),
        TsLevel::Second => return Ok(us.wrapping_sub(us.rem_euclid(1_000_000))),
        TsLevel::Minute => 60_000_000,
        TsLevel::Hour => 3_600_000_000,
        TsLevel::Day => MICROS_PER_DAY as i128,
        TsLevel::Date(l) => {
            let days = zone.local_us(us).div_euclid(MICROS_PER_DAY as i128) as i64;
            let days = to_days(days)?;
            return days_to_micros(zone, trunc_date(days, l)? as i64);
        }
    };
    let local = zone.local_us(us);
    let truncated = local - local.rem_euclid(unit);
    to_i64(zone.local_us_to_utc(truncated, Some(zone.offset_us_at(us))))
}

impl Kernel for TruncTimestamp {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let f = args[0].as_string::<i32>();
        let ts = timestamps(&args[1])?;
        let mut out = Vec::with_capacity(ts.len());
        for i in 0..ts.len() {
            let level = if f.is_valid(i) { ts_level(f.value(i)) } else { None };
            out.push(match (ts.is_valid(i), level) {
                (true, Some(l)) => Some(trunc_timestamp(&self.zone, ts.value(i), l)?),
                _ => None,
            });
        }
        Ok(timestamp_array(out, ts.timezone().map(Arc::from)))
    }
}

/// `from_utc_timestamp(ts, zone)` (`toUtc = false`: the wall clock of `zone` read as UTC) and
/// `to_utc_timestamp(ts, zone)` (the UTC wall clock read in `zone`, `ZonedDateTime.ofLocal`'s gap and overlap
/// rules); the zone is a literal, `None` for NULL (every row NULL).
#[derive(Debug)]
pub struct ConvertTz {
    pub zone: Option<SessionZone>,
    pub to_utc: bool,
}

impl Kernel for ConvertTz {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let ts = timestamps(&args[0])?;
        let mut out = Vec::with_capacity(ts.len());
        for v in ts.iter() {
            out.push(match (v, &self.zone) {
                (Some(us), Some(z)) => {
                    Some(to_i64(if self.to_utc { z.local_us_to_utc(us as i128, None) } else { z.local_us(us) })?)
                }
                _ => None,
            });
        }
        Ok(timestamp_array(out, ts.timezone().map(Arc::from)))
    }
}

/// `convert_timezone(from, to, ntz)`: the wall clock `ntz` in zone `from` (`ZonedDateTime.ofLocal`'s gap and
/// overlap rules), as the wall clock of the same instant in zone `to`; the zones are literals, `None` for NULL.
#[derive(Debug)]
pub struct ConvertTimezone {
    pub from: Option<SessionZone>,
    pub to: Option<SessionZone>,
}

impl Kernel for ConvertTimezone {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let ts = timestamps(&args[2])?;
        let mut out = Vec::with_capacity(ts.len());
        for v in ts.iter() {
            out.push(match (v, &self.from, &self.to) {
                (Some(us), Some(from), Some(to)) => {
                    Some(to_i64(to.local_us(to_i64(from.local_us_to_utc(us as i128, None))?))?)
                }
                _ => None,
            });
        }
        Ok(timestamp_array(out, None))
    }
}

/// `unix_seconds` / `unix_millis` / `unix_micros`: `Math.floorDiv(micros, unit)`.
#[derive(Debug)]
pub struct UnixTime(pub i64);

impl Kernel for UnixTime {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let d = self.0;
        let out: Int64Array = timestamps(&args[0])?.unary(|us| us.div_euclid(d));
        Ok(Arc::new(out))
    }
}

/// `unix_timestamp(t)` / `to_unix_timestamp(t)` of a TIMESTAMP or TIMESTAMP_NTZ (`micros / 1000000`, Java's
/// truncating division) or a DATE (`daysToMicros(days, zone) / 1000000`); the format is not used for these.
#[derive(Debug)]
pub struct ToUnixTimestamp {
    pub zone: SessionZone,
}

impl Kernel for ToUnixTimestamp {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        match args[0].data_type() {
            DataType::Date32 => {
                let d = args[0].as_primitive::<arrow::datatypes::Date32Type>();
                let mut out = Vec::with_capacity(d.len());
                for v in d.iter() {
                    out.push(match v {
                        Some(days) => Some(days_to_micros(&self.zone, days as i64)? / 1_000_000),
                        None => None,
                    });
                }
                Ok(Arc::new(Int64Array::from(out)))
            }
            _ => {
                let out: Int64Array = timestamps(&args[0])?.unary(|us| us / 1_000_000);
                Ok(Arc::new(out))
            }
        }
    }
}

/// `timestamp_seconds` / `timestamp_millis` / `timestamp_micros` of an integral value:
/// `Math.multiplyExact(value, unit)` (a plain `ArithmeticException` on overflow, in every mode).
#[derive(Debug)]
pub struct IntegralToTimestamp {
    pub micros_per_unit: i64,
    pub tz: Option<Arc<str>>,
}

impl Kernel for IntegralToTimestamp {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let v = cast(&args[0], &DataType::Int64)?;
        let v = v.as_primitive::<Int64Type>();
        let mut out = Vec::with_capacity(v.len());
        for x in v.iter() {
            out.push(match x {
                Some(x) => Some(x.checked_mul(self.micros_per_unit).ok_or_else(long_overflow)?),
                None => None,
            });
        }
        Ok(timestamp_array(out, self.tz.clone()))
    }
}

/// `LocalDate.plusMonths` of a day number: the day of month clamped to the target month's length.
fn plus_months(days: i32, months: i64) -> i64 {
    let (y, m, d) = civil_from_days(days);
    let total = y * 12 + (m as i64 - 1) + months;
    let (y2, m2) = (total.div_euclid(12), total.rem_euclid(12) as u32 + 1);
    days_from_civil(y2, m2, d.min(days_in_month(y2, m2 as i64) as u32))
}

/// `add_months(date, n)`: `LocalDate.plusMonths`; a result outside the int day range is `ARITHMETIC_OVERFLOW`
/// (`MathUtils.toIntExact`) in every mode.
#[derive(Debug)]
pub struct AddMonths;

impl Kernel for AddMonths {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let d = args[0].as_primitive::<arrow::datatypes::Date32Type>();
        let n = cast(&args[1], &DataType::Int32)?;
        let n = n.as_primitive::<Int32Type>();
        let mut out = Vec::with_capacity(d.len());
        for i in 0..d.len() {
            out.push(if d.is_valid(i) && n.is_valid(i) {
                Some(to_days(plus_months(d.value(i), n.value(i) as i64))?)
            } else {
                None
            });
        }
        Ok(Arc::new(Date32Array::from(out)))
    }
}

/// Java's `Math.round(double)`: the closest long, ties towards positive infinity (NaN is 0).
fn java_round(x: f64) -> i64 {
    if x.is_nan() {
        return 0;
    }
    let f = x.floor();
    let r = if x - f >= 0.5 { f + 1.0 } else { f };
    r as i64 // saturates as Java does
}

/// `months_between(t1, t2, roundOff)`: `DateTimeUtils.monthsBetween` in the session zone.
#[derive(Debug)]
pub struct MonthsBetween {
    pub zone: SessionZone,
}

fn months_between(zone: &SessionZone, t1: i64, t2: i64, round: bool) -> Result<f64> {
    let day = |us: i64| zone.local_us(us).div_euclid(MICROS_PER_DAY as i128) as i64;
    let (d1, d2) = (day(t1), day(t2));
    let (d1, d2) = (to_days(d1)?, to_days(d2)?);
    let split = |d: i32| {
        let (y, m, dd) = civil_from_days(d);
        (y, m as i64, dd as i64, days_in_month(y, m as i64) - dd as i64)
    };
    let (y1, m1, dom1, end1) = split(d1);
    let (y2, m2, dom2, end2) = split(d2);
    let month_diff = ((y1 * 12 + m1) as i32).wrapping_sub((y2 * 12 + m2) as i32) as f64;
    if dom1 == dom2 || (end1 == 0 && end2 == 0) {
        return Ok(month_diff);
    }
    let s1 = t1.wrapping_sub(days_to_micros(zone, d1 as i64)?) / 1_000_000;
    let s2 = t2.wrapping_sub(days_to_micros(zone, d2 as i64)?) / 1_000_000;
    let seconds_diff = (dom1 - dom2) * 86_400 + s1 - s2;
    let diff = month_diff + seconds_diff as f64 / (31.0 * 86_400.0);
    Ok(if round { java_round(diff * 1e8) as f64 / 1e8 } else { diff })
}

impl Kernel for MonthsBetween {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let (a, b) = (timestamps(&args[0])?, timestamps(&args[1])?);
        let r = args[2].as_any().downcast_ref::<BooleanArray>();
        let Some(r) = r else { return internal_err!("months_between roundOff is {}", args[2].data_type()) };
        let mut out = Vec::with_capacity(a.len());
        for i in 0..a.len() {
            out.push(if a.is_valid(i) && b.is_valid(i) && r.is_valid(i) {
                Some(months_between(&self.zone, a.value(i), b.value(i), r.value(i))?)
            } else {
                None
            });
        }
        Ok(Arc::new(Float64Array::from(out)))
    }
}

/// `DateTimeUtils.getDayOfWeekFromString`: 0 = Thursday … (1970-01-01 was a Thursday).
pub fn day_of_week_from_string(s: &str) -> Option<i32> {
    Some(match s.to_uppercase().as_str() {
        "SU" | "SUN" | "SUNDAY" => 3,
        "MO" | "MON" | "MONDAY" => 4,
        "TU" | "TUE" | "TUESDAY" => 5,
        "WE" | "WED" | "WEDNESDAY" => 6,
        "TH" | "THU" | "THURSDAY" => 0,
        "FR" | "FRI" | "FRIDAY" => 1,
        "SA" | "SAT" | "SATURDAY" => 2,
        _ => return None,
    })
}

/// `next_day(date, dayOfWeek)`: the first later date on that weekday (Spark's int arithmetic, wrapping). An
/// unknown day name is NULL; under ANSI Spark raises `SparkIllegalArgumentException` instead, which the planner
/// only lets through when the day name is a valid literal (so no row can fail).
#[derive(Debug)]
pub struct NextDay;

impl Kernel for NextDay {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let d = args[0].as_primitive::<arrow::datatypes::Date32Type>();
        let w = args[1].as_string::<i32>();
        let mut out = Vec::with_capacity(d.len());
        for i in 0..d.len() {
            out.push(match (d.is_valid(i), w.is_valid(i)) {
                (true, true) => day_of_week_from_string(w.value(i)).map(|dow| {
                    let start = d.value(i);
                    start.wrapping_add(1).wrapping_add((dow.wrapping_sub(1).wrapping_sub(start) % 7 + 7) % 7)
                }),
                _ => None,
            });
        }
        Ok(Arc::new(Date32Array::from(out)))
    }
}

const MONTHS: [&str; 12] = [
    "JANUARY",
    "FEBRUARY",
    "MARCH",
    "APRIL",
    "MAY",
    "JUNE",
    "JULY",
    "AUGUST",
    "SEPTEMBER",
    "OCTOBER",
    "NOVEMBER",
    "DECEMBER",
];

/// `LocalDate.of(y, m, d)`: the day number, or `DateTimeException`'s message.
fn local_date_of(y: i32, m: i32, d: i32) -> std::result::Result<i64, String> {
    if !(-999_999_999..=999_999_999).contains(&y) {
        return Err(format!("Invalid value for Year (valid values -999999999 - 999999999): {y}"));
    }
    if !(1..=12).contains(&m) {
        return Err(format!("Invalid value for MonthOfYear (valid values 1 - 12): {m}"));
    }
    if !(1..=31).contains(&d) {
        return Err(format!("Invalid value for DayOfMonth (valid values 1 - 28/31): {d}"));
    }
    let len = days_in_month(y as i64, m as i64) as u32;
    if d as u32 > len {
        return Err(if d == 29 {
            format!("Invalid date 'February 29' as '{y}' is not a leap year")
        } else {
            format!("Invalid date '{} {d}'", MONTHS[m as usize - 1])
        });
    }
    Ok(days_from_civil(y as i64, m as u32, d as u32))
}

/// `make_date(year, month, day)`: `LocalDate.of`; an invalid date is NULL, or under ANSI
/// `DATETIME_FIELD_OUT_OF_BOUNDS.WITH_SUGGESTION` with Java's message. A day number outside the int range is
/// `ARITHMETIC_OVERFLOW` in every mode (`toIntExact` is outside Spark's catch).
#[derive(Debug)]
pub struct MakeDate {
    pub ansi: bool,
}

impl Kernel for MakeDate {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let ints = args.iter().map(|a| cast(a, &DataType::Int32)).collect::<Result<Vec<_>, _>>()?;
        let (y, m, d) = (
            ints[0].as_primitive::<Int32Type>(),
            ints[1].as_primitive::<Int32Type>(),
            ints[2].as_primitive::<Int32Type>(),
        );
        let mut out = Vec::with_capacity(y.len());
        for i in 0..y.len() {
            if !(y.is_valid(i) && m.is_valid(i) && d.is_valid(i)) {
                out.push(None);
                continue;
            }
            out.push(match local_date_of(y.value(i), m.value(i), d.value(i)) {
                Ok(days) => Some(to_days(days)?),
                Err(msg) if self.ansi => {
                    return Err(SparkError::new(
                        SparkExceptionKind::DateTime,
                        "DATETIME_FIELD_OUT_OF_BOUNDS.WITH_SUGGESTION",
                        &[("rangeMessage", msg), ("ansiConfig", crate::error::ANSI_CONFIG.to_string())],
                    )
                    .into_datafusion())
                }
                Err(_) => None,
            });
        }
        Ok(Arc::new(Date32Array::from(out)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_round_ties_up() {
        assert_eq!(java_round(0.49999999999999994), 0);
        assert_eq!(java_round(2.5), 3);
        assert_eq!(java_round(-2.5), -2);
        assert_eq!(java_round(-2.6), -3);
    }

    #[test]
    fn plus_months_clamps_the_day() {
        let jan31 = days_from_civil(2024, 1, 31) as i32;
        assert_eq!(plus_months(jan31, 1), days_from_civil(2024, 2, 29));
        assert_eq!(plus_months(jan31, -13), days_from_civil(2022, 12, 31));
    }
}
