//! Spark's string functions over UTF8_BINARY strings (Arrow `Utf8`, valid UTF-8: Ember validates Spark's bytes
//! where they become Arrow strings). Positions and lengths count Unicode code points, as `UTF8String` does.
//!
//! Ember's own kernels: DataFusion's `substr` takes a 64-bit position and length and computes the end without
//! Spark's int clamping; its `like` (arrow's) has no escape-character errors (Spark's `INVALID_FORMAT.ESC_*`);
//! arrow's `length` returns the byte length's type (Int32 chars) but `bit_length` of `Utf8` as Int32 bits
//! matches — kept here so one module holds the family.
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Int32Array, StringBuilder};
use arrow::datatypes::{DataType, Int32Type};
use datafusion_common::{internal_err, Result};

use super::Kernel;
use crate::error::plan_error;

pub(super) fn strings(a: &ArrayRef) -> Result<&arrow::array::StringArray> {
    match a.data_type() {
        DataType::Utf8 => Ok(a.as_string::<i32>()),
        t => internal_err!("string function over {t}"),
    }
}

pub(super) fn ints(a: &ArrayRef) -> Result<&Int32Array> {
    match a.data_type() {
        DataType::Int32 => Ok(a.as_primitive::<Int32Type>()),
        t => internal_err!("int argument of {t}"),
    }
}

/// `length` / `char_length` / `character_length` (code points), `octet_length` (bytes), `bit_length` (bits):
/// INT results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LengthUnit {
    Chars,
    Bytes,
    Bits,
}

#[derive(Debug)]
pub struct Length(pub LengthUnit);

impl Kernel for Length {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let s = strings(&args[0])?;
        let out: Int32Array = s
            .iter()
            .map(|v| {
                v.map(|v| match self.0 {
                    LengthUnit::Chars => v.chars().count() as i32,
                    LengthUnit::Bytes => v.len() as i32,
                    // Spark: numBytes * 8 in int arithmetic (a string is under 2 GiB, so at most 2^34 bits wrap).
                    LengthUnit::Bits => (v.len() as i32).wrapping_mul(8),
                })
            })
            .collect();
        Ok(Arc::new(out))
    }
}

/// `startswith` / `endswith` / `contains` (also what Catalyst's LikeSimplification makes of `LIKE 'abc%'`,
/// `'%abc'`, `'%abc%'`): byte comparisons, as `UTF8String`'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Affix {
    StartsWith,
    EndsWith,
    Contains,
}

#[derive(Debug)]
pub struct AffixMatch(pub Affix);

impl Kernel for AffixMatch {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let (l, r) = (strings(&args[0])?, strings(&args[1])?);
        let out: BooleanArray = l
            .iter()
            .zip(r.iter())
            .map(|(l, r)| match (l, r) {
                (Some(l), Some(r)) => Some(match self.0 {
                    Affix::StartsWith => l.as_bytes().starts_with(r.as_bytes()),
                    Affix::EndsWith => l.as_bytes().ends_with(r.as_bytes()),
                    Affix::Contains => memchr_contains(l.as_bytes(), r.as_bytes()),
                }),
                _ => None,
            })
            .collect();
        Ok(Arc::new(out))
    }
}

fn memchr_contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}

/// Spark's `UTF8String.substringSQL(pos, len)`: 1-based `pos` (0 is 1, negative counts from the end), `len`
/// code points, with the end computed in int arithmetic clamped to `Integer.MIN_VALUE..MAX_VALUE`.
#[derive(Debug)]
pub struct Substring;

/// Code-point range `[start, end)` of `substringSQL`, before clamping to the string's length; None: empty.
pub fn substring_range(num_chars: i32, pos: i32, len: i32) -> Option<(usize, usize)> {
    let start: i32 = if pos > 0 {
        pos - 1
    } else if pos < 0 {
        num_chars + pos
    } else {
        0
    };
    let end = (start as i64 + len as i64).clamp(i32::MIN as i64, i32::MAX as i64) as i32;
    let start = start.max(0);
    if start >= end {
        None
    } else {
        Some((start as usize, end as usize))
    }
}

impl Kernel for Substring {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let (s, pos, len) = (strings(&args[0])?, ints(&args[1])?, ints(&args[2])?);
        let mut out = StringBuilder::with_capacity(s.len(), s.value_data().len());
        for i in 0..s.len() {
            if s.is_null(i) || pos.is_null(i) || len.is_null(i) {
                out.append_null();
                continue;
            }
            let v = s.value(i);
            let n = v.chars().count() as i32;
            match substring_range(n, pos.value(i), len.value(i)) {
                None => out.append_value(""),
                Some((from, to)) => {
                    let byte_at = |k: usize| v.char_indices().nth(k).map_or(v.len(), |(b, _)| b);
                    out.append_value(&v[byte_at(from)..byte_at(to)]);
                }
            }
        }
        Ok(Arc::new(out.finish()))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Char(char),
    One,
    Many,
}

/// `str LIKE pattern ESCAPE c` with a literal pattern, compiled when planned (Spark's `escapeLikeRegex`): `_`
/// one code point, `%` any sequence (newlines included), the escape character before `_`, `%` or itself a
/// literal. A pattern Spark would reject (escape before another character, or at the end) is a plan error, so
/// Spark raises its own error (or never evaluates the expression) after the fallback.
#[derive(Debug)]
pub struct Like {
    tokens: Option<Vec<Token>>,
}

