//! Spark's datetime patterns for formatting (`date_format`, `from_unixtime`): Spark's
//! `DateTimeFormatterHelper.convertIncompatiblePattern` (its refusals, and `y` read as the proleptic year `u`
//! unless the pattern has an era `G`), then `java.time.DateTimeFormatterBuilder.appendPattern`'s printers in
//! Spark's locale (`Locale.US`, JDK 17's CLDR names), over the local date-time in the session zone.
//!
//! Ember's own: DataFusion's `to_char` takes chrono's strftime patterns, another language. Only the letters
//! below compile; anything else (zone and offset letters, `F`, optional sections, a pattern Spark or Java
//! rejects) is a plan error, so the function stays in Spark, which formats it or raises its own error.
use std::fmt::Write;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use arrow::datatypes::{DataType, Int64Type, TimestampMicrosecondType};
use datafusion_common::{internal_err, Result};

use super::datetime::civil_from_days;
use super::Kernel;
use crate::expressions::zone::SessionZone;

const MICROS_PER_DAY: i128 = 86_400_000_000;

/// One printer of a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Item {
    Literal(String),
    /// `G`: AD / BC (`long`: Anno Domini / Before Christ).
    Era {
        long: bool,
    },
    /// `u` (Spark's `y`) or `y` (year of era, beside `G`), `count` letters.
    Year {
        of_era: bool,
        count: usize,
    },
    /// `M` / `L`: 1-2 digits, or a name.
    Month {
        count: usize,
    },
    /// `Q` / `q`.
    Quarter {
        count: usize,
    },
    /// `D`.
    DayOfYear {
        count: usize,
    },
    /// `E`: a day name.
    DayOfWeek {
        long: bool,
    },
    /// `a`: AM / PM.
    AmPm,
    /// `d`, `H`, `h`, `K`, `k`, `m`, `s`: a number of 1 or 2 digits.
    Number {
        field: NumberField,
        count: usize,
    },
    /// `S`…: the first `count` digits of the second's fraction.
    Fraction {
        count: usize,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NumberField {
    DayOfMonth,
    HourOfDay,
    ClockHourOfAmPm,
    HourOfAmPm,
    ClockHourOfDay,
    Minute,
    Second,
}

/// A compiled Spark datetime pattern for formatting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatetimeFormat {
    items: Vec<Item>,
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];
const QUARTERS: [&str; 4] = ["1st quarter", "2nd quarter", "3rd quarter", "4th quarter"];

impl DatetimeFormat {
    /// Compiles `pattern` as Spark builds its formatter, or says why it is not taken.
    pub fn compile(pattern: &str) -> std::result::Result<Self, String> {
        let chars: Vec<char> = pattern.chars().collect();
        // Spark's checks look at the unquoted parts (its split on '\'').
        let unquoted: Vec<String> = format!("{pattern} ").split('\'').step_by(2).map(str::to_string).collect();
        let has_era = unquoted.iter().any(|p| p.contains('G'));
        for part in &unquoted {
            if let Some(c) = part.chars().find(|c| "YWwuecABnNp".contains(*c)) {
                return Err(format!("pattern letter {c} (Spark rejects it)"));
            }
            for run in ["GGGGG", "MMMMM", "LLLLL", "EEEEE", "QQQQQ", "qqqqq", "yyyyyyy"] {
                if part.contains(run) {
                    return Err(format!("pattern letters {run} (Spark rejects them)"));
                }
            }
        }
        let mut items = Vec::new();
        let mut pos = 0;
        while pos < chars.len() {
            let c = chars[pos];
            if c.is_ascii_alphabetic() {
                let start = pos;
                while pos < chars.len() && chars[pos] == c {
                    pos += 1;
                }
                let count = pos - start;
                let too_many = || Err(format!("{count} pattern letters {c} (Java rejects them)"));
                items.push(match c {
                    'G' => Item::Era { long: count == 4 },
                    'y' => Item::Year { of_era: has_era, count },
                    'M' | 'L' if count <= 4 => Item::Month { count },
                    'Q' | 'q' if count <= 4 => Item::Quarter { count },
                    'D' if count <= 3 => Item::DayOfYear { count },
                    'E' => Item::DayOfWeek { long: count == 4 },
                    'a' if count == 1 => Item::AmPm,
                    'S' if count <= 9 => Item::Fraction { count },
                    'd' | 'H' | 'h' | 'K' | 'k' | 'm' | 's' if count <= 2 => {
                        let field = match c {
                            'd' => NumberField::DayOfMonth,
                            'H' => NumberField::HourOfDay,
                            'h' => NumberField::ClockHourOfAmPm,
                            'K' => NumberField::HourOfAmPm,
                            'k' => NumberField::ClockHourOfDay,
                            'm' => NumberField::Minute,
                            _ => NumberField::Second,
                        };
                        Item::Number { field, count }
                    }
                    'M' | 'L' | 'Q' | 'q' | 'D' | 'a' | 'S' | 'd' | 'H' | 'h' | 'K' | 'k' | 'm' | 's' => {
                        return too_many()
                    }
                    other => return Err(format!("pattern letter {other} is not formatted natively")),
                });
            } else if c == '\'' {
                // A quoted literal, '' inside it a quote; '' alone a quote.
                let start = pos + 1;
                pos += 1;
                loop {
                    if pos >= chars.len() {
                        return Err("a pattern ending inside a quoted literal (Java rejects it)".into());
                    }
                    if chars[pos] == '\'' {
                        if pos + 1 < chars.len() && chars[pos + 1] == '\'' {
                            pos += 2;
                            continue;
                        }
                        break;
                    }
                    pos += 1;
                }
                let text: String = chars[start..pos].iter().collect();
                pos += 1;
                items.push(Item::Literal(if text.is_empty() { "'".into() } else { text.replace("''", "'") }));
            } else if "[]{}#".contains(c) {
                return Err(format!("pattern character {c} is not formatted natively"));
            } else {
                items.push(Item::Literal(c.to_string()));
                pos += 1;
            }
        }
        Ok(Self { items })
    }

