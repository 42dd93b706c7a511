//! Spark's `md5`, `base64`, `unbase64` and `luhn_check`: Ember's own kernels.
//!
//! Why not DataFusion's: `md5` lives in `datafusion-functions`' crypto feature, which Ember does not build (its
//! other digests come from `datafusion-spark`, see `planner/functions.rs`), so the digest is RustCrypto's `md-5`
//! and only Spark's lower-case hex rendering is Ember's; the golden table proves the pair. `datafusion-spark`'s `unbase64` decodes strictly; Spark decodes with
//! `java.util.Base64.getMimeDecoder()`, which skips characters outside the alphabet and has its own rules for
//! padding, reproduced in [`mime_decode`]. `base64` encodes with Java's MIME encoder when
//! `spark.sql.chunkBase64String.enabled` (lines of 76 characters joined by CRLF), which `datafusion-spark` does
//! not do. `luhn_check` reads digits as `Character.isDigit` does (every Unicode decimal digit of the BMP), which a
//! Rust ASCII check would not.
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BinaryBuilder, StringBuilder};
use arrow::datatypes::DataType;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use datafusion_common::{exec_err, internal_err, Result};

use super::Kernel;
use crate::expressions::cast::java_digit;

/// `md5(bin)`: the RFC 1321 digest as 32 lower-case hex digits (`DigestUtils.md5Hex`).
#[derive(Debug)]
pub struct Md5;

/// The RFC 1321 digest (RustCrypto's `md-5`, the family of the `sha1`/`sha2` crates `datafusion-spark` uses).
pub fn md5(data: &[u8]) -> [u8; 16] {
    use md5::Digest;
    md5::Md5::digest(data).into()
}

impl Kernel for Md5 {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let DataType::Binary = args[0].data_type() else {
            return internal_err!("md5 of {}", args[0].data_type());
        };
        let a = args[0].as_binary::<i32>();
        let mut out = StringBuilder::with_capacity(a.len(), a.len() * 32);
        let mut hex = String::with_capacity(32);
        for v in a.iter() {
            match v {
                Some(v) => {
                    hex.clear();
                    for b in md5(v) {
                        hex.push(char::from_digit((b >> 4) as u32, 16).unwrap());
                        hex.push(char::from_digit((b & 15) as u32, 16).unwrap());
                    }
                    out.append_value(&hex);
                }
                None => out.append_null(),
            }
        }
        Ok(Arc::new(out.finish()))
    }
}

/// A base64 character's value, -2 for the padding `=`, -1 for anything else (every byte of a multi-byte UTF-8
/// character: Java encodes the string in ISO-8859-1 first, where those become `?` or bytes above 0x7F, none of
/// them in the alphabet).
fn base64_value(c: u8) -> i32 {
    match c {
        b'A'..=b'Z' => (c - b'A') as i32,
        b'a'..=b'z' => (c - b'a') as i32 + 26,
        b'0'..=b'9' => (c - b'0') as i32 + 52,
        b'+' => 62,
        b'/' => 63,
        b'=' => -2,
        _ => -1,
    }
}

/// `Base64.getMimeDecoder().decode(s)` (JDK 17's `Decoder.decode0` with `isMIME`): characters outside the alphabet
/// are skipped; decoding stops at the first `=`, which must complete a unit (`xx==`, `xxx=`); a dangling single
/// character, or an alphabet character after the padding, is Java's `IllegalArgumentException` (`None` here).
pub fn mime_decode(s: &[u8], out: &mut Vec<u8>) -> Option<()> {
    let (mut bits, mut shift, mut sp) = (0u32, 18i32, 0usize);
    while sp < s.len() {
        let v = base64_value(s[sp]);
        sp += 1;
        if v == -2 {
            // `=` as the 1st or 2nd character of a unit, or `xx=` not followed by a second `=`.
            if shift == 18 || shift == 6 && (sp == s.len() || s[sp] != b'=') {
                return None;
            }
            if shift == 6 {
                sp += 1;
            }
            break;
        }
        if v < 0 {
            continue;
        }
        bits |= (v as u32) << shift;
        shift -= 6;
        if shift < 0 {
            out.extend_from_slice(&[(bits >> 16) as u8, (bits >> 8) as u8, bits as u8]);
            shift = 18;
            bits = 0;
        }
    }
    match shift {
        6 => out.push((bits >> 16) as u8),
        0 => out.extend_from_slice(&[(bits >> 16) as u8, (bits >> 8) as u8]),
        12 => return None,
        _ => {}
    }
    // After the padding only characters outside the alphabet (more `=` among them) may follow.
    if s[sp..].iter().any(|&c| base64_value(c) >= 0) {
        return None;
    }
    Some(())
}

/// `unbase64(str)` (not `to_binary`'s failing form, which the JVM side does not send).
#[derive(Debug)]
pub struct UnBase64;

impl Kernel for UnBase64 {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let DataType::Utf8 = args[0].data_type() else {
            return internal_err!("unbase64 of {}", args[0].data_type());
        };
        let a = args[0].as_string::<i32>();
        let mut out = BinaryBuilder::with_capacity(a.len(), a.value_data().len() * 3 / 4);
        let mut buf = Vec::new();
        for v in a.iter() {
            match v {
                Some(v) => {
                    buf.clear();
                    if mime_decode(v.as_bytes(), &mut buf).is_none() {
                        // Spark fails with java.lang.IllegalArgumentException, which has no error class.
                        return exec_err!(
                            "unbase64: the input is not valid base64 (java.lang.IllegalArgumentException)"
                        );
                    }
                    out.append_value(&buf);
                }
                None => out.append_null(),
            }
        }
        Ok(Arc::new(out.finish()))
    }
}

