//! Spark's session time zone (`DateTimeUtils.getZoneId`): UTC or a fixed offset, or a region whose rules come
//! from the IANA tz database compiled into chrono-tz (through Arrow's `Tz`), answering the two questions
//! `java.time` answers for Spark: the offset at an instant (`Instant.atZone`), and the instant of a local date-time
//! (`ZonedDateTime.ofLocal`: in a DST gap the local time moves later by the gap's length, in an overlap the earlier
//! offset wins unless the preferred one is valid; `LocalDate.atStartOfDay`: a midnight in a gap is the gap's end).
//!
//! chrono-tz lists a zone's transitions up to 2100 and keeps the last offset after that; `java.time` applies the
//! zone's last rules to every later year. Instants from 2100 on are therefore answered from the equivalent year in
//! 2072..2099 (same leap-ness and first weekday: DST rules are of the kind "last Sunday of March", which only
//! depend on that), after moving by whole 400-year Gregorian cycles.
//!
//! The tz database version may differ from the JDK's (chrono-tz [`TZDB_VERSION`]); the rules of the zones Ember's
//! tests cover agree for every instant they test.
use std::str::FromStr;
use std::sync::OnceLock;

use arrow::array::timezone::Tz;
use chrono::{DateTime, Offset, TimeZone};

use crate::expressions::cast::{is_leap, parse_fixed_zone};

/// The IANA tz database version of the compiled-in rules (chrono-tz 0.10.4).
pub const TZDB_VERSION: &str = "2025b";

const SECS_PER_DAY: i64 = 86_400;
/// 2100-01-01T00:00:00Z: chrono-tz's tables end in 2099.
const TABLE_END: i64 = 4_102_444_800;
/// Before this (year -29000) every zone is on its first (local mean time) offset; chrono's range ends earlier.
const TABLE_START: i64 = -977_000_000_000;
/// Days of a 400-year Gregorian cycle (a whole number of weeks).
const CYCLE_DAYS: i64 = 146_097;

#[derive(Debug, Clone, Copy)]
pub enum SessionZone {
    /// Seconds east of UTC.
    Fixed(i64),
    Region(Tz),
}

impl PartialEq for SessionZone {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (SessionZone::Fixed(a), SessionZone::Fixed(b)) => a == b,
            (SessionZone::Region(a), SessionZone::Region(b)) => a.to_string() == b.to_string(),
            _ => false,
        }
    }
}

impl Eq for SessionZone {}

/// `ZoneId.SHORT_IDS`, which Spark passes to `ZoneId.of` (the three fixed ones are parsed as offsets).
const SHORT_IDS: &[(&str, &str)] = &[
    ("ACT", "Australia/Darwin"),
    ("AET", "Australia/Sydney"),
    ("AGT", "America/Argentina/Buenos_Aires"),
    ("ART", "Africa/Cairo"),
    ("AST", "America/Anchorage"),
    ("BET", "America/Sao_Paulo"),
    ("BST", "Asia/Dhaka"),
    ("CAT", "Africa/Harare"),
    ("CNT", "America/St_Johns"),
    ("CST", "America/Chicago"),
    ("CTT", "Asia/Shanghai"),
    ("EAT", "Africa/Addis_Ababa"),
    ("ECT", "Europe/Paris"),
    ("IET", "America/Indiana/Indianapolis"),
    ("IST", "Asia/Kolkata"),
    ("JST", "Asia/Tokyo"),
    ("MIT", "Pacific/Apia"),
    ("NET", "Asia/Yerevan"),
    ("NST", "Pacific/Auckland"),
    ("PLT", "Asia/Karachi"),
    ("PNT", "America/Phoenix"),
    ("PRT", "America/Puerto_Rico"),
    ("PST", "America/Los_Angeles"),
    ("SST", "Pacific/Guadalcanal"),
    ("VST", "Asia/Ho_Chi_Minh"),
];

impl SessionZone {
    /// The zone Spark's `getZoneId(name)` resolves, or `None` when chrono-tz does not know it.
    pub fn parse(name: &str) -> Option<Self> {
        if let Some(us) = parse_fixed_zone(name) {
            return Some(SessionZone::Fixed(us / 1_000_000));
        }
        let region = SHORT_IDS.iter().find(|(k, _)| *k == name).map_or(name, |(_, v)| v);
        // Arrow's Tz also reads "+hh:mm" itself: only names with a '/' or a known region reach it here.
        if region.starts_with('+') || region.starts_with('-') {
            return None;
        }
        Tz::from_str(region).ok().map(SessionZone::Region)
    }

    /// The fixed offset in microseconds, when the zone has one.
    pub fn fixed_us(&self) -> Option<i64> {
        match self {
            SessionZone::Fixed(s) => Some(s * 1_000_000),
            SessionZone::Region(_) => None,
        }
    }

    /// Seconds east of UTC at the instant `utc` (epoch seconds).
    pub fn offset_at(&self, utc: i64) -> i64 {
        match self {
            SessionZone::Fixed(s) => *s,
            SessionZone::Region(tz) => {
                let t = if utc >= TABLE_END { equivalent_instant(utc) } else { utc.max(TABLE_START) };
                match DateTime::from_timestamp(t, 0) {
                    Some(dt) => tz.offset_from_utc_datetime(&dt.naive_utc()).fix().local_minus_utc() as i64,
                    None => 0,
                }
            }
        }
    }

    /// Seconds east of UTC at the instant `micros` (epoch microseconds).
    pub fn offset_us_at(&self, micros: i64) -> i64 {
        self.offset_at(micros.div_euclid(1_000_000)) * 1_000_000
    }

