//! Java's `Double.toString` / `Float.toString` (JDK 19+ specification) and Spark's quoting of strings.

/// The decimal digits and exponent of Java's `Double.toString` of a finite, non-zero `|v|`: the shortest decimal
/// that rounds to `v`; when that has one digit, the closest decimal of one or two digits (JDK 19+ spec).
/// Returns (digits without trailing zeros, exponent of the first digit).
fn digits_of(shortest: String, two: impl FnOnce() -> (String, bool)) -> (String, i32) {
    let (mut digits, mut exp) = split_exp(&shortest);
    if digits.len() == 1 {
        let (t, round_trips) = two();
        if round_trips {
            let (d2, e2) = split_exp(&t);
            if d2.len() == 2 {
                digits = d2;
                exp = e2;
            }
        }
    }
    (digits, exp)
}

/// Splits Rust's `{:e}` output (`1.2345e-7`) into its digits (trailing zeros removed) and exponent.
fn split_exp(s: &str) -> (String, i32) {
    let (mant, exp) = s.split_once('e').unwrap_or((s, "0"));
    let mut digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    while digits.len() > 1 && digits.ends_with('0') {
        digits.pop();
    }
    (digits, exp.parse().unwrap_or(0))
}

pub fn java_double_digits(v: f64) -> (String, i32) {
    let a = v.abs();
    digits_of(format!("{a:e}"), || {
        let t = format!("{a:.1e}");
        let ok = t.parse::<f64>().map(|x| x == a).unwrap_or(false);
        (t, ok)
    })
}

pub fn java_float_digits(v: f32) -> (String, i32) {
    let a = v.abs();
    digits_of(format!("{a:e}"), || {
        let t = format!("{a:.1e}");
        let ok = t.parse::<f32>().map(|x| x == a).unwrap_or(false);
        (t, ok)
    })
}

/// Lays out digits the way `Double.toString` does: plain for 10^-3 ≤ |v| < 10^7, else `d.dddE[-]n`.
fn layout(neg: bool, digits: &str, exp: i32, buf: &mut String) {
    if neg {
        buf.push('-');
    }
    if (-3..7).contains(&exp) {
        if exp >= 0 {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                buf.push_str(digits);
                for _ in digits.len()..int_len {
                    buf.push('0');
                }
                buf.push_str(".0");
            } else {
                buf.push_str(&digits[..int_len]);
                buf.push('.');
                buf.push_str(&digits[int_len..]);
            }
        } else {
            buf.push_str("0.");
            for _ in 0..(-exp - 1) {
                buf.push('0');
            }
            buf.push_str(digits);
        }
    } else {
        buf.push_str(&digits[..1]);
        buf.push('.');
        if digits.len() > 1 {
            buf.push_str(&digits[1..]);
        } else {
            buf.push('0');
        }
        buf.push('E');
        buf.push_str(&exp.to_string());
    }
}

pub fn write_java_double(v: f64, buf: &mut String) {
    if v.is_nan() {
        buf.push_str("NaN");
    } else if v.is_infinite() {
        buf.push_str(if v > 0.0 { "Infinity" } else { "-Infinity" });
    } else if v == 0.0 {
        buf.push_str(if v.is_sign_negative() { "-0.0" } else { "0.0" });
    } else {
        let (d, e) = java_double_digits(v);
        layout(v < 0.0, &d, e, buf);
    }
}

pub fn write_java_float(v: f32, buf: &mut String) {
    if v.is_nan() {
        buf.push_str("NaN");
    } else if v.is_infinite() {
        buf.push_str(if v > 0.0 { "Infinity" } else { "-Infinity" });
    } else if v == 0.0 {
        buf.push_str(if v.is_sign_negative() { "-0.0" } else { "0.0" });
    } else {
        let (d, e) = java_float_digits(v);
        layout(v < 0.0, &d, e, buf);
    }
}

/// Java's `Double.toString(v)` (JDK 19+).
pub fn java_double_to_string(v: f64) -> String {
    let mut s = String::new();
    write_java_double(v, &mut s);
    s
}

/// Java's `Float.toString(v)` (JDK 19+).
pub fn java_float_to_string(v: f32) -> String {
    let mut s = String::new();
    write_java_float(v, &mut s);
    s
}

/// The inside of Spark's quoted string literal in error messages: `\` → `\\`, `'` → `\'`.
pub fn escape_sql_string(s: &str) -> String {
    s.replace('\\', "\\\\").replace('\'', "\\'")
}
