//! The native window operator against a straightforward reference written here with Spark's semantics: for
//! every output row, fold the row's frame from its first row (`Math.addExact` under ANSI, wrapping otherwise,
//! `0.0 + (double) v …` for averages), on random data — nullable measures, all-null frames, partitions shorter
//! than the frame, n = 0, FOLLOWING bounds, values near Long.MaxValue, several horizons at once — with prefix
//! evaluation on and off. Also compared with DataFusion's own `BoundedWindowAggExec` where the types agree.

use std::sync::Arc;

use crate::common::*;
use arrow::array::{Array, ArrayRef, AsArray, Float64Array, Int32Array, Int64Array, RecordBatch};
use arrow::compute::concat_batches;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion_common::{DataFusionError, Result};
use ember_engine::error::find_spark_error;
use ember_engine::execution::NativePlan;
use ember_engine::memory::FixedBroker;
use ember_engine::proto as pb;
use prost::Message;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

// ---------------------------------------------------------------------------------------------------------
// Input: k (partition, INT, sorted, one NULL partition first), d (order, BIGINT), x BIGINT, y INT, f DOUBLE.

pub(crate) fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int32, true),
        Field::new("d", DataType::Int64, true),
        Field::new("x", DataType::Int64, true),
        Field::new("y", DataType::Int32, true),
        Field::new("f", DataType::Float64, true),
    ]))
}

#[derive(Clone, Copy, Debug)]
enum Values {
    Small,
    /// Near ±Long.MaxValue and anywhere in the 64-bit range: running prefixes overflow all the time.
    Huge,
    /// ±(2^62 .. 2^62 + 2^61) mixed with small values: two same-signed big values overflow, mixed ones may not.
    Edge(f64),
}

pub(crate) struct Data {
    pub(crate) k: Vec<Option<i32>>,
    pub(crate) d: Vec<Option<i64>>,
    pub(crate) x: Vec<Option<i64>>,
    pub(crate) y: Vec<Option<i32>>,
    pub(crate) f: Vec<Option<f64>>,
}

fn gen(rng: &mut StdRng, partitions: usize, max_len: usize, values: Values, ties: bool) -> Data {
    let mut data = Data { k: vec![], d: vec![], x: vec![], y: vec![], f: vec![] };
    let null_rate = rng.random_range(0.0..0.6);
    for p in 0..partitions {
        let len = rng.random_range(1..=max_len);
        // Some partitions are all NULL in the measures.
        let all_null = rng.random_bool(0.1);
        for i in 0..len {
            data.k.push(if p == 0 { None } else { Some(p as i32 * 3) });
            data.d.push(Some(if ties { (i / 3) as i64 } else { i as i64 * 10 }));
            let null = all_null || rng.random_bool(null_rate);
            let x = match values {
                Values::Small => rng.random_range(-1000..1000),
                Values::Huge => match rng.random_range(0..4) {
                    0 => i64::MAX - rng.random_range(0..1000),
                    1 => i64::MIN + rng.random_range(0..1000),
                    2 => rng.random(),
                    _ => rng.random_range(-5..5),
                },
                Values::Edge(big) => {
                    if rng.random_bool(big) {
                        let v = (1i64 << 62) + rng.random_range(0..(1i64 << 61));
                        if rng.random_bool(0.5) {
                            v
                        } else {
                            -v
                        }
                    } else {
                        rng.random_range(-1_000_000..1_000_000)
                    }
                }
            };
            data.x.push((!null).then_some(x));
            data.y.push((!null && rng.random_bool(0.8)).then(|| rng.random()));
            let f = match rng.random_range(0..10) {
                0 => -0.0,
                1 => 0.0,
                2 => f64::NAN,
                3 => 1e300,
                _ => rng.random_range(-1e6..1e6) / 7.0,
            };
            data.f.push((!null && rng.random_bool(0.9)).then_some(f));
        }
    }
    data
}

pub(crate) fn batches(data: &Data, rng: &mut StdRng) -> Vec<RecordBatch> {
    let all = RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int32Array::from(data.k.clone())),
            Arc::new(Int64Array::from(data.d.clone())),
            Arc::new(Int64Array::from(data.x.clone())),
            Arc::new(Int32Array::from(data.y.clone())),
            Arc::new(Float64Array::from(data.f.clone())),
        ],
    )
    .unwrap();
    // Random batch sizes (some empty) so partitions span batches.
    let mut out = vec![];
    let mut at = 0;
    while at < all.num_rows() {
        let len = rng.random_range(0..40).min(all.num_rows() - at);
        out.push(all.slice(at, len));
        at += len;
    }
    out
}

// ---------------------------------------------------------------------------------------------------------
// Proto builders.

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum B {
    UP,
    P(u64),
    CR,
    F(u64),
    UF,
}

