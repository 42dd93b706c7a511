//! Spark's string functions that search, trim, pad and rewrite UTF8_BINARY strings, each `UTF8String`'s own
//! algorithm: byte matching at code-point boundaries, positions and lengths in code points, Java int arithmetic.
//!
//! Why not DataFusion's: its `strpos` / `substr_index` / `levenshtein` have no `start` argument, no
//! `count = -2147483648` failure and no threshold respectively. Its `replace`, `translate` and `lpad` / `rpad`
//! (code points, input unchanged for an empty search string, as read in 55.2's source) have not been run
//! against the golden table yet: they may be exact, and could replace these kernels once it proves them.
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Int32Array, StringArray, StringBuilder};
use datafusion_common::{exec_err, internal_err, Result};

use super::strings::{ints, strings};
use super::Kernel;

/// A string result whose size is checked against Arrow's 32-bit offsets (Spark's results are Java arrays, so
/// `Math.toIntExact` / `multiplyExact` fail at the same 2 GiB).
struct Out {
    b: StringBuilder,
    bytes: usize,
}

impl Out {
    fn new(rows: usize, bytes: usize) -> Self {
        Self { b: StringBuilder::with_capacity(rows, bytes), bytes: 0 }
    }

    fn check(&mut self, more: usize) -> Result<()> {
        self.bytes = self.bytes.saturating_add(more);
        if self.bytes > i32::MAX as usize {
            return exec_err!("integer overflow: a string result of more than 2147483647 bytes");
        }
        Ok(())
    }

    fn value(&mut self, v: &str) -> Result<()> {
        self.check(v.len())?;
        self.b.append_value(v);
        Ok(())
    }

    fn null(&mut self) {
        self.b.append_null();
    }

    fn finish(mut self) -> ArrayRef {
        Arc::new(self.b.finish())
    }
}

fn opt_int(a: &Int32Array, i: usize) -> Option<i32> {
    if a.is_null(i) {
        None
    } else {
        Some(a.value(i))
    }
}

fn opt_str(a: &StringArray, i: usize) -> Option<&str> {
    if a.is_null(i) {
        None
    } else {
        Some(a.value(i))
    }
}

/// Byte offset of the `n`-th code point (the length when there are fewer).
fn byte_at(v: &str, n: usize) -> usize {
    v.char_indices().nth(n).map_or(v.len(), |(b, _)| b)
}

/// `UTF8String.substring(0, len)`: the first `len` code points, empty for `len <= 0`.
fn prefix(v: &str, len: i32) -> &str {
    if len <= 0 {
        ""
    } else {
        &v[..byte_at(v, len as usize)]
    }
}

/// Which ends `trim` / `ltrim` / `rtrim` (and `btrim`, which Spark rewrites to `trim`) strip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrimSide {
    Both,
    Left,
    Right,
}

/// `trim(str)` strips ASCII spaces only; `trim(str, chars)` strips every code point occurring in `chars`
/// (`UTF8String.trimLeft(trimString)` finds the code point's bytes in it, which for valid UTF-8 is membership).
#[derive(Debug)]
pub struct Trim(pub TrimSide);

fn trim<'a>(v: &'a str, side: TrimSide, chars: Option<&str>) -> &'a str {
    let strip = |c: char| match chars {
        None => c == ' ',
        Some(t) => t.contains(c),
    };
    match side {
        TrimSide::Both => v.trim_start_matches(strip).trim_end_matches(strip),
        TrimSide::Left => v.trim_start_matches(strip),
        TrimSide::Right => v.trim_end_matches(strip),
    }
}

impl Kernel for Trim {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let s = strings(&args[0])?;
        let t = args.get(1).map(strings).transpose()?;
        let mut out = Out::new(s.len(), s.value_data().len());
        for i in 0..s.len() {
            let chars = match t {
                Some(t) if t.is_null(i) => {
                    out.null();
                    continue;
                }
                Some(t) => Some(t.value(i)),
                None => None,
            };
            match opt_str(s, i) {
                None => out.null(),
                Some(v) => out.value(trim(v, self.0, chars))?,
            }
        }
        Ok(out.finish())
    }
}

