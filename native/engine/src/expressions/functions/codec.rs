//! Spark's `url_encode`, `url_decode` / `try_url_decode`, `quote`, `encode` / `decode` (UTF-8, ISO-8859-1,
//! US-ASCII, Java's REPORT error action: `MALFORMED_CHARACTER_CODING`) and the UTF-8 validity functions
//! (`is_valid_utf8`, `make_valid_utf8`, `validate_utf8`, `try_validate_utf8`), which Spark rewrites into
//! `StaticInvoke`s / `Invoke`s of Java methods before planning. Ember's own kernels: DataFusion has none of
//! them with Java's rules — `URLEncoder`'s set of unescaped characters and `+` for a space, `URLDecoder`'s
//! `Integer.parseInt` of each escape (a sign, and any Unicode decimal digit or fullwidth letter, accepted) and
//! Java's UTF-8 decoder (one U+FFFD for an encoded surrogate, where `String::from_utf8_lossy` puts three),
//! `String.replaceAll` for `quote`.
//!
//! The UTF-8 functions see only valid UTF-8: Arrow's strings must be, and Ember validates every string it takes
//! from Spark (an invalid one fails the task, docs/compatibility.md). On valid strings Spark's answers are the
//! string itself (`make_valid_utf8`, `validate_utf8`, `try_validate_utf8`) and true (`is_valid_utf8`), which
//! [`Utf8Validity`] checks rather than assumes.
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, StringBuilder};
use arrow::datatypes::DataType;
use datafusion_common::{internal_err, Result};

use super::Kernel;
use crate::error::{SparkError, SparkExceptionKind};
use crate::expressions::cast::java_digit;

fn string_arg<'a>(a: &'a ArrayRef, name: &str) -> Result<&'a arrow::array::StringArray> {
    match a.data_type() {
        DataType::Utf8 => Ok(a.as_string::<i32>()),
        other => internal_err!("{name} of {other}"),
    }
}

/// `URLEncoder.encode(s, UTF_8)`: ASCII letters, digits and `.-*_` stay, a space is `+`, every other byte of
/// the UTF-8 encoding is `%XX` in upper-case hex.
pub fn url_encode(s: &str, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in s.as_bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'-' | b'*' | b'_' => out.push(b as char),
            b' ' => out.push('+'),
            _ => {
                out.push('%');
                out.push(HEX[(b >> 4) as usize] as char);
                out.push(HEX[(b & 15) as usize] as char);
            }
        }
    }
}

/// `Character.digit(c, 16)`: a Unicode decimal digit of the BMP, or a Latin letter A–F / a–f in ASCII or
/// fullwidth form.
fn java_hex_digit(c: u16) -> Option<u32> {
    match c {
        0x41..=0x46 => Some((c - 0x41) as u32 + 10),
        0x61..=0x66 => Some((c - 0x61) as u32 + 10),
        0xFF21..=0xFF26 => Some((c - 0xFF21) as u32 + 10),
        0xFF41..=0xFF46 => Some((c - 0xFF41) as u32 + 10),
        _ => char::from_u32(c as u32).and_then(java_digit).map(u32::from),
    }
}

/// `Integer.parseInt(s, begin, begin + 2, 16)` of two UTF-16 units: an optional sign and digits.
fn parse_hex2(a: u16, b: u16) -> Option<i32> {
    match a {
        0x2B => java_hex_digit(b).map(|d| d as i32),
        0x2D => java_hex_digit(b).map(|d| -(d as i32)),
        _ => Some((java_hex_digit(a)? * 16 + java_hex_digit(b)?) as i32),
    }
}

