//! Frame-by-frame evaluation in Spark's own order: the baseline when prefix evaluation is off, and the only
//! evaluation for floating-point measures (and for integral averages whose double fold is not provably exact).
//!
//! Spark folds every frame from its first row. A row whose frame has the same start as the previous row's and
//! an end at or after it continues that fold instead of restarting it: the sequence of additions is the same,
//! so the bits are, but running frames (UNBOUNDED PRECEDING) cost O(1) per row as in Spark.
use std::ops::Range;

use arrow::array::{Array, Float64Array, Int64Array};

fn valid(a: &dyn Array, i: usize) -> bool {
    a.nulls().is_none_or(|b| b.is_valid(i))
}

/// LEGACY integral SUM with one add-and-retract accumulator per frame (DataFusion's sliding accumulators):
/// wrapping adds and subtracts, exact modulo 2^64.
pub fn sum_add_retract(values: &Int64Array, starts: &[usize], ends: &[usize]) -> Int64Array {
    let raw = values.values();
    let (mut cs, mut ce, mut sum, mut cnt) = (0usize, 0usize, 0i64, 0u64);
    let mut out = Vec::with_capacity(starts.len());
    let mut ok = Vec::with_capacity(starts.len());
    for (&s, &e) in starts.iter().zip(ends) {
        if s >= ce || s < cs {
            (cs, ce, sum, cnt) = (s, s, 0, 0);
        }
        while ce < e {
            if valid(values, ce) {
                sum = sum.wrapping_add(raw[ce]);
                cnt += 1;
            }
            ce += 1;
        }
        while cs < s {
            if valid(values, cs) {
                sum = sum.wrapping_sub(raw[cs]);
                cnt -= 1;
            }
            cs += 1;
        }
        out.push(sum);
        ok.push(cnt > 0);
    }
    Int64Array::new(out.into(), Some(ok.into()))
}

/// COUNT(x) with one add-and-retract counter per frame.
pub fn count_add_retract(values: &dyn Array, starts: &[usize], ends: &[usize]) -> Int64Array {
    let (mut cs, mut ce, mut cnt) = (0usize, 0usize, 0i64);
    let mut out = Vec::with_capacity(starts.len());
    for (&s, &e) in starts.iter().zip(ends) {
        if s >= ce || s < cs {
            (cs, ce, cnt) = (s, s, 0);
        }
        while ce < e {
            cnt += valid(values, ce) as i64;
            ce += 1;
        }
        while cs < s {
            cnt -= valid(values, cs) as i64;
            cs += 1;
        }
        out.push(cnt);
    }
    Int64Array::from(out)
}

/// Integral SUM folded frame by frame from its first row, as Spark does; under ANSI with `Math.addExact`, and
/// then also the first row whose fold overflows (the values from that row on are meaningless).
pub fn sum_refold(values: &Int64Array, starts: &[usize], ends: &[usize], ansi: bool) -> (Int64Array, Option<usize>) {
    let raw = values.values();
    let n = starts.len();
    let (mut fs, mut fe, mut acc, mut any) = (usize::MAX, 0usize, 0i64, false);
    let mut out = Vec::with_capacity(n);
    let mut ok = Vec::with_capacity(n);
    for (i, (&s, &e)) in starts.iter().zip(ends).enumerate() {
        if s != fs || e < fe {
            (fs, fe, acc, any) = (s, s, 0, false);
        }
        while fe < e {
            if valid(values, fe) {
                acc = if ansi {
                    match acc.checked_add(raw[fe]) {
                        Some(a) => a,
                        None => {
                            out.resize(n, 0);
                            ok.resize(n, false);
                            return (Int64Array::new(out.into(), Some(ok.into())), Some(i));
                        }
                    }
                } else {
                    acc.wrapping_add(raw[fe])
                };
                any = true;
            }
            fe += 1;
        }
        out.push(acc);
        ok.push(any);
    }
    (Int64Array::new(out.into(), Some(ok.into())), None)
}

/// Floating-point SUM (double result): `0.0 + v₁ + v₂ …` over the frame's non-null values, NULL without any.
pub fn sum_double(values: &Float64Array, starts: &[usize], ends: &[usize]) -> Float64Array {
    let raw = values.values();
    let (mut fs, mut fe, mut acc, mut any) = (usize::MAX, 0usize, 0f64, false);
    let mut out = Vec::with_capacity(starts.len());
    let mut ok = Vec::with_capacity(starts.len());
    for (&s, &e) in starts.iter().zip(ends) {
        if s != fs || e < fe {
            (fs, fe, acc, any) = (s, s, 0.0, false);
        }
        while fe < e {
            if valid(values, fe) {
                acc += raw[fe];
                any = true;
            }
            fe += 1;
        }
        out.push(acc);
        ok.push(any);
    }
    Float64Array::new(out.into(), Some(ok.into()))
}

/// AVG as Spark's `Average`: a double sum `0.0 + (double) v …` (NULL adds 0.0) and a count of non-null values;
/// NULL when the count is 0. Evaluates the rows in `rows` only, writing into `out` / `ok`.
pub fn avg_double(
    values: &Float64Array,
    rows: Range<usize>,
    starts: &[usize],
    ends: &[usize],
    out: &mut [f64],
    ok: &mut [bool],
) {
    let raw = values.values();
    let (mut fs, mut fe, mut acc, mut cnt) = (usize::MAX, 0usize, 0f64, 0u64);
    for i in rows {
        let (s, e) = (starts[i], ends[i]);
        if s != fs || e < fe {
            (fs, fe, acc, cnt) = (s, s, 0.0, 0);
        }
        while fe < e {
            if valid(values, fe) {
                acc += raw[fe];
                cnt += 1;
            }
            fe += 1;
        }
        ok[i] = cnt > 0;
        out[i] = if cnt > 0 { acc / cnt as f64 } else { 0.0 };
    }
}
