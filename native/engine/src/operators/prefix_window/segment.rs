//! Segmented evaluation of one large partition, so that memory stays O(segment + lookback + lookahead) rows
//! whatever the partition's length.
//!
//! A spec is segmentable when every expression needs only a bounded neighbourhood of each row plus state carried
//! from the rows before ([`Segmentation::of`]): ROWS frames with PRECEDING / CURRENT ROW / FOLLOWING bounds, running
//! frames (ROWS UNBOUNDED PRECEDING AND a bounded upper bound, RANGE UNBOUNDED PRECEDING AND CURRENT ROW),
//! RANGE CURRENT ROW AND CURRENT ROW, `row_number`, `rank`, `dense_rank`, `lag` / `lead` (also `lag … IGNORE
//! NULLS`).
//!
//! The open partition's rows `[a, b)` are evaluated as one chunk that also holds the `lookback` rows before `a`
//! and at least `lookahead` rows after `b`: the chunk is evaluated as if it were the partition (frame bounds
//! clamped to it), which is exact for the rows `[a, b)` because none of their bounded frames or offsets reaches
//! outside it. The frames of the context rows before `a` are emptied, so they neither cost work nor raise an
//! ANSI overflow of their own. What reaches beyond the chunk is carried ([`Carry`]):
//! * `row_number` / `rank`: the number of partition rows dropped before the chunk (added to the chunk's values);
//! * `dense_rank`: the value at the last handed-out row (cuts are at peer-group boundaries when a function
//!   compares peers, so a peer group never straddles a cut);
//! * running SUM / COUNT / AVG: the fold itself — exact 128-bit and wrapping 64-bit sums, the double sum in
//!   Spark's order, the count, and the row up to which they are folded — continued row by row, so ANSI raises
//!   `ARITHMETIC_OVERFLOW` at the same row (the running fold's partial sums are the partition's prefixes) and
//!   double sums keep their bits;
//! * running MIN / MAX: the extremum so far, combined with the chunk's (MIN/MAX is idempotent, the context rows
//!   counted twice do not matter; on ties the earlier value stays, as Spark's fold keeps it);
//! * `lag(x, n) IGNORE NULLS`: the last n non-null values of `x` before the segment (however far back), put
//!   before the segment's rows and advanced past them;
//! * whole-partition aggregates of a spilled partition read back: their folded value ([`super::whole`]).
use std::sync::Arc;

use arrow::array::{
    new_empty_array, new_null_array, Array, ArrayRef, AsArray, Float64Array, Int32Array, Int64Array, RecordBatch,
    UInt32Array,
};
use arrow::buffer::NullBuffer;
use arrow::compute::{cast, concat, filter, is_not_null, take};
use arrow::datatypes::{DataType, Int32Type};
use datafusion_common::{internal_datafusion_err, Result};

use super::frames::{Bound, Frame, FrameUnit, Layout};
use super::spec::{eval_all, is_integral, FrameCounters, Function, WindowExpr, WindowSpec};
use super::{extrema, ranking};

/// Rows per segment when the plan does not say (`Window.segment_rows = 0`).
pub const DEFAULT_SEGMENT_ROWS: usize = 16 * 1024;

/// Offsets beyond this make a spec whole-partition: the context would be as large as a partition.
const MAX_CONTEXT: u64 = 1 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segmentation {
    /// Rows before a segment that its rows read (largest PRECEDING offset / lag).
    pub lookback: usize,
    /// Rows after a segment that its rows read (largest FOLLOWING offset / lead).
    pub lookahead: usize,
    /// Segments end at a peer-group boundary (rank, dense_rank, RANGE frames).
    pub peer_aligned: bool,
}

