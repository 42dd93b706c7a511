//! `RadixSortExec` against DataFusion's `SortExec`: the same rows in the same order for every packable key type,
//! both directions and both null orders, equal keys in input order (stable); and the hand-over to DataFusion's
//! sort when keys do not pack or the pool refuses (it spills, and the memory comes back).

use std::sync::Arc;

use crate::common::*;
use arrow::array::{
    ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float32Array, Float64Array, Int32Array, Int64Array,
    Int8Array, RecordBatch, TimestampMicrosecondArray,
};
use arrow::compute::SortOptions;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion_execution::config::SessionConfig;
use datafusion_execution::disk_manager::{DiskManagerBuilder, DiskManagerMode};
use datafusion_execution::memory_pool::{GreedyMemoryPool, MemoryPool};
use datafusion_execution::runtime_env::RuntimeEnvBuilder;
use datafusion_execution::TaskContext;
use datafusion_physical_expr::expressions::col;
use datafusion_physical_expr::{LexOrdering, PhysicalSortExpr};
use datafusion_physical_plan::sorts::sort::SortExec;
use datafusion_physical_plan::ExecutionPlan;
use ember_engine::expressions::normalize::NormalizeFloatExpr;
use ember_engine::operators::RadixSortExec;

const KEYS: [&str; 10] = ["i8", "i32", "i64", "b", "d", "ts", "dec", "f64", "f32", "wide"];

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("i8", DataType::Int8, true),
        Field::new("i32", DataType::Int32, true),
        Field::new("i64", DataType::Int64, true),
        Field::new("b", DataType::Boolean, true),
        Field::new("d", DataType::Date32, true),
        Field::new("ts", DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())), true),
        Field::new("dec", DataType::Decimal128(12, 2), true),
        Field::new("f64", DataType::Float64, true),
        Field::new("f32", DataType::Float32, true),
        Field::new("wide", DataType::Int64, true),
        // The row's input position: the tie-breaker that makes the reference order total.
        Field::new("pos", DataType::Int64, false),
    ]))
}

/// `batches` batches of up to `rows` rows (some empty): few distinct values (many ties), nulls, extremes.
fn data(batches: usize, rows: usize, seed: u64) -> Vec<RecordBatch> {
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut pos = 0i64;
    (0..batches)
        .map(|b| {
            let n = if b % 5 == 3 { 0 } else { rows - (next() as usize % (rows / 2 + 1)) };
            let mut r: Vec<u64> = (0..n * 11).map(|_| next()).collect();
            let mut take = || r.pop().unwrap();
            let mut cols: Vec<ArrayRef> = vec![];
            let null = |v: u64| v.is_multiple_of(11);
            let i8s: Int8Array = (0..n).map(|_| take()).map(|v| (!null(v)).then_some((v % 7) as i8 - 3)).collect();
            let i32s: Int32Array = (0..n)
                .map(|_| take())
                .map(|v| (!null(v)).then_some(if v % 13 == 0 { i32::MIN } else { (v % 50) as i32 * 1000 }))
                .collect();
            let i64s: Int64Array = (0..n)
                .map(|_| take())
                .map(|v| {
                    (!null(v)).then_some(match v % 17 {
                        0 => i64::MAX,
                        1 => i64::MIN,
                        _ => (v % 100) as i64 - 50,
                    })
                })
                .collect();
            let bs: BooleanArray = (0..n).map(|_| take()).map(|v| (!null(v)).then_some(v % 2 == 0)).collect();
            let ds: Date32Array =
                (0..n).map(|_| take()).map(|v| (!null(v)).then_some((v % 400) as i32 - 200)).collect();
            let ts: TimestampMicrosecondArray = (0..n)
                .map(|_| take())
                .map(|v| (!null(v)).then_some((v % 30) as i64 * 3_600_000_000 - 10))
                .collect::<TimestampMicrosecondArray>()
                .with_timezone("UTC");
            let dec: Decimal128Array = (0..n)
                .map(|_| take())
                .map(|v| (!null(v)).then_some((v % 90) as i128 * 99_999_999 - 4_000_000_000))
                .collect::<Decimal128Array>()
                .with_precision_and_scale(12, 2)
                .unwrap();
            // Spark's float order: -0.0 = 0.0, every NaN equal and above +Infinity.
            let special =
                [f64::NAN, -f64::NAN, -0.0, 0.0, f64::INFINITY, f64::NEG_INFINITY, 1.5, -2.25, 1e300, -1e-300];
            let f64s: Float64Array =
                (0..n).map(|_| take()).map(|v| (!null(v)).then_some(special[(v % 10) as usize])).collect();
            let f32s: Float32Array =
                (0..n).map(|_| take()).map(|v| (!null(v)).then_some(special[(v % 10) as usize] as f32)).collect();
            // Any long at all: two such keys cannot pack into 128 bits.
            let wide: Int64Array = (0..n).map(|_| take()).map(|v| (!null(v)).then_some(v as i64)).collect();
            let p: Int64Array = (pos..pos + n as i64).collect();
            pos += n as i64;
            cols.extend([
                Arc::new(i8s) as ArrayRef,
                Arc::new(i32s),
                Arc::new(i64s),
                Arc::new(bs),
                Arc::new(ds),
                Arc::new(ts),
                Arc::new(dec),
                Arc::new(f64s),
                Arc::new(f32s),
                Arc::new(wide),
                Arc::new(p),
            ]);
            RecordBatch::try_new(schema(), cols).unwrap()
        })
        .collect()
}

