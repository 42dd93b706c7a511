//! Spark's date fields and date arithmetic over DATE (days since 1970-01-01, proleptic Gregorian, as
//! `java.time.LocalDate`). A TIMESTAMP argument reaches these through Spark's own `CAST(ts AS DATE)` in the
//! session time zone (the analyzer inserts it), which Ember's cast evaluates.
//!
//! Ember's own kernels: DataFusion's `date_part` returns Float64/Int32 fields of Arrow's calendar, with no
//! `weekday`/`dayofweek` in Spark's numbering, and its date arithmetic does not wrap in int as Spark's does.
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Date32Array, Int32Array};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Date32Type, Int32Type};
use datafusion_common::{internal_err, Result};

use super::Kernel;
use crate::error::SparkError;

/// (year, month 1..=12, day 1..=31) of a day number (Howard Hinnant's `civil_from_days`), exact for every i32.
pub fn civil_from_days(days: i32) -> (i64, u32, u32) {
    civil_from_days64(days as i64)
}

fn civil_from_days64(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    (y, m, d)
}

/// The day number of a civil date (Hinnant's `days_from_civil`).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 } as i64;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The INT fields Spark extracts from a DATE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DateField {
    Year,
    Quarter,
    Month,
    DayOfMonth,
    DayOfYear,
    /// 1 = Sunday … 7 = Saturday.
    DayOfWeek,
    /// 0 = Monday … 6 = Sunday.
    WeekDay,
    /// ISO 8601 week of the week-based year (`IsoFields.WEEK_OF_WEEK_BASED_YEAR`).
    WeekOfYear,
}

impl DateField {
    pub fn of(self, days: i32) -> i32 {
        match self {
            DateField::DayOfWeek => (days as i64 + 4).rem_euclid(7) as i32 + 1,
            DateField::WeekDay => (days as i64 + 3).rem_euclid(7) as i32,
            DateField::WeekOfYear => iso_week(days),
            _ => {
                let (y, m, d) = civil_from_days(days);
                match self {
                    // Every i32 day number is within +-5.9 million years: the year fits an int.
                    DateField::Year => y as i32,
                    DateField::Quarter => (m as i32 - 1) / 3 + 1,
                    DateField::Month => m as i32,
                    DateField::DayOfMonth => d as i32,
                    _ => (days as i64 - days_from_civil(y, 1, 1) + 1) as i32,
                }
            }
        }
    }
}

/// ISO week: the week (Monday first) holding the year's first Thursday is week 1.
fn iso_week(days: i32) -> i32 {
    let d = days as i64;
    // The Thursday of this ISO week decides its year.
    let thursday = d - (d + 3).rem_euclid(7) + 3;
    let (y, _, _) = civil_from_days64(thursday);
    ((thursday - days_from_civil(y, 1, 1)) / 7 + 1) as i32
}

fn dates(a: &ArrayRef) -> Result<&Date32Array> {
    match a.data_type() {
        DataType::Date32 => Ok(a.as_primitive::<Date32Type>()),
        t => internal_err!("date function over {t}"),
    }
}

#[derive(Debug)]
pub struct ExtractDate(pub DateField);

impl Kernel for ExtractDate {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let f = self.0;
        let out: Int32Array = dates(&args[0])?.unary(|d| f.of(d));
        Ok(Arc::new(out))
    }
}

/// `date_add(start, n)` / `date_sub(start, n)` (n TINYINT/SMALLINT/INT): `start ± n` days in Java int
/// arithmetic, which wraps around on overflow.
#[derive(Debug)]
pub struct DateAdd {
    pub subtract: bool,
}

impl Kernel for DateAdd {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let start = dates(&args[0])?;
        let n = cast(&args[1], &DataType::Int32)?;
        let n = n.as_primitive::<Int32Type>();
        let sub = self.subtract;
        let out: Date32Array =
            arrow::compute::binary(start, n, |d, k| if sub { d.wrapping_sub(k) } else { d.wrapping_add(k) })?;
        Ok(Arc::new(out))
    }
}

/// `last_day(date)`: the last day of its month.
#[derive(Debug)]
pub struct LastDay;

impl Kernel for LastDay {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let d = dates(&args[0])?;
        let mut out: Vec<Option<i32>> = Vec::with_capacity(d.len());
        for v in d.iter() {
            out.push(match v {
                None => None,
                Some(v) => {
                    let (y, m, _) = civil_from_days(v);
                    let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
                    // Past the int range (the last month of it) Spark's `toInt` wraps: so does Ember.
                    Some((days_from_civil(ny, nm, 1) - 1) as i32)
                }
            });
        }
        Ok(Arc::new(Date32Array::from(out)))
    }
}

