//! Spark's string parsers: `UTF8String.toLong`, `StringUtils.isTrueString/isFalseString`, Java's
//! `Double.parseDouble`/`Float.parseFloat` (with Spark's special literals) and `new java.math.BigDecimal(s)`.
use super::num::{java_big_decimal_string, pow10};
use super::text;

/// Zeros of the BMP's Unicode decimal digit runs (`Character.isDigit`, JDK 17 / Unicode 13: 370 digits).
const DIGIT_ZEROS: [u32; 37] = [
    0x0030, 0x0660, 0x06F0, 0x07C0, 0x0966, 0x09E6, 0x0A66, 0x0AE6, 0x0B66, 0x0BE6, 0x0C66, 0x0CE6, 0x0D66, 0x0DE6,
    0x0E50, 0x0ED0, 0x0F20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90, 0x1B50, 0x1BB0, 0x1C40,
    0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0, 0xFF10,
];

/// `Character.digit(c, 10)` where `Character.isDigit(c)` (UTF-16 chars only: supplementary digits are not).
pub(crate) fn java_digit(c: char) -> Option<u8> {
    let u = c as u32;
    if c.is_ascii_digit() {
        return Some((u - 0x30) as u8);
    }
    if !(0x0660..=0xFFFF).contains(&u) {
        return None;
    }
    DIGIT_ZEROS.iter().find(|&&z| u >= z && u < z + 10).map(|z| (u - z) as u8)
}

/// `Character.isWhitespace(b) || Character.isISOControl(b)` for a (signed) byte: 0..=32 and 127.
#[inline]
fn is_ws_or_ctrl(b: u8) -> bool {
    b <= 32 || b == 127
}

/// `UTF8String.trimAll`: strips whitespace and ISO control bytes from both ends.
pub fn trim_all(s: &[u8]) -> &[u8] {
    let mut start = 0;
    let mut end = s.len();
    while start < end && is_ws_or_ctrl(s[start]) {
        start += 1;
    }
    while end > start && is_ws_or_ctrl(s[end - 1]) {
        end -= 1;
    }
    &s[start..end]
}

/// Java's `String.trim`: strips chars ≤ U+0020 from both ends.
pub fn java_trim(s: &str) -> &str {
    s.trim_matches(|c: char| c <= ' ')
}

/// `UTF8String.toLong(result, allowDecimal)`: optional sign, ASCII digits, and (when `allow_decimal`) a `.`
/// followed by digits that are ignored (truncation). `None` when invalid or out of range.
pub fn parse_long(s: &[u8], allow_decimal: bool) -> Option<i64> {
    let s = trim_all(s);
    if s.is_empty() {
        return None;
    }
    let mut i = 0;
    let negative = s[0] == b'-';
    if negative || s[0] == b'+' {
        if s.len() == 1 {
            return None;
        }
        i = 1;
    }
    // Accumulate negatively, as Spark does, so that MIN_VALUE parses.
    let mut result: i64 = 0;
    while i < s.len() {
        let b = s[i];
        i += 1;
        if b == b'.' && allow_decimal {
            break;
        }
        if !b.is_ascii_digit() {
            return None;
        }
        result = result.checked_mul(10)?.checked_sub((b - b'0') as i64)?;
    }
    if !s[i..].iter().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if negative {
        Some(result)
    } else {
        result.checked_neg()
    }
}

/// `StringUtils.isTrueString` / `isFalseString` of the trimmed, lower-cased string.
pub fn parse_bool(s: &[u8]) -> Option<bool> {
    let t = trim_all(s);
    const TRUE: [&[u8]; 5] = [b"t", b"true", b"y", b"yes", b"1"];
    const FALSE: [&[u8]; 5] = [b"f", b"false", b"n", b"no", b"0"];
    if TRUE.iter().any(|w| w.eq_ignore_ascii_case(t)) {
        Some(true)
    } else if FALSE.iter().any(|w| w.eq_ignore_ascii_case(t)) {
        Some(false)
    } else {
        None
    }
}

