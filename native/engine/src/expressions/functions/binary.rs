//! Spark's `md5` and `unbase64`: Ember's own kernels.
//!
//! Why not DataFusion's: `md5` lives in `datafusion-functions`' crypto feature, which Ember does not build (its
//! other digests come from `datafusion-spark`, see `planner/functions.rs`), so the digest is RustCrypto's `md-5`
//! and only Spark's lower-case hex rendering is Ember's; the golden table proves the pair. `datafusion-spark`'s `unbase64` decodes strictly; Spark decodes with
//! `java.util.Base64.getMimeDecoder()`, which skips characters outside the alphabet and has its own rules for
//! padding, reproduced in [`mime_decode`].
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BinaryBuilder, StringBuilder};
use arrow::datatypes::DataType;
use datafusion_common::{exec_err, internal_err, Result};

use super::Kernel;

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
    fn md5_of_rfc_1321_examples() {
        let hex = |d: [u8; 16]| d.iter().map(|b| format!("{b:02x}")).collect::<String>();
        assert_eq!(hex(md5(b"")), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(hex(md5(b"abc")), "900150983cd24fb0d6963f7d28e17f72");
    }
}