/// `lpad(str, len, pad)` / `rpad(str, len, pad)`: `UTF8String.lpad` / `rpad` — cut to `len` code points when
/// no padding is needed (or the pad is empty), else the pad repeated and cut to fill. `len - numChars` is Java
/// int arithmetic (it wraps).
#[derive(Debug)]
pub struct Pad {
    pub left: bool,
}

fn pad(v: &str, len: i32, pad: &str, left: bool, out: &mut Out) -> Result<()> {
    let num_chars = v.chars().count() as i32;
    let spaces = len.wrapping_sub(num_chars);
    if spaces <= 0 || pad.is_empty() {
        return out.value(prefix(v, len));
    }
    let pad_chars = pad.chars().count() as i32;
    let count = spaces / pad_chars;
    let remain = prefix(pad, spaces - pad_chars * count);
    let size = (v.len() as u64) + (pad.len() as u64) * (count as u64) + remain.len() as u64;
    if size > i32::MAX as u64 {
        return exec_err!("integer overflow: {} pads a string to {size} bytes", if left { "lpad" } else { "rpad" });
    }
    let mut s = String::with_capacity(size as usize);
    if !left {
        s.push_str(v);
    }
    for _ in 0..count {
        s.push_str(pad);
    }
    s.push_str(remain);
    if left {
        s.push_str(v);
    }
    out.value(&s)
}

impl Kernel for Pad {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let (s, len, p) = (strings(&args[0])?, ints(&args[1])?, strings(&args[2])?);
        let mut out = Out::new(s.len(), s.value_data().len());
        for i in 0..s.len() {
            match (opt_str(s, i), opt_int(len, i), opt_str(p, i)) {
                (Some(v), Some(n), Some(p)) => pad(v, n, p, self.left, &mut out)?,
                _ => out.null(),
            }
        }
        Ok(out.finish())
    }
}

/// `replace(str, search, replace)`: every non-overlapping occurrence, left to right; the input unchanged for an
/// empty search string.
#[derive(Debug)]
pub struct Replace;

impl Kernel for Replace {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let (s, from, to) = (strings(&args[0])?, strings(&args[1])?, strings(&args[2])?);
        let mut out = Out::new(s.len(), s.value_data().len());
        for i in 0..s.len() {
            match (opt_str(s, i), opt_str(from, i), opt_str(to, i)) {
                (Some(v), Some(""), Some(_)) => out.value(v)?,
                (Some(v), Some(f), Some(t)) => out.value(&v.replace(f, t))?,
                _ => out.null(),
            }
        }
        Ok(out.finish())
    }
}

/// `translate(str, from, to)`: each code point of `from` maps to the code point of `to` at the same index, or is
/// deleted when `to` is shorter (or has U+0000 there, Spark's deletion mark); the first mapping of a repeated
/// code point wins (`StringTranslate.buildDict`).
#[derive(Debug)]
pub struct Translate;

/// `translate`'s code point → replacement (None: deleted), in `from`'s order.
type TranslateDict = Vec<(char, Option<char>)>;

fn translate_dict(from: &str, to: &str) -> TranslateDict {
    let mut dict: TranslateDict = Vec::new();
    let mut to = to.chars();
    for c in from.chars() {
        let r = to.next().filter(|r| *r != '\0');
        if !dict.iter().any(|(k, _)| *k == c) {
            dict.push((c, r));
        }
    }
    dict
}

impl Kernel for Translate {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let (s, from, to) = (strings(&args[0])?, strings(&args[1])?, strings(&args[2])?);
        let mut out = Out::new(s.len(), s.value_data().len());
        // The dictionary of the previous row, kept while `from` and `to` repeat (they are usually literals).
        let mut cached: Option<(usize, TranslateDict)> = None;
        let mut buf = String::new();
        for i in 0..s.len() {
            let (Some(v), Some(f), Some(t)) = (opt_str(s, i), opt_str(from, i), opt_str(to, i)) else {
                out.null();
                continue;
            };
            let same = cached.as_ref().is_some_and(|(j, _)| from.value(*j) == f && to.value(*j) == t);
            if !same {
                cached = Some((i, translate_dict(f, t)));
            }
            let dict = cached.as_ref().map(|(_, d)| d.as_slice()).unwrap_or_default();
            buf.clear();
            for c in v.chars() {
                match dict.iter().find(|(k, _)| *k == c) {
                    None => buf.push(c),
                    Some((_, Some(r))) => buf.push(*r),
                    Some((_, None)) => {}
                }
            }
            out.value(&buf)?;
        }
        Ok(out.finish())
    }
}