enum JavaFloat<'a> {
    /// A decimal literal (sign, digits, point, exponent; suffix removed) that Rust's parser reads identically.
    Decimal(&'a str),
    Hex {
        neg: bool,
        mantissa: u128,
        sticky: bool,
        exp2: i64,
    },
    NaN,
    Infinity(bool),
}

/// Java's `FloatingDecimal.readJavaFormatString` grammar (after `String.trim`).
fn read_java_format(t: &str) -> Option<JavaFloat<'_>> {
    let b = t.as_bytes();
    let mut i = 0;
    let mut neg = false;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        neg = b[i] == b'-';
        i += 1;
    }
    let rest = &t[i..];
    if rest == "NaN" {
        return Some(JavaFloat::NaN);
    }
    if rest == "Infinity" {
        return Some(JavaFloat::Infinity(neg));
    }
    if rest.len() >= 2 && (rest.starts_with("0x") || rest.starts_with("0X")) {
        return read_hex(&rest.as_bytes()[2..], neg);
    }
    let start = i;
    let mut digits = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
        digits += 1;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return None;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        let exp_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == exp_start {
            return None;
        }
    }
    let end = i;
    if i < b.len() && matches!(b[i], b'f' | b'F' | b'd' | b'D') {
        i += 1;
    }
    if i != b.len() {
        return None;
    }
    let _ = start;
    Some(JavaFloat::Decimal(&t[..end]))
}

/// `0x` already consumed: hex digits with an optional point, then a mandatory binary exponent `p`.
fn read_hex(b: &[u8], neg: bool) -> Option<JavaFloat<'static>> {
    let mut i = 0;
    let mut mantissa: u128 = 0;
    let mut sticky = false;
    let mut exp2: i64 = 0;
    let mut ndigits = 0;
    let mut seen_point = false;
    while i < b.len() {
        let c = b[i];
        if c == b'.' && !seen_point {
            seen_point = true;
            i += 1;
            continue;
        }
        let Some(d) = (c as char).to_digit(16) else { break };
        ndigits += 1;
        if mantissa >> 120 == 0 {
            mantissa = (mantissa << 4) | d as u128;
            if seen_point {
                exp2 -= 4;
            }
        } else {
            sticky |= d != 0;
            if !seen_point {
                exp2 += 4;
            }
        }
        i += 1;
    }
    if ndigits == 0 || i >= b.len() || !(b[i] == b'p' || b[i] == b'P') {
        return None;
    }
    i += 1;
    let mut eneg = false;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        eneg = b[i] == b'-';
        i += 1;
    }
    let exp_start = i;
    let mut e: i64 = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        e = (e * 10 + (b[i] - b'0') as i64).min(1 << 40);
        i += 1;
    }
    if i == exp_start {
        return None;
    }
    if i < b.len() && matches!(b[i], b'f' | b'F' | b'd' | b'D') {
        i += 1;
    }
    if i != b.len() {
        return None;
    }
    exp2 += if eneg { -e } else { e };
    Some(JavaFloat::Hex { neg, mantissa, sticky, exp2 })
}

/// `mantissa × 2^exp2` (plus a sticky fraction below the mantissa) correctly rounded to a binary float with
/// `precision` significand bits, smallest subnormal exponent `min_exp` and largest finite exponent `max_exp`;
/// returned as an f64 that holds the result exactly.
fn round_binary(mantissa: u128, sticky: bool, exp2: i64, precision: i64, min_exp: i64, max_exp: i64) -> f64 {
    if mantissa == 0 {
        return 0.0;
    }
    let nbits = 128 - mantissa.leading_zeros() as i64;
    let top = exp2 + nbits - 1;
    if top > max_exp + 1 {
        return f64::INFINITY;
    }
    let lowest = (top - (precision - 1)).max(min_exp);
    let shift = lowest - exp2;
    let kept: u128 = if shift <= 0 {
        mantissa << (-shift) as u32
    } else if shift > nbits {
        0 // below half of the smallest subnormal
    } else {
        let q = if shift >= 128 { 0 } else { mantissa >> shift as u32 };
        let half = (mantissa >> (shift - 1) as u32) & 1 == 1;
        let below = shift > 1 && mantissa & ((1u128 << (shift - 1) as u32) - 1) != 0;
        if half && (below || sticky || q & 1 == 1) {
            q + 1
        } else {
            q
        }
    };
    if kept == 0 {
        return 0.0;
    }
    let kbits = 128 - kept.leading_zeros() as i64;
    if lowest + kbits - 1 > max_exp {
        return f64::INFINITY;
    }
    let x = kept as f64; // ≤ 2^precision: exact
    scale2(x, lowest)
}