/// Keys as the planner builds them: float keys normalized to Spark's order.
fn ordering(keys: &[(&str, bool, bool)]) -> LexOrdering {
    let s = schema();
    LexOrdering::new(keys.iter().map(|&(c, descending, nulls_first)| {
        let key = NormalizeFloatExpr::wrap_if_float(col(c, &s).unwrap(), &s).unwrap();
        PhysicalSortExpr::new(key, SortOptions { descending, nulls_first })
    }))
    .unwrap()
}

fn ctx(batch_size: usize, pool: Option<Arc<dyn MemoryPool>>, spill_dir: Option<&std::path::Path>) -> Arc<TaskContext> {
    let mut rt = RuntimeEnvBuilder::new();
    if let Some(p) = pool {
        rt = rt.with_memory_pool(p);
    }
    if let Some(d) = spill_dir {
        rt = rt.with_disk_manager_builder(
            DiskManagerBuilder::default().with_mode(DiskManagerMode::Directories(vec![d.into()])),
        );
    }
    let config = SessionConfig::new().with_batch_size(batch_size).with_sort_spill_reservation_bytes(64 << 10);
    Arc::new(TaskContext::default().with_session_config(config).with_runtime(rt.build_arc().unwrap()))
}

fn named(plan: &dyn ExecutionPlan, name: &str) -> usize {
    let m = plan.metrics().unwrap();
    if name == "spill_count" {
        m.spill_count().unwrap_or(0)
    } else {
        m.sum_by_name(name).map(|v| v.as_usize()).unwrap_or(0)
    }
}

/// The radix sort by `keys` against DataFusion's sort by `keys` then input position (the stable order).
fn check(input: &[RecordBatch], keys: &[(&str, bool, bool)], ctx: Arc<TaskContext>) -> Arc<RadixSortExec> {
    let s = schema();
    let radix = Arc::new(RadixSortExec::try_new(ordering(keys), source(input, &s)).unwrap());
    let got = run(radix.clone(), ctx.clone()).unwrap();
    let mut stable = keys.to_vec();
    stable.push(("pos", false, false));
    let expected = run(Arc::new(SortExec::new(ordering(&stable), source(input, &s))), ctx).unwrap();
    assert_eq!(rows_in_order(&got), rows_in_order(&expected), "sorted by {keys:?}");
    assert!(got.iter().all(|b| b.num_rows() <= 1000), "batches of the session's size");
    radix
}

#[test]
fn every_key_type_both_directions_both_null_orders_in_stable_order() {
    let input = data(12, 3000, 7);
    for key in KEYS.iter().filter(|k| **k != "wide") {
        for (descending, nulls_first) in [(false, true), (false, false), (true, true), (true, false)] {
            // A second key with ties left: the rows still come out in input order among equal pairs.
            let radix =
                check(&input, &[(key, descending, nulls_first), ("i8", !descending, true)], ctx(1000, None, None));
            assert_eq!(named(radix.as_ref(), "sort_fallbacks"), 0, "{key} packs");
            assert!(named(radix.as_ref(), "packed_sort_rows") > 0);
        }
    }
    // Five keys at once (2 + 9 + 4 + 37 + 34 bits), and a key alone (ties broken by position only).
    let radix = check(
        &input,
        &[("b", false, false), ("d", true, true), ("i8", false, true), ("ts", true, false), ("dec", false, true)],
        ctx(1000, None, None),
    );
    assert_eq!(named(radix.as_ref(), "sort_fallbacks"), 0);
    check(&input, &[("i32", true, false)], ctx(1000, None, None));
}