impl Segmentation {
    /// `None` when some expression needs the whole partition (UNBOUNDED FOLLOWING, RANGE frames beyond the peer
    /// group, offsets above 2^20).
    pub fn of<'a>(exprs: impl IntoIterator<Item = &'a WindowExpr>, needs_peers: bool) -> Option<Self> {
        let (mut back, mut ahead) = (0u64, 0u64);
        for x in exprs {
            match x.function {
                Function::RowNumber | Function::Rank | Function::DenseRank => {}
                Function::Lag | Function::Lead => {
                    if x.ignore_nulls {
                        // The last `offset` non-null values before a segment are carried
                        // ([`Carry::IgnoreNulls`]), however far back they are.
                        if x.offset.unsigned_abs() > MAX_CONTEXT {
                            return None;
                        }
                        continue;
                    }
                    let shift = if x.function == Function::Lag { x.offset.saturating_neg() } else { x.offset };
                    if shift < 0 {
                        back = back.max(shift.unsigned_abs());
                    } else {
                        ahead = ahead.max(shift as u64);
                    }
                }
                _ => {
                    let f = x.frame;
                    match f.unit {
                        FrameUnit::Rows => {
                            for (i, b) in [f.lower, f.upper].into_iter().enumerate() {
                                match b {
                                    Bound::Preceding(k) => back = back.max(k),
                                    Bound::Following(k) => ahead = ahead.max(k),
                                    Bound::CurrentRow => {}
                                    Bound::UnboundedPreceding if i == 0 => {}
                                    _ => return None,
                                }
                            }
                        }
                        FrameUnit::Range => {
                            if !(matches!(f.lower, Bound::UnboundedPreceding | Bound::CurrentRow)
                                && f.upper == Bound::CurrentRow)
                            {
                                return None;
                            }
                        }
                    }
                }
            }
        }
        if back > MAX_CONTEXT || ahead > MAX_CONTEXT {
            return None;
        }
        Some(Self { lookback: back as usize, lookahead: ahead as usize, peer_aligned: needs_peers })
    }
}

/// Whether `x` is an aggregate over its whole partition (ROWS or RANGE BETWEEN UNBOUNDED PRECEDING AND
/// UNBOUNDED FOLLOWING): one value per partition, which a spilled partition folds while its rows go to disk.
pub fn whole_partition(x: &WindowExpr) -> bool {
    matches!(x.function, Function::Sum | Function::Count | Function::Avg | Function::Min | Function::Max)
        && x.frame.lower == Bound::UnboundedPreceding
        && x.frame.upper == Bound::UnboundedFollowing
}

/// The first expression that needs its whole partition and is not a whole-partition aggregate (so the spec can
/// neither be evaluated in segments nor spill), described for an error message.
pub fn spill_blocker(exprs: &[WindowExpr]) -> Option<String> {
    exprs.iter().find(|x| !whole_partition(x) && Segmentation::of([*x], false).is_none()).map(|x| {
        let what = match x.function {
            Function::Lag | Function::Lead if x.ignore_nulls => {
                format!("{:?}(offset {}) IGNORE NULLS", x.function, x.offset)
            }
            Function::Lag | Function::Lead => format!("{:?}(offset {})", x.function, x.offset),
            f => {
                let fr = x.frame;
                format!("{f:?} OVER ({:?} BETWEEN {:?} AND {:?})", fr.unit, fr.lower, fr.upper)
            }
        };
        format!("window expression `{}` ({what})", x.name)
    })
}

fn running(frame: &Frame) -> bool {
    frame.lower == Bound::UnboundedPreceding
}

/// A running fold continued across segments.
#[derive(Debug, Default, Clone)]
pub struct Running {
    /// Rows of the partition folded so far.
    pub(super) pos: usize,
    exact: i128,
    wrapping: i64,
    double: f64,
    count: u64,
}

/// What one expression carries from segment to segment.
#[derive(Debug, Clone)]
pub enum Carry {
    None,
    /// `dense_rank` at the last handed-out row.
    Dense(i32),
    /// Running SUM / COUNT / AVG.
    Running(Running),
    /// Running MIN / MAX so far (one value, possibly NULL), none before the first segment.
    Extremum(Option<ArrayRef>),
    /// A whole-partition aggregate of a spilled partition: its value (one row), folded while the rows spilled.
    Whole(ArrayRef),
    /// `lag(x, n) IGNORE NULLS`: the last (at most n) non-null values of `x` before the segment, oldest first.
    IgnoreNulls(ArrayRef),
}

