//! Running prefixes of one integral measure, and frame sums / counts / averages as prefix differences.
//!
//! With `P[j]` the sum of the first `j` rows' values of a chunk (NULL counts as 0) and `C[j]` the number of
//! non-null values among them, the frame `[s, e)` has sum `P[e] − P[s]` and `C[e] − C[s]` values (NULL when 0).
//! Frames never cross partitions, so one prefix over the whole chunk serves every partition in it.
//!
//! * LEGACY (ANSI off): `P` wraps around in 64 bits. Addition modulo 2^64 is associative and invertible, so the
//!   difference is bit for bit Spark's wrapping fold, whatever the running prefix went through.
//! * ANSI: Spark re-folds a frame from its first row (`SlidingWindowFunctionFrame`), or extends one running fold
//!   (`UnboundedPrecedingWindowFunctionFrame`), with `Math.addExact`; either way the partial sums it computes are
//!   exactly `P[j] − P[s]` for `s < j ≤ e` (a NULL repeats the previous one), and it raises `ARITHMETIC_OVERFLOW`
//!   as soon as one leaves the 64-bit range — even when the frame's total fits. Prefixes here are exact (128-bit),
//!   and a frame overflows iff `max(P(s, e]) − P[s] > i64::MAX` or `min(P(s, e]) − P[s] < i64::MIN`. The sliding
//!   max / min come from monotonic deques, O(1) amortized per row; a partition whose prefix range
//!   `max P − min P` fits in 63 bits cannot overflow in any frame and skips the deques altogether.
//! * AVG: Spark folds `0.0 + (double) v₁ + (double) v₂ …`. When the partition's `Σ|v|` is at most 2^53 every value
//!   and every partial sum is an exactly representable double, so the fold is exact and equals
//!   `(double) (P[e] − P[s]) / count`. Other partitions are re-folded in Spark's order.
use std::collections::VecDeque;
use std::ops::Range;

use arrow::array::{Array, Int64Array};
use arrow::buffer::BooleanBuffer;
use datafusion_common::Result;

pub enum PrefixSums {
    /// 64-bit wrap-around prefixes (LEGACY sums only).
    Wrapping(Vec<i64>),
    /// Exact prefixes (ANSI sums, averages).
    Exact(Vec<i128>),
}

/// Prefixes of one measure over a chunk: `len + 1` entries each.
pub struct Prefix {
    pub sums: PrefixSums,
    pub counts: Vec<u64>,
    /// Exact prefixes whose range over the whole chunk fits in 63 bits: no difference of two of them — no
    /// partial sum of any frame — can overflow, so ANSI frames skip the overflow scan (checked once per chunk
    /// rather than once per frame).
    cannot_overflow: bool,
}