/// `UTF8String.indexOf(v, start)`: the code-point index of the first match at or after code point `start`, -1
/// when none; 0 for an empty `v` whatever `start` is.
fn index_of(s: &str, v: &str, start: usize) -> i32 {
    if v.is_empty() {
        return 0;
    }
    for (c, (b, _)) in s.char_indices().enumerate() {
        if c >= start && s.as_bytes()[b..].starts_with(v.as_bytes()) {
            return c as i32;
        }
    }
    -1
}

/// `instr(str, substr)` (1-based, 0 when absent) and `locate(substr, str[, start])` / `position`: a NULL
/// `start` gives 0 (not NULL), a `start` below 1 gives 0.
#[derive(Debug)]
pub struct Locate {
    pub instr: bool,
}

impl Kernel for Locate {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let (hay, needle) = if self.instr {
            (strings(&args[0])?, strings(&args[1])?)
        } else {
            (strings(&args[1])?, strings(&args[0])?)
        };
        let start = if self.instr { None } else { Some(ints(&args[2])?) };
        let out: Int32Array = (0..hay.len())
            .map(|i| {
                let from = match start {
                    None => 0,
                    Some(s) => match opt_int(s, i) {
                        None => return Some(0),
                        Some(p) => p,
                    },
                };
                let (h, n) = (opt_str(hay, i)?, opt_str(needle, i)?);
                if from < 1 && !self.instr {
                    return Some(0);
                }
                Some(index_of(h, n, (from.max(1) - 1) as usize) + 1)
            })
            .collect();
        Ok(Arc::new(out))
    }
}

/// `repeat(str, n)`: empty for `n <= 0`.
#[derive(Debug)]
pub struct Repeat;

impl Kernel for Repeat {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let (s, n) = (strings(&args[0])?, ints(&args[1])?);
        let mut out = Out::new(s.len(), s.value_data().len());
        for i in 0..s.len() {
            match (opt_str(s, i), opt_int(n, i)) {
                (Some(v), Some(n)) => {
                    let n = n.max(0) as usize;
                    if v.len().saturating_mul(n) > i32::MAX as usize {
                        return exec_err!("integer overflow: repeat of {} bytes {n} times", v.len());
                    }
                    out.value(&v.repeat(n))?
                }
                _ => out.null(),
            }
        }
        Ok(out.finish())
    }
}

/// `substring_index(str, delim, count)`: `UTF8String.subStringIndex` — the part before the `count`-th
/// delimiter from the left (`count > 0`) or after the `-count`-th from the right; the whole string when there
/// are fewer delimiters; empty for an empty delimiter or `count = 0`. Matches may overlap (the search restarts
/// one byte after the previous match).
#[derive(Debug)]
pub struct SubstringIndex;

fn substring_index<'a>(v: &'a str, d: &str, count: i32) -> &'a str {
    let (vb, db) = (v.as_bytes(), d.as_bytes());
    if db.is_empty() || count == 0 {
        return "";
    }
    if count > 0 {
        let mut idx: isize = -1;
        let mut left = count;
        while left > 0 {
            let from = (idx + 1) as usize;
            match (from..=vb.len().saturating_sub(db.len()))
                .find(|&k| from + db.len() <= vb.len() && vb[k..].starts_with(db))
            {
                Some(k) => {
                    idx = k as isize;
                    left -= 1;
                }
                None => return v,
            }
        }
        // A match of valid UTF-8 in valid UTF-8 starts at a code-point boundary.
        &v[..idx as usize]
    } else {
        let mut idx: isize = vb.len() as isize - db.len() as isize + 1;
        let mut left = -(count as i64);
        while left > 0 {
            let from = idx - 1;
            match (0..=from).rev().find(|&k| vb[k as usize..].starts_with(db)) {
                Some(k) => {
                    idx = k;
                    left -= 1;
                }
                None => return v,
            }
        }
        &v[idx as usize + db.len()..]
    }
}