#[test]
fn empty_tiny_constant_and_all_null_inputs() {
    let s = schema();
    let ctx = || ctx(1000, None, None);
    // No rows at all, and only empty batches.
    let empty =
        run(Arc::new(RadixSortExec::try_new(ordering(&[("i32", false, true)]), source(&[], &s)).unwrap()), ctx())
            .unwrap();
    assert_eq!(empty.iter().map(|b| b.num_rows()).sum::<usize>(), 0);
    let empties = data(4, 10, 3).into_iter().map(|b| b.slice(0, 0)).collect::<Vec<_>>();
    check(&empties, &[("i32", false, true)], ctx());
    // One row; a few rows (the comparison-sort path); one constant key; a key that is null in every row.
    check(&data(1, 2, 5)[..1].iter().map(|b| b.slice(0, 1)).collect::<Vec<_>>(), &[("i64", true, true)], ctx());
    check(&data(3, 40, 9), &[("i64", true, true), ("d", false, false)], ctx());
    let base = data(6, 2000, 11);
    let constant = base
        .iter()
        .map(|b| {
            let mut cols = b.columns().to_vec();
            cols[1] = Arc::new(Int32Array::from(vec![Some(42); b.num_rows()]));
            cols[2] = Arc::new(Int64Array::from(vec![None::<i64>; b.num_rows()]));
            RecordBatch::try_new(s.clone(), cols).unwrap()
        })
        .collect::<Vec<_>>();
    let radix = check(&constant, &[("i32", false, true), ("i64", true, false)], ctx());
    assert_eq!(named(radix.as_ref(), "sort_fallbacks"), 0);
}

#[test]
fn keys_too_wide_to_pack_go_to_datafusions_sort() {
    let input = data(8, 2000, 13);
    // Two arbitrary longs need 128 bits before the position: DataFusion sorts, with position as a last key so
    // its (unstable) order is total.
    let radix =
        check(&input, &[("wide", false, true), ("i64", false, true), ("pos", false, true)], ctx(1000, None, None));
    assert_eq!(named(radix.as_ref(), "sort_fallbacks"), 1);
    assert_eq!(named(radix.as_ref(), "packed_sort_rows"), 0);
    // One arbitrary long packs.
    let radix = check(&input, &[("wide", true, false)], ctx(1000, None, None));
    assert_eq!(named(radix.as_ref(), "sort_fallbacks"), 0);
}

#[test]
fn under_a_small_pool_the_sort_spills_or_gathers_in_chunks_and_returns_its_memory() {
    let input = data(40, 4000, 17);
    let bytes: usize = input.iter().map(|b| b.get_array_memory_size()).sum();
    let keys = [("i32", false, true), ("ts", true, false), ("pos", false, true)];
    // From a pool smaller than the input (DataFusion's sort takes over and spills), through one that holds the
    // input and the packed keys (u128 here: ~168% of the input) but not a second copy for the column-wise gather
    // (gathered batch by batch), to one that holds everything (~205%).
    let mut fallbacks = vec![];
    for share in [40, 80, 150, 185, 230, 400] {
        let dir = tempfile::tempdir().unwrap();
        let pool: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(bytes * share / 100));
        let radix = check(&input, &keys, ctx(1000, Some(pool.clone()), Some(dir.path())));
        assert_eq!(pool.reserved(), 0, "memory returned at {share}% of the input");
        assert_eq!(files_under(dir.path()), 0, "spill files deleted at {share}%");
        fallbacks.push((share, named(radix.as_ref(), "sort_fallbacks"), named(radix.as_ref(), "spill_count")));
    }
    let (_, fell, spilled) = fallbacks[0];
    assert!(fell == 1 && spilled > 0, "a pool below the input hands over and spills: {fallbacks:?}");
    assert!(fallbacks.iter().filter(|(s, _, _)| *s >= 185).all(|(_, f, _)| *f == 0), "{fallbacks:?}");
    assert!(fallbacks.iter().filter(|(s, _, _)| *s < 185).all(|(_, f, _)| *f == 1), "{fallbacks:?}");
}

/// Columns of a batch that share one buffer (as a shuffle block's decoded columns share its body) are reserved
/// once, not once per column: under a pool of ~3x the real bytes the input is radix sorted, not handed over.
#[test]
fn buffers_shared_by_columns_are_reserved_once() {
    let rows = 50_000usize;
    let s =
        Arc::new(Schema::new((0..8).map(|c| Field::new(format!("c{c}"), DataType::Int64, false)).collect::<Vec<_>>()));
    let batches: Vec<RecordBatch> = (0..10)
        .map(|b| {
            let n = rows / 10;
            let shared = Int64Array::from_iter_values((0..(n * 8) as i64).map(|i| (i * 7919 + b as i64) % 100_003));
            let cols = (0..8).map(|c| Arc::new(shared.slice(c * n, n)) as ArrayRef).collect();
            RecordBatch::try_new(s.clone(), cols).unwrap()
        })
        .collect();
    let real = rows * 8 * 8;
    assert!(batches[0].get_array_memory_size() * 10 > 4 * real, "each column reports the batch's whole buffer");
    let pool: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(3 * real));
    let ordering = LexOrdering::new([PhysicalSortExpr::new(col("c0", &s).unwrap(), SortOptions::default())]).unwrap();
    let radix = Arc::new(RadixSortExec::try_new(ordering, source(&batches, &s)).unwrap());
    let out = run(radix.clone(), ctx(1000, Some(pool.clone()), None)).unwrap();
    assert_eq!(out.iter().map(|b| b.num_rows()).sum::<usize>(), rows);
    assert_eq!(named(radix.as_ref(), "sort_fallbacks"), 0);
    assert_eq!(pool.reserved(), 0);
}