impl Prefix {
    /// `exact`: keep 128-bit prefixes (needed by ANSI sums and averages).
    pub fn new(values: &Int64Array, exact: bool) -> Self {
        let n = values.len();
        // NULL slots of an Arrow array may hold any value: read them as 0.
        let (zeroed, valid): (Vec<i64>, Vec<bool>) = match values.nulls() {
            None => (values.values().to_vec(), vec![true; n]),
            Some(nulls) => {
                values.values().iter().zip(nulls.iter()).map(|(&v, ok)| if ok { (v, true) } else { (0, false) }).unzip()
            }
        };
        let counts: Vec<u64> = std::iter::once(0)
            .chain(valid.iter().scan(0u64, |c, &ok| {
                *c += ok as u64;
                Some(*c)
            }))
            .collect();
        let mut cannot_overflow = false;
        let sums = if exact {
            let p: Vec<i128> = std::iter::once(0)
                .chain(zeroed.iter().scan(0i128, |acc, &v| {
                    *acc += v as i128;
                    Some(*acc)
                }))
                .collect();
            let (lo, hi) = p.iter().fold((i128::MAX, i128::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
            cannot_overflow = hi - lo <= i64::MAX as i128;
            PrefixSums::Exact(p)
        } else {
            PrefixSums::Wrapping(
                std::iter::once(0)
                    .chain(zeroed.iter().scan(0i64, |acc, &v| {
                        *acc = acc.wrapping_add(v);
                        Some(*acc)
                    }))
                    .collect(),
            )
        };
        Self { sums, counts, cannot_overflow }
    }

    pub fn count(&self, s: usize, e: usize) -> u64 {
        self.counts[e] - self.counts[s]
    }

    /// Frame sums (Spark's SUM over an integral measure): NULL for frames without a value. Under ANSI, also the
    /// first row whose frame fold overflows (Spark raises `ARITHMETIC_OVERFLOW` when it produces that row); the
    /// values from that row on are meaningless.
    pub fn sum(
        &self,
        parts: &[Range<usize>],
        starts: &[usize],
        ends: &[usize],
        ansi: bool,
    ) -> Result<(Int64Array, Option<usize>)> {
        let mut overflow_at = None;
        if ansi {
            let PrefixSums::Exact(p) = &self.sums else {
                return Err(datafusion_common::DataFusionError::Internal("ANSI sum without exact prefixes".into()));
            };
            if !self.cannot_overflow {
                overflow_at = first_overflow(p, parts, starts, ends);
            }
        }
        let c = &self.counts;
        let valid = BooleanBuffer::collect_bool(starts.len(), |i| c[ends[i]] != c[starts[i]]);
        let values: Vec<i64> = match &self.sums {
            PrefixSums::Wrapping(p) => starts.iter().zip(ends).map(|(&s, &e)| p[e].wrapping_sub(p[s])).collect(),
            // Truncation to 64 bits is the wrapped result (LEGACY); under ANSI the value fits (checked above).
            PrefixSums::Exact(p) => starts.iter().zip(ends).map(|(&s, &e)| (p[e] - p[s]) as i64).collect(),
        };
        Ok((Int64Array::new(values.into(), Some(valid.into())), overflow_at))
    }
}

/// The first row whose frame's running fold leaves the 64-bit range, if any (see the module docs).
pub fn first_overflow(p: &[i128], parts: &[Range<usize>], starts: &[usize], ends: &[usize]) -> Option<usize> {
    const MAX: i128 = i64::MAX as i128;
    const MIN: i128 = i64::MIN as i128;
    for part in parts {
        let range = &p[part.start..=part.end];
        let hi = *range.iter().max().unwrap();
        let lo = *range.iter().min().unwrap();
        // Every partial sum is a difference of two prefixes of this partition.
        if hi - lo <= MAX {
            continue;
        }
        let mut maxq = MonotonicQueue::new(|a: i128, b: i128| a >= b);
        let mut minq = MonotonicQueue::new(|a: i128, b: i128| a <= b);
        // Prefix indices j in (s, e] are the partial sums of the frame [s, e).
        let mut next = part.start + 1;
        for i in part.clone() {
            let (s, e) = (starts[i], ends[i]);
            if s >= e {
                continue;
            }
            next = next.max(s + 1);
            while next <= e {
                maxq.push(next, p[next]);
                minq.push(next, p[next]);
                next += 1;
            }
            maxq.evict_up_to(s);
            minq.evict_up_to(s);
            let base = p[s];
            if maxq.front().1 - base > MAX || minq.front().1 - base < MIN {
                return Some(i);
            }
        }
    }
    None
}

/// A sliding-window extremum: indices pushed in increasing order, the front is the extremum of those not
/// evicted, and among equal values the earliest (as Spark's `greatest`/`least` fold keeps the first).
pub struct MonotonicQueue<T: Copy, F: Fn(T, T) -> bool> {
    q: VecDeque<(usize, T)>,
    /// `keeps(older, newer)`: whether `older` stays ahead of `newer` (for a maximum: `older >= newer`).
    keeps: F,
}

impl<T: Copy, F: Fn(T, T) -> bool> MonotonicQueue<T, F> {
    pub fn new(keeps: F) -> Self {
        Self { q: VecDeque::new(), keeps }
    }

    pub fn push(&mut self, index: usize, value: T) {
        while let Some(&(_, back)) = self.q.back() {
            if (self.keeps)(back, value) {
                break;
            }
            self.q.pop_back();
        }
        self.q.push_back((index, value));
    }

    /// Drops every index `<= bound`.
    pub fn evict_up_to(&mut self, bound: usize) {
        while self.q.front().is_some_and(|&(i, _)| i <= bound) {
            self.q.pop_front();
        }
    }

    /// Drops every index `< bound`.
    pub fn evict_before(&mut self, bound: usize) {
        while self.q.front().is_some_and(|&(i, _)| i < bound) {
            self.q.pop_front();
        }
    }

    pub fn front(&self) -> (usize, T) {
        *self.q.front().expect("monotonic queue is empty")
    }

    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }

    pub fn clear(&mut self) {
        self.q.clear();
    }
}

/// Σ|v| bound under which a double fold of integers is exact.
const EXACT_DOUBLE: u128 = 1 << 53;

/// For each partition, whether every partial sum of every frame in it is an exactly representable double.
pub fn exact_double_partitions(values: &Int64Array, parts: &[Range<usize>]) -> Vec<bool> {
    let raw = values.values();
    let nulls = values.nulls();
    parts
        .iter()
        .map(|r| {
            let mut acc = 0u128;
            for i in r.clone() {
                if nulls.is_none_or(|b| b.is_valid(i)) {
                    acc += raw[i].unsigned_abs() as u128;
                    if acc > EXACT_DOUBLE {
                        return false;
                    }
                }
            }
            true
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;

    fn arr(v: &[Option<i64>]) -> Int64Array {
        v.iter().copied().collect()
    }

    #[test]
    fn wrapping_difference_equals_wrapping_fold() {
        let a = arr(&[Some(i64::MAX), Some(i64::MAX), None, Some(5), Some(i64::MIN)]);
        let p = Prefix::new(&a, false);
        let parts = [0..5];
        let starts = [0, 0, 1, 2, 3];
        let ends = [1, 2, 3, 4, 5];
        let (s, overflow) = p.sum(&parts, &starts, &ends, false).unwrap();
        assert_eq!(overflow, None);
        assert_eq!(s.value(1), i64::MAX.wrapping_add(i64::MAX));
        assert_eq!(s.value(2), i64::MAX);
        assert_eq!(s.value(3), 5);
        assert_eq!(s.value(4), 5i64.wrapping_add(i64::MIN));
    }

    #[test]
    fn ansi_detects_a_partial_sum_overflow_even_when_the_total_fits() {
        // MAX + 1 overflows at the second partial sum; the total MAX + 1 - 1 would fit.
        let a = arr(&[Some(i64::MAX), Some(1), Some(-1)]);
        let p = Prefix::new(&a, true);
        assert_eq!(p.sum(&[0..3], &[0, 0, 0], &[1, 2, 3], true).unwrap().1, Some(1));
        // The same values in another order never overflow: MAX, MAX - 1, MAX.
        let a = arr(&[Some(i64::MAX), Some(-1), Some(1)]);
        let p = Prefix::new(&a, true);
        let (s, overflow) = p.sum(&[0..3], &[0, 0, 0], &[1, 2, 3], true).unwrap();
        assert_eq!((s.value(2), overflow), (i64::MAX, None));
    }

    #[test]
    fn earliest_extremum_wins_ties() {
        let mut q = MonotonicQueue::new(|a: i32, b: i32| a >= b);
        q.push(0, 3);
        q.push(1, 3);
        q.push(2, 1);
        assert_eq!(q.front(), (0, 3));
        q.evict_before(1);
        assert_eq!(q.front(), (1, 3));
    }
}