impl Kernel for SubstringIndex {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let (s, d, n) = (strings(&args[0])?, strings(&args[1])?, ints(&args[2])?);
        let mut out = Out::new(s.len(), s.value_data().len());
        for i in 0..s.len() {
            match (opt_str(s, i), opt_str(d, i), opt_int(n, i)) {
                // Spark negates the count in int arithmetic and fails allocating a negative-sized array.
                (Some(_), Some(d), Some(i32::MIN)) if !d.is_empty() => {
                    return exec_err!("NegativeArraySizeException: substring_index with count -2147483648")
                }
                (Some(v), Some(d), Some(n)) => out.value(substring_index(v, d, n))?,
                _ => out.null(),
            }
        }
        Ok(out.finish())
    }
}

/// `levenshtein(l, r[, threshold])`: the edit distance in code points; with a threshold, -1 when the distance
/// exceeds it (`UTF8String.levenshteinDistance(other, threshold)`, which also gives -1 for any negative one).
/// The JVM side sends only a non-null literal threshold: Spark reads a NULL one as 0 when interpreted and as -1
/// in generated code, so neither is "Spark's answer" (here it gives NULL).
#[derive(Debug)]
pub struct Levenshtein;

fn levenshtein(a: &str, b: &str) -> i32 {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let (s, t) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    let mut p: Vec<i32> = (0..=s.len() as i32).collect();
    let mut d = vec![0i32; s.len() + 1];
    for (j, tc) in t.iter().enumerate() {
        d[0] = j as i32 + 1;
        for (i, sc) in s.iter().enumerate() {
            let cost = i32::from(sc != tc);
            d[i + 1] = (d[i] + 1).min(p[i + 1] + 1).min(p[i] + cost);
        }
        std::mem::swap(&mut p, &mut d);
    }
    p[s.len()]
}

impl Kernel for Levenshtein {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let (l, r) = (strings(&args[0])?, strings(&args[1])?);
        let threshold = args.get(2).map(ints).transpose()?;
        if args.len() > 3 {
            return internal_err!("levenshtein of {} arguments", args.len());
        }
        let out: Int32Array = (0..l.len())
            .map(|i| {
                let (a, b) = (opt_str(l, i)?, opt_str(r, i)?);
                let limit = match threshold {
                    Some(t) => Some(opt_int(t, i)?),
                    None => None,
                };
                let dist = levenshtein(a, b);
                Some(match limit {
                    Some(t) if dist > t => -1,
                    _ => dist,
                })
            })
            .collect();
        Ok(Arc::new(out))
    }
}

#[cfg(test)]
mod tests {
    use arrow::array::AsArray;

    use super::*;

    #[test]
    fn index_of_follows_utf8string() {
        assert_eq!(index_of("héllo", "l", 0), 2);
        assert_eq!(index_of("héllo", "l", 3), 3);
        assert_eq!(index_of("héllo", "l", 9), -1);
        assert_eq!(index_of("abc", "", 9), 0);
        assert_eq!(index_of("", "a", 0), -1);
    }

    #[test]
    fn substring_index_follows_utf8string() {
        assert_eq!(substring_index("www.apache.org", ".", 2), "www.apache");
        assert_eq!(substring_index("www.apache.org", ".", -2), "apache.org");
        assert_eq!(substring_index("www.apache.org", ".", 5), "www.apache.org");
        assert_eq!(substring_index("aaa", "aa", 2), "a");
        assert_eq!(substring_index("aaa", "aa", -2), "a");
        assert_eq!(substring_index(".a", ".", 1), "");
        assert_eq!(substring_index("a.", ".", -1), "");
    }

    #[test]
    fn pad_and_translate() {
        let run = |v: &str, n: i32, p: &str, left: bool| {
            let mut o = Out::new(1, 8);
            pad(v, n, p, left, &mut o).unwrap();
            o.finish().as_string::<i32>().value(0).to_string()
        };
        assert_eq!(run("hi", 5, "??", true), "???hi");
        assert_eq!(run("hi", 5, "ab", false), "hiaba");
        assert_eq!(run("hello", 2, "x", true), "he");
        assert_eq!(run("hi", -1, "x", true), "");
        assert_eq!(run("e\u{301}", 3, "*", true), "*e\u{301}");
        assert_eq!(translate_dict("aba", "x"), vec![('a', Some('x')), ('b', None)]);
        assert_eq!(levenshtein("kitten", "sitting"), 3);
        assert_eq!(levenshtein("", "äb"), 2);
    }
}