/// The state of the open partition once it is evaluated in segments.
#[derive(Debug)]
pub struct OpenPartition {
    /// Rows of the partition before the first buffered row.
    pub dropped: usize,
    /// Rows of the partition already handed out.
    pub emitted: usize,
    pub carries: Vec<Carry>,
    /// Read back from a spill file ([`WholeFolds`]): whole-partition aggregates are [`Carry::Whole`], the other
    /// expressions are evaluated in segments under [`super::spec::WindowSpec::spill`].
    pub spilled: bool,
}

impl OpenPartition {
    pub fn new(spec: &WindowSpec) -> Self {
        let carries = spec
            .exprs
            .iter()
            .map(|x| match x.function {
                Function::DenseRank => Carry::Dense(0),
                Function::Lag if x.ignore_nulls => Carry::IgnoreNulls(new_empty_array(&x.result_type)),
                Function::Sum | Function::Count | Function::Avg if running(&x.frame) => {
                    Carry::Running(Running::default())
                }
                Function::Min | Function::Max if running(&x.frame) => Carry::Extremum(None),
                _ => Carry::None,
            })
            .collect();
        Self { dropped: 0, emitted: 0, carries, spilled: false }
    }

    /// A spilled partition about to be read back, with the values of its whole-partition aggregates.
    pub fn spilled(spec: &WindowSpec, wholes: Vec<Option<ArrayRef>>) -> Self {
        let mut open = Self::new(spec);
        for (carry, whole) in open.carries.iter_mut().zip(wholes) {
            if let Some(v) = whole {
                *carry = Carry::Whole(v);
            }
        }
        open.spilled = true;
        open
    }
}

/// The largest `b` in `(a, limit]` where a segment of `chunk` (rows of one partition) may end: any row, or
/// under peer alignment the first row of a peer group (so `b < chunk rows`).
pub fn cut(spec: &WindowSpec, seg: Segmentation, chunk: &RecordBatch, a: usize, limit: usize) -> Result<Option<usize>> {
    if limit <= a {
        return Ok(None);
    }
    if !seg.peer_aligned {
        return Ok(Some(limit));
    }
    let keys = eval_all(&spec.order_by, chunk)?;
    let peers = spec.ranges(&keys, chunk.num_rows())?;
    Ok(peers.iter().map(|r| r.start).filter(|&s| s > a && s <= limit).max())
}

