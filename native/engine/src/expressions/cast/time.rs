//! Dates and timestamps: proleptic Gregorian civil dates, Spark's `stringToDate` and `stringToTimestamp`, its
//! date/timestamp text forms, and the names of UTC and fixed-offset zones (regions: `zone.rs`).
use super::parse::trim_all;
use crate::expressions::zone::SessionZone;

pub const MICROS_PER_DAY: i64 = 86_400_000_000;

/// The offset (µs) of a session time zone that is UTC or a fixed offset, as `DateTimeUtils.getZoneId` reads it;
/// `None` for region zones (their rules are not available natively).
pub fn parse_zone(tz: &str) -> Option<i64> {
    const UTC: [&str; 17] = [
        "UTC",
        "Z",
        "GMT",
        "UT",
        "UCT",
        "GMT0",
        "Zulu",
        "Universal",
        "Greenwich",
        "Etc/UTC",
        "Etc/GMT",
        "Etc/UCT",
        "Etc/GMT0",
        "Etc/GMT+0",
        "Etc/GMT-0",
        "Etc/Universal",
        "Etc/Zulu",
    ];
    if UTC.contains(&tz) {
        return Some(0);
    }
    // ZoneId.SHORT_IDS entries that are fixed offsets.
    match tz {
        "EST" => return Some(-5 * 3600 * 1_000_000),
        "MST" => return Some(-7 * 3600 * 1_000_000),
        "HST" => return Some(-10 * 3600 * 1_000_000),
        _ => {}
    }
    let rest = ["UTC", "GMT", "UT"]
        .iter()
        .find_map(|p| tz.strip_prefix(p).filter(|r| r.starts_with('+') || r.starts_with('-')))
        .unwrap_or(tz);
    parse_offset(rest).map(|secs| secs * 1_000_000)
}

/// `ZoneOffset.of`: `±h`, `±hh`, `±hh:mm`, `±hhmm`, `±hh:mm:ss`, `±hhmmss` (Spark first rewrites `±h:` to
/// `±0h:`), at most ±18:00.
fn parse_offset(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 2 || !(b[0] == b'+' || b[0] == b'-') {
        return None;
    }
    let neg = b[0] == b'-';
    let mut body = s[1..].to_string();
    if body.len() >= 2 && body.as_bytes()[1] == b':' {
        body.insert(0, '0');
    }
    let d = body.as_bytes();
    let num = |x: &[u8]| -> Option<i64> {
        if x.iter().all(|c| c.is_ascii_digit()) {
            Some(x.iter().fold(0i64, |a, c| a * 10 + (c - b'0') as i64))
        } else {
            None
        }
    };
    let (h, m, sec) = match d.len() {
        1 | 2 => (num(d)?, 0, 0),
        4 => (num(&d[..2])?, num(&d[2..])?, 0),
        5 if d[2] == b':' => (num(&d[..2])?, num(&d[3..])?, 0),
        6 => (num(&d[..2])?, num(&d[2..4])?, num(&d[4..])?),
        8 if d[2] == b':' && d[5] == b':' => (num(&d[..2])?, num(&d[3..5])?, num(&d[6..])?),
        _ => return None,
    };
    if h > 18 || m > 59 || sec > 59 || (h == 18 && (m > 0 || sec > 0)) {
        return None;
    }
    let total = h * 3600 + m * 60 + sec;
    Some(if neg { -total } else { total })
}

/// Days since 1970-01-01 of a proleptic Gregorian date (no validation).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

/// (year, month, day) of a day number.
pub fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + if m <= 2 { 1 } else { 0 }, m, d)
}

/// A proleptic Gregorian leap year (java.time's `IsoChronology.isLeapYear`).
pub fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

/// Days in month `m` (1..=12) of year `y`.
pub fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if is_leap(y) => 29,
        _ => 28,
    }
}

/// Spark's `DateTimeUtils.stringToDate`: `[+-]yyyy[y..]`, `-[m]m`, `-[d]d`, then anything after ` ` or `T`.
pub fn parse_date(s: &[u8]) -> Option<i32> {
    let b = trim_all(s);
    if b.is_empty() {
        return None;
    }
    let valid =
        |seg: usize, digits: usize| (seg == 0 && (4..=7).contains(&digits)) || (seg != 0 && (1..=2).contains(&digits));
    let mut segments = [1i64, 1, 1];
    let mut j = 0;
    let mut sign = 1;
    if b[0] == b'-' || b[0] == b'+' {
        sign = if b[0] == b'-' { -1 } else { 1 };
        j = 1;
    }
    let mut i = 0;
    let mut value: i64 = 0;
    let mut digits = 0;
    while j < b.len() && i < 3 && !(b[j] == b' ' || b[j] == b'T') {
        let c = b[j];
        if i < 2 && c == b'-' {
            if !valid(i, digits) {
                return None;
            }
            segments[i] = value;
            value = 0;
            digits = 0;
            i += 1;
        } else {
            if !c.is_ascii_digit() {
                return None;
            }
            value = value.wrapping_mul(10).wrapping_add((c - b'0') as i64);
            digits += 1;
        }
        j += 1;
    }
    if !valid(i, digits) {
        return None;
    }
    if i < 2 && j < b.len() {
        return None;
    }
    segments[i] = value;
    let (y, m, d) = (sign * segments[0], segments[1], segments[2]);
    if !(1..=12).contains(&m) || d < 1 || d > days_in_month(y, m) {
        return None;
    }
    i32::try_from(days_from_civil(y, m, d)).ok()
}