/// `x × 2^e` for a result known to be representable.
fn scale2(mut x: f64, mut e: i64) -> f64 {
    let pow = |k: i64| f64::from_bits(((k + 1023) as u64) << 52);
    while e > 1000 {
        x *= pow(1000);
        e -= 1000;
    }
    while e < -1000 {
        x *= pow(-1000);
        e += 1000;
    }
    x * pow(e)
}

/// Spark's `Cast.processFloatingPointSpecialLiterals` (after Java's parser refused the string).
fn special_literal(t: &str) -> Option<f64> {
    let l = t.as_bytes();
    let is = |w: &str| w.as_bytes().eq_ignore_ascii_case(l);
    if is("inf") || is("+inf") || is("infinity") || is("+infinity") {
        Some(f64::INFINITY)
    } else if is("-inf") || is("-infinity") {
        Some(f64::NEG_INFINITY)
    } else if is("nan") {
        Some(f64::NAN)
    } else {
        None
    }
}

/// CAST(string AS DOUBLE): `Double.parseDouble`, else Spark's special literals.
pub fn parse_java_double(s: &str) -> Option<f64> {
    let t = java_trim(s);
    match read_java_format(t) {
        Some(JavaFloat::Decimal(d)) => d.parse::<f64>().ok(),
        Some(JavaFloat::Hex { neg, mantissa, sticky, exp2 }) => {
            let v = round_binary(mantissa, sticky, exp2, 53, -1074, 1023);
            Some(if neg { -v } else { v })
        }
        Some(JavaFloat::NaN) => Some(f64::NAN),
        Some(JavaFloat::Infinity(neg)) => Some(if neg { f64::NEG_INFINITY } else { f64::INFINITY }),
        None => special_literal(t),
    }
}

/// CAST(string AS FLOAT): `Float.parseFloat`, else Spark's special literals.
pub fn parse_java_float(s: &str) -> Option<f32> {
    let t = java_trim(s);
    match read_java_format(t) {
        Some(JavaFloat::Decimal(d)) => d.parse::<f32>().ok(),
        Some(JavaFloat::Hex { neg, mantissa, sticky, exp2 }) => {
            let v = round_binary(mantissa, sticky, exp2, 24, -149, 127) as f32;
            Some(if neg { -v } else { v })
        }
        Some(JavaFloat::NaN) => Some(f32::NAN),
        Some(JavaFloat::Infinity(neg)) => Some(if neg { f32::NEG_INFINITY } else { f32::INFINITY }),
        None => special_literal(t).map(|v| v as f32),
    }
}

/// A `java.math.BigDecimal`: sign, unscaled digits (no leading zeros; empty for zero) and scale.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BigDec {
    neg: bool,
    digits: Vec<u8>,
    scale: i64,
}