/// Evaluates the rows `[a, b)` of `chunk` (rows of the open partition, `a = open.emitted - open.dropped`),
/// continuing the carried state; returns their window columns and, under ANSI, the first of them (relative to
/// `a`) at which Spark raises `ARITHMETIC_OVERFLOW`.
pub fn evaluate_segment(
    spec: &WindowSpec,
    chunk: &RecordBatch,
    open: &mut OpenPartition,
    b: usize,
    counters: &FrameCounters,
) -> Result<(Vec<ArrayRef>, Option<usize>)> {
    let n = chunk.num_rows();
    let a = open.emitted - open.dropped;
    debug_assert!(a < b && b <= n);
    let peers = if spec.needs_peers { spec.ranges(&eval_all(&spec.order_by, chunk)?, n)? } else { vec![] };
    let layout = Layout::new(n, std::iter::once(0..n).filter(|r| !r.is_empty()).collect(), peers);
    let (values, prefixes) = spec.measures_of(chunk)?;
    let mut frames = std::collections::HashMap::new();
    for (x, carry) in spec.exprs.iter().zip(&open.carries) {
        if matches!(x.function, Function::Sum | Function::Count | Function::Avg | Function::Min | Function::Max)
            && !matches!(carry, Carry::Whole(_))
        {
            frames.entry(x.frame).or_insert_with(|| {
                let (mut s, mut e) = x.frame.bounds(&layout);
                // Context rows before the segment: empty frames (their values are not handed out).
                s[..a].fill(0);
                e[..a].fill(0);
                (s, e)
            });
        }
    }
    // Frames counted per chunk row by the whole-chunk evaluation, scaled below to the segment's rows.
    let local = FrameCounters::default();
    let rows = b - a;
    let mut out = Vec::with_capacity(spec.exprs.len());
    let mut overflow_at: Option<usize> = None;
    for (x, carry) in spec.exprs.iter().zip(open.carries.iter_mut()) {
        let (column, overflow) = if let Carry::Whole(v) = carry {
            (take(v, &UInt32Array::from(vec![0u32; rows]), None)?, None)
        } else if let Carry::IgnoreNulls(before) = carry {
            (lag_ignore_nulls(spec, x, chunk, before, a, b)?, None)
        } else if let Carry::Running(r) = carry {
            let (_, ends) = &frames[&x.frame];
            let prefixed = x.measure.is_some_and(|m| prefixes[m].is_some())
                && (x.function == Function::Count || is_integral(values[x.measure.unwrap()].data_type()));
            let counter = if prefixed || (x.function == Function::Count && x.args.is_empty()) {
                &counters.prefix
            } else {
                &counters.refold
            };
            counter.add(rows);
            fold_running(x, r, chunk, &values, ends, a, b, open.dropped)?
        } else {
            let bounds = |f: Frame| {
                let (s, e) = &frames[&f];
                (s.as_slice(), e.as_slice())
            };
            let (column, overflow) = spec.evaluate_expr(x, chunk, &layout, &values, &prefixes, bounds, &local)?;
            let overflow = overflow.filter(|&r| r >= a && r < b).map(|r| r - a);
            let full = column.clone();
            let column = column.slice(a, rows);
            let column = match (x.function, carry) {
                (Function::RowNumber | Function::Rank, _) => shift_ints(&column, open.dropped as i32),
                (Function::DenseRank, Carry::Dense(d)) => {
                    let before = if a > 0 { full.as_primitive::<Int32Type>().value(a - 1) } else { 0 };
                    let column = shift_ints(&column, *d - before);
                    *d = column.as_primitive::<Int32Type>().value(rows - 1);
                    column
                }
                (Function::Min | Function::Max, Carry::Extremum(c)) => {
                    let column = match c {
                        Some(c) => extrema::combine(c, &column, x.function == Function::Max)?,
                        None => column,
                    };
                    *c = Some(take(&column, &UInt32Array::from(vec![rows as u32 - 1]), None)?);
                    column
                }
                _ => column,
            };
            (column, overflow)
        };
        out.push(column);
        overflow_at = match (overflow_at, overflow) {
            (Some(p), Some(q)) => Some(p.min(q)),
            (p, q) => p.or(q),
        };
    }
    // Every SUM / COUNT / AVG expression over the (single-partition) chunk counted `n` frames on one side.
    if let (Some(p), Some(r)) = (local.prefix.value().checked_div(n), local.refold.value().checked_div(n)) {
        counters.prefix.add(p * rows);
        counters.refold.add(r * rows);
    }
    open.emitted += rows;
    Ok((out, overflow_at))
}

fn shift_ints(column: &ArrayRef, by: i32) -> ArrayRef {
    let v: &Int32Array = column.as_primitive();
    Arc::new(v.unary::<_, Int32Type>(|x| x + by))
}