/// Spark's year text: 4 digits, `+` beyond 9999, `-` and 4 digits before year 0.
fn write_year(y: i64, buf: &mut String) {
    use std::fmt::Write;
    let _ = if y > 9999 {
        write!(buf, "+{y}")
    } else if y < 0 {
        write!(buf, "-{:04}", -y)
    } else {
        write!(buf, "{y:04}")
    };
}

/// `yyyy-MM-dd`.
pub fn write_date(days: i64, buf: &mut String) {
    use std::fmt::Write;
    let (y, m, d) = civil_from_days(days);
    write_year(y, buf);
    let _ = write!(buf, "-{m:02}-{d:02}");
}

/// `yyyy-MM-dd HH:mm:ss[.fraction without trailing zeros]` of the local time `micros + offset`.
pub fn write_timestamp(micros: i64, offset_us: i64, buf: &mut String) {
    use std::fmt::Write;
    let local = micros as i128 + offset_us as i128;
    let day = local.div_euclid(MICROS_PER_DAY as i128) as i64;
    let tod = local.rem_euclid(MICROS_PER_DAY as i128) as i64;
    write_date(day, buf);
    let secs = tod / 1_000_000;
    let frac = tod % 1_000_000;
    let _ = write!(buf, " {:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
    if frac != 0 {
        let mut f = format!("{frac:06}");
        while f.ends_with('0') {
            f.pop();
        }
        buf.push('.');
        buf.push_str(&f);
    }
}

/// The date of the local time `micros + offset`.
pub fn micros_to_date(micros: i64, offset_us: i64) -> i32 {
    ((micros as i128 + offset_us as i128).div_euclid(MICROS_PER_DAY as i128)) as i32
}

/// What Spark's `parseTimestampString` reads from a timestamp's text: the local date-time's fields (year, month,
/// day, hour, minute, second, microsecond), the zone's text after the seconds, and whether the date is missing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimestampText {
    pub fields: [i64; 7],
    pub zone: Option<String>,
    pub just_time: bool,
}

/// Spark's `parseTimestampString`, step by step: `[+-]yyyy*[-[m]m[-[d]d]]`, then ` ` or `T` and
/// `[h]h[:[m]m[:[s]s[.fraction]]]` (fraction digits past six dropped), then anything after the seconds as the
/// zone; a leading `T` or a first `:` makes a time without a date. Field ranges are not checked here.
pub fn parse_timestamp_text(s: &[u8]) -> Option<TimestampText> {
    let valid = |seg: usize, digits: usize| {
        seg == 6
            || (seg == 0 && (4..=6).contains(&digits))
            || (seg == 7 && digits <= 2)
            || (seg != 0 && seg != 6 && seg != 7 && (1..=2).contains(&digits))
    };
    // Spark trims whitespace and ISO controls but tests `j == 0` (the untrimmed start) for a leading `T`.
    let mut j = s.iter().position(|&b| b > 32 && b != 127).unwrap_or(s.len());
    let end = s.iter().rposition(|&b| b > 32 && b != 127).map_or(j, |e| e + 1);
    if j >= end {
        return None;
    }
    let mut seg = [1i64, 1, 1, 0, 0, 0, 0, 0, 0];
    let (mut i, mut value, mut digits, mut digits_frac) = (0usize, 0i64, 0usize, 0usize);
    let mut just_time = false;
    let mut zone = None;
    let mut year_sign = None;
    if s[j] == b'-' || s[j] == b'+' {
        year_sign = Some(if s[j] == b'-' { -1 } else { 1 });
        j += 1;
    }
    macro_rules! close {
        ($k:expr) => {{
            if !valid($k, digits) {
                return None;
            }
            seg[$k] = value;
            value = 0;
            digits = 0;
        }};
    }
    while j < end {
        let b = s[j];
        if b.is_ascii_digit() {
            if i == 6 {
                digits_frac += 1;
            }
            if i != 6 || digits < 6 {
                value = value.wrapping_mul(10).wrapping_add((b - b'0') as i64);
            }
            digits += 1;
        } else if j == 0 && b == b'T' {
            just_time = true;
            i += 3;
        } else if i < 2 {
            if b == b'-' {
                close!(i);
                i += 1;
            } else if i == 0 && b == b':' && year_sign.is_none() {
                just_time = true;
                close!(3);
                i = 4;
            } else {
                return None;
            }
        } else if i == 2 {
            if b != b' ' && b != b'T' {
                return None;
            }
            close!(i);
            i += 1;
        } else if i == 3 || i == 4 {
            if b != b':' {
                return None;
            }
            close!(i);
            i += 1;
        } else if i == 5 || i == 6 {
            if b == b'.' && i == 5 {
                close!(i);
                i += 1;
            } else {
                close!(i);
                i += 1;
                zone = Some(String::from_utf8_lossy(&s[j..end]).into_owned());
                j = end - 1;
            }
            if i == 6 && b != b'.' {
                i += 1;
            }
        } else if i < seg.len() && (b == b':' || b == b' ') {
            close!(i);
            i += 1;
        } else {
            return None;
        }
        j += 1;
    }
    if i >= seg.len() || !valid(i, digits) {
        return None;
    }
    seg[i] = value;
    while digits_frac < 6 {
        seg[6] *= 10;
        digits_frac += 1;
    }
    seg[0] *= year_sign.unwrap_or(1);
    let mut fields = [0i64; 7];
    fields.copy_from_slice(&seg[..7]);
    Some(TimestampText { fields, zone, just_time })
}