    /// The local date-time (as epoch microseconds of the wall clock) of the instant `micros`; i128 since the sum
    /// may leave the i64 range at its ends.
    pub fn local_us(&self, micros: i64) -> i128 {
        micros as i128 + self.offset_us_at(micros) as i128
    }

    /// (offset before, offset after) around the local time `local` (seconds), and whether each is valid there.
    fn candidates(&self, local: i64) -> (i64, i64) {
        (self.offset_at(local.saturating_sub(SECS_PER_DAY)), self.offset_at(local.saturating_add(SECS_PER_DAY)))
    }

    fn valid(&self, local: i64, offset: i64) -> bool {
        self.offset_at(local - offset) == offset
    }

    /// `ZonedDateTime.ofLocal(local, zone, preferred)` as epoch seconds: in a gap the offset before it (the
    /// local time moves later by the gap), in an overlap `preferred` when valid, else the earlier offset.
    pub fn local_to_utc(&self, local: i64, preferred: Option<i64>) -> i64 {
        if let SessionZone::Fixed(s) = self {
            return local - s;
        }
        let (before, after) = self.candidates(local);
        if before == after {
            return local - before;
        }
        match (self.valid(local, before), self.valid(local, after)) {
            (true, true) if preferred == Some(after) => local - after,
            (true, _) => local - before,
            (false, true) => local - after,
            (false, false) => local - before,
        }
    }

    /// `local_to_utc` of a local time in microseconds (offsets are whole seconds).
    pub fn local_us_to_utc(&self, local_us: i128, preferred_us: Option<i64>) -> i128 {
        let secs = local_us.div_euclid(1_000_000);
        let frac = local_us.rem_euclid(1_000_000);
        let clamped = secs.clamp(i64::MIN as i128 / 2, i64::MAX as i128 / 2) as i64;
        let utc = self.local_to_utc(clamped, preferred_us.map(|p| p / 1_000_000));
        (utc as i128 + (secs - clamped as i128)) * 1_000_000 + frac
    }

    /// `LocalDate.ofEpochDay(days).atStartOfDay(zone)` as epoch seconds: a midnight inside a gap is the
    /// instant the gap ends.
    pub fn start_of_day(&self, days: i64) -> i64 {
        let local = days * SECS_PER_DAY;
        if let SessionZone::Fixed(s) = self {
            return local - s;
        }
        let (before, after) = self.candidates(local);
        if before == after || self.valid(local, before) || self.valid(local, after) {
            return self.local_to_utc(local, None);
        }
        // In a gap: the transition lies in (local - after, local - before]; find its first second.
        let (mut lo, mut hi) = (local - after, local - before);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if self.offset_at(mid) == before {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        hi
    }
}

/// (leap year, weekday of Jan 1) → a year of 2072..2099 with the same calendar.
fn equivalent_year(y: i64) -> i64 {
    static TABLE: OnceLock<Vec<(bool, i64, i64)>> = OnceLock::new();
    let table = TABLE.get_or_init(|| (2072..2100).map(|y| (is_leap(y), jan1_weekday(y), y)).collect());
    let key = (is_leap(y), jan1_weekday(y));
    table.iter().find(|(l, w, _)| (*l, *w) == key).map_or(2099, |e| e.2)
}

fn jan1_weekday(y: i64) -> i64 {
    (super::cast::days_from_civil(y, 1, 1) + 4).rem_euclid(7)
}

/// An instant in 2072..2099 with the same local calendar position as `utc` (>= 2100) under the last rules.
fn equivalent_instant(utc: i64) -> i64 {
    let cycle = CYCLE_DAYS * SECS_PER_DAY;
    // Into 2100..2499 by whole 400-year cycles.
    let k = (utc - TABLE_END).div_euclid(cycle);
    let t = utc - k * cycle;
    let days = t.div_euclid(SECS_PER_DAY);
    let (y, _, _) = super::cast::civil_from_days(days);
    let y2 = equivalent_year(y);
    t - (super::cast::days_from_civil(y, 1, 1) - super::cast::days_from_civil(y2, 1, 1)) * SECS_PER_DAY
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone(n: &str) -> SessionZone {
        SessionZone::parse(n).unwrap()
    }

    #[test]
    fn offsets_gaps_and_overlaps() {
        let la = zone("America/Los_Angeles");
        // 2024-03-10 02:30 local does not exist: moved to 03:30 PDT = 10:30Z.
        let gap = super::super::cast::days_from_civil(2024, 3, 10) * SECS_PER_DAY + 2 * 3600 + 1800;
        assert_eq!(la.local_to_utc(gap, None), gap + 8 * 3600);
        // 2024-11-03 01:30 local happens twice: the earlier is PDT (-7).
        let overlap = super::super::cast::days_from_civil(2024, 11, 3) * SECS_PER_DAY + 3600 + 1800;
        assert_eq!(la.local_to_utc(overlap, None), overlap + 7 * 3600);
        assert_eq!(la.local_to_utc(overlap, Some(-8 * 3600)), overlap + 8 * 3600);
        assert_eq!(la.offset_at(0), -8 * 3600);
        // After chrono-tz's table: the last rules still apply (July 2200 is PDT).
        let july = super::super::cast::days_from_civil(2200, 7, 1) * SECS_PER_DAY;
        assert_eq!(la.offset_at(july), -7 * 3600);
        let jan = super::super::cast::days_from_civil(2200, 1, 1) * SECS_PER_DAY;
        assert_eq!(la.offset_at(jan), -8 * 3600);
        assert_eq!(la.offset_at(i64::MAX / 1_000_000), la.offset_at(i64::MAX / 1_000_000));
        assert_eq!(la.offset_at(i64::MIN / 1_000_000), -28378);
        assert_eq!(zone("PST").offset_at(0), -8 * 3600);
        assert!(SessionZone::parse("Mars/Olympus").is_none());
    }
}