fn pb_bound(b: B) -> pb::FrameBound {
    use pb::FrameBoundKind as K;
    let (kind, offset) = match b {
        B::UP => (K::UnboundedPreceding, 0),
        B::P(n) => (K::Preceding, n),
        B::CR => (K::CurrentRow, 0),
        B::F(n) => (K::Following, n),
        B::UF => (K::UnboundedFollowing, 0),
    };
    pb::FrameBound { kind: kind as i32, offset }
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Fr {
    range: bool,
    lo: B,
    hi: B,
}

pub(crate) fn rows(lo: B, hi: B) -> Fr {
    Fr { range: false, lo, hi }
}

fn range(lo: B, hi: B) -> Fr {
    Fr { range: true, lo, hi }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum F {
    RowNumber,
    Rank,
    DenseRank,
    Lag(i64),
    Lead(i64),
    LagIgnoreNulls(i64),
    Sum,
    Count,
    CountStar,
    /// count(x, f): rows where both are non-null.
    Count2,
    Avg,
    Min,
    Max,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct W {
    pub(crate) f: F,
    /// Argument column (2 = x, 3 = y, 4 = f).
    pub(crate) arg: usize,
    pub(crate) frame: Fr,
    pub(crate) ansi: bool,
}

fn arg_type(arg: usize) -> DataType {
    schema().field(arg).data_type().clone()
}

fn result_type(w: &W) -> DataType {
    match w.f {
        F::RowNumber | F::Rank | F::DenseRank => DataType::Int32,
        F::Count | F::CountStar | F::Count2 => DataType::Int64,
        F::Avg => DataType::Float64,
        F::Sum if arg_type(w.arg) == DataType::Float64 => DataType::Float64,
        F::Sum => DataType::Int64,
        F::Lag(_) | F::Lead(_) | F::LagIgnoreNulls(_) | F::Min | F::Max => arg_type(w.arg),
    }
}

fn pb_window_expr(w: &W, i: usize) -> pb::WindowExpr {
    use pb::WindowFunction as Wf;
    let (function, args, offset) = match w.f {
        F::RowNumber => (Wf::RowNumber, vec![], 0),
        F::Rank => (Wf::Rank, vec![], 0),
        F::DenseRank => (Wf::DenseRank, vec![], 0),
        F::Lag(n) => (Wf::Lag, vec![w.arg], n),
        F::Lead(n) => (Wf::Lead, vec![w.arg], n),
        F::LagIgnoreNulls(n) => (Wf::Lag, vec![w.arg], n),
        F::Sum => (Wf::Sum, vec![w.arg], 0),
        F::Count => (Wf::Count, vec![w.arg], 0),
        F::CountStar => (Wf::Count, vec![], 0),
        F::Count2 => (Wf::Count, vec![2, 4], 0),
        F::Avg => (Wf::Avg, vec![w.arg], 0),
        F::Min => (Wf::Min, vec![w.arg], 0),
        F::Max => (Wf::Max, vec![w.arg], 0),
    };
    pb::WindowExpr {
        function: function as i32,
        args: args.iter().map(|&a| col(a as u32, &arg_type(a))).collect(),
        offset,
        default_value: None,
        frame: Some(pb::WindowFrame {
            frame_type: if w.frame.range { pb::FrameType::Range } else { pb::FrameType::Rows } as i32,
            lower: Some(pb_bound(w.frame.lo)),
            upper: Some(pb_bound(w.frame.hi)),
        }),
        result_type: Some(pb_type(&result_type(w))),
        eval_mode: if w.ansi { pb::EvalMode::Ansi } else { pb::EvalMode::Legacy } as i32,
        ignore_nulls: matches!(w.f, F::LagIgnoreNulls(_)),
        name: format!("w{i}"),
    }
}

fn window_plan(exprs: Vec<pb::WindowExpr>, prefix: bool, batch_size: u32) -> pb::Plan {
    let s = schema();
    let mut fields: Vec<Field> = s.fields().iter().map(|f| f.as_ref().clone()).collect();
    for x in &exprs {
        let t = ember_engine::planner::types::required_type(&x.result_type).unwrap();
        fields.push(Field::new(&x.name, t, true));
    }
    let window = pb::PrefixWindow {
        partition_by: vec![col(0, &DataType::Int32)],
        order_by: vec![pb::SortOrder { child: Some(col(1, &DataType::Int64)), ascending: true, nulls_first: true }],
        exprs,
        prefix_enabled: prefix,
        segment_rows: 0,
    };
    let mut p =
        plan(op(1, pb::operator::Kind::PrefixWindow(window), vec![input(0, &s)]), &Arc::new(Schema::new(fields)));
    p.config.as_mut().unwrap().batch_size = batch_size;
    p
}

fn run(plan: &pb::Plan, input: Vec<RecordBatch>) -> Result<RecordBatch> {
    let (rows, err, _) = run_until_error(plan, input, 1 << 30);
    match err {
        Some(e) => Err(e),
        None => Ok(rows),
    }
}

/// Sets `Window.segment_rows` (0: the native default).
fn with_segment_rows(mut plan: pb::Plan, rows: u64) -> pb::Plan {
    match plan.root.as_mut().and_then(|r| r.kind.as_mut()) {
        Some(pb::operator::Kind::PrefixWindow(w)) => w.segment_rows = rows,
        _ => unreachable!("a window plan"),
    }
    plan
}

/// The rows a consumer receives, the error that ends them if any, and the window's `window_segments` metric.
fn run_until_error(
    plan: &pb::Plan,
    input: Vec<RecordBatch>,
    pool: usize,
) -> (RecordBatch, Option<DataFusionError>, u64) {
    let broker = Arc::new(FixedBroker::new(pool));
    let mut p = NativePlan::try_new(&plan.encode_to_vec(), vec![reader(input, schema())], broker.clone()).unwrap();
    let schema = p.output_schema().clone();
    let (out, err) = drain(&mut p, None);
    let window_id = plan.root.as_ref().unwrap().id;
    let segments = p
        .metrics()
        .into_iter()
        .find(|m| m.id == window_id)
        .and_then(|m| m.named.iter().find(|(n, _)| n == "window_segments").map(|(_, v)| *v))
        .unwrap_or(0);
    drop(p);
    assert_eq!(broker.used(), 0, "memory returned");
    (concat_batches(&schema, &out).unwrap(), err, segments)
}

// ---------------------------------------------------------------------------------------------------------
// The reference: Spark's semantics, one frame at a time.

fn spark_cmp(a: f64, b: f64) -> std::cmp::Ordering {
    use std::cmp::Ordering::*;
    if a == b {
        return Equal;
    }
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Equal,
        (true, false) => Greater,
        (false, true) => Less,
        _ => a.partial_cmp(&b).unwrap(),
    }
}

/// Partitions and (with order keys) peer groups of the input, by plain comparison of the rows.
/// Half-open row ranges.
type Spans = Vec<(usize, usize)>;

fn groups(data: &Data) -> (Spans, Spans) {
    let n = data.k.len();
    let mut parts = vec![];
    let mut peers = vec![];
    let mut s = 0;
    for i in 1..=n {
        if i == n || data.k[i] != data.k[i - 1] {
            parts.push((s, i));
            s = i;
        }
    }
    for &(ps, pe) in &parts {
        let mut g = ps;
        for i in ps + 1..=pe {
            if i == pe || data.d[i] != data.d[i - 1] {
                peers.push((g, i));
                g = i;
            }
        }
    }
    (parts, peers)
}

fn frame_of(fr: &Fr, i: usize, part: (usize, usize), peer: (usize, usize)) -> (usize, usize) {
    let (ps, pe) = (part.0 as i64, part.1 as i64);
    let i = i as i64;
    let lo = match fr.lo {
        B::UP => ps,
        B::P(n) => i - n as i64,
        B::CR if fr.range => peer.0 as i64,
        B::CR => i,
        B::F(n) => i + n as i64,
        B::UF => unreachable!(),
    };
    // Inclusive last row.
    let hi = match fr.hi {
        B::UP => unreachable!(),
        B::P(n) => i - n as i64,
        B::CR if fr.range => peer.1 as i64 - 1,
        B::CR => i,
        B::F(n) => i + n as i64,
        B::UF => pe - 1,
    };
    let lo = lo.max(ps);
    let hi = hi.min(pe - 1);
    if lo > hi {
        (0, 0)
    } else {
        (lo as usize, hi as usize + 1)
    }
}

/// Spark's fold overflows in the frame of this row (the first such row: Spark raises when it produces it).
#[derive(Debug, Clone, Copy)]
struct Overflow(usize);

fn reference(data: &Data, w: &W) -> std::result::Result<ArrayRef, Overflow> {
    let n = data.k.len();
    let (parts, peers) = groups(data);
    let xs: Vec<Option<i64>> = match w.arg {
        2 => data.x.clone(),
        3 => data.y.iter().map(|v| v.map(i64::from)).collect(),
        _ => vec![],
    };
    let fs: Vec<Option<f64>> = match w.arg {
        2 => data.x.iter().map(|v| v.map(|v| v as f64)).collect(),
        3 => data.y.iter().map(|v| v.map(f64::from)).collect(),
        _ => data.f.clone(),
    };
    let mut i64s: Vec<Option<i64>> = vec![];
    let mut i32s: Vec<Option<i32>> = vec![];
    let mut f64s: Vec<Option<f64>> = vec![];
    for &(ps, pe) in &parts {
        for i in ps..pe {
            let peer = *peers.iter().find(|g| g.0 <= i && i < g.1).unwrap();
            let (s, e) = frame_of(&w.frame, i, (ps, pe), peer);
            match w.f {
                F::RowNumber => i32s.push(Some((i - ps + 1) as i32)),
                F::Rank => i32s.push(Some((peer.0 - ps + 1) as i32)),
                F::DenseRank => i32s.push(Some(peers.iter().filter(|g| g.0 >= ps && g.0 <= peer.0).count() as i32)),
                F::Lag(_) | F::Lead(_) => {
                    let off = if let F::Lag(k) = w.f {
                        -k
                    } else if let F::Lead(k) = w.f {
                        k
                    } else {
                        0
                    };
                    let t = i as i64 + off;
                    let inside = t >= ps as i64 && t < pe as i64;
                    match w.arg {
                        2 => i64s.push(if inside { data.x[t as usize] } else { None }),
                        3 => i32s.push(if inside { data.y[t as usize] } else { None }),
                        _ => f64s.push(if inside { data.f[t as usize] } else { None }),
                    }
                }
                F::LagIgnoreNulls(k) => {
                    // The k-th earlier row of the partition with a non-null value (k = 0: the current row).
                    let valid = |j: usize| match w.arg {
                        2 => data.x[j].is_some(),
                        3 => data.y[j].is_some(),
                        _ => data.f[j].is_some(),
                    };
                    let target = if k == 0 { Some(i) } else { (ps..i).rev().filter(|&j| valid(j)).nth(k as usize - 1) };
                    match w.arg {
                        2 => i64s.push(target.and_then(|t| data.x[t])),
                        3 => i32s.push(target.and_then(|t| data.y[t])),
                        _ => f64s.push(target.and_then(|t| data.f[t])),
                    }
                }
                F::CountStar => i64s.push(Some((e - s) as i64)),
                F::Count2 => {
                    i64s.push(Some((s..e).filter(|&j| data.x[j].is_some() && data.f[j].is_some()).count() as i64))
                }
                F::Count => {
                    let c = match w.arg {
                        4 => fs[s..e].iter().filter(|v| v.is_some()).count(),
                        _ => xs[s..e].iter().filter(|v| v.is_some()).count(),
                    };
                    i64s.push(Some(c as i64))
                }
                F::Sum if w.arg == 4 => {
                    let mut acc: Option<f64> = None;
                    for v in fs[s..e].iter().flatten() {
                        acc = Some(acc.unwrap_or(0.0) + v);
                    }
                    f64s.push(acc);
                }
                F::Sum => {
                    let mut acc: Option<i64> = None;
                    for &v in xs[s..e].iter().flatten() {
                        let a = acc.unwrap_or(0);
                        acc = Some(if w.ansi { a.checked_add(v).ok_or(Overflow(i))? } else { a.wrapping_add(v) });
                    }
                    i64s.push(acc);
                }
                F::Avg => {
                    let mut sum = 0.0f64;
                    let mut cnt = 0i64;
                    for v in &fs[s..e] {
                        sum += v.unwrap_or(0.0);
                        cnt += v.is_some() as i64;
                    }
                    f64s.push((cnt > 0).then(|| sum / cnt as f64));
                }
                F::Min | F::Max => {
                    let mut best: Option<f64> = None;
                    let mut best_i: Option<i64> = None;
                    for j in s..e {
                        if w.arg == 4 {
                            let Some(v) = fs[j] else { continue };
                            let better = match best {
                                None => true,
                                Some(b) => {
                                    let c = spark_cmp(v, b);
                                    if w.f == F::Max {
                                        c.is_gt()
                                    } else {
                                        c.is_lt()
                                    }
                                }
                            };
                            if better {
                                best = Some(v);
                            }
                        } else {
                            let Some(v) = xs[j] else { continue };
                            let better = match best_i {
                                None => true,
                                Some(b) => {
                                    if w.f == F::Max {
                                        v > b
                                    } else {
                                        v < b
                                    }
                                }
                            };
                            if better {
                                best_i = Some(v);
                            }
                        }
                    }
                    match w.arg {
                        2 => i64s.push(best_i),
                        3 => i32s.push(best_i.map(|v| v as i32)),
                        _ => f64s.push(best),
                    }
                }
            }
        }
    }
    let t = result_type(w);
    let arr: ArrayRef = match t {
        DataType::Int64 => Arc::new(Int64Array::from(i64s)),
        DataType::Int32 => Arc::new(Int32Array::from(i32s)),
        _ => Arc::new(Float64Array::from(f64s)),
    };
    assert_eq!(arr.len(), n);
    Ok(arr)
}

/// Equal values and validity; doubles compared bit for bit.
fn assert_same(actual: &ArrayRef, expected: &ArrayRef, what: &str) {
    assert_eq!(actual.data_type(), expected.data_type(), "{what}: type");
    assert_eq!(actual.len(), expected.len(), "{what}: length");
    for i in 0..actual.len() {
        assert_eq!(actual.is_valid(i), expected.is_valid(i), "{what}: validity of row {i}");
        if actual.is_null(i) {
            continue;
        }
        let same = match actual.data_type() {
            DataType::Float64 => {
                actual.as_primitive::<arrow::datatypes::Float64Type>().value(i).to_bits()
                    == expected.as_primitive::<arrow::datatypes::Float64Type>().value(i).to_bits()
            }
            DataType::Int64 => {
                actual.as_primitive::<arrow::datatypes::Int64Type>().value(i)
                    == expected.as_primitive::<arrow::datatypes::Int64Type>().value(i)
            }
            DataType::Int32 => {
                actual.as_primitive::<arrow::datatypes::Int32Type>().value(i)
                    == expected.as_primitive::<arrow::datatypes::Int32Type>().value(i)
            }
            other => panic!("unexpected {other}"),
        };
        assert!(same, "{what}: row {i}: native {:?} vs reference {:?}", actual.slice(i, 1), expected.slice(i, 1));
    }
}

/// Runs `ws` as one operator (prefix on and off, whole partitions and tiny segments) and compares every column
/// with the reference; returns whether the reference overflowed (then the operator must have raised Spark's
/// error).
fn check(data: &Data, ws: &[W], rng: &mut StdRng, what: &str) -> bool {
    check_segments(data, ws, rng, what).0
}

/// [`check`], also returning the segments the tiny-segment runs evaluated.
fn check_segments(data: &Data, ws: &[W], rng: &mut StdRng, what: &str) -> (bool, u64) {
    let mut segments = 0;
    let exprs: Vec<_> = ws.iter().enumerate().map(|(i, w)| pb_window_expr(w, i)).collect();
    let results: Vec<std::result::Result<ArrayRef, Overflow>> = ws.iter().map(|w| reference(data, w)).collect();
    // Spark raises at the first row where any expression's frame overflows.
    let first_overflow = results.iter().filter_map(|r| r.as_ref().err().map(|o| o.0)).min();
    let expected: std::result::Result<Vec<ArrayRef>, Overflow> = match first_overflow {
        Some(row) => Err(Overflow(row)),
        None => Ok(results.into_iter().map(|r| r.unwrap()).collect()),
    };
    let input = batches(data, rng);
    let tiny = rng.random_range(1..8);
    for (prefix, seg) in [(true, 0), (false, 0), (true, tiny), (false, tiny)] {
        let batch_size = rng.random_range(1..64);
        let plan = with_segment_rows(window_plan(exprs.clone(), prefix, batch_size), seg);
        let (rows, err, n) = run_until_error(&plan, input.clone(), 1 << 30);
        segments += n;
        let what = &format!("{what} segment_rows={seg}");
        if let Err(Overflow(row)) = expected {
            // Exactly the rows Spark produces before it raises reach the consumer.
            assert_eq!(rows.num_rows(), row, "{what} prefix={prefix}: rows before the overflow");
        }
        let got = match err {
            Some(e) => Err(e),
            None => Ok(rows),
        };
        match (&expected, got) {
            (Ok(exp), Ok(got)) => {
                assert_eq!(got.num_rows(), data.k.len());
                for (i, e) in exp.iter().enumerate() {
                    assert_same(got.column(5 + i), e, &format!("{what} prefix={prefix} {:?}", ws[i]));
                }
                // The input columns pass through unchanged.
                assert_eq!(got.column(2).as_ref(), &Int64Array::from(data.x.clone()) as &dyn Array);
            }
            (Err(Overflow(_)), Err(e)) => assert_overflow_error(&e),
            (Ok(_), Err(e)) => panic!("{what} prefix={prefix}: native error {e} where Spark's fold does not overflow"),
            (Err(Overflow(_)), Ok(_)) => panic!("{what} prefix={prefix}: Spark's fold overflows, native returned rows"),
        }
    }
    (expected.is_err(), segments)
}

fn assert_overflow_error(e: &DataFusionError) {
    let spark = find_spark_error(e).unwrap_or_else(|| panic!("not a Spark error: {e}"));
    assert_eq!(spark.error_class, "ARITHMETIC_OVERFLOW");
    let param = |k: &str| spark.params.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    assert_eq!(param("message"), Some("long overflow"));
    assert_eq!(param("alternative"), Some(" Use 'try_add' to tolerate overflow and return NULL instead."));
    assert_eq!(param("config"), Some("\"spark.sql.ansi.enabled\""));
}

fn all_frames() -> Vec<Fr> {
    vec![
        rows(B::UP, B::CR),
        rows(B::P(0), B::CR),
        rows(B::P(1), B::CR),
        rows(B::P(2), B::CR),
        rows(B::P(6), B::CR),
        rows(B::P(29), B::CR),
        rows(B::P(3), B::F(2)),
        rows(B::CR, B::F(4)),
        rows(B::F(1), B::F(3)),
        rows(B::P(5), B::P(2)),
        rows(B::P(0), B::F(0)),
        rows(B::CR, B::UF),
        rows(B::P(2), B::UF),
        rows(B::F(2), B::UF),
        rows(B::UP, B::UF),
        rows(B::UP, B::F(1)),
        rows(B::UP, B::P(1)),
        range(B::UP, B::CR),
        range(B::CR, B::UF),
        range(B::UP, B::UF),
        range(B::CR, B::CR),
    ]
}

fn aggregates(frame: Fr, ansi: bool) -> Vec<W> {
    let w = |f, arg| W { f, arg, frame, ansi };
    vec![
        w(F::Sum, 2),
        w(F::Sum, 3),
        w(F::Sum, 4),
        w(F::Count, 2),
        w(F::Count, 4),
        w(F::CountStar, 2),
        w(F::Count2, 2),
        w(F::Avg, 2),
        w(F::Avg, 3),
        w(F::Avg, 4),
        w(F::Min, 2),
        w(F::Max, 2),
        w(F::Min, 4),
        w(F::Max, 4),
        w(F::Max, 3),
    ]
}

// ---------------------------------------------------------------------------------------------------------

#[test]
fn every_frame_shape_and_aggregate_matches_the_reference_fold_legacy() {
    let mut rng = StdRng::seed_from_u64(1);
    for (round, values) in [Values::Small, Values::Huge, Values::Edge(0.3)].into_iter().enumerate() {
        let data = gen(&mut rng, 12, 40, values, false);
        let ws: Vec<W> = all_frames().into_iter().flat_map(|f| aggregates(f, false)).collect();
        assert!(!check(&data, &ws, &mut rng, &format!("legacy round {round} {values:?}")));
    }
}

#[test]
fn ansi_without_overflow_matches_the_reference_fold() {
    let mut rng = StdRng::seed_from_u64(2);
    for round in 0..3 {
        let data = gen(&mut rng, 12, 40, Values::Small, round == 2);
        let ws: Vec<W> = all_frames().into_iter().flat_map(|f| aggregates(f, true)).collect();
        assert!(!check(&data, &ws, &mut rng, &format!("ansi round {round}")));
    }
}

#[test]
fn ansi_raises_overflow_exactly_where_the_reference_fold_does() {
    let mut rng = StdRng::seed_from_u64(3);
    let frames = all_frames();
    let wide = [
        rows(B::UP, B::UF),
        rows(B::CR, B::UF),
        rows(B::P(2), B::UF),
        rows(B::P(3), B::F(2)),
        rows(B::F(1), B::F(3)),
        range(B::CR, B::UF),
        range(B::UP, B::UF),
    ];
    let (mut errors, mut fine, mut subtle) = (0, 0, 0);
    for case in 0..600 {
        let big = rng.random_range(0.02..0.5);
        let parts = rng.random_range(1..4);
        let data = gen(&mut rng, parts, 12, Values::Edge(big), false);
        // Several horizons at once, over the same measure.
        // Half the cases: one wide frame, where a partial sum can overflow while every frame total fits.
        let ws: Vec<W> = if case % 2 == 0 {
            (0..rng.random_range(1..4))
                .map(|_| W { f: F::Sum, arg: 2, frame: frames[rng.random_range(0..frames.len())], ansi: true })
                .collect()
        } else {
            vec![W { f: F::Sum, arg: 2, frame: wide[rng.random_range(0..wide.len())], ansi: true }]
        };
        if check(&data, &ws, &mut rng, &format!("ansi case {case}")) {
            errors += 1;
            subtle += !ws.iter().any(|w| some_frame_total_overflows(&data, w)) as usize;
        } else {
            fine += 1;
        }
    }
    eprintln!("ANSI cases: {errors} overflow ({subtle} where every frame total fits), {fine} without");
    assert!(errors >= 50 && fine >= 50, "both outcomes well represented: {errors} errors, {fine} without");
    assert!(subtle >= 10, "cases where only a partial sum overflows: {subtle}");
}

/// Whether some frame's exact total leaves the 64-bit range (a weaker condition than Spark's fold overflowing).
fn some_frame_total_overflows(data: &Data, w: &W) -> bool {
    let (parts, peers) = groups(data);
    parts.iter().any(|&(ps, pe)| {
        (ps..pe).any(|i| {
            let peer = *peers.iter().find(|g| g.0 <= i && i < g.1).unwrap();
            let (s, e) = frame_of(&w.frame, i, (ps, pe), peer);
            let total: i128 = data.x[s..e].iter().flatten().map(|&v| v as i128).sum();
            total > i64::MAX as i128 || total < i64::MIN as i128
        })
    })
}

#[test]
fn ansi_error_when_a_partial_sum_overflows_though_the_frame_total_fits() {
    let mut rng = StdRng::seed_from_u64(4);
    let frame = rows(B::P(2), B::CR);
    let w = [W { f: F::Sum, arg: 2, frame, ansi: true }];
    let data = |x: Vec<Option<i64>>| Data {
        k: vec![Some(1); x.len()],
        d: (0..x.len() as i64).map(Some).collect(),
        y: vec![None; x.len()],
        f: vec![None; x.len()],
        x,
    };
    // CURRENT ROW .. UNBOUNDED FOLLOWING over [MAX, 1, -1]: the first frame's total is MAX, but Spark's fold
    // computes MAX + 1 on the way. No frame total leaves the range, so only the partial-sum check catches it.
    let suffix = [W { f: F::Sum, arg: 2, frame: rows(B::CR, B::UF), ansi: true }];
    assert!(check(&data(vec![Some(i64::MAX), Some(1), Some(-1)]), &suffix, &mut rng, "max+1-1"));
    // The same values in another order: every partial sum fits.
    assert!(!check(&data(vec![Some(i64::MAX), Some(-1), Some(1)]), &suffix, &mut rng, "max-1+1"));
    // NULLs inside the frame do not reset the fold: [MAX, NULL, 1, -1] overflows at MAX + 1.
    assert!(check(&data(vec![Some(i64::MAX), None, Some(1), Some(-1)]), &suffix, &mut rng, "max,null,1,-1"));
    // The same at the negative end, over a sliding frame [MIN, -1, 1] (3 PRECEDING .. 1 FOLLOWING, whose
    // shorter frames at the partition's start are [MIN] and [MIN, -1]: the latter's total overflows too).
    let x = vec![Some(5), Some(i64::MIN + 1), Some(-1), Some(-1), Some(2)];
    let sliding = [W { f: F::Sum, arg: 2, frame: rows(B::CR, B::F(3)), ansi: true }];
    // Frames: [5, MIN+1, -1, -1] folds to MIN+6, MIN+5, MIN+4; [MIN+1, -1, -1, 2] reaches MIN, then MIN - 1
    // overflows though the total MIN + 1 fits.
    assert!(check(&data(x), &sliding, &mut rng, "min side"));
    // A running prefix far past 2^63 while no frame overflows: 2^61 per row, 3 rows per frame.
    let x = vec![Some(1i64 << 61); 50];
    assert!(!check(&data(x), &w, &mut rng, "prefix past 2^63"));
    // NULLs inside the frame do not reset the fold: [MAX, NULL, 1] overflows.
    assert!(check(&data(vec![Some(i64::MAX), None, Some(1)]), &w, &mut rng, "max,null,1"));
    // One-row frames never overflow.
    let mut x = vec![Some(i64::MAX), Some(-5)];
    x.extend(vec![Some(1); 3]);
    assert!(!check(&data(x), &[W { f: F::Sum, arg: 2, frame: rows(B::CR, B::CR), ansi: true }], &mut rng, "cr"));
}

#[test]
fn ranking_and_offset_functions() {
    let mut rng = StdRng::seed_from_u64(5);
    for ties in [false, true] {
        let data = gen(&mut rng, 10, 30, Values::Small, ties);
        let any = rows(B::UP, B::CR);
        let mut ws = vec![
            W { f: F::RowNumber, arg: 2, frame: any, ansi: false },
            W { f: F::Rank, arg: 2, frame: any, ansi: false },
            W { f: F::DenseRank, arg: 2, frame: any, ansi: false },
        ];
        for (f, arg) in [
            (F::Lag(1), 2),
            (F::Lag(3), 3),
            (F::Lead(1), 4),
            (F::Lead(2), 2),
            (F::Lag(0), 2),
            (F::Lag(-1), 3),
            (F::LagIgnoreNulls(1), 2),
            (F::LagIgnoreNulls(2), 4),
            (F::LagIgnoreNulls(3), 3),
            (F::LagIgnoreNulls(0), 2),
        ] {
            ws.push(W { f, arg, frame: any, ansi: false });
        }
        assert!(!check(&data, &ws, &mut rng, &format!("ranking ties={ties}")));
    }
}

#[test]
fn ties_under_range_frames() {
    let mut rng = StdRng::seed_from_u64(6);
    let data = gen(&mut rng, 10, 30, Values::Small, true);
    // RANGE frames over peers are deterministic even with ties (ROWS frames are not, in Spark either).
    let ws: Vec<W> = [range(B::UP, B::CR), range(B::CR, B::UF), range(B::CR, B::CR), range(B::UP, B::UF)]
        .into_iter()
        .flat_map(|f| aggregates(f, true).into_iter().filter(|w| w.f != F::Min && w.f != F::Max || w.arg != 4))
        .collect();
    assert!(!check(&data, &ws, &mut rng, "range ties"));
}

#[test]
fn lag_lead_default_values() {
    let mut rng = StdRng::seed_from_u64(7);
    let data = gen(&mut rng, 5, 8, Values::Small, false);
    let mut lag = pb_window_expr(&W { f: F::Lag(2), arg: 2, frame: rows(B::UP, B::CR), ansi: false }, 0);
    lag.default_value = Some(lit_long(-7));
    let mut lead = pb_window_expr(&W { f: F::Lead(1), arg: 2, frame: rows(B::UP, B::CR), ansi: false }, 1);
    // The default is evaluated on the current row: lead(x, 1, d).
    lead.default_value = Some(col(1, &DataType::Int64));
    let got = run(&window_plan(vec![lag, lead], true, 7), batches(&data, &mut rng)).unwrap();
    let (parts, _) = groups(&data);
    let lag_col = got.column(5).as_primitive::<arrow::datatypes::Int64Type>();
    let lead_col = got.column(6).as_primitive::<arrow::datatypes::Int64Type>();
    for (ps, pe) in parts {
        for i in ps..pe {
            let want_lag = if i >= ps + 2 { data.x[i - 2] } else { Some(-7) };
            let want_lead = if i + 1 < pe { data.x[i + 1] } else { data.d[i] };
            assert_eq!(lag_col.is_valid(i).then(|| lag_col.value(i)), want_lag, "lag row {i}");
            assert_eq!(lead_col.is_valid(i).then(|| lead_col.value(i)), want_lead, "lead row {i}");
        }
    }
}

#[test]
fn empty_input_and_empty_batches() {
    let mut rng = StdRng::seed_from_u64(8);
    let ws: Vec<W> = aggregates(rows(B::P(2), B::CR), true);
    let exprs: Vec<_> = ws.iter().enumerate().map(|(i, w)| pb_window_expr(w, i)).collect();
    let got = run(&window_plan(exprs.clone(), true, 16), vec![]).unwrap();
    assert_eq!(got.num_rows(), 0);
    let empty = RecordBatch::new_empty(schema());
    let got = run(&window_plan(exprs, true, 16), vec![empty.clone(), empty]).unwrap();
    assert_eq!(got.num_rows(), 0);
    // One row per partition: every frame shorter than its horizon.
    let data = gen(&mut rng, 30, 1, Values::Small, false);
    let ws: Vec<W> = all_frames().into_iter().flat_map(|f| aggregates(f, true)).collect();
    assert!(!check(&data, &ws, &mut rng, "single-row partitions"));
}

#[test]
fn unsupported_shapes_are_plan_errors() {
    let base = W { f: F::Sum, arg: 2, frame: rows(B::P(2), B::CR), ansi: false };
    let try_plan = |x: pb::WindowExpr| -> Result<()> {
        let p = window_plan(vec![x], true, 16);
        NativePlan::try_new(&p.encode_to_vec(), vec![reader(vec![], schema())], Arc::new(FixedBroker::new(1 << 20)))
            .map(|_| ())
    };
    assert!(try_plan(pb_window_expr(&base, 0)).is_ok());
    // RANGE with value offsets.
    let x = pb_window_expr(&W { frame: range(B::P(3), B::CR), ..base }, 0);
    assert!(matches!(try_plan(x), Err(DataFusionError::Plan(_))));
    // Lower bound after the upper bound.
    let x = pb_window_expr(&W { frame: rows(B::F(2), B::F(1)), ..base }, 0);
    assert!(matches!(try_plan(x), Err(DataFusionError::Plan(_))));
    // LEAD ... IGNORE NULLS (Spark asserts offset <= partition length there), and IGNORE NULLS on aggregates.
    let mut x = pb_window_expr(&W { f: F::Lead(1), ..base }, 0);
    x.ignore_nulls = true;
    assert!(matches!(try_plan(x), Err(DataFusionError::Plan(_))));
    let mut x = pb_window_expr(&base, 0);
    x.ignore_nulls = true;
    assert!(matches!(try_plan(x), Err(DataFusionError::Plan(_))));
    let mut x = pb_window_expr(&W { f: F::Lag(1), ..base }, 0);
    x.ignore_nulls = true;
    assert!(try_plan(x).is_ok());
    // try_sum.
    let mut x = pb_window_expr(&base, 0);
    x.eval_mode = pb::EvalMode::Try as i32;
    assert!(matches!(try_plan(x), Err(DataFusionError::Plan(_))));
    // A result type other than Spark's.
    let mut x = pb_window_expr(&base, 0);
    x.result_type = Some(pb_type(&DataType::Float64));
    assert!(matches!(try_plan(x), Err(DataFusionError::Plan(_))));
}

// ---------------------------------------------------------------------------------------------------------
// DataFusion's own sliding window operator, where its types and semantics agree with Spark's (integral SUM with
// wrap-around, COUNT, integral MIN/MAX, row_number; bounded ROWS frames).

mod datafusion_reference {
    use super::*;
    use arrow::compute::{cast, SortOptions};
    use datafusion_common::ScalarValue;
    use datafusion_execution::TaskContext;
    use datafusion_expr::{WindowFrame, WindowFrameBound, WindowFrameUnits, WindowFunctionDefinition};
    use datafusion_physical_expr::expressions::Column;
    use datafusion_physical_expr::LexOrdering;
    use datafusion_physical_expr::PhysicalSortExpr;
    use datafusion_physical_plan::sorts::sort::SortExec;
    use datafusion_physical_plan::windows::{create_window_expr, BoundedWindowAggExec};
    use datafusion_physical_plan::{collect, ExecutionPlan, InputOrderMode};
    use ember_engine::operators::InputExec;

    fn df_bound(b: B) -> WindowFrameBound {
        match b {
            B::UP => WindowFrameBound::Preceding(ScalarValue::UInt64(None)),
            B::P(n) => WindowFrameBound::Preceding(ScalarValue::UInt64(Some(n))),
            B::CR => WindowFrameBound::CurrentRow,
            B::F(n) => WindowFrameBound::Following(ScalarValue::UInt64(Some(n))),
            B::UF => WindowFrameBound::Following(ScalarValue::UInt64(None)),
        }
    }

    fn datafusion_window(data_batches: Vec<RecordBatch>, ws: &[W]) -> Vec<ArrayRef> {
        let s = schema();
        let input: Arc<dyn ExecutionPlan> = Arc::new(InputExec::new(0, s.clone(), reader(data_batches, s.clone())));
        let k: Arc<dyn datafusion_physical_expr::PhysicalExpr> = Arc::new(Column::new("k", 0));
        let asc = SortOptions { descending: false, nulls_first: true };
        let order = vec![PhysicalSortExpr::new(Arc::new(Column::new("d", 1)), asc)];
        // Already sorted; the sort only tells DataFusion so (the order keys are unique in each partition).
        let sorted = LexOrdering::new([PhysicalSortExpr::new(k.clone(), asc), order[0].clone()]).unwrap();
        let input: Arc<dyn ExecutionPlan> = Arc::new(SortExec::new(sorted, input));
        let exprs = ws
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let fun = match w.f {
                    F::Sum => WindowFunctionDefinition::AggregateUDF(datafusion_functions_aggregate::sum::sum_udaf()),
                    F::Count => {
                        WindowFunctionDefinition::AggregateUDF(datafusion_functions_aggregate::count::count_udaf())
                    }
                    F::Min => {
                        WindowFunctionDefinition::AggregateUDF(datafusion_functions_aggregate::min_max::min_udaf())
                    }
                    F::Max => {
                        WindowFunctionDefinition::AggregateUDF(datafusion_functions_aggregate::min_max::max_udaf())
                    }
                    F::RowNumber => {
                        WindowFunctionDefinition::WindowUDF(datafusion_functions_window::row_number::row_number_udwf())
                    }
                    other => panic!("{other:?} is not compared with DataFusion"),
                };
                let args: Vec<Arc<dyn datafusion_physical_expr::PhysicalExpr>> = if w.f == F::RowNumber {
                    vec![]
                } else {
                    vec![Arc::new(Column::new(s.field(w.arg).name(), w.arg))]
                };
                let frame = WindowFrame::new_bounds(WindowFrameUnits::Rows, df_bound(w.frame.lo), df_bound(w.frame.hi));
                create_window_expr(
                    &fun,
                    format!("df{i}"),
                    &args,
                    std::slice::from_ref(&k),
                    &order,
                    Arc::new(frame),
                    s.clone(),
                    false,
                    false,
                    None,
                )
                .unwrap()
            })
            .collect();
        let exec = Arc::new(BoundedWindowAggExec::try_new(exprs, input, InputOrderMode::Sorted, false).unwrap());
        let out = futures::executor::block_on(collect(exec, Arc::new(TaskContext::default()))).unwrap();
        let out = concat_batches(&out[0].schema(), &out).unwrap();
        (0..ws.len()).map(|i| out.column(5 + i).clone()).collect()
    }

    #[test]
    fn matches_datafusion_bounded_window_agg_exec() {
        let mut rng = StdRng::seed_from_u64(9);
        let frames = [
            rows(B::UP, B::CR),
            rows(B::P(0), B::CR),
            rows(B::P(2), B::CR),
            rows(B::P(29), B::CR),
            rows(B::P(3), B::F(2)),
            rows(B::CR, B::F(4)),
            rows(B::F(1), B::F(3)),
            rows(B::P(5), B::P(2)),
        ];
        for values in [Values::Small, Values::Huge] {
            let data = gen(&mut rng, 15, 40, values, false);
            let mut ws = vec![W { f: F::RowNumber, arg: 2, frame: rows(B::UP, B::CR), ansi: false }];
            for frame in frames {
                for (f, arg) in [(F::Sum, 2), (F::Count, 2), (F::Min, 2), (F::Max, 2)] {
                    ws.push(W { f, arg, frame, ansi: false });
                }
            }
            let input = batches(&data, &mut rng);
            let theirs = datafusion_window(input.clone(), &ws);
            for prefix in [true, false] {
                let exprs: Vec<_> = ws.iter().enumerate().map(|(i, w)| pb_window_expr(w, i)).collect();
                let ours = run(&window_plan(exprs, prefix, 13), input.clone()).unwrap();
                for (i, theirs) in theirs.iter().enumerate() {
                    // DataFusion's row_number is UInt64, Spark's INT; COUNT is BIGINT on both sides.
                    let ours = ours.column(5 + i);
                    let theirs = cast(theirs, ours.data_type()).unwrap();
                    assert_eq!(ours.as_ref(), theirs.as_ref(), "{values:?} prefix={prefix} {:?}", ws[i]);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Metrics and memory (timing: `benches/prefix_window.rs`).

pub(crate) fn exec_window(
    ws: &[W],
    prefix: bool,
    input: Vec<RecordBatch>,
    pool_bytes: usize,
) -> (Result<Vec<RecordBatch>>, Arc<dyn datafusion_physical_plan::ExecutionPlan>) {
    exec_window_segments(ws, prefix, input, pool_bytes, 0)
}

fn exec_window_segments(
    ws: &[W],
    prefix: bool,
    input: Vec<RecordBatch>,
    pool_bytes: usize,
    segment_rows: u64,
) -> (Result<Vec<RecordBatch>>, Arc<dyn datafusion_physical_plan::ExecutionPlan>) {
    use datafusion_execution::memory_pool::GreedyMemoryPool;
    use datafusion_execution::runtime_env::RuntimeEnvBuilder;
    use datafusion_execution::TaskContext;
    use ember_engine::operators::InputExec;
    use ember_engine::planner::prefix_window::create_prefix_window;
    let s = schema();
    let plan = window_plan(ws.iter().enumerate().map(|(i, w)| pb_window_expr(w, i)).collect(), prefix, 0);
    let window = match with_segment_rows(plan, segment_rows).root.unwrap().kind {
        Some(pb::operator::Kind::PrefixWindow(w)) => w,
        _ => unreachable!(),
    };
    let input = Arc::new(InputExec::new(0, s.clone(), reader(input, s)));
    let exec = create_prefix_window(&window, input).unwrap();
    let runtime = RuntimeEnvBuilder::new().with_memory_pool(Arc::new(GreedyMemoryPool::new(pool_bytes))).build_arc();
    let ctx = Arc::new(TaskContext::default().with_runtime(runtime.unwrap()));
    let out = futures::executor::block_on(datafusion_physical_plan::collect(exec.clone(), ctx));
    (out, exec)
}

#[test]
fn metrics_count_prefix_and_refold_frames() {
    let mut rng = StdRng::seed_from_u64(10);
    let data = gen(&mut rng, 5, 20, Values::Small, false);
    let n = data.k.len();
    let frame = rows(B::P(2), B::CR);
    let ws = [
        W { f: F::Sum, arg: 2, frame, ansi: false },
        W { f: F::Sum, arg: 2, frame: rows(B::P(6), B::CR), ansi: true },
        W { f: F::Count, arg: 2, frame, ansi: false },
        W { f: F::Sum, arg: 4, frame, ansi: false },
        W { f: F::Max, arg: 2, frame, ansi: false },
    ];
    let mut running = ws.to_vec();
    running.push(W { f: F::Sum, arg: 2, frame: rows(B::UP, B::CR), ansi: true });
    running.push(W { f: F::Sum, arg: 4, frame: rows(B::UP, B::F(1)), ansi: true });
    for (prefix, seg) in [(true, 0), (false, 0), (true, 3), (false, 3)] {
        for ws in [&ws[..], &running[..]] {
            let (out, exec) = exec_window_segments(ws, prefix, batches(&data, &mut rng), 1 << 30, seg);
            assert_eq!(out.unwrap().iter().map(|b| b.num_rows()).sum::<usize>(), n);
            let m = exec.metrics().unwrap();
            let get = |name: &str| m.sum_by_name(name).map(|v| v.as_usize()).unwrap_or(0);
            // Integral SUM/COUNT frames per row by prefix; the DOUBLE sums always re-fold; MAX counts as neither;
            // segmented partitions count the same.
            let extra = ws.len() - 5;
            let (want_prefix, want_refold) =
                if prefix { ((3 + extra / 2) * n, (1 + extra / 2) * n) } else { (0, (4 + extra) * n) };
            let got = (get("prefix_frames"), get("refold_frames"));
            assert_eq!(got, (want_prefix, want_refold), "prefix={prefix} segment_rows={seg} {}", ws.len());
            assert_eq!(m.output_rows(), Some(n));
            assert_eq!(get("segmented_partitions") > 0, seg > 0, "segment_rows={seg}");
        }
    }
}

/// The native plan forwards an operator's own metrics by name (the JVM shows them as SQL metrics).
#[test]
fn native_plan_reports_named_metrics_per_operator() {
    let mut rng = StdRng::seed_from_u64(11);
    let data = gen(&mut rng, 4, 30, Values::Small, false);
    let n = data.k.len() as u64;
    let exprs = vec![
        pb_window_expr(&W { f: F::Sum, arg: 2, frame: rows(B::P(3), B::CR), ansi: false }, 0),
        pb_window_expr(&W { f: F::Sum, arg: 4, frame: rows(B::P(3), B::CR), ansi: false }, 1),
    ];
    let plan = window_plan(exprs, true, 64);
    let broker = Arc::new(FixedBroker::new(1 << 30));
    let mut p =
        NativePlan::try_new(&plan.encode_to_vec(), vec![reader(batches(&data, &mut rng), schema())], broker).unwrap();
    while p.next_batch().unwrap().is_some() {}
    let window_id = plan.root.as_ref().unwrap().id;
    let m = p.metrics().into_iter().find(|m| m.id == window_id).expect("window metrics");
    let named = |name: &str| m.named.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
    assert_eq!((named("prefix_frames"), named("refold_frames")), (Some(n), Some(n)));
    assert_eq!(m.output_rows, n);
}

/// One partition of `rows` rows (x = i, y = -i, f = i / 3), in batches of 0..40 rows that own their buffers
/// (so each batch reports its own size, not a shared one's).
fn one_big_partition(rng: &mut StdRng, rows: usize) -> (Data, Vec<RecordBatch>) {
    let mut data = gen(rng, 1, 1, Values::Small, false);
    for i in 1..rows as i64 {
        data.k.push(data.k[0]);
        data.d.push(Some(i / 2));
        data.x.push((i % 7 != 0).then_some(i));
        data.y.push(Some(-i as i32));
        data.f.push(Some(i as f64 / 3.0));
    }
    let input = batches(&data, rng)
        .iter()
        .map(|b| {
            let idx = arrow::array::UInt32Array::from_iter_values(0..b.num_rows() as u32);
            arrow::compute::take_record_batch(b, &idx).unwrap()
        })
        .collect();
    (data, input)
}

#[test]
fn a_partition_that_does_not_fit_is_a_clean_error_only_for_whole_partition_specs() {
    let mut rng = StdRng::seed_from_u64(11);
    // One partition of 20k rows against a pool of 64 KiB.
    let (_, input) = one_big_partition(&mut rng, 20_000);
    let whole = [W { f: F::Sum, arg: 2, frame: rows(B::P(2), B::UF), ansi: false }];
    let (out, _) = exec_window(&whole, true, input.clone(), 64 << 10);
    let err = out.unwrap_err().to_string();
    assert!(err.contains("needs the whole partition in memory"), "{err}");
    // With room it runs.
    let (out, _) = exec_window(&whole, true, input.clone(), 1 << 30);
    assert_eq!(out.unwrap().iter().map(|b| b.num_rows()).sum::<usize>(), 20_000);
    // A bounded spec is evaluated in segments (the pool's refusal cuts them before the default segment size).
    let bounded = [W { f: F::Sum, arg: 2, frame: rows(B::P(2), B::CR), ansi: false }];
    let (out, exec) = exec_window(&bounded, true, input, 64 << 10);
    assert_eq!(out.unwrap().iter().map(|b| b.num_rows()).sum::<usize>(), 20_000);
    let m = exec.metrics().unwrap();
    assert_eq!(m.sum_by_name("segmented_partitions").map(|v| v.as_usize()), Some(1));
    assert!(m.sum_by_name("window_segments").unwrap().as_usize() > 1);
}

/// Every segmentable frame shape (no UNBOUNDED FOLLOWING, RANGE only up to the peer group).
fn segmentable_frames() -> Vec<Fr> {
    all_frames().into_iter().filter(|f| f.hi != B::UF && !(f.range && f.lo == B::CR && f.hi != B::CR)).collect()
}

#[test]
fn segmented_evaluation_matches_the_reference_for_every_bounded_frame() {
    let mut rng = StdRng::seed_from_u64(20);
    for (round, values) in [Values::Small, Values::Huge, Values::Edge(0.3), Values::Small].into_iter().enumerate() {
        // Partitions up to 70 rows, some shorter than a segment, some many segments long; ties in the last round.
        let data = gen(&mut rng, 8, 70, values, round == 3);
        for ansi in [false, true] {
            if ansi && !matches!(values, Values::Small) {
                continue;
            }
            let ws: Vec<W> = segmentable_frames()
                .into_iter()
                .flat_map(|f| aggregates(f, ansi))
                // MIN/MAX over doubles under RANGE with ties: equal keys, -0.0 vs 0.0 depends on row order only.
                .collect();
            let (overflow, segments) = check_segments(&data, &ws, &mut rng, &format!("round {round} ansi={ansi}"));
            assert!(!overflow);
            assert!(segments > 8, "round {round}: evaluated in segments ({segments})");
        }
    }
}

#[test]
fn segmented_ranking_and_offsets_with_ties_across_segment_borders() {
    let mut rng = StdRng::seed_from_u64(21);
    for ties in [false, true] {
        let data = gen(&mut rng, 6, 60, Values::Small, ties);
        let any = rows(B::UP, B::CR);
        let mut ws = vec![
            W { f: F::RowNumber, arg: 2, frame: any, ansi: false },
            W { f: F::Rank, arg: 2, frame: any, ansi: false },
            W { f: F::DenseRank, arg: 2, frame: any, ansi: false },
        ];
        for (f, arg) in [
            (F::Lag(1), 2),
            (F::Lag(3), 3),
            (F::Lead(1), 4),
            (F::Lead(9), 2),
            (F::Lag(0), 2),
            (F::Lag(-1), 3),
            // IGNORE NULLS: the last non-null values before a segment are carried, however far back.
            (F::LagIgnoreNulls(1), 2),
            (F::LagIgnoreNulls(2), 4),
            (F::LagIgnoreNulls(5), 3),
            (F::LagIgnoreNulls(0), 2),
        ] {
            ws.push(W { f, arg, frame: any, ansi: false });
        }
        let (_, segments) = check_segments(&data, &ws, &mut rng, &format!("ranking ties={ties}"));
        assert!(segments > 6, "evaluated in segments ({segments})");
        // Without rank / dense_rank cuts are anywhere, also inside a run of ties.
        let (_, segments) = check_segments(&data, &ws[..1], &mut rng, &format!("row_number ties={ties}"));
        assert!(segments > 6);
        ws.drain(..3);
        let (_, segments) = check_segments(&data, &ws, &mut rng, &format!("offsets ties={ties}"));
        assert!(segments > 6);
    }
}

#[test]
fn segmented_ansi_overflow_at_the_same_row_as_the_reference() {
    let mut rng = StdRng::seed_from_u64(22);
    let frames = segmentable_frames();
    let (mut errors, mut fine, mut segmented) = (0, 0, 0);
    for case in 0..300 {
        let big = rng.random_range(0.02..0.4);
        let parts = rng.random_range(1..3);
        let data = gen(&mut rng, parts, 40, Values::Edge(big), false);
        let ws: Vec<W> = (0..rng.random_range(1..4))
            .map(|_| W { f: F::Sum, arg: 2, frame: frames[rng.random_range(0..frames.len())], ansi: true })
            .collect();
        let (overflow, segments) = check_segments(&data, &ws, &mut rng, &format!("ansi case {case}"));
        if overflow {
            errors += 1;
        } else {
            fine += 1;
        }
        segmented += (segments > 0) as usize;
    }
    eprintln!("segmented ANSI cases: {errors} overflow, {fine} without, {segmented} segmented");
    assert!(errors >= 30 && fine >= 30 && segmented >= 200, "{errors} errors, {fine} without, {segmented}");
    // A running sum whose overflow comes many segments in: 2^60 per row overflows at row 8 (2^63).
    let x: Vec<Option<i64>> = vec![Some(1 << 60); 40];
    let data = Data {
        k: vec![Some(1); x.len()],
        d: (0..x.len() as i64).map(Some).collect(),
        y: vec![None; x.len()],
        f: vec![None; x.len()],
        x,
    };
    let running = [W { f: F::Sum, arg: 2, frame: rows(B::UP, B::CR), ansi: true }];
    assert!(check_segments(&data, &running, &mut rng, "running 2^60").0);
    let sliding = [W { f: F::Sum, arg: 2, frame: rows(B::P(8), B::CR), ansi: true }];
    assert!(check_segments(&data, &sliding, &mut rng, "sliding 2^60").0);
    let fits = [W { f: F::Sum, arg: 2, frame: rows(B::P(6), B::CR), ansi: true }];
    assert!(!check_segments(&data, &fits, &mut rng, "sliding 7 x 2^60").0);
}

#[test]
fn a_partition_much_larger_than_the_pool_completes_in_segments_and_returns_its_memory() {
    let mut rng = StdRng::seed_from_u64(23);
    let n = 60_000;
    let (_, input) = one_big_partition(&mut rng, n);
    let ws = [
        W { f: F::Sum, arg: 2, frame: rows(B::UP, B::CR), ansi: true },
        W { f: F::Sum, arg: 2, frame: rows(B::P(30), B::F(5)), ansi: true },
        W { f: F::Avg, arg: 4, frame: rows(B::UP, B::F(2)), ansi: true },
        W { f: F::Max, arg: 3, frame: range(B::UP, B::CR), ansi: true },
        W { f: F::DenseRank, arg: 2, frame: rows(B::UP, B::CR), ansi: true },
        W { f: F::Lag(3), arg: 4, frame: rows(B::UP, B::CR), ansi: true },
        // Carries its last non-null values across segments.
        W { f: F::LagIgnoreNulls(2), arg: 2, frame: rows(B::UP, B::CR), ansi: true },
    ];
    let exprs: Vec<_> = ws.iter().enumerate().map(|(i, w)| pb_window_expr(w, i)).collect();
    // 256 KiB against ~3 MB of input (and ~20 MB of scratch to evaluate it whole): segments of the default
    // size (16 Ki rows) do not fit either, so the pool's refusals cut smaller ones; 1 << 40: only refusals cut.
    let pool = 256 << 10;
    // Whole-partition evaluation with room (checked against the reference on small data by the tests above).
    let whole = with_segment_rows(window_plan(exprs.clone(), true, 4096), 1 << 40);
    let (want, err, segments) = run_until_error(&whole, input.clone(), 1 << 30);
    assert!(err.is_none() && segments == 0, "{err:?} {segments}");
    for seg in [0, 1024, 1 << 40] {
        // run_until_error asserts the pool is empty afterwards.
        let plan = with_segment_rows(window_plan(exprs.clone(), true, 4096), seg);
        let (got, err, segments) = run_until_error(&plan, input.clone(), pool);
        assert!(err.is_none(), "segment_rows={seg}: {err:?}");
        assert!(segments >= (n / 16_384) as u64, "segment_rows={seg}: {segments} segments");
        assert_eq!(got.num_rows(), n);
        for (i, w) in ws.iter().enumerate() {
            assert_same(got.column(5 + i), want.column(5 + i), &format!("segment_rows={seg} {w:?}"));
        }
    }
}

#[test]
fn window_over_a_native_sort() {
    // Spark's plan shape: Sort(k, d) → Window. Shuffled input, same answer as over pre-sorted input.
    let mut rng = StdRng::seed_from_u64(13);
    let data = gen(&mut rng, 8, 25, Values::Small, false);
    let ws: Vec<W> = aggregates(rows(B::P(3), B::CR), true);
    let exprs: Vec<_> = ws.iter().enumerate().map(|(i, w)| pb_window_expr(w, i)).collect();
    let sorted_input = batches(&data, &mut rng);
    let expected = run(&window_plan(exprs.clone(), true, 32), sorted_input.clone()).unwrap();

    let all = concat_batches(&schema(), &sorted_input).unwrap();
    let mut order: Vec<u32> = (0..all.num_rows() as u32).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.random_range(0..=i));
    }
    let shuffled = arrow::compute::take_record_batch(&all, &arrow::array::UInt32Array::from(order)).unwrap();
    let mut p = window_plan(exprs, true, 32);
    let window = p.root.take().unwrap();
    let sort = op(
        2,
        pb::operator::Kind::Sort(pb::Sort {
            order: vec![
                pb::SortOrder { child: Some(col(0, &DataType::Int32)), ascending: true, nulls_first: true },
                pb::SortOrder { child: Some(col(1, &DataType::Int64)), ascending: true, nulls_first: true },
            ],
            fetch: 0,
            radix: true,
        }),
        window.children,
    );
    p.root = Some(pb::Operator { children: vec![sort], ..window });
    let got = run(&p, vec![shuffled.slice(0, 50), shuffled.slice(50, shuffled.num_rows() - 50)]).unwrap();
    assert_eq!(got.num_rows(), expected.num_rows());
    for c in 0..expected.num_columns() {
        assert_eq!(got.column(c).to_data(), expected.column(c).to_data(), "column {c}");
    }
}

// ---------------------------------------------------------------------------------------------------------
// Spilled partitions: whole-partition aggregates folded while the rows go to disk, the rest read back in
// segments.

/// Partitions of the given sizes (the first with a NULL key), with nulls, all-null partitions (index 3 mod 5),
/// partitions whose doubles are all ±0.0 (1 mod 5: MIN / MAX keep the first of equal values), NaN (0 mod 4),
/// 1e300 (0 mod 3), else doubles of magnitudes 1e-5 .. 1e13 whose sum's bits depend on the order of the fold;
/// with `ties`, runs of equal order keys.
fn sized_partitions(rng: &mut StdRng, sizes: &[usize], ties: bool) -> Data {
    let mut data = Data { k: vec![], d: vec![], x: vec![], y: vec![], f: vec![] };
    for (p, &len) in sizes.iter().enumerate() {
        let all_null = p % 5 == 3;
        for i in 0..len {
            data.k.push(if p == 0 { None } else { Some(p as i32 * 3) });
            data.d.push(Some(if ties { (i / 3) as i64 } else { i as i64 * 10 }));
            let null = all_null || rng.random_bool(0.2);
            data.x.push((!null).then(|| rng.random_range(-1_000_000..1_000_000)));
            data.y.push((!null && rng.random_bool(0.8)).then(|| rng.random_range(-1000..1000)));
            let f = match rng.random_range(0..10) {
                0 => -0.0,
                1 => 0.0,
                _ if p % 5 == 1 && rng.random_bool(0.5) => -0.0,
                _ if p % 5 == 1 => 0.0,
                2 if p % 4 == 0 => f64::NAN,
                3 if p % 3 == 0 => 1e300,
                _ => rng.random_range(-1e6..1e6) / 7.0 * 10f64.powi(rng.random_range(-5..8)),
            };
            data.f.push((!null && rng.random_bool(0.9)).then_some(f));
        }
    }
    data
}

/// What a run with a spill directory gave: the rows, the error that ends them, the window's named metrics.
struct SpillRun {
    rows: RecordBatch,
    err: Option<DataFusionError>,
    metrics: Vec<(String, u64)>,
    spilled_bytes: u64,
    /// Spill files present when the plan was dropped.
    files_held: usize,
}

impl SpillRun {
    fn metric(&self, name: &str) -> u64 {
        self.metrics.iter().find(|(n, _)| n == name).map_or(0, |(_, v)| *v)
    }
}

/// [`batches`] whose buffers are their own (a slice reports, and reserves, its whole parent buffer).
fn owned_batches(data: &Data, rng: &mut StdRng) -> Vec<RecordBatch> {
    batches(data, rng)
        .iter()
        .map(|b| {
            let idx = arrow::array::UInt32Array::from_iter_values(0..b.num_rows() as u32);
            arrow::compute::take_record_batch(b, &idx).unwrap()
        })
        .collect()
}

/// Runs `plan` under a pool of `pool` bytes with spill files in a fresh directory; checks that the memory is
/// returned and no spill file is left, also when the plan is dropped after `stop_after` batches.
fn run_spilling(plan: &pb::Plan, input: Vec<RecordBatch>, pool: usize, stop_after: Option<usize>) -> SpillRun {
    run_spilling_reader(plan, reader(input, schema()), pool, stop_after)
}

fn run_spilling_reader(
    plan: &pb::Plan,
    input: ember_engine::operators::input::BatchReader,
    pool: usize,
    stop_after: Option<usize>,
) -> SpillRun {
    let dir = tempfile::tempdir().unwrap();
    let task = pb::TaskSettings { spill_dirs: vec![dir.path().to_str().unwrap().to_string()], ..Default::default() };
    let broker = Arc::new(FixedBroker::new(pool));
    let mut p = NativePlan::for_task(plan, &task, vec![input], broker.clone()).unwrap();
    let out_schema = p.output_schema().clone();
    let (out, err) = drain(&mut p, stop_after);
    let window_id = plan.root.as_ref().unwrap().id;
    let m = p.metrics().into_iter().find(|m| m.id == window_id).unwrap();
    let files_held = files_under(dir.path());
    drop(p);
    assert_eq!(broker.used(), 0, "memory returned");
    assert_eq!(files_under(dir.path()), 0, "spill files left");
    SpillRun {
        rows: concat_batches(&out_schema, &out).unwrap(),
        err,
        metrics: m.named.clone(),
        spilled_bytes: m.spilled_bytes,
        files_held,
    }
}

/// Runs `ws` spilling (under `pool`) and in memory, prefix evaluation on and off, default and tiny segments, and
/// compares with the reference (values bit for bit, ANSI overflow at the same row). Returns the spilled
/// partitions of the spilling runs (the smallest count) and whether the reference overflowed.
fn check_spilling(data: &Data, ws: &[W], rng: &mut StdRng, pool: usize, what: &str) -> (u64, bool) {
    let exprs: Vec<_> = ws.iter().enumerate().map(|(i, w)| pb_window_expr(w, i)).collect();
    let results: Vec<std::result::Result<ArrayRef, Overflow>> = ws.iter().map(|w| reference(data, w)).collect();
    let first_overflow = results.iter().filter_map(|r| r.as_ref().err().map(|o| o.0)).min();
    let input = owned_batches(data, rng);
    let mut spilled = u64::MAX;
    for (prefix, seg, pool) in [(true, 0, pool), (false, 0, pool), (true, 7, pool), (false, 0, 1 << 30)] {
        let batch_size = rng.random_range(1..300);
        let plan = with_segment_rows(window_plan(exprs.clone(), prefix, batch_size), seg);
        let run = run_spilling(&plan, input.clone(), pool, None);
        let what = format!("{what} prefix={prefix} segment_rows={seg} pool={pool}");
        if pool < 1 << 30 {
            spilled = spilled.min(run.metric("spilled_partitions"));
            assert_eq!(run.metric("spilled_partitions") > 0, run.spilled_bytes > 0, "{what}");
        } else {
            assert_eq!(run.metric("spilled_partitions"), 0, "{what}");
        }
        match first_overflow {
            Some(row) => {
                assert_eq!(run.rows.num_rows(), row, "{what}: rows before the overflow");
                assert_overflow_error(run.err.as_ref().unwrap_or_else(|| panic!("{what}: no error")));
                // The rows before it are right too.
                for (i, r) in results.iter().enumerate() {
                    if let Ok(e) = r {
                        assert_same(&run.rows.column(5 + i).clone(), &e.slice(0, row), &format!("{what} {:?}", ws[i]));
                    }
                }
            }
            None => {
                assert!(run.err.is_none(), "{what}: {:?}", run.err);
                assert_eq!(run.rows.num_rows(), data.k.len(), "{what}");
                for (i, r) in results.iter().enumerate() {
                    assert_same(run.rows.column(5 + i), r.as_ref().unwrap(), &format!("{what} {:?}", ws[i]));
                }
                assert_eq!(run.rows.column(2).as_ref(), &Int64Array::from(data.x.clone()) as &dyn Array);
            }
        }
    }
    (spilled, first_overflow.is_some())
}

/// Every whole-partition aggregate (ROWS and RANGE UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) over every
/// measure type.
fn whole_partition_aggregates(ansi: bool) -> Vec<W> {
    [rows(B::UP, B::UF), range(B::UP, B::UF)].into_iter().flat_map(|f| aggregates(f, ansi)).collect()
}

/// Segmentable expressions beside them: running, sliding and peer frames, ranks, offsets.
fn segmentable_companions(ansi: bool) -> Vec<W> {
    let w = |f, arg, frame| W { f, arg, frame, ansi };
    vec![
        w(F::RowNumber, 2, rows(B::UP, B::CR)),
        w(F::Sum, 2, rows(B::UP, B::CR)),
        w(F::Sum, 4, rows(B::UP, B::CR)),
        w(F::Sum, 2, rows(B::P(3), B::F(2))),
        w(F::Avg, 4, rows(B::P(5), B::CR)),
        w(F::Max, 4, rows(B::P(2), B::F(2))),
        w(F::Min, 3, range(B::UP, B::CR)),
        w(F::Count, 4, rows(B::CR, B::F(3))),
        w(F::Lag(2), 2, rows(B::UP, B::CR)),
        w(F::Lead(3), 4, rows(B::UP, B::CR)),
        w(F::LagIgnoreNulls(1), 3, rows(B::UP, B::CR)),
        w(F::LagIgnoreNulls(3), 4, rows(B::UP, B::CR)),
    ]
}

#[test]
fn whole_partition_aggregates_spill_and_match_the_reference() {
    let mut rng = StdRng::seed_from_u64(30);
    // Large partitions (spilled) among small ones (not), partitions of one row, all-null ones (one spilled), one
    // spilled whose doubles are all ±0.0.
    let sizes = [30, 1, 1500, 7, 1, 900, 1200, 3, 800, 2500, 12];
    for ansi in [false, true] {
        let data = sized_partitions(&mut rng, &sizes, false);
        let mut ws = whole_partition_aggregates(ansi);
        ws.extend(segmentable_companions(ansi));
        let (spilled, overflow) = check_spilling(&data, &ws, &mut rng, 128 << 10, &format!("mixed ansi={ansi}"));
        assert!(!overflow);
        assert!(spilled >= 3 && spilled < sizes.len() as u64, "only the large partitions spill: {spilled}");
        // Whole-partition aggregates alone.
        let ws = whole_partition_aggregates(ansi);
        let (spilled, _) = check_spilling(&data, &ws, &mut rng, 64 << 10, &format!("alone ansi={ansi}"));
        assert!(spilled >= 3 && spilled < sizes.len() as u64, "{spilled}");
    }
}

#[test]
fn spilled_partitions_with_ties_rank_and_without_partition_keys() {
    let mut rng = StdRng::seed_from_u64(31);
    // Peer groups of 3 rows: rank / dense_rank and RANGE frames cut at peer-group boundaries when read back.
    let data = sized_partitions(&mut rng, &[5, 3000, 1, 2000], true);
    let w = |f, arg, frame| W { f, arg, frame, ansi: true };
    let ws = vec![
        w(F::Sum, 2, range(B::UP, B::UF)),
        w(F::Avg, 4, rows(B::UP, B::UF)),
        w(F::Max, 4, range(B::UP, B::UF)),
        w(F::Rank, 2, rows(B::UP, B::CR)),
        w(F::DenseRank, 2, rows(B::UP, B::CR)),
        w(F::Sum, 4, range(B::UP, B::CR)),
        w(F::Count, 2, range(B::CR, B::CR)),
    ];
    let (spilled, _) = check_spilling(&data, &ws, &mut rng, 256 << 10, "ties");
    assert!(spilled >= 2, "{spilled}");
    // OVER (): one partition of everything (no partition keys).
    let data = sized_partitions(&mut rng, &[9000], false);
    let exprs: Vec<_> = ws.iter().enumerate().map(|(i, w)| pb_window_expr(w, i)).collect();
    let mut plan = window_plan(exprs.clone(), true, 512);
    if let Some(pb::operator::Kind::PrefixWindow(win)) = plan.root.as_mut().unwrap().kind.as_mut() {
        win.partition_by.clear();
    }
    let input = owned_batches(&data, &mut rng);
    let want = run_spilling(&plan, input.clone(), 1 << 30, None);
    let got = run_spilling(&plan, input, 256 << 10, None);
    assert!(want.err.is_none() && got.err.is_none(), "{:?} {:?}", want.err, got.err);
    assert_eq!(got.metric("spilled_partitions"), 1);
    assert_eq!(want.metric("spilled_partitions"), 0);
    for (i, w) in ws.iter().enumerate() {
        assert_same(got.rows.column(5 + i), want.rows.column(5 + i), &format!("OVER () {w:?}"));
    }
}

#[test]
fn spilled_ansi_overflow_at_the_same_row_as_the_reference() {
    let mut rng = StdRng::seed_from_u64(32);
    let sum = |frame| W { f: F::Sum, arg: 2, frame, ansi: true };
    let base = sized_partitions(&mut rng, &[20, 3000, 15], false);
    // The whole-partition fold of the large partition overflows far in: Spark raises before its first row.
    let mut data =
        Data { k: base.k.clone(), d: base.d.clone(), x: base.x.clone(), y: base.y.clone(), f: base.f.clone() };
    data.x[20 + 2500] = Some(i64::MAX);
    data.x[20 + 2501] = Some(i64::MAX);
    let ws = [sum(rows(B::UP, B::UF)), sum(rows(B::UP, B::CR)), sum(rows(B::P(1), B::CR))];
    let (spilled, overflow) = check_spilling(&data, &ws, &mut rng, 256 << 10, "whole overflow");
    assert!(overflow && spilled == 1, "{spilled}");
    // A sliding frame overflows while no prefix does: [.., MAX, 1, -MAX, ..] after a negative prefix. The rows
    // of the spilled partition before it come out first.
    let mut data =
        Data { k: base.k.clone(), d: base.d.clone(), x: base.x.clone(), y: base.y.clone(), f: base.f.clone() };
    for v in &mut data.x[20..3020] {
        *v = v.map(|v| -(v.abs()) - 1);
    }
    data.x[20 + 2000] = Some(i64::MAX);
    data.x[20 + 2001] = Some(1);
    data.x[20 + 2002] = Some(-i64::MAX);
    let (spilled, overflow) = check_spilling(&data, &ws, &mut rng, 256 << 10, "sliding overflow");
    assert!(overflow && spilled == 1, "{spilled}");
    // Without the whole-partition sum the large partition is evaluated in segments, no spill, the same row.
    let (spilled, overflow) = check_spilling(&data, &ws[1..], &mut rng, 256 << 10, "sliding overflow, no whole");
    assert!(overflow && spilled == 0, "{spilled}");
}

#[test]
fn dropped_while_spilling_or_reading_back_leaves_no_file_and_no_memory() {
    let mut rng = StdRng::seed_from_u64(33);
    let data = sized_partitions(&mut rng, &[10, 5000, 3, 5000], false);
    let mut ws = whole_partition_aggregates(false);
    ws.extend(segmentable_companions(false));
    let exprs: Vec<_> = ws.iter().enumerate().map(|(i, w)| pb_window_expr(w, i)).collect();
    let plan = window_plan(exprs, true, 64);
    let input = owned_batches(&data, &mut rng);
    // run_spilling asserts the memory is back and the directory empty after the plan is dropped.
    let mut held = 0;
    for stop in [0, 1, 3, 20, 80, 90, 160] {
        let run = run_spilling(&plan, input.clone(), 256 << 10, Some(stop));
        assert!(run.err.is_none());
        held += (run.files_held > 0) as usize;
    }
    assert!(held >= 3, "dropped while a spill file was read back: {held} times");
    // An input error while the large partition spills (its batches 1..=40 of ~80 written).
    let failing: Vec<_> = input[..41].iter().cloned().map(Ok).collect();
    let failing =
        failing.into_iter().chain(std::iter::once(Err(arrow::error::ArrowError::ComputeError("input failed".into()))));
    let failing = Box::new(arrow::record_batch::RecordBatchIterator::new(failing, schema()));
    let run = run_spilling_reader(&plan, failing, 256 << 10, None);
    assert!(run.err.as_ref().is_some_and(|e| e.to_string().contains("input failed")), "{:?}", run.err);
    assert_eq!(run.metric("spilled_partitions"), 1);
}

#[test]
fn specs_that_cannot_spill_say_which_expression_keeps_them_in_memory() {
    let mut rng = StdRng::seed_from_u64(34);
    let (_, input) = one_big_partition(&mut rng, 20_000);
    let whole = W { f: F::Sum, arg: 2, frame: rows(B::UP, B::UF), ansi: false };
    for (blocker, desc) in [
        (
            W { f: F::Sum, arg: 2, frame: rows(B::P(2), B::UF), ansi: false },
            "Sum OVER (Rows BETWEEN Preceding(2) AND UnboundedFollowing)",
        ),
        (
            W { f: F::Max, arg: 4, frame: range(B::CR, B::UF), ansi: false },
            "Max OVER (Range BETWEEN CurrentRow AND UnboundedFollowing)",
        ),
        (
            W { f: F::Count, arg: 2, frame: rows(B::CR, B::UF), ansi: false },
            "Count OVER (Rows BETWEEN CurrentRow AND UnboundedFollowing)",
        ),
    ] {
        let exprs = vec![pb_window_expr(&whole, 0), pb_window_expr(&blocker, 1)];
        let run = run_spilling(&window_plan(exprs, true, 1024), input.clone(), 256 << 10, None);
        let err = run.err.as_ref().expect("does not fit").to_string();
        assert!(err.contains(&format!("window expression `w1` ({desc}) needs the whole partition")), "{err}");
        assert_eq!(run.metric("spilled_partitions"), 0);
    }
}

/// A spilled partition read back in segments cut at peer-group boundaries (rank): one peer group larger than the
/// pool is a clean `ResourcesExhausted` error, with the spill file deleted and the memory returned.
#[test]
fn a_peer_group_larger_than_the_pool_in_a_spilled_partition_is_a_clean_error() {
    let mut rng = StdRng::seed_from_u64(35);
    let mut data = sized_partitions(&mut rng, &[10, 20_000], false);
    // The large partition's rows are all peers.
    for d in &mut data.d[10..] {
        *d = Some(7);
    }
    let ws = [
        W { f: F::Sum, arg: 2, frame: rows(B::UP, B::UF), ansi: false },
        W { f: F::Rank, arg: 2, frame: rows(B::UP, B::CR), ansi: false },
    ];
    let exprs: Vec<_> = ws.iter().enumerate().map(|(i, w)| pb_window_expr(w, i)).collect();
    let plan = window_plan(exprs, true, 1024);
    // run_spilling asserts that the memory is returned and no spill file is left.
    let run = run_spilling(&plan, owned_batches(&data, &mut rng), 128 << 10, None);
    let err = run.err.as_ref().expect("one peer group larger than the pool");
    assert!(matches!(err, DataFusionError::ResourcesExhausted(_)), "{err}");
    assert!(err.to_string().contains("peer group cannot be cut"), "{err}");
    assert_eq!(run.metric("spilled_partitions"), 1);
    // The small partition came out first.
    assert_eq!(run.rows.num_rows(), 10);
    // Without rank, cuts fall anywhere: the same partition spills and is read back, with the reference's rows.
    let (spilled, _) = check_spilling(&data, &ws[..1], &mut rng, 128 << 10, "one peer group, no rank");
    assert_eq!(spilled, 1);
}
