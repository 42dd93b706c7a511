//! Ranking functions (`row_number`, `rank`, `dense_rank`: Spark's INT results) and the offset functions
//! `lag` / `lead` (the row `offset` rows back / ahead in the partition, else the default evaluated on the
//! current row; a NULL at the offset row stays NULL).
use std::sync::Arc;

use arrow::array::{ArrayRef, Int32Array, UInt32Array};
use arrow::compute::{concat, take};
use datafusion_common::Result;

use super::frames::Layout;

pub fn row_number(layout: &Layout) -> ArrayRef {
    let mut out = Vec::with_capacity(layout.len);
    for p in &layout.partitions {
        out.extend(1..=p.len() as i32);
    }
    Arc::new(Int32Array::from(out))
}

/// `rank` (peers share the position of their first row) or `dense_rank` (peers share a counter of groups).
pub fn rank(layout: &Layout, dense: bool) -> ArrayRef {
    let mut out = vec![0i32; layout.len];
    for p in &layout.partitions {
        let mut group = 0i32;
        let mut i = p.start;
        while i < p.end {
            let g = layout.peer(i).clone();
            group += 1;
            let v = if dense { group } else { (g.start - p.start + 1) as i32 };
            out[g.start..g.end].fill(v);
            i = g.end;
        }
    }
    Arc::new(Int32Array::from(out))
}

/// `lag(x, offset, default)` is `shift = -offset`, `lead(x, offset, default)` is `shift = offset`.
pub fn shift(layout: &Layout, values: &ArrayRef, shift: i64, default: &ArrayRef) -> Result<ArrayRef> {
    let n = layout.len;
    let both = concat(&[values.as_ref(), default.as_ref()])?;
    let mut idx = Vec::with_capacity(n);
    for p in &layout.partitions {
        for i in p.clone() {
            let target = i as i64 + shift;
            idx.push(if target >= p.start as i64 && target < p.end as i64 { target as u32 } else { (n + i) as u32 });
        }
    }
    Ok(take(&both, &UInt32Array::from(idx), None)?)
}

/// `lag(x, n) IGNORE NULLS` for `n > 0`: the value of the n-th row before the current one, within the partition,
/// whose `x` is not null; else the default (Spark's `FrameLessOffsetWindowFunctionFrame` with `ignoreNulls`).
pub fn lag_ignore_nulls(layout: &Layout, values: &ArrayRef, n: usize, default: &ArrayRef) -> Result<ArrayRef> {
    let len = layout.len;
    let both = concat(&[values.as_ref(), default.as_ref()])?;
    let nulls = values.logical_nulls();
    let valid = |i: usize| nulls.as_ref().is_none_or(|b| b.is_valid(i));
    // Positions of the non-null rows, and for every row how many come before it.
    let mut non_null: Vec<u32> = Vec::new();
    let mut before = Vec::with_capacity(len + 1);
    for i in 0..len {
        before.push(non_null.len());
        if valid(i) {
            non_null.push(i as u32);
        }
    }
    before.push(non_null.len());
    let mut idx = Vec::with_capacity(len);
    for p in &layout.partitions {
        let first = before[p.start];
        for i in p.clone() {
            let c = before[i];
            idx.push(if c >= first + n { non_null[c - n] } else { (len + i) as u32 });
        }
    }
    Ok(take(&both, &UInt32Array::from(idx), None)?)
}