/// The zone a timestamp's text names, as Spark's `getZoneId(text.trim)` reads it: `±h:` padded to `±0h:`,
/// a trailing `±hh:m` to `±hh:0m`, then `ZoneId.of` with the short ids. `None` when Spark would fail (the
/// value is then NULL) — or when the compiled-in tz database lacks a region the JDK knows.
pub fn timestamp_text_zone(text: &str) -> Option<SessionZone> {
    let mut z = super::parse::java_trim(text).to_string();
    let b = z.as_bytes();
    // singleHourTz `(\+|\-)(\d):`, first match anywhere.
    if let Some(p) = (0..b.len().saturating_sub(2))
        .find(|&p| (b[p] == b'+' || b[p] == b'-') && b[p + 1].is_ascii_digit() && b[p + 2] == b':')
    {
        z.insert(p + 1, '0');
    }
    // singleMinuteTz `(\+|\-)(\d\d):(\d)$`.
    let b = z.as_bytes();
    let n = b.len();
    if n >= 5
        && (b[n - 5] == b'+' || b[n - 5] == b'-')
        && b[n - 4].is_ascii_digit()
        && b[n - 3].is_ascii_digit()
        && b[n - 2] == b':'
        && b[n - 1].is_ascii_digit()
    {
        z.insert(n - 1, '0');
    }
    SessionZone::parse(&z)
}

/// Microseconds of a local date-time, `None` when a field is out of range (`LocalDate.of` / `LocalTime.of`).
fn local_micros(f: &[i64; 7]) -> Option<i128> {
    let [y, m, d, h, mi, s, us] = *f;
    if !(1..=12).contains(&m) || d < 1 || d > days_in_month(y, m) || h > 23 || mi > 59 || s > 59 {
        return None;
    }
    let secs = days_from_civil(y, m, d) as i128 * 86_400 + (h * 3600 + mi * 60 + s) as i128;
    Some(secs * 1_000_000 + us as i128)
}

/// Spark's `stringToTimestamp(s, session)`: the instant of the text's local date-time in the zone it names or
/// else the session's (`ZonedDateTime.of`: a time in a DST gap moves later by the gap, an overlap takes the
/// earlier offset); a time without a date is on today's date in that zone, as Spark reads the clock per row.
/// `None` where Spark returns NULL (unparsable, a field out of range, an unknown zone, beyond a long's micros).
pub fn string_to_timestamp(s: &[u8], session: &SessionZone, now_us: impl Fn() -> i64) -> Option<i64> {
    let t = parse_timestamp_text(s)?;
    let zone = match &t.zone {
        Some(text) => timestamp_text_zone(text)?,
        None => *session,
    };
    let mut fields = t.fields;
    if t.just_time {
        let now = now_us();
        let today = (now as i128 + zone.offset_us_at(now) as i128).div_euclid(MICROS_PER_DAY as i128) as i64;
        let (y, m, d) = civil_from_days(today);
        fields[..3].copy_from_slice(&[y, m, d]);
    }
    let local = local_micros(&fields)?;
    i64::try_from(zone.local_us_to_utc(local, None)).ok()
}

/// Spark's `stringToTimestampWithoutTimeZone(s, allowTimeZone = true)` (the cast to TIMESTAMP_NTZ): the local
/// date-time's microseconds; a zone in the text must be valid and is then ignored; no date is NULL.
pub fn string_to_timestamp_ntz(s: &[u8]) -> Option<i64> {
    let t = parse_timestamp_text(s)?;
    if t.just_time {
        return None;
    }
    if let Some(text) = &t.zone {
        timestamp_text_zone(text)?;
    }
    i64::try_from(local_micros(&t.fields)?).ok()
}