impl Like {
    /// `pattern` None: a NULL pattern (every result NULL).
    pub fn compile(pattern: Option<&str>, escape: char) -> Result<Self> {
        let Some(pattern) = pattern else { return Ok(Self { tokens: None }) };
        let mut tokens = Vec::new();
        let mut it = pattern.chars();
        while let Some(c) = it.next() {
            if c == escape {
                match it.next() {
                    Some(n) if n == '_' || n == '%' || n == escape => tokens.push(Token::Char(n)),
                    Some(_) => return Err(plan_error(format!("LIKE pattern '{pattern}': escape in the middle"))),
                    None => return Err(plan_error(format!("LIKE pattern '{pattern}': escape at the end"))),
                }
            } else if c == '_' {
                tokens.push(Token::One);
            } else if c == '%' {
                if tokens.last() != Some(&Token::Many) {
                    tokens.push(Token::Many);
                }
            } else {
                tokens.push(Token::Char(c));
            }
        }
        Ok(Self { tokens: Some(tokens) })
    }

    /// Greedy wildcard matching with backtracking to the last `%`: linear in practice, O(n·m) at worst.
    fn matches(tokens: &[Token], text: &[char]) -> bool {
        let (mut t, mut p) = (0usize, 0usize);
        let mut star: Option<(usize, usize)> = None;
        while t < text.len() {
            match tokens.get(p) {
                Some(Token::Many) => {
                    star = Some((p, t));
                    p += 1;
                }
                Some(Token::One) => {
                    t += 1;
                    p += 1;
                }
                Some(Token::Char(c)) if *c == text[t] => {
                    t += 1;
                    p += 1;
                }
                _ => match star {
                    Some((sp, st)) => {
                        p = sp + 1;
                        t = st + 1;
                        star = Some((sp, st + 1));
                    }
                    None => return false,
                },
            }
        }
        tokens[p..].iter().all(|x| *x == Token::Many)
    }
}

impl Kernel for Like {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let s = strings(&args[0])?;
        let Some(tokens) = &self.tokens else {
            return Ok(arrow::array::new_null_array(&DataType::Boolean, s.len()));
        };
        let mut buf: Vec<char> = Vec::new();
        let out: BooleanArray = s
            .iter()
            .map(|v| {
                v.map(|v| {
                    buf.clear();
                    buf.extend(v.chars());
                    Self::matches(tokens, &buf)
                })
            })
            .collect();
        Ok(Arc::new(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn like(p: &str, s: &str) -> bool {
        let l = Like::compile(Some(p), '\\').unwrap();
        let text: Vec<char> = s.chars().collect();
        Like::matches(l.tokens.as_ref().unwrap(), &text)
    }

    #[test]
    fn like_wildcards_and_escapes() {
        assert!(like("a%b", "a\nxb"));
        assert!(like("%", ""));
        assert!(!like("_", ""));
        assert!(like("_", "é"));
        assert!(like("%a%a%", "xaxxa"));
        assert!(!like("%a%a%", "xax"));
        assert!(like("a\\%", "a%"));
        assert!(!like("a\\%", "ab"));
        assert!(like("a\\\\", "a\\"));
        assert!(Like::compile(Some("a\\b"), '\\').is_err());
        assert!(Like::compile(Some("a\\"), '\\').is_err());
    }

    #[test]
    fn substring_range_follows_substring_sql() {
        assert_eq!(substring_range(5, 2, 2), Some((1, 3)));
        assert_eq!(substring_range(5, -2, 10), Some((3, 13)));
        assert_eq!(substring_range(5, 0, 1), Some((0, 1)));
        assert_eq!(substring_range(5, -10, 6), Some((0, 1)));
        assert_eq!(substring_range(5, 1, i32::MAX), Some((0, i32::MAX as usize)));
        assert_eq!(substring_range(5, 3, -1), None);
    }
}

/// `ascii(str)`: the first character's code point (0 for an empty string), as Spark's `Ascii`.
#[derive(Debug)]
pub struct Ascii;

impl Kernel for Ascii {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let out: Int32Array =
            strings(&args[0])?.iter().map(|v| v.map(|v| v.chars().next().map_or(0, |c| c as i32))).collect();
        Ok(Arc::new(out))
    }
}

/// `chr(n)` / `char(n)` of a BIGINT: "" for a negative n, else the character `n & 0xFF` (Latin-1), as Spark's
/// `Chr`.
#[derive(Debug)]
pub struct Chr;

impl Kernel for Chr {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let n = args[0].as_primitive::<arrow::datatypes::Int64Type>();
        let mut out = StringBuilder::with_capacity(n.len(), n.len() * 2);
        for v in n.iter() {
            match v {
                None => out.append_null(),
                Some(v) if v < 0 => out.append_value(""),
                Some(v) => out.append_value(char::from((v & 0xFF) as u8).to_string()),
            }
        }
        Ok(Arc::new(out.finish()))
    }
}

/// `reverse(str)`: the code points in reverse order (`UTF8String.reverse`).
#[derive(Debug)]
pub struct Reverse;

impl Kernel for Reverse {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let s = strings(&args[0])?;
        let mut out = StringBuilder::with_capacity(s.len(), s.value_data().len());
        for v in s.iter() {
            match v {
                None => out.append_null(),
                Some(v) => out.append_value(v.chars().rev().collect::<String>()),
            }
        }
        Ok(Arc::new(out.finish()))
    }
}