/// `java.util.Base64`'s encoding with `=` padding (the `base64` crate's standard engine): `chunked` is
/// `getMimeEncoder()` (a CRLF after every 76 characters, i.e. every 57 bytes, none at the end), otherwise
/// `getMimeEncoder(-1, [])`, which is the plain RFC 4648 encoder.
pub fn base64_encode(data: &[u8], chunked: bool, out: &mut String) {
    if !chunked {
        return STANDARD.encode_string(data, out);
    }
    for (i, line) in data.chunks(57).enumerate() {
        if i > 0 {
            out.push_str("\r\n");
        }
        STANDARD.encode_string(line, out);
    }
}

/// `base64(bin)`: Spark's `Base64.encode(bytes, chunkBase64)` (the `StaticInvoke` Spark rewrites `base64` to);
/// the second argument is that literal flag.
#[derive(Debug)]
pub struct Base64;

impl Kernel for Base64 {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let (DataType::Binary, DataType::Boolean) = (args[0].data_type(), args[1].data_type()) else {
            return internal_err!("base64 of {}, {}", args[0].data_type(), args[1].data_type());
        };
        let (a, chunked) = (args[0].as_binary::<i32>(), args[1].as_boolean());
        let mut out = StringBuilder::with_capacity(a.len(), a.value_data().len() * 4 / 3 + a.len() * 4);
        let mut text = String::new();
        for i in 0..a.len() {
            // Spark's StaticInvoke is null-propagating: NULL for a NULL binary (the flag is a non-null literal).
            if a.is_null(i) || chunked.is_null(i) {
                out.append_null();
                continue;
            }
            text.clear();
            base64_encode(a.value(i), chunked.value(i), &mut text);
            out.append_value(&text);
        }
        Ok(Arc::new(out.finish()))
    }
}

/// `ExpressionImplUtils.isLuhnNumber`: false for an empty string or any non-digit, else the Luhn checksum test
/// over the digits from the right.
pub fn is_luhn_number(s: &str) -> bool {
    if s.is_empty() {
        return false;
    }
    let mut sum = 0u32;
    for (i, c) in s.chars().rev().enumerate() {
        let Some(d) = java_digit(c).map(u32::from) else { return false };
        let d = if i % 2 == 1 { d * 2 } else { d };
        sum += d % 10 + d / 10;
    }
    sum.is_multiple_of(10)
}

/// `luhn_check(str)`: Spark rewrites it to a `StaticInvoke` of `ExpressionImplUtils.isLuhnNumber`.
#[derive(Debug)]
pub struct LuhnCheck;

impl Kernel for LuhnCheck {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let DataType::Utf8 = args[0].data_type() else {
            return internal_err!("luhn_check of {}", args[0].data_type());
        };
        let out: arrow::array::BooleanArray =
            args[0].as_string::<i32>().iter().map(|v| v.map(is_luhn_number)).collect();
        Ok(Arc::new(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(s: &str) -> Option<Vec<u8>> {
        let mut out = vec![];
        mime_decode(s.as_bytes(), &mut out).map(|_| out)
    }

    #[test]
    fn mime_decoding_skips_and_pads_as_java() {
        assert_eq!(decode("QUJDRA==").unwrap(), b"ABCD");
        assert_eq!(decode("QU JD\nRA").unwrap(), b"ABCD");
        assert_eq!(decode("QUJDRA===!").unwrap(), b"ABCD");
        assert!(decode("Q").is_none());
        assert!(decode("QUJDRA=").is_none());
        assert!(decode("QUJDRA==QQ").is_none());
    }

    #[test]
    fn base64_chunks_as_javas_mime_encoder() {
        let enc = |d: &[u8], chunked| {
            let mut s = String::new();
            base64_encode(d, chunked, &mut s);
            s
        };
        assert_eq!(enc(b"Spark SQL", true), "U3BhcmsgU1FM");
        assert_eq!(enc(b"ab", false), "YWI=");
        assert_eq!(enc(&[0u8; 57], true).len(), 76);
        let long = enc(&[0xffu8; 58], true);
        assert_eq!(&long[76..78], "\r\n");
        assert_eq!(long.len(), 76 + 2 + 4);
        assert!(!enc(&[0xffu8; 58], false).contains('\r'));
    }

    #[test]
    fn luhn_reads_unicode_digits() {
        assert!(is_luhn_number("79927398713"));
        assert!(!is_luhn_number("79927398710"));
        assert!(is_luhn_number(
            "\u{0667}\u{0669}\u{0669}\u{0662}\u{0667}\u{0663}\u{0669}\u{0668}\u{0667}\u{0661}\u{0663}"
        ));
        assert!(!is_luhn_number(""));
        assert!(!is_luhn_number("1 2"));
    }

    #[test]
    fn md5_of_rfc_1321_examples() {
        let hex = |d: [u8; 16]| d.iter().map(|b| format!("{b:02x}")).collect::<String>();
        assert_eq!(hex(md5(b"")), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(hex(md5(b"abc")), "900150983cd24fb0d6963f7d28e17f72");
    }
}
