//! Sliding MIN / MAX with monotonic deques: O(1) amortized per row for every frame shape, and the same value
//! Spark's fold keeps — among equal values (e.g. -0.0 and 0.0, which Spark's ordering treats as equal) the
//! frame's first one, because `greatest(max, v)` only replaces on a strictly greater `v`.
use std::cmp::Ordering;
use std::ops::Range;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, ArrowPrimitiveType, AsArray, PrimitiveArray};
use arrow::datatypes::{self as t, DataType};
use datafusion_common::Result;

use super::prefix::MonotonicQueue;
use crate::error::plan_error;

/// Spark's ordering of a primitive type: natural for integers; for floats -0.0 = 0.0 and NaN is the largest
/// (`SQLOrderingUtil.compareDoubles`).
pub trait SparkOrd: Copy {
    fn spark_cmp(self, other: Self) -> Ordering;
}

macro_rules! int_ord {
    ($($t:ty),*) => {$(impl SparkOrd for $t {
        fn spark_cmp(self, other: Self) -> Ordering { self.cmp(&other) }
    })*};
}
int_ord!(i8, i16, i32, i64);

macro_rules! float_ord {
    ($($t:ty),*) => {$(impl SparkOrd for $t {
        fn spark_cmp(self, other: Self) -> Ordering {
            if self == other {
                Ordering::Equal
            } else {
                match (self.is_nan(), other.is_nan()) {
                    (true, true) => Ordering::Equal,
                    (true, false) => Ordering::Greater,
                    (false, true) => Ordering::Less,
                    _ => self.partial_cmp(&other).unwrap(),
                }
            }
        }
    })*};
}
float_ord!(f32, f64);

/// Whether MIN/MAX over this type is evaluated natively.
pub fn supported(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::Float32
            | DataType::Float64
            | DataType::Date32
            | DataType::Timestamp(t::TimeUnit::Microsecond, _)
    )
}

fn extreme<T: ArrowPrimitiveType>(
    arr: &PrimitiveArray<T>,
    parts: &[Range<usize>],
    starts: &[usize],
    ends: &[usize],
    max: bool,
) -> ArrayRef
where
    T::Native: SparkOrd,
{
    let raw = arr.values();
    let n = arr.len();
    let mut out = Vec::with_capacity(n);
    let mut ok = Vec::with_capacity(n);
    // keeps(older, newer): the older value stays ahead unless the newer one is strictly better.
    let mut q = MonotonicQueue::new(move |older: T::Native, newer: T::Native| {
        let c = newer.spark_cmp(older);
        if max {
            c != Ordering::Greater
        } else {
            c != Ordering::Less
        }
    });
    for part in parts {
        q.clear();
        let mut next = part.start;
        for i in part.clone() {
            let (s, e) = (starts[i], ends[i]);
            next = next.max(s);
            while next < e {
                if arr.is_valid(next) {
                    q.push(next, raw[next]);
                }
                next += 1;
            }
            q.evict_before(s);
            if q.is_empty() {
                out.push(T::Native::default());
                ok.push(false);
            } else {
                out.push(q.front().1);
                ok.push(true);
            }
        }
    }
    Arc::new(PrimitiveArray::<T>::new(out.into(), Some(ok.into())).with_data_type(arr.data_type().clone()))
}

/// `$body` with `$T` the Arrow type of `$dt`, for the types MIN / MAX support natively (else a plan error).
macro_rules! with_ord_type {
    ($dt:expr, $T:ident => $body:expr) => {
        match $dt {
            DataType::Int8 => {
                type $T = t::Int8Type;
                $body
            }
            DataType::Int16 => {
                type $T = t::Int16Type;
                $body
            }
            DataType::Int32 => {
                type $T = t::Int32Type;
                $body
            }
            DataType::Int64 => {
                type $T = t::Int64Type;
                $body
            }
            DataType::Float32 => {
                type $T = t::Float32Type;
                $body
            }
            DataType::Float64 => {
                type $T = t::Float64Type;
                $body
            }
            DataType::Date32 => {
                type $T = t::Date32Type;
                $body
            }
            DataType::Timestamp(t::TimeUnit::Microsecond, _) => {
                type $T = t::TimestampMicrosecondType;
                $body
            }
            other => return Err(plan_error(format!("MIN/MAX over {other} is not supported natively"))),
        }
    };
}

/// MIN (`max == false`) or MAX of every frame.
pub fn min_max(
    values: &ArrayRef,
    parts: &[Range<usize>],
    starts: &[usize],
    ends: &[usize],
    max: bool,
) -> Result<ArrayRef> {
    Ok(with_ord_type!(values.data_type(), T => extreme(values.as_primitive::<T>(), parts, starts, ends, max)))
}

fn combine_typed<T: ArrowPrimitiveType>(carry: &PrimitiveArray<T>, local: &PrimitiveArray<T>, max: bool) -> ArrayRef
where
    T::Native: SparkOrd,
{
    if carry.is_null(0) {
        return Arc::new(local.clone());
    }
    let c = carry.value(0);
    let better = if max { Ordering::Greater } else { Ordering::Less };
    // The carried value comes from earlier rows: it stays unless a local value is strictly better.
    let out: PrimitiveArray<T> = (0..local.len())
        .map(|i| Some(if local.is_valid(i) && local.value(i).spark_cmp(c) == better { local.value(i) } else { c }))
        .collect();
    Arc::new(out.with_data_type(local.data_type().clone()))
}

/// A running MIN / MAX continued from earlier rows: `carry` (one value, possibly NULL) is the extremum of the
/// rows before the ones `local` covers.
pub fn combine(carry: &ArrayRef, local: &ArrayRef, max: bool) -> Result<ArrayRef> {
    Ok(with_ord_type!(local.data_type(), T => combine_typed(carry.as_primitive::<T>(), local.as_primitive::<T>(), max)))
}

fn reduce_typed<T: ArrowPrimitiveType>(values: &PrimitiveArray<T>, max: bool) -> ArrayRef
where
    T::Native: SparkOrd,
{
    let better = if max { Ordering::Greater } else { Ordering::Less };
    let mut best: Option<T::Native> = None;
    for v in values.iter().flatten() {
        // The earlier value stays unless a later one is strictly better, as in Spark's fold.
        if best.is_none_or(|b| v.spark_cmp(b) == better) {
            best = Some(v);
        }
    }
    let out: PrimitiveArray<T> = std::iter::once(best).collect();
    Arc::new(out.with_data_type(values.data_type().clone()))
}

/// MIN (`max == false`) or MAX of all of `values`, as one value (NULL when every value is): Spark's fold over
/// a whole frame.
pub fn reduce(values: &ArrayRef, max: bool) -> Result<ArrayRef> {
    Ok(with_ord_type!(values.data_type(), T => reduce_typed(values.as_primitive::<T>(), max)))
}