    /// Appends the local date-time `local` (wall-clock microseconds since 1970-01-01T00:00) to `out`.
    pub fn format(&self, local: i128, out: &mut String) {
        let days = local.div_euclid(MICROS_PER_DAY) as i64;
        let micros_of_day = local.rem_euclid(MICROS_PER_DAY) as i64;
        let (year, month, day) = civil_from_days(days as i32);
        let hour = micros_of_day / 3_600_000_000;
        let minute = micros_of_day / 60_000_000 % 60;
        let second = micros_of_day / 1_000_000 % 60;
        let nanos = micros_of_day % 1_000_000 * 1000;
        for item in &self.items {
            match item {
                Item::Literal(s) => out.push_str(s),
                Item::Era { long } => out.push_str(match (year > 0, long) {
                    (true, false) => "AD",
                    (true, true) => "Anno Domini",
                    (false, false) => "BC",
                    (false, true) => "Before Christ",
                }),
                Item::Year { of_era, count } => {
                    let y = if *of_era && year <= 0 { 1 - year } else { year };
                    match count {
                        2 => pad(out, y.abs() % 100, 2),
                        1..=3 => signed(out, y, *count, false),
                        _ => signed(out, y, *count, true),
                    }
                }
                Item::Month { count } => match count {
                    1 | 2 => pad(out, month as i64, *count),
                    3 => out.push_str(&MONTHS[month as usize - 1][..3]),
                    _ => out.push_str(MONTHS[month as usize - 1]),
                },
                Item::Quarter { count } => {
                    let q = (month as usize - 1) / 3 + 1;
                    match count {
                        1 | 2 => pad(out, q as i64, *count),
                        3 => {
                            let _ = write!(out, "Q{q}");
                        }
                        _ => out.push_str(QUARTERS[q - 1]),
                    }
                }
                Item::DayOfYear { count } => {
                    let jan1 = super::datetime::days_from_civil(year, 1, 1);
                    pad(out, days - jan1 + 1, *count);
                }
                Item::DayOfWeek { long } => {
                    let name = DAYS[(days + 3).rem_euclid(7) as usize];
                    out.push_str(if *long { name } else { &name[..3] });
                }
                Item::AmPm => out.push_str(if hour < 12 { "AM" } else { "PM" }),
                Item::Number { field, count } => {
                    let v = match field {
                        NumberField::DayOfMonth => day as i64,
                        NumberField::HourOfDay => hour,
                        NumberField::ClockHourOfAmPm => (hour + 11) % 12 + 1,
                        NumberField::HourOfAmPm => hour % 12,
                        NumberField::ClockHourOfDay => (hour + 23) % 24 + 1,
                        NumberField::Minute => minute,
                        NumberField::Second => second,
                    };
                    pad(out, v, *count);
                }
                // The first `count` of the nine digits, truncated.
                Item::Fraction { count } => pad(out, nanos / 10i64.pow(9 - *count as u32), *count),
            }
        }
    }
}