impl BigDec {
    /// `new java.math.BigDecimal(s)`; `None` where Java throws NumberFormatException. Like Java, accepts any
    /// Unicode decimal digit of the BMP (`Character.isDigit`) in the significand and the exponent.
    pub fn parse(s: &str) -> Option<BigDec> {
        let chars: Vec<char> = s.chars().collect();
        let b = &chars[..];
        let mut i = 0;
        let mut neg = false;
        if i < b.len() && (b[i] == '+' || b[i] == '-') {
            neg = b[i] == '-';
            i += 1;
        }
        let mut digits = Vec::with_capacity(b.len());
        let mut frac: i64 = 0;
        let mut any = false;
        let mut point = false;
        while i < b.len() {
            let c = b[i];
            if let Some(d) = java_digit(c) {
                any = true;
                if !(digits.is_empty() && d == 0) {
                    digits.push(d);
                }
                if point {
                    frac += 1;
                }
            } else if c == '.' && !point {
                point = true;
            } else {
                break;
            }
            i += 1;
        }
        if !any {
            return None;
        }
        let mut exp: i64 = 0;
        if i < b.len() && (b[i] == 'e' || b[i] == 'E') {
            i += 1;
            let mut eneg = false;
            if i < b.len() && (b[i] == '+' || b[i] == '-') {
                eneg = b[i] == '-';
                i += 1;
            }
            let start = i;
            while i < b.len() {
                let Some(d) = java_digit(b[i]) else { break };
                exp = exp * 10 + d as i64;
                if exp > i32::MAX as i64 + 1 {
                    return None;
                }
                i += 1;
            }
            if i == start {
                return None;
            }
            if eneg {
                exp = -exp;
            }
            if exp > i32::MAX as i64 || exp < i32::MIN as i64 {
                return None;
            }
        }
        if i != b.len() {
            return None;
        }
        let scale = frac - exp;
        if scale > i32::MAX as i64 || scale < i32::MIN as i64 {
            return None;
        }
        Some(BigDec { neg, digits, scale })
    }

    /// Whether Spark's `Decimal(bigDecimal).changePrecision(_, scale)` makes Java build a power of ten beyond
    /// `BigInteger`'s range ("BigInteger would overflow supported range", a plain ArithmeticException):
    /// `precision - scale` wraps around as an Int for a non-zero value (then `setScale(0)` multiplies by
    /// 10^-scale), or rounding drops at least 536870920 digits (`BigInteger.TEN.pow(n)` refuses `4n/32 > 2^26`).
    pub fn java_big_integer_overflow(&self, target_scale: i8) -> bool {
        (self.integral_digits() > i32::MAX as i64 && !self.digits.is_empty())
            || self.scale - target_scale as i64 >= 536_870_920
    }

    /// `new BigDecimal(Double.toString(v))` for a finite double (Spark's `Decimal(double)`).
    pub fn from_java_double(v: f64) -> BigDec {
        let s = text::java_double_to_string(v);
        BigDec::parse(&s).unwrap_or(BigDec { neg: false, digits: vec![], scale: 0 })
    }

    /// `precision - scale` (digits left of the point; BigDecimal's precision of zero is 1).
    pub fn integral_digits(&self) -> i64 {
        self.digits.len().max(1) as i64 - self.scale
    }

    /// Spark's `Decimal.toString` of this value (negative scales normalized to 0, as `Decimal.set` does).
    pub fn to_java_string(&self) -> String {
        let mut coeff: String = self.digits.iter().map(|d| (b'0' + d) as char).collect();
        if coeff.is_empty() {
            coeff.push('0');
        }
        let mut scale = self.scale;
        if scale < 0 {
            if coeff != "0" {
                for _ in 0..(-scale) {
                    coeff.push('0');
                }
            }
            scale = 0;
        }
        java_big_decimal_string(self.neg && coeff != "0", &coeff, scale)
    }

    /// The unscaled value at scale `s` (HALF_UP), or `None` if it needs more than `p` digits.
    pub fn round_to(&self, p: u8, s: i8) -> Option<i128> {
        if self.digits.is_empty() {
            return Some(0);
        }
        let n = self.digits.len() as i64;
        let shift = s as i64 - self.scale; // digits to append (≥ 0) or drop (< 0)
        let (kept, round_up) = if shift >= 0 {
            if n + shift > p as i64 {
                return None;
            }
            (&self.digits[..], false)
        } else {
            let drop = -shift;
            if drop > n {
                return Some(0);
            }
            let keep = (n - drop) as usize;
            (&self.digits[..keep], self.digits[keep] >= 5)
        };
        let extra = if shift > 0 { shift as u32 } else { 0 };
        if kept.len() as i64 + extra as i64 > p as i64 {
            return None;
        }
        let mut v: i128 = 0;
        for &d in kept {
            v = v * 10 + d as i128;
        }
        v *= pow10(extra);
        if round_up {
            v += 1;
        }
        if v >= pow10(p as u32) {
            return None;
        }
        Some(if self.neg { -v } else { v })
    }
}