/// [`check`] with the keys in arrow's row format (the radix sort off, as for keys that do not pack).
fn check_rows(input: &[RecordBatch], keys: &[(&str, bool, bool)], ctx: Arc<TaskContext>) -> Arc<RadixSortExec> {
    let s = schema();
    let sort = Arc::new(RadixSortExec::with_radix(ordering(keys), source(input, &s), false).unwrap());
    let got = run(sort.clone(), ctx.clone()).unwrap();
    let mut stable = keys.to_vec();
    stable.push(("pos", false, false));
    let expected = run(Arc::new(SortExec::new(ordering(&stable), source(input, &s))), ctx).unwrap();
    assert_eq!(rows_in_order(&got), rows_in_order(&expected), "sorted by {keys:?} in row format");
    assert!(got.iter().all(|b| b.num_rows() <= 1000), "batches of the session's size");
    sort
}

#[test]
fn row_format_keys_give_the_same_stable_order_for_every_key_type() {
    let input = data(6, 2000, 23);
    for key in KEYS {
        for (descending, nulls_first) in [(false, true), (false, false), (true, true), (true, false)] {
            let sort =
                check_rows(&input, &[(key, descending, nulls_first), ("i8", !descending, true)], ctx(1000, None, None));
            assert_eq!(named(sort.as_ref(), "packed_sort_rows"), 0);
        }
    }
}

/// Many more runs than a small pool merges at once: merged in passes (a bounded fan-in), each pass's runs deleted,
/// in the same stable order, for packed keys and for row-format keys; all memory and every file returned.
#[test]
fn under_a_pool_far_below_the_input_runs_merge_in_several_passes() {
    let input = data(60, 4000, 29);
    let keys = [("i32", false, true), ("ts", true, false)];
    for radix in [true, false] {
        for pool_bytes in [1 << 20, 3 << 20] {
            let dir = tempfile::tempdir().unwrap();
            let pool: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(pool_bytes));
            let context = ctx(1000, Some(pool.clone()), Some(dir.path()));
            let sort = if radix { check(&input, &keys, context) } else { check_rows(&input, &keys, context) };
            let (passes, spills) = (named(sort.as_ref(), "sort_merge_passes"), named(sort.as_ref(), "spill_count"));
            assert!(spills > 0 && named(sort.as_ref(), "sort_fallbacks") == 1, "radix {radix}, {pool_bytes} B");
            if pool_bytes == 1 << 20 {
                assert!(passes > 1, "radix {radix}: {passes} merge passes over {spills} files");
            }
            assert_eq!(pool.reserved(), 0, "memory returned (radix {radix}, {pool_bytes} B)");
            assert_eq!(files_under(dir.path()), 0, "runs deleted (radix {radix}, {pool_bytes} B)");
        }
    }
}

/// A sort dropped after its first output batch (a task killed, a limit reached) returns its memory and deletes
/// the runs it was merging.
#[test]
fn a_sort_dropped_while_merging_returns_its_memory_and_deletes_its_runs() {
    use futures::StreamExt;
    let input = data(30, 4000, 31);
    let s = schema();
    let dir = tempfile::tempdir().unwrap();
    let pool: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(1 << 20));
    let sort = RadixSortExec::try_new(ordering(&[("i64", false, true)]), source(&input, &s)).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let mut stream = {
        let _guard = rt.enter();
        sort.execute(0, ctx(1000, Some(pool.clone()), Some(dir.path()))).unwrap()
    };
    let first = rt.block_on(stream.next()).unwrap().unwrap();
    assert!(first.num_rows() > 0);
    assert!(files_under(dir.path()) > 0, "runs on disk while merging");
    assert!(pool.reserved() > 0, "the merge holds its reservation");
    drop(stream);
    assert_eq!(pool.reserved(), 0);
    assert_eq!(files_under(dir.path()), 0);
}