/// `URLDecoder.decode(s, UTF_8)` over the string's UTF-16 units as Java walks them: `+` is a space, each run
/// of `%XX` escapes is one byte sequence decoded as UTF-8 with U+FFFD for malformed input; `None` where Java
/// throws `IllegalArgumentException` (an escape that is not two hex digits, a negative one, a trailing `%`).
pub fn url_decode(s: &str) -> Option<String> {
    let units: Vec<u16> = s.encode_utf16().collect();
    let n = units.len();
    let mut out: Vec<u16> = Vec::with_capacity(n);
    let mut bytes = Vec::new();
    let mut i = 0;
    while i < n {
        let mut c = units[i];
        match c {
            0x2B => {
                out.push(0x20);
                i += 1;
            }
            0x25 => {
                bytes.clear();
                while i + 2 < n && c == 0x25 {
                    let v = parse_hex2(units[i + 1], units[i + 2])?;
                    if v < 0 {
                        return None;
                    }
                    bytes.push(v as u8);
                    i += 3;
                    if i < n {
                        c = units[i];
                    }
                }
                if i < n && c == 0x25 {
                    return None;
                }
                out.extend(java_utf8_lossy(&bytes).encode_utf16());
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    // Only whole surrogate pairs are copied, and decoded bytes are valid UTF-16.
    String::from_utf16(&out).ok()
}

/// `new String(bytes, UTF_8)`: malformed input as U+FFFD, one per maximal ill-formed subpart (as
/// `String::from_utf8_lossy`) except for an encoded surrogate (`ED A0..BF`), where Java's decoder replaces the
/// lead with its continuation bytes (up to two) by a single U+FFFD.
pub fn java_utf8_lossy(mut bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    loop {
        match std::str::from_utf8(bytes) {
            Ok(s) => {
                out.push_str(s);
                return out;
            }
            Err(e) => {
                let (valid, rest) = bytes.split_at(e.valid_up_to());
                out.push_str(std::str::from_utf8(valid).expect("valid prefix"));
                out.push('\u{fffd}');
                let bad = match rest {
                    [0xED, 0xA0..=0xBF, b3, ..] if b3 & 0xC0 == 0x80 => 3,
                    [0xED, 0xA0..=0xBF, ..] => 2,
                    _ => e.error_len().unwrap_or(rest.len()),
                };
                bytes = &rest[bad..];
            }
        }
    }
}

/// `url_encode(str)`: Spark's `StaticInvoke` of `UrlCodec.encode`.
#[derive(Debug)]
pub struct UrlEncode;

impl Kernel for UrlEncode {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let a = string_arg(&args[0], "url_encode")?;
        let mut out = StringBuilder::with_capacity(a.len(), a.value_data().len() * 3);
        let mut text = String::new();
        for v in a.iter() {
            match v {
                Some(v) => {
                    text.clear();
                    url_encode(v, &mut text);
                    out.append_value(&text);
                }
                None => out.append_null(),
            }
        }
        Ok(Arc::new(out.finish()))
    }
}

/// The error class `url_decode` raises (a `SparkIllegalArgumentException` without a query context).
pub const CANNOT_DECODE_URL: &str = "CANNOT_DECODE_URL";

/// `url_decode(str)` / `try_url_decode(str)`: Spark's `StaticInvoke` of `UrlCodec.decode(str, failOnError)`,
/// the flag as the second argument (a literal): `CANNOT_DECODE_URL` naming the string, or NULL.
#[derive(Debug)]
pub struct UrlDecode;

impl Kernel for UrlDecode {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let a = string_arg(&args[0], "url_decode")?;
        let DataType::Boolean = args[1].data_type() else {
            return internal_err!("url_decode with a {} flag", args[1].data_type());
        };
        let fail = args[1].as_boolean();
        let mut out = StringBuilder::with_capacity(a.len(), a.value_data().len());
        for i in 0..a.len() {
            if a.is_null(i) || fail.is_null(i) {
                out.append_null();
                continue;
            }
            match url_decode(a.value(i)) {
                Some(t) => out.append_value(t),
                None if fail.value(i) => {
                    return Err(SparkError::new(
                        SparkExceptionKind::IllegalArgument,
                        CANNOT_DECODE_URL,
                        &[("url", a.value(i).to_string())],
                    )
                    .into_datafusion())
                }
                None => out.append_null(),
            }
        }
        Ok(Arc::new(out.finish()))
    }
}

/// `quote(str)`: `ExpressionImplUtils.quote`, the string in single quotes with each `'` in it as `\'`.
#[derive(Debug)]
pub struct Quote;

impl Kernel for Quote {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let a = string_arg(&args[0], "quote")?;
        let mut out = StringBuilder::with_capacity(a.len(), a.value_data().len() + a.len() * 2);
        for v in a.iter() {
            match v {
                Some(v) => out.append_value(format!("'{}'", v.replace('\'', "\\'"))),
                None => out.append_null(),
            }
        }
        Ok(Arc::new(out.finish()))
    }
}

/// Which UTF-8 validity function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Utf8Op {
    /// `is_valid_utf8`: `UTF8String.isValid`.
    IsValid,
    /// `make_valid_utf8`: `UTF8String.makeValid` (invalid sequences as U+FFFD).
    MakeValid,
    /// `validate_utf8` (`INVALID_UTF8_STRING` for an invalid string) and `try_validate_utf8` (NULL for one).
    Validate,
}

/// The UTF-8 validity functions over Arrow strings (see the module doc): each value is checked, and a string
/// that were not valid UTF-8 would be an internal error, never a silently wrong answer.
#[derive(Debug)]
pub struct Utf8Validity(pub Utf8Op);

