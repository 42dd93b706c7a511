//! Decimal arithmetic (i128 unscaled values), Java-compatible conversions and Spark's SQL literals.
use arrow::datatypes::DataType;

use super::text;

const POW10: [i128; 39] = {
    let mut t = [1i128; 39];
    let mut i = 1;
    while i < 39 {
        t[i] = t[i - 1] * 10;
        i += 1;
    }
    t
};

/// 10^n for n ≤ 38.
pub fn pow10(n: u32) -> i128 {
    POW10[n as usize]
}

/// Changes the scale of `v` (at scale `s`) to `s2` with HALF_UP rounding, as `Decimal.changePrecision` does;
/// `None` when the result needs more than `p2` digits.
pub fn rescale(v: i128, s: i8, p2: u8, s2: i8) -> Option<i128> {
    let r = if s2 >= s {
        v.checked_mul(*POW10.get((s2 - s) as usize)?)?
    } else {
        let d = POW10[(s - s2) as usize];
        let q = v / d;
        let rem = (v % d).abs();
        // HALF_UP: away from zero when the dropped part is at least one half.
        if rem >= d - rem {
            q + v.signum()
        } else {
            q
        }
    };
    if r.abs() >= POW10[p2 as usize] {
        None
    } else {
        Some(r)
    }
}

/// Java's `BigDecimal.toString` of `unscaled × 10^-scale` (scientific notation for small values).
pub fn java_big_decimal_string(neg: bool, coeff: &str, scale: i64) -> String {
    let mut out = String::with_capacity(coeff.len() + 8);
    if neg {
        out.push('-');
    }
    if scale == 0 {
        out.push_str(coeff);
        return out;
    }
    let adjusted = -scale + (coeff.len() as i64 - 1);
    if scale > 0 && adjusted >= -6 {
        push_plain(&mut out, coeff, scale as usize);
    } else {
        out.push_str(&coeff[..1]);
        if coeff.len() > 1 {
            out.push('.');
            out.push_str(&coeff[1..]);
        }
        if adjusted != 0 {
            out.push('E');
            if adjusted > 0 {
                out.push('+');
            }
            out.push_str(&adjusted.to_string());
        }
    }
    out
}

fn push_plain(out: &mut String, coeff: &str, scale: usize) {
    if coeff.len() > scale {
        out.push_str(&coeff[..coeff.len() - scale]);
        out.push('.');
        out.push_str(&coeff[coeff.len() - scale..]);
    } else {
        out.push_str("0.");
        for _ in 0..scale - coeff.len() {
            out.push('0');
        }
        out.push_str(coeff);
    }
}

/// `BigDecimal.toString` of a decimal value at scale `s` (what Spark's `Decimal.toString` prints).
pub fn decimal_to_java_string(v: i128, s: i8) -> String {
    java_big_decimal_string(v < 0, &v.unsigned_abs().to_string(), s as i64)
}

/// `BigDecimal.toPlainString` of a decimal value at scale `s`.
pub fn decimal_to_plain_string(v: i128, s: i8) -> String {
    let coeff = v.unsigned_abs().to_string();
    let mut out = String::with_capacity(coeff.len() + 4);
    if v < 0 {
        out.push('-');
    }
    if s == 0 {
        out.push_str(&coeff);
    } else {
        push_plain(&mut out, &coeff, s as usize);
    }
    out
}

/// `BigDecimal.doubleValue`: the correctly rounded double.
pub fn decimal_to_f64(v: i128, s: i8) -> f64 {
    if v.unsigned_abs() < (1u128 << 52) && s <= 22 {
        // Both operands exact: one IEEE division is correctly rounded (Java's own fast path).
        return (v as f64) / (POW10[s as usize] as f64);
    }
    format!("{v}e-{s}").parse::<f64>().unwrap_or(f64::NAN)
}

/// `BigDecimal.floatValue`: the correctly rounded float.
pub fn decimal_to_f32(v: i128, s: i8) -> f32 {
    if v.unsigned_abs() < (1u128 << 22) && s <= 10 {
        return (v as f32) / (POW10[s as usize] as f32);
    }
    format!("{v}e-{s}").parse::<f32>().unwrap_or(f32::NAN)
}

/// Spark's SQL literal of an integral value in error messages (`128Y`, `128S`, `128`, `128L`).
pub fn integral_literal(v: i64, from: &DataType) -> String {
    match from {
        DataType::Int8 => format!("{v}Y"),
        DataType::Int16 => format!("{v}S"),
        DataType::Int64 => format!("{v}L"),
        _ => v.to_string(),
    }
}

/// Spark's rendering of a float/double in CAST_OVERFLOW: `NaN`, `Infinity`, `1.0E10` (FLOAT), `1.0E10D` (DOUBLE).
pub fn float_literal(v: f64, is_f32: bool) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else if is_f32 {
        text::java_float_to_string(v as f32)
    } else {
        format!("{}D", text::java_double_to_string(v))
    }
}

/// Spark's DECIMAL → TIMESTAMP: `(d.toBigDecimal * MICROS_PER_SECOND).longValue` in Scala, whose product is
/// rounded to 34 significant digits (DECIMAL128, HALF_EVEN) before truncation and the narrowing to 64 bits.
pub fn decimal_seconds_to_micros(v: i128, s: i8) -> i64 {
    let digits = if v == 0 { 1 } else { v.unsigned_abs().ilog10() + 1 };
    // The product's unscaled value is v × 10^6 (scale s); beyond 34 digits, v loses its last `m` digits.
    let (v, shift) = if digits > 34 {
        let m = digits - 34;
        let d = POW10[m as usize];
        let (q, r) = (v / d, (v % d).abs());
        let up = r > d - r || (r == d - r && q % 2 != 0);
        (if up { q + v.signum() } else { q }, 6 + m as i64)
    } else {
        (v, 6)
    };
    // value = v × 10^shift / 10^s, truncated toward zero, modulo 2^64.
    let e = shift - s as i64;
    if e >= 0 {
        v.wrapping_mul(POW10[e as usize]) as i64
    } else {
        (v / POW10[(-e) as usize]) as i64
    }
}