/// Java's `SignStyle.NOT_NEGATIVE` / `NORMAL` printer of a non-negative value: zero-padded to `width`.
fn pad(out: &mut String, v: i64, width: usize) {
    let _ = write!(out, "{v:0width$}");
}

/// Java's `NORMAL` (or, with `exceeds_pad`, `EXCEEDS_PAD`) printer: '-' for a negative value, '+' for one
/// wider than `width` under EXCEEDS_PAD, then the digits zero-padded to `width`.
fn signed(out: &mut String, v: i64, width: usize, exceeds_pad: bool) {
    if v < 0 {
        out.push('-');
    } else if exceeds_pad && v.checked_ilog10().is_some_and(|digits| digits as usize >= width) {
        out.push('+');
    }
    pad(out, v.unsigned_abs() as i64, width);
}

/// `date_format(timestamp, pattern)` (a TIMESTAMP's micros) and `from_unixtime(seconds, pattern)` (Java's
/// wrapping `seconds * 1000000`), in the session zone; NULL for a NULL pattern.
#[derive(Debug)]
pub struct FormatTimestamp {
    pub format: Option<DatetimeFormat>,
    pub zone: SessionZone,
    pub from_seconds: bool,
}

impl Kernel for FormatTimestamp {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let micros: Vec<Option<i64>> = match args[0].data_type() {
            DataType::Int64 if self.from_seconds => {
                args[0].as_primitive::<Int64Type>().iter().map(|v| v.map(|s| s.wrapping_mul(1_000_000))).collect()
            }
            DataType::Timestamp(_, _) if !self.from_seconds => {
                args[0].as_primitive::<TimestampMicrosecondType>().iter().collect()
            }
            t => return internal_err!("datetime format of {t}"),
        };
        let mut out = StringBuilder::with_capacity(micros.len(), micros.len() * 20);
        let mut text = String::new();
        for v in micros {
            match (v, &self.format) {
                (Some(us), Some(f)) => {
                    text.clear();
                    f.format(self.zone.local_us(us), &mut text);
                    out.append_value(&text);
                }
                _ => out.append_null(),
            }
        }
        Ok(Arc::new(out.finish()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(pattern: &str, local: i128) -> String {
        let mut s = String::new();
        DatetimeFormat::compile(pattern).unwrap().format(local, &mut s);
        s
    }

    /// Spark's own outputs are checked in `EmberDatetimeFormatSuite`; here the compiler's refusals and the
    /// printers' edge cases as `java.time` defines them.
    #[test]
    fn patterns_compile_as_spark_and_java_take_them() {
        for bad in [
            "YYYY", "ww", "u", "e", "A", "B", "n", "p", "MMMMM", "yyyyyyy", "ddd", "aa", "'open", "[yyyy]", "z", "XXX",
            "VV", "F",
        ] {
            assert!(DatetimeFormat::compile(bad).is_err(), "{bad}");
        }
        // 'y' inside quotes is text; two quotes are one.
        let t = 1_704_164_645_123_456i128; // 2024-01-02T03:04:05.123456
        assert_eq!(fmt("yyyy-MM-dd'T'HH:mm:ss.SSS 'y''s' ''", t), "2024-01-02T03:04:05.123 y's '");
        assert_eq!(fmt("y yy yyy yyyyy G GGGG", t), "2024 24 2024 02024 AD Anno Domini");
        assert_eq!(
            fmt("M MM MMM MMMM L Q QQ QQQ QQQQ D DD DDD E EEEE a h K k", t),
            "1 01 Jan January 1 1 01 Q1 1st quarter 2 02 002 Tue Tuesday AM 3 3 3"
        );
        assert_eq!(fmt("SSSSSSSSS S", t), "123456000 1");
        // Year 10000 under EXCEEDS_PAD, a negative proleptic year, and year-of-era beside G.
        let y10000 = super::super::datetime::days_from_civil(10000, 1, 1) as i128 * MICROS_PER_DAY;
        assert_eq!(fmt("yyyy yyyyy", y10000), "+10000 10000");
        let bc = super::super::datetime::days_from_civil(-5, 6, 1) as i128 * MICROS_PER_DAY;
        assert_eq!(fmt("yyyy y yy", bc), "-0005 -5 05");
        assert_eq!(fmt("yyyy G", bc), "0006 BC");
        // Midnight and noon on the 12- and 24-hour clocks.
        assert_eq!(fmt("h K k H a", 0), "12 0 24 0 AM");
        assert_eq!(fmt("h K k H a", 12 * 3_600_000_000), "12 0 12 12 PM");
    }
}