impl Kernel for Utf8Validity {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let a = string_arg(&args[0], "utf8 validity")?;
        if simdutf8::basic::from_utf8(a.value_data()).is_err() {
            return internal_err!("a string that is not valid UTF-8 reached a kernel");
        }
        Ok(match self.0 {
            Utf8Op::IsValid => Arc::new(a.iter().map(|v| v.map(|_| true)).collect::<BooleanArray>()),
            Utf8Op::MakeValid | Utf8Op::Validate => Arc::clone(&args[0]),
        })
    }
}

/// A charset `encode` / `decode` run natively: the three single-byte-or-UTF-8 ones of Spark's list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Charset {
    Utf8,
    Latin1,
    Ascii,
}

impl Charset {
    /// By Spark's (case-insensitive) name; other charsets stay in Spark.
    pub fn by_name(name: &str) -> Option<Self> {
        Some(match name.to_ascii_lowercase().as_str() {
            "utf-8" => Charset::Utf8,
            "iso-8859-1" => Charset::Latin1,
            "us-ascii" => Charset::Ascii,
            _ => return None,
        })
    }
}

/// Spark's `MALFORMED_CHARACTER_CODING` (`encode` / `decode` with Java's REPORT coding error action).
fn malformed_coding(function: &str, charset: &str) -> datafusion_common::DataFusionError {
    SparkError::new(
        SparkExceptionKind::Runtime,
        "MALFORMED_CHARACTER_CODING",
        &[("function", format!("`{function}`")), ("charset", charset.to_string())],
    )
    .into_datafusion()
}

/// `encode(str, charset)`: Spark's `StaticInvoke` of `Encode.encode` with the REPORT error action (not
/// `spark.sql.legacy.codingErrorAction`): a character the charset cannot hold is `MALFORMED_CHARACTER_CODING`.
/// `charset_text` is the literal as written, which the error carries.
#[derive(Debug)]
pub struct Encode {
    pub charset: Charset,
    pub charset_text: String,
}

impl Kernel for Encode {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let a = string_arg(&args[0], "encode")?;
        let mut out = arrow::array::BinaryBuilder::with_capacity(a.len(), a.value_data().len());
        for v in a.iter() {
            let Some(v) = v else {
                out.append_null();
                continue;
            };
            let limit = match self.charset {
                Charset::Utf8 => {
                    out.append_value(v.as_bytes());
                    continue;
                }
                Charset::Latin1 => 0xFF,
                Charset::Ascii => 0x7F,
            };
            let mut bytes = Vec::with_capacity(v.len());
            for c in v.chars() {
                if c as u32 > limit {
                    return Err(malformed_coding("encode", &self.charset_text));
                }
                bytes.push(c as u8);
            }
            out.append_value(&bytes);
        }
        Ok(Arc::new(out.finish()))
    }
}

/// `decode(bin, charset)`: Spark's `StaticInvoke` of `StringDecode.decode` with the REPORT error action:
/// bytes that are not valid in the charset (any byte above 0x7F in US-ASCII, malformed UTF-8) are
/// `MALFORMED_CHARACTER_CODING`; ISO-8859-1 maps every byte to its code point.
#[derive(Debug)]
pub struct Decode {
    pub charset: Charset,
    pub charset_text: String,
}

impl Kernel for Decode {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let DataType::Binary = args[0].data_type() else {
            return internal_err!("decode of {}", args[0].data_type());
        };
        let a = args[0].as_binary::<i32>();
        let mut out = StringBuilder::with_capacity(a.len(), a.value_data().len());
        for v in a.iter() {
            let Some(v) = v else {
                out.append_null();
                continue;
            };
            match self.charset {
                Charset::Utf8 | Charset::Ascii => {
                    let text = std::str::from_utf8(v).ok().filter(|t| self.charset == Charset::Utf8 || t.is_ascii());
                    match text {
                        Some(t) => out.append_value(t),
                        None => return Err(malformed_coding("decode", &self.charset_text)),
                    }
                }
                Charset::Latin1 => out.append_value(v.iter().map(|&b| b as char).collect::<String>()),
            }
        }
        Ok(Arc::new(out.finish()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_codec_as_java() {
        let mut s = String::new();
        url_encode("a b+c/ä~*", &mut s);
        assert_eq!(s, "a+b%2Bc%2F%C3%A4%7E*");
        assert_eq!(url_decode("a+b%2Bc%2F%C3%A4%7e").unwrap(), "a b+c/ä~");
        assert_eq!(url_decode("%+1%-0").unwrap(), "\u{1}\u{0}");
        assert_eq!(url_decode("%E2%82").unwrap(), "\u{fffd}");
        assert_eq!(url_decode("%ED%A0%80%ED%A0").unwrap(), "\u{fffd}\u{fffd}");
        assert!(url_decode("%-1").is_none());
        assert!(url_decode("%4").is_none());
        assert!(url_decode("%zz").is_none());
    }
}