/// A running SUM / COUNT / AVG over `[a, b)`: the fold carried in `r` continued up to each row's frame end.
#[allow(clippy::too_many_arguments)]
pub(super) fn fold_running(
    x: &WindowExpr,
    r: &mut Running,
    chunk: &RecordBatch,
    values: &[ArrayRef],
    ends: &[usize],
    a: usize,
    b: usize,
    dropped: usize,
) -> Result<(ArrayRef, Option<usize>)> {
    let n = chunk.num_rows();
    let rows = b - a;
    // Which rows count: the measure's non-null rows, every row for count(*), rows where all arguments are
    // non-null for count(a, b, ...).
    let (measure, nulls): (Option<&ArrayRef>, Option<NullBuffer>) = match x.measure {
        Some(m) => (Some(&values[m]), values[m].logical_nulls()),
        None => {
            let mut nulls: Option<NullBuffer> = None;
            for arg in &x.args {
                let v = arg.evaluate(chunk)?.into_array(n)?;
                nulls = NullBuffer::union(nulls.as_ref(), v.logical_nulls().as_ref());
            }
            (None, nulls)
        }
    };
    let valid = |i: usize| nulls.as_ref().is_none_or(|b| b.is_valid(i));
    let mut p = r.pos.saturating_sub(dropped);
    debug_assert!(r.pos >= dropped, "running fold behind the buffered rows");
    let mut overflow_at = None;
    let measure_of = |f: &str| measure.ok_or_else(|| internal_datafusion_err!("window: {f} without a measure"));
    let column: ArrayRef = match x.function {
        Function::Count => {
            let mut out = Vec::with_capacity(rows);
            for &e in &ends[a..b] {
                while p < e {
                    r.count += valid(p) as u64;
                    p += 1;
                }
                out.push(r.count as i64);
            }
            Arc::new(Int64Array::from(out))
        }
        Function::Sum if is_integral(measure_of("SUM")?.data_type()) => {
            let longs = cast(measure_of("SUM")?, &DataType::Int64)?;
            let raw = longs.as_primitive::<arrow::datatypes::Int64Type>().values();
            let mut out = vec![0i64; rows];
            let mut ok = vec![false; rows];
            'rows: for (j, &e) in ends[a..b].iter().enumerate() {
                while p < e {
                    if valid(p) {
                        r.exact += raw[p] as i128;
                        r.wrapping = r.wrapping.wrapping_add(raw[p]);
                        r.count += 1;
                        if x.ansi && i64::try_from(r.exact).is_err() {
                            overflow_at = Some(j);
                            break 'rows;
                        }
                    }
                    p += 1;
                }
                out[j] = r.wrapping;
                ok[j] = r.count > 0;
            }
            Arc::new(Int64Array::new(out.into(), Some(ok.into())))
        }
        Function::Sum | Function::Avg => {
            let doubles = cast(measure_of("SUM / AVG")?, &DataType::Float64)?;
            let raw = doubles.as_primitive::<arrow::datatypes::Float64Type>().values();
            let mut out = Vec::with_capacity(rows);
            let mut ok = Vec::with_capacity(rows);
            for &e in &ends[a..b] {
                while p < e {
                    if valid(p) {
                        r.double += raw[p];
                        r.count += 1;
                    }
                    p += 1;
                }
                ok.push(r.count > 0);
                out.push(match (x.function, r.count) {
                    (Function::Avg, 0) => 0.0,
                    (Function::Avg, c) => r.double / c as f64,
                    _ => r.double,
                });
            }
            Arc::new(Float64Array::new(out.into(), Some(ok.into())))
        }
        other => unreachable!("{other:?} does not fold a running sum"),
    };
    r.pos = dropped + p;
    Ok((column, overflow_at))
}

/// `lag(x, n) IGNORE NULLS` over the rows `[a, b)` of `chunk`, continuing from `before` (the last non-null values
/// of `x` before row `a`, at most n), which it advances to row `b`.
fn lag_ignore_nulls(
    spec: &WindowSpec,
    x: &WindowExpr,
    chunk: &RecordBatch,
    before: &mut ArrayRef,
    a: usize,
    b: usize,
) -> Result<ArrayRef> {
    let rows = b - a;
    let part = chunk.slice(a, rows);
    let (values, default) = spec.lag_inputs(x, &part)?;
    let m = before.len();
    // The carried values, then the segment's rows, as one partition; the carried rows' defaults are never read.
    let joined = concat(&[before.as_ref(), values.as_ref()])?;
    let defaults = concat(&[new_null_array(default.data_type(), m).as_ref(), default.as_ref()])?;
    let layout = Layout::new(joined.len(), std::iter::once(0..joined.len()).collect(), vec![]);
    let out = ranking::lag_ignore_nulls(&layout, &joined, x.offset as usize, &defaults)?;
    let non_null = filter(&joined, &is_not_null(&joined)?)?;
    let keep = non_null.len().min(x.offset as usize);
    *before = non_null.slice(non_null.len() - keep, keep);
    Ok(out.slice(m, rows))
}