/// `trunc(date, format)`: the first day of the date's year (`YEAR`/`YYYY`/`YY`), quarter (`QUARTER`), month
/// (`MONTH`/`MON`/`MM`) or ISO week (`WEEK`), the format case-insensitive; NULL for any other format. Spark's
/// `truncDate` arithmetic, int wrapping included (`days - dayInYear + 1`, …); a quarter start outside the int
/// range raises `ARITHMETIC_OVERFLOW` (Java's `toIntExact`) in every mode.
#[derive(Debug)]
pub struct TruncDate;

#[derive(Debug, Clone, Copy)]
pub(crate) enum TruncLevel {
    Week,
    Month,
    Quarter,
    Year,
}

fn trunc_level(format: &str) -> Option<TruncLevel> {
    match format.to_uppercase().as_str() {
        "WEEK" => Some(TruncLevel::Week),
        "MON" | "MONTH" | "MM" => Some(TruncLevel::Month),
        "QUARTER" => Some(TruncLevel::Quarter),
        "YEAR" | "YYYY" | "YY" => Some(TruncLevel::Year),
        _ => None,
    }
}

pub(crate) fn trunc_date(days: i32, level: TruncLevel) -> Result<i32> {
    Ok(match level {
        TruncLevel::Week => {
            // getNextDateForDayOfWeek(days - 7, MONDAY = 4), in Java int arithmetic.
            let start = days.wrapping_sub(7);
            start.wrapping_add(1).wrapping_add(((4i32 - 1).wrapping_sub(start) % 7 + 7) % 7)
        }
        TruncLevel::Month => days.wrapping_sub(DateField::DayOfMonth.of(days)).wrapping_add(1),
        TruncLevel::Year => days.wrapping_sub(DateField::DayOfYear.of(days)).wrapping_add(1),
        TruncLevel::Quarter => {
            let (y, m, _) = civil_from_days(days);
            let first = days_from_civil(y, (m - 1) / 3 * 3 + 1, 1);
            i32::try_from(first)
                .map_err(|_| SparkError::arithmetic_overflow("integer overflow", "").into_datafusion())?
        }
    })
}

impl Kernel for TruncDate {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let d = dates(&args[0])?;
        let f = args[1].as_string::<i32>();
        let mut out: Vec<Option<i32>> = Vec::with_capacity(d.len());
        for i in 0..d.len() {
            out.push(match (d.is_valid(i), f.is_valid(i).then(|| trunc_level(f.value(i))).flatten()) {
                (true, Some(level)) => Some(trunc_date(d.value(i), level)?),
                _ => None,
            });
        }
        Ok(Arc::new(Date32Array::from(out)))
    }
}

/// `datediff(end, start)`: `end - start` days in Java int arithmetic.
#[derive(Debug)]
pub struct DateDiff;

impl Kernel for DateDiff {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let out: Int32Array = arrow::compute::binary(dates(&args[0])?, dates(&args[1])?, |e, s| e.wrapping_sub(s))?;
        Ok(Arc::new(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_round_trips_at_the_extremes() {
        for d in [i32::MIN, -719_162, -1, 0, 1, 11_016, 2_932_896, i32::MAX] {
            let (y, m, dd) = civil_from_days(d);
            assert_eq!(days_from_civil(y, m, dd), d as i64, "{d}");
        }
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-719_162), (1, 1, 1));
        assert_eq!(civil_from_days(2_932_896), (9999, 12, 31));
        assert_eq!(DateField::DayOfWeek.of(0), 5); // Thursday
        assert_eq!(DateField::WeekDay.of(0), 3);
        assert_eq!(DateField::DayOfYear.of(11_016), 60); // 2000-02-29
    }
}

/// `dayname(date)` / `monthname(date)`: the English three-letter names (`TextStyle.SHORT` in Spark's fixed
/// `Locale.US`), Sunday first.
#[derive(Debug)]
pub struct DateName {
    pub month: bool,
}

const DAY_NAMES: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MONTH_NAMES: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

impl Kernel for DateName {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let d = dates(&args[0])?;
        let out: arrow::array::StringArray = d
            .iter()
            .map(|v| {
                v.map(|v| {
                    if self.month {
                        MONTH_NAMES[civil_from_days(v).1 as usize - 1]
                    } else {
                        // Day 0 (1970-01-01) was a Thursday.
                        DAY_NAMES[(v as i64 + 4).rem_euclid(7) as usize]
                    }
                })
            })
            .collect();
        Ok(Arc::new(out))
    }
}

/// `unix_date(date)` (DATE → INT) and `date_from_unix_date(int)` (INT → DATE): the same day number, retyped.
#[derive(Debug)]
pub struct UnixDate {
    pub to_date: bool,
}

impl Kernel for UnixDate {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        Ok(if self.to_date {
            let a = args[0].as_primitive::<Int32Type>();
            Arc::new(a.reinterpret_cast::<Date32Type>())
        } else {
            Arc::new(dates(&args[0])?.reinterpret_cast::<Int32Type>())
        })
    }
}