/// `space(n)`: `n` spaces, empty for `n <= 0` (`UTF8String.blankString`).
#[derive(Debug)]
pub struct Space;

impl Kernel for Space {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let n = ints(&args[0])?;
        let mut out = Out::new(n.len(), 0);
        for i in 0..n.len() {
            match opt_int(n, i) {
                Some(n) => {
                    let n = n.max(0) as usize;
                    out.check(n)?;
                    out.b.append_value(" ".repeat(n));
                }
                None => out.null(),
            }
        }
        Ok(out.finish())
    }
}

/// `elt(n, s1, s2, …)`: the `n`-th string; NULL for a NULL `n`; for `n` outside `1..=count` NULL, or under ANSI
/// `INVALID_ARRAY_INDEX` (a `SparkArrayIndexOutOfBoundsException`). Spark evaluates only the chosen string, so
/// the JVM side sends `elt` only over columns and literals, which cannot fail.
#[derive(Debug)]
pub struct Elt {
    pub ansi: bool,
}

impl Kernel for Elt {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let n = ints(&args[0])?;
        let values = args[1..].iter().map(strings).collect::<Result<Vec<_>>>()?;
        let mut out = Out::new(n.len(), 0);
        for i in 0..n.len() {
            match opt_int(n, i) {
                Some(k) if k >= 1 && k as usize <= values.len() => match opt_str(values[k as usize - 1], i) {
                    Some(v) => out.value(v)?,
                    None => out.null(),
                },
                Some(k) if self.ansi => {
                    return Err(crate::error::SparkError::new(
                        crate::error::SparkExceptionKind::ArrayIndex,
                        "INVALID_ARRAY_INDEX",
                        &[("indexValue", k.to_string()), ("arraySize", values.len().to_string())],
                    )
                    .into_datafusion())
                }
                _ => out.null(),
            }
        }
        Ok(out.finish())
    }
}

/// `find_in_set(str, list)`: the 1-based position of `str` among `list`'s comma-separated items (bytes compared),
/// 0 when absent or when `str` itself holds a comma (`UTF8String.findInSet`).
#[derive(Debug)]
pub struct FindInSet;

impl Kernel for FindInSet {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let (s, list) = (strings(&args[0])?, strings(&args[1])?);
        let out: Int32Array = s
            .iter()
            .zip(list.iter())
            .map(|(s, list)| {
                let (s, list) = (s?, list?);
                if s.contains(',') {
                    return Some(0);
                }
                Some(list.split(',').position(|item| item == s).map_or(0, |p| p as i32 + 1))
            })
            .collect();
        Ok(Arc::new(out))
    }
}

/// `overlay(input PLACING replace FROM pos FOR len)`: `Overlay.calculate` — `input.substringSQL(1, pos - 1)`, then
/// `replace`, then `input.substringSQL(pos + len', MAX)` with `len'` = `len` if `len >= 0`, else `replace`'s
/// length in code points; the sums in Java int arithmetic (wrapping).
#[derive(Debug)]
pub struct Overlay;

/// `UTF8String.substringSQL(pos, len)` of `v`, whose length in code points is `chars`.
fn substring_sql(v: &str, chars: i32, pos: i32, len: i32) -> &str {
    match super::strings::substring_range(chars, pos, len) {
        Some((start, end)) => &v[byte_at(v, start)..byte_at(v, end)],
        None => "",
    }
}

impl Kernel for Overlay {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let (input, replace) = (strings(&args[0])?, strings(&args[1])?);
        let (pos, len) = (ints(&args[2])?, ints(&args[3])?);
        let mut out = Out::new(input.len(), input.value_data().len() + replace.value_data().len());
        let mut buf = String::new();
        for i in 0..input.len() {
            let (Some(v), Some(r), Some(p), Some(l)) =
                (opt_str(input, i), opt_str(replace, i), opt_int(pos, i), opt_int(len, i))
            else {
                out.null();
                continue;
            };
            let chars = v.chars().count() as i32;
            let l = if l >= 0 { l } else { r.chars().count() as i32 };
            buf.clear();
            buf.push_str(substring_sql(v, chars, 1, p.wrapping_sub(1)));
            buf.push_str(r);
            buf.push_str(substring_sql(v, chars, p.wrapping_add(l), i32::MAX));
            out.value(&buf)?;
        }
        Ok(out.finish())
    }
}
