//! `upper` / `lower` / `initcap` over UTF8_BINARY strings, as Spark 4.1.3 computes them with ICU case mappings
//! (`spark.sql.icu.caseMappings.enabled`, the default; the JVM side falls back when it is off or when the JVM's
//! default locale has ICU case rules of its own: tr, az, lt, el, hy, nl).
//!
//! Rust's `str::to_uppercase` / `to_lowercase` are the same full Unicode case mappings (SpecialCasing, Final_Sigma)
//! as ICU's in the root locale, checked over every code point against ICU4J 77.1 — except that Rust 1.95 has
//! Unicode 17 and ICU 77 Unicode 16: the 56 code points Unicode 17 gave case mappings (U+A7CE, U+A7CF, U+A7D2..U+A7D5,
//! U+16EA0..U+16EB8, U+16EBB..U+16ED3) are unassigned, so unchanged, for Spark. That is also why DataFusion's `upper` / `lower` (Rust's std
//! mappings) are not used: `upper('\u{a7cf}')` is U+A7CF in Spark and U+A7CE in DataFusion. Those code points
//! also end a Σ's final-sigma context here, as an unassigned code point does in Spark; a case-ignorable mark new
//! in Unicode 17 between a Σ and a letter is still skipped here and not in Spark (ς vs σ).
//!
//! `initcap` is not "uppercase the first letter": Spark title-cases the code point after each ASCII space (ICU's
//! simple titlecase, or its full one where that is several code points: `ß` → `Ss`, `ǆ` → `ǅ`, Georgian letters
//! unchanged) and lower-cases every other one (simple mappings, `İ` → `i̇`, final sigma). [`TITLE_EXCEPTIONS`] lists
//! the code points whose titlecase is not Rust's uppercase, generated from ICU4J 77.1.
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, StringBuilder};
use datafusion_common::Result;

use super::strings::strings;
use super::Kernel;

/// Unassigned in Unicode 16 (Spark's ICU 77), cased in Unicode 17 (Rust's std): Spark leaves them unchanged.
fn unicode17_cased(c: char) -> bool {
    matches!(c as u32, 0xA7CE | 0xA7CF | 0xA7D2..=0xA7D5 | 0x16EA0..=0x16EB8 | 0x16EBB..=0x16ED3)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Case {
    Upper,
    Lower,
}

/// `upper(str)` / `lower(str)`.
#[derive(Debug)]
pub struct CaseMap(pub Case);

fn map_case(v: &str, case: Case, out: &mut String) {
    if v.is_ascii() {
        out.push_str(v);
        match case {
            Case::Upper => out.make_ascii_uppercase(),
            Case::Lower => out.make_ascii_lowercase(),
        }
        return;
    }
    if !v.chars().any(unicode17_cased) {
        out.push_str(&match case {
            Case::Upper => v.to_uppercase(),
            Case::Lower => v.to_lowercase(),
        });
        return;
    }
    // Map the runs between the Unicode 17 code points (a Σ's context then ends at them, see the module doc).
    let mut rest = v;
    while let Some(i) = rest.find(unicode17_cased) {
        map_case(&rest[..i], case, out);
        let c = rest[i..].chars().next().unwrap_or_default();
        out.push(c);
        rest = &rest[i + c.len_utf8()..];
    }
    map_case(rest, case, out);
}

impl Kernel for CaseMap {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        map_each(&args[0], |v, buf| map_case(v, self.0, buf))
    }
}

/// `f` over every non-null string of `arg`, each written into a cleared buffer.
fn map_each(arg: &ArrayRef, f: impl Fn(&str, &mut String)) -> Result<ArrayRef> {
    let s = strings(arg)?;
    let mut out = StringBuilder::with_capacity(s.len(), s.value_data().len());
    let mut buf = String::new();
    for v in s.iter() {
        match v {
            None => out.append_null(),
            Some(v) => {
                buf.clear();
                f(v, &mut buf);
                out.append_value(&buf);
            }
        }
    }
    Ok(Arc::new(out.finish()))
}

/// `initcap(str)`: see the module doc.
#[derive(Debug)]
pub struct InitCap;

fn title_case(c: char, out: &mut String) {
    if unicode17_cased(c) {
        out.push(c);
    } else if let Ok(i) = TITLE_EXCEPTIONS.binary_search_by_key(&(c as u32), |(cp, _)| *cp) {
        out.push_str(TITLE_EXCEPTIONS[i].1);
    } else {
        out.extend(c.to_uppercase());
    }
}

fn init_cap(v: &str, out: &mut String) {
    // Rust's to_lowercase maps every code point on its own (İ to two) except Σ, whose form depends on the
    // whole string's context exactly as Spark's precededByCasedLetter / followedByCasedLetter: walk it along.
    let lowered = if v.contains('Σ') {
        let mut l = String::with_capacity(v.len());
        map_case(v, Case::Lower, &mut l);
        Some(l)
    } else {
        None
    };
    let mut low = lowered.as_deref().map(|l| l.chars());
    let mut new_word = true;
    for c in v.chars() {
        let n = if c == 'İ' { 2 } else { 1 };
        let mapped: Vec<char> = match low.as_mut() {
            Some(it) => it.by_ref().take(n).collect(),
            None => c.to_lowercase().collect(),
        };
        if new_word {
            title_case(c, out);
        } else if unicode17_cased(c) {
            out.push(c);
        } else {
            out.extend(mapped);
        }
        new_word = c == ' ';
    }
}

impl Kernel for InitCap {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        map_each(&args[0], init_cap)
    }
}

/// Code points whose ICU 77.1 titlecase (the full mapping where it has several code points, else the simple one)
/// differs from Rust's `char::to_uppercase`, sorted: generated by mapping every code point with ICU4J's
/// `UCharacter.toTitleCase(String, null)` / `toTitleCase(int)` as Spark's `appendCodepointToTitleCase` does.
#[rustfmt::skip]
const TITLE_EXCEPTIONS: &[(u32, &str)] = &[
    (0xdf, "\u{53}\u{73}"), (0x1c4, "\u{1c5}"), (0x1c5, "\u{1c5}"), (0x1c6, "\u{1c5}"), (0x1c7, "\u{1c8}"),
    (0x1c8, "\u{1c8}"), (0x1c9, "\u{1c8}"), (0x1ca, "\u{1cb}"), (0x1cb, "\u{1cb}"), (0x1cc, "\u{1cb}"),
    (0x1f1, "\u{1f2}"), (0x1f2, "\u{1f2}"), (0x1f3, "\u{1f2}"), (0x587, "\u{535}\u{582}"), (0x10d0, "\u{10d0}"),
    (0x10d1, "\u{10d1}"), (0x10d2, "\u{10d2}"), (0x10d3, "\u{10d3}"), (0x10d4, "\u{10d4}"), (0x10d5, "\u{10d5}"),
    (0x10d6, "\u{10d6}"), (0x10d7, "\u{10d7}"), (0x10d8, "\u{10d8}"), (0x10d9, "\u{10d9}"), (0x10da, "\u{10da}"),
    (0x10db, "\u{10db}"), (0x10dc, "\u{10dc}"), (0x10dd, "\u{10dd}"), (0x10de, "\u{10de}"), (0x10df, "\u{10df}"),
    (0x10e0, "\u{10e0}"), (0x10e1, "\u{10e1}"), (0x10e2, "\u{10e2}"), (0x10e3, "\u{10e3}"), (0x10e4, "\u{10e4}"),
    (0x10e5, "\u{10e5}"), (0x10e6, "\u{10e6}"), (0x10e7, "\u{10e7}"), (0x10e8, "\u{10e8}"), (0x10e9, "\u{10e9}"),
    (0x10ea, "\u{10ea}"), (0x10eb, "\u{10eb}"), (0x10ec, "\u{10ec}"), (0x10ed, "\u{10ed}"), (0x10ee, "\u{10ee}"),
    (0x10ef, "\u{10ef}"), (0x10f0, "\u{10f0}"), (0x10f1, "\u{10f1}"), (0x10f2, "\u{10f2}"), (0x10f3, "\u{10f3}"),
    (0x10f4, "\u{10f4}"), (0x10f5, "\u{10f5}"), (0x10f6, "\u{10f6}"), (0x10f7, "\u{10f7}"), (0x10f8, "\u{10f8}"),
    (0x10f9, "\u{10f9}"), (0x10fa, "\u{10fa}"), (0x10fd, "\u{10fd}"), (0x10fe, "\u{10fe}"), (0x10ff, "\u{10ff}"),
    (0x1f80, "\u{1f88}"), (0x1f81, "\u{1f89}"), (0x1f82, "\u{1f8a}"), (0x1f83, "\u{1f8b}"), (0x1f84, "\u{1f8c}"),
    (0x1f85, "\u{1f8d}"), (0x1f86, "\u{1f8e}"), (0x1f87, "\u{1f8f}"), (0x1f88, "\u{1f88}"), (0x1f89, "\u{1f89}"),
    (0x1f8a, "\u{1f8a}"), (0x1f8b, "\u{1f8b}"), (0x1f8c, "\u{1f8c}"), (0x1f8d, "\u{1f8d}"), (0x1f8e, "\u{1f8e}"),
    (0x1f8f, "\u{1f8f}"), (0x1f90, "\u{1f98}"), (0x1f91, "\u{1f99}"), (0x1f92, "\u{1f9a}"), (0x1f93, "\u{1f9b}"),
    (0x1f94, "\u{1f9c}"), (0x1f95, "\u{1f9d}"), (0x1f96, "\u{1f9e}"), (0x1f97, "\u{1f9f}"), (0x1f98, "\u{1f98}"),
    (0x1f99, "\u{1f99}"), (0x1f9a, "\u{1f9a}"), (0x1f9b, "\u{1f9b}"), (0x1f9c, "\u{1f9c}"), (0x1f9d, "\u{1f9d}"),
    (0x1f9e, "\u{1f9e}"), (0x1f9f, "\u{1f9f}"), (0x1fa0, "\u{1fa8}"), (0x1fa1, "\u{1fa9}"), (0x1fa2, "\u{1faa}"),
    (0x1fa3, "\u{1fab}"), (0x1fa4, "\u{1fac}"), (0x1fa5, "\u{1fad}"), (0x1fa6, "\u{1fae}"), (0x1fa7, "\u{1faf}"),
    (0x1fa8, "\u{1fa8}"), (0x1fa9, "\u{1fa9}"), (0x1faa, "\u{1faa}"), (0x1fab, "\u{1fab}"), (0x1fac, "\u{1fac}"),
    (0x1fad, "\u{1fad}"), (0x1fae, "\u{1fae}"), (0x1faf, "\u{1faf}"), (0x1fb2, "\u{1fba}\u{345}"),
    (0x1fb3, "\u{1fbc}"), (0x1fb4, "\u{386}\u{345}"), (0x1fb7, "\u{391}\u{342}\u{345}"), (0x1fbc, "\u{1fbc}"),
    (0x1fc2, "\u{1fca}\u{345}"), (0x1fc3, "\u{1fcc}"), (0x1fc4, "\u{389}\u{345}"), (0x1fc7, "\u{397}\u{342}\u{345}"),
    (0x1fcc, "\u{1fcc}"), (0x1ff2, "\u{1ffa}\u{345}"), (0x1ff3, "\u{1ffc}"), (0x1ff4, "\u{38f}\u{345}"),
    (0x1ff7, "\u{3a9}\u{342}\u{345}"), (0x1ffc, "\u{1ffc}"), (0xfb00, "\u{46}\u{66}"), (0xfb01, "\u{46}\u{69}"),
    (0xfb02, "\u{46}\u{6c}"), (0xfb03, "\u{46}\u{66}\u{69}"), (0xfb04, "\u{46}\u{66}\u{6c}"),
    (0xfb05, "\u{53}\u{74}"), (0xfb06, "\u{53}\u{74}"), (0xfb13, "\u{544}\u{576}"), (0xfb14, "\u{544}\u{565}"),
    (0xfb15, "\u{544}\u{56b}"), (0xfb16, "\u{54e}\u{576}"), (0xfb17, "\u{544}\u{56d}"),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn cap(v: &str) -> String {
        let mut s = String::new();
        init_cap(v, &mut s);
        s
    }

    fn case(v: &str, c: Case) -> String {
        let mut s = String::new();
        map_case(v, c, &mut s);
        s
    }

    #[test]
    fn title_exceptions_are_sorted() {
        assert!(TITLE_EXCEPTIONS.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn initcap_follows_spark() {
        assert_eq!(cap("hELLO wORLD"), "Hello World");
        assert_eq!(cap("ßa ǆb ﬁx"), "Ssa ǅb Fix");
        assert_eq!(cap("ΑΣ ΑΣΑ"), "Ας Ασα");
        assert_eq!(cap("aİ"), "Ai\u{307}");
        assert_eq!(cap("a\tb  c"), "A\tb  C");
        assert_eq!(cap("ა"), "ა");
    }

    #[test]
    fn unicode17_code_points_are_unchanged() {
        assert_eq!(case("a\u{a7cf}Σ", Case::Upper), "A\u{a7cf}Σ");
        assert_eq!(case("\u{a7ce}ΑΣ", Case::Lower), "\u{a7ce}ας");
        assert_eq!(case("straße", Case::Upper), "STRASSE");
    }
}
