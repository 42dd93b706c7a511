//! `DynamicFilter`: property tests of its summaries, union and proto form on random keys with nulls and
//! duplicates; and the hash join's use of it (pruning measured, the cost gate's decisions).
use crate::common;
use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Decimal128Array, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatchIterator;
use arrow::util::display::array_value_to_string;
use datafusion_common::{JoinType, NullEquality};
use datafusion_execution::TaskContext;
use datafusion_physical_expr::expressions::Column;
use datafusion_physical_expr::PhysicalExprRef;
use datafusion_physical_plan::ExecutionPlan;
use ember_engine::operators::dynamic_filter::{DynamicFilter, DynamicFilterConfig};
use ember_engine::operators::spilling_hash_join::{
    JoinDynamicFilterConfig, SpillingHashJoinConfig, SpillingHashJoinExec,
};
use ember_engine::operators::InputExec;
use ember_engine::planner::dynamic_filter::{decode_dynamic_filter, encode_dynamic_filter};
use ember_engine::proto as pb;
use futures::StreamExt;
use prost::Message;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Key shapes: (name, types, a generator of `n` rows of keys from a domain).
type Gen = fn(&mut StdRng, usize, i64, f64) -> Vec<ArrayRef>;

fn long_and_string(rng: &mut StdRng, n: usize, domain: i64, nulls: f64) -> Vec<ArrayRef> {
    let ks: Vec<Option<i64>> = (0..n).map(|_| (!rng.random_bool(nulls)).then(|| rng.random_range(0..domain))).collect();
    let l: Int64Array = ks.iter().map(|k| k.map(|k| k - domain / 2)).collect();
    // The string is a function of the long (mostly), so pairs repeat; sometimes null, sometimes multi-byte.
    let s: StringArray = ks
        .iter()
        .map(|k| match k {
            _ if rng.random_bool(nulls) => None,
            Some(k) if k % 5 == 0 => Some(format!("é{}€", k % 7)),
            Some(k) => Some(format!("s{}", k % 3)),
            None => Some("x".to_string()),
        })
        .collect();
    vec![Arc::new(l), Arc::new(s)]
}

fn int(rng: &mut StdRng, n: usize, domain: i64, nulls: f64) -> Vec<ArrayRef> {
    let a: Int32Array = (0..n)
        .map(|_| (!rng.random_bool(nulls)).then(|| rng.random_range(0..domain) as i32 * 3 + i32::MIN / 2))
        .collect();
    vec![Arc::new(a)]
}

fn decimal(rng: &mut StdRng, n: usize, domain: i64, nulls: f64) -> Vec<ArrayRef> {
    let a: Decimal128Array = (0..n)
        .map(|_| (!rng.random_bool(nulls)).then(|| rng.random_range(0..domain) as i128 * 1_000_000_007 - 5))
        .collect::<Decimal128Array>()
        .with_precision_and_scale(30, 4)
        .unwrap();
    vec![Arc::new(a)]
}

const SHAPES: [(&str, Gen); 3] = [("long+string", long_and_string), ("int", int), ("decimal", decimal)];

fn types_of(keys: &[ArrayRef]) -> Vec<DataType> {
    keys.iter().map(|k| k.data_type().clone()).collect()
}

/// The key of row `r`, or `None` when one of its columns is null.
fn key(keys: &[ArrayRef], r: usize) -> Option<String> {
    let mut parts = vec![];
    for k in keys {
        if k.is_null(r) {
            return None;
        }
        parts.push(array_value_to_string(k, r).unwrap());
    }
    Some(parts.join("|"))
}

fn slice(keys: &[ArrayRef], offset: usize, len: usize) -> Vec<ArrayRef> {
    keys.iter().map(|k| k.slice(offset, len)).collect()
}

/// A filter over `parts` partitions fed random build batches; with the true keys of each partition.
fn built(gen: Gen, seed: u64, parts: usize, config: DynamicFilterConfig) -> (DynamicFilter, Vec<HashSet<String>>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let types = types_of(&gen(&mut rng, 1, 10, 0.0));
    let mut f = DynamicFilter::try_new(types, parts, config).unwrap();
    let mut truth = vec![HashSet::new(); parts];
    for _ in 0..(3 * parts) {
        let p = rng.random_range(0..parts);
        let n = rng.random_range(0..300);
        // Partitions draw from shifted domains that overlap, so a key can sit in several partitions.
        let keys = gen(&mut rng, n, 400 + 100 * p as i64, 0.1);
        f.update(p, &keys).unwrap();
        for r in 0..n {
            if let Some(k) = key(&keys, r) {
                truth[p].insert(k);
            }
        }
    }
    (f, truth)
}

fn passes(f: &DynamicFilter, p: usize, keys: &[ArrayRef]) -> Vec<bool> {
    let m = f.might_contain_in(p, keys).unwrap();
    assert_eq!(m.null_count(), 0);
    (0..m.len()).map(|i| m.value(i)).collect()
}

const EXACT: DynamicFilterConfig = DynamicFilterConfig { max_set_values: 100_000, bloom_bytes: 1024 };
const BLOOMY: DynamicFilterConfig = DynamicFilterConfig { max_set_values: 50, bloom_bytes: 4096 };

/// No false negatives ever; a null key never passes; with exact sets, a key passes exactly when it is a build key
/// of that partition (so never another partition's key).
#[test]
fn a_partition_passes_its_keys_and_with_exact_sets_only_them() {
    for (name, gen) in SHAPES {
        for config in [EXACT, BLOOMY] {
            let parts = 4;
            let (f, truth) = built(gen, 7, parts, config);
            let mut rng = StdRng::seed_from_u64(99);
            let probe = gen(&mut rng, 4000, 1200, 0.1);
            let (mut nulls, mut foreign) = (0, 0);
            for (p, truth_p) in truth.iter().enumerate() {
                let pass = passes(&f, p, &probe);
                let exact = f.summary(p).unwrap().exact_keys().is_some();
                for (r, &passed) in pass.iter().enumerate() {
                    let what = format!("{name} {config:?} partition {p} row {r}");
                    match key(&probe, r) {
                        None => {
                            nulls += 1;
                            assert!(!passed, "{what}: a null key passed");
                        }
                        Some(k) if truth_p.contains(&k) => assert!(passed, "{what}: false negative {k}"),
                        Some(k) => {
                            if exact {
                                assert!(!passed, "{what}: {k} is not a key of this partition");
                            }
                            foreign += (truth.iter().any(|t| t.contains(&k))) as usize;
                        }
                    }
                }
            }
            assert!(nulls > 0 && foreign > 0, "{name}: not vacuous ({nulls} nulls, {foreign} other partitions' keys)");
        }
    }
}

/// Union: partition by partition a key passes the union exactly when it passes one of the parts (exact sets), and
/// at least then (blooms); `global()` passes a key exactly when some partition does (exact sets).
#[test]
fn union_passes_what_a_part_passes() {
    for (name, gen) in SHAPES {
        for config in [EXACT, BLOOMY] {
            let parts = 3;
            let (a, _) = built(gen, 1, parts, config);
            let (b, _) = built(gen, 2, parts, config);
            let mut u = DynamicFilter::try_new(a.key_types().to_vec(), parts, config).unwrap();
            u.union(&a).unwrap();
            u.union(&b).unwrap();
            let mut rng = StdRng::seed_from_u64(5);
            let probe = gen(&mut rng, 3000, 1000, 0.05);
            let mut any_part = vec![false; 3000];
            let mut bloom_extra = 0;
            for p in 0..parts {
                let (pa, pb, pu) = (passes(&a, p, &probe), passes(&b, p, &probe), passes(&u, p, &probe));
                let exact = u.summary(p).unwrap().exact_keys().is_some();
                for r in 0..probe[0].len() {
                    let what = format!("{name} {config:?} partition {p} row {r}");
                    let part = pa[r] || pb[r];
                    any_part[r] |= part;
                    if part {
                        assert!(pu[r], "{what}: passes a part, not the union");
                    } else if pu[r] {
                        assert!(!exact, "{what}: passes the union, no part, with exact sets");
                        bloom_extra += 1;
                    }
                }
                assert_eq!(
                    u.summary(p).unwrap().rows,
                    a.summary(p).unwrap().rows + b.summary(p).unwrap().rows,
                    "{name} partition {p} rows"
                );
            }
            let g = u.global().unwrap();
            let pg = passes(&g, 0, &probe);
            let exact = g.summary(0).unwrap().exact_keys().is_some();
            for r in 0..probe[0].len() {
                if any_part[r] {
                    assert!(pg[r], "{name} {config:?} row {r}: passes a partition, not the global filter");
                } else if exact {
                    assert!(!pg[r], "{name} {config:?} row {r}: passes the global filter, no partition");
                }
            }
            if config == BLOOMY {
                assert!(g.summary(0).unwrap().exact_keys().is_none(), "{name}: the global filter is a bloom");
            }
            let _ = bloom_extra;
        }
    }
}

/// Filters over different partitionings, keys or sizes refuse to unite.
#[test]
fn union_refuses_other_shapes() {
    let (a, _) = built(int, 1, 3, EXACT);
    let (b, _) = built(int, 1, 4, EXACT);
    let (c, _) = built(long_and_string, 1, 3, EXACT);
    let (d, _) = built(int, 1, 3, BLOOMY);
    for other in [&b, &c, &d] {
        let mut x = DynamicFilter::try_new(a.key_types().to_vec(), 3, EXACT).unwrap();
        x.union(&a).unwrap();
        assert!(x.union(other).is_err());
    }
}

/// An empty build side, or one of null keys only, passes nothing.
#[test]
fn empty_or_all_null_build_passes_nothing() {
    for (name, gen) in SHAPES {
        let mut rng = StdRng::seed_from_u64(3);
        let probe = gen(&mut rng, 500, 100, 0.1);
        let types = types_of(&probe);
        let mut f = DynamicFilter::try_new(types, 2, EXACT).unwrap();
        assert!(passes(&f, 0, &probe).iter().all(|p| !p), "{name}: empty");
        let nulls: Vec<ArrayRef> = probe.iter().map(|k| arrow::array::new_null_array(k.data_type(), 50)).collect();
        f.update(0, &nulls).unwrap();
        f.update(1, &slice(&probe, 0, 0)).unwrap();
        assert_eq!(f.summary(0).unwrap().rows, 0);
        assert!(passes(&f, 0, &probe).iter().all(|p| !p), "{name}: null keys only");
        assert!(passes(&f.global().unwrap(), 0, &probe).iter().all(|p| !p), "{name}: global");
    }
}

/// The proto form (through its wire bytes) gives a filter that passes exactly what the original passes, and
/// unions made on the "driver" from decoded tasks' filters equal unions of the originals.
#[test]
fn proto_round_trip_and_merge_on_the_driver() {
    for (name, gen) in SHAPES {
        for config in [EXACT, BLOOMY] {
            let parts = 3;
            let tasks: Vec<DynamicFilter> = (0..4).map(|s| built(gen, 10 + s, parts, config).0).collect();
            let mut direct = DynamicFilter::try_new(tasks[0].key_types().to_vec(), parts, config).unwrap();
            let mut driver = DynamicFilter::try_new(tasks[0].key_types().to_vec(), parts, config).unwrap();
            let mut rng = StdRng::seed_from_u64(8);
            let probe = gen(&mut rng, 2000, 1000, 0.05);
            for t in &tasks {
                let bytes = encode_dynamic_filter(t).unwrap().encode_to_vec();
                let back = decode_dynamic_filter(&pb::DynamicFilter::decode(bytes.as_slice()).unwrap()).unwrap();
                assert_eq!(back.key_types(), t.key_types(), "{name}");
                for p in 0..parts {
                    assert_eq!(passes(&back, p, &probe), passes(t, p, &probe), "{name} {config:?} p{p}");
                    assert_eq!(back.summary(p).unwrap().bounds, t.summary(p).unwrap().bounds, "{name} p{p}");
                }
                direct.union(t).unwrap();
                driver.union(&back).unwrap();
            }
            for p in 0..parts {
                assert_eq!(passes(&driver, p, &probe), passes(&direct, p, &probe), "{name} {config:?} p{p}");
            }
        }
    }
}

/// Bounds alone rule keys out: a key below the minimum or above the maximum never passes, even in a bloom.
#[test]
fn bounds_cut_what_a_bloom_would_let_through() {
    let config = DynamicFilterConfig { max_set_values: 1, bloom_bytes: 32 };
    let mut f = DynamicFilter::try_new(vec![DataType::Int64], 1, config).unwrap();
    let build: ArrayRef = Arc::new((1000..3000).map(Some).collect::<Int64Array>());
    f.update(0, &[build]).unwrap();
    let s = f.summary(0).unwrap();
    assert!(s.exact_keys().is_none(), "a saturated 32-byte bloom filter");
    let probe: ArrayRef = Arc::new((0..4000).map(Some).collect::<Int64Array>());
    let pass = passes(&f, 0, &[probe]);
    for (v, p) in pass.iter().enumerate() {
        if (1000..3000).contains(&v) {
            assert!(*p, "{v}: false negative");
        } else {
            assert!(!*p, "{v}: outside the bounds");
        }
    }
}

// ---- The hash join's use of it ----

fn schema(prefix: &str) -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new(format!("{prefix}k"), DataType::Int64, true),
        Field::new(format!("{prefix}v"), DataType::Int64, true),
    ]))
}

fn side(prefix: &str, rows: usize, keys: impl Fn(usize) -> Option<i64>) -> Vec<RecordBatch> {
    let s = schema(prefix);
    (0..rows)
        .step_by(1000)
        .map(|start| {
            let n = (rows - start).min(1000);
            let k: Int64Array = (start..start + n).map(&keys).collect();
            let v: Int64Array = (start..start + n).map(|i| Some(i as i64)).collect();
            RecordBatch::try_new(s.clone(), vec![Arc::new(k), Arc::new(v)]).unwrap()
        })
        .collect()
}

fn source(prefix: &str, batches: Vec<RecordBatch>) -> Arc<dyn ExecutionPlan> {
    let s = schema(prefix);
    let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), s.clone());
    Arc::new(InputExec::new(0, s, Box::new(reader)))
}

struct Run {
    rows: Vec<String>,
    checked: usize,
    pruned: usize,
    kept: usize,
    gated_off: usize,
}

async fn join(
    build: &[RecordBatch],
    probe: &[RecordBatch],
    join_type: JoinType,
    dynamic_filter: Option<JoinDynamicFilterConfig>,
) -> Run {
    let on =
        vec![(Arc::new(Column::new("bk", 0)) as PhysicalExprRef, Arc::new(Column::new("pk", 0)) as PhysicalExprRef)];
    let j = Arc::new(
        SpillingHashJoinExec::try_new(
            source("b", build.to_vec()),
            source("p", probe.to_vec()),
            on,
            None,
            join_type,
            NullEquality::NullEqualsNothing,
            SpillingHashJoinConfig { dynamic_filter, ..Default::default() },
        )
        .unwrap(),
    );
    let mut stream = j.execute(0, Arc::new(TaskContext::default())).unwrap();
    let mut rows = vec![];
    while let Some(b) = stream.next().await {
        let b = b.unwrap();
        for r in 0..b.num_rows() {
            rows.push(
                b.columns()
                    .iter()
                    .map(|c| if c.is_null(r) { "∅".into() } else { array_value_to_string(c, r).unwrap() })
                    .collect::<Vec<_>>()
                    .join("|"),
            );
        }
    }
    rows.sort();
    let m = j.metrics().unwrap();
    let get = |name: &str| m.sum_by_name(name).map(|v| v.as_usize()).unwrap_or(0);
    Run {
        rows,
        checked: get("dynamic_filter_rows_checked"),
        pruned: get("dynamic_filter_rows_pruned"),
        kept: get("dynamic_filter_kept"),
        gated_off: get("dynamic_filter_gated_off"),
    }
}

/// A star-join shape: a dimension holding 1% of the fact table's keys (with duplicates and nulls on both sides).
/// The filter drops the probe rows that cannot match, the gate keeps it, rows are exact for every join type.
#[tokio::test]
async fn selective_build_prunes_probe_rows() {
    let build = side("b", 2_000, |i| (i % 10 != 9).then_some((i % 100) as i64 * 97));
    let probe = side("p", 100_000, |i| (i % 50 != 0).then_some((i * 7919 % 10_000) as i64));
    let cfg = JoinDynamicFilterConfig::default();
    for join_type in common::ALL_JOIN_TYPES {
        let off = join(&build, &probe, join_type, None).await;
        let on = join(&build, &probe, join_type, Some(cfg)).await;
        assert!(on.rows == off.rows, "{join_type:?}: {} rows pruned, {} not", on.rows.len(), off.rows.len());
        let prunable =
            ember_engine::operators::spilling_hash_join::prunes_probe(join_type, NullEquality::NullEqualsNothing);
        if prunable {
            assert_eq!(on.checked, 100_000, "{join_type:?}");
            // 1% of the 10,000 probe keys match (every 97th key under 9700 … of which the build has 100), and
            // the null probe keys (2%) go too.
            assert!(on.pruned >= 97_000, "{join_type:?}: pruned {}", on.pruned);
            assert_eq!((on.kept, on.gated_off), (1, 0), "{join_type:?}");
            println!("{join_type:?}: {} of {} probe rows pruned", on.pruned, on.checked);
        } else {
            assert_eq!(on.checked + on.pruned + on.kept + on.gated_off, 0, "{join_type:?}: a preserved probe side");
        }
    }
}

/// A build side holding every probe key: nothing to prune, so the gate switches the filter off after its sample
/// and the join goes on unfiltered; rows stay exact.
#[tokio::test]
async fn the_gate_switches_off_a_filter_that_does_not_pay() {
    let build = side("b", 20_000, |i| Some((i % 5_000) as i64));
    let probe = side("p", 200_000, |i| Some((i % 5_000) as i64));
    let cfg = JoinDynamicFilterConfig { sample_rows: 10_000, min_pruned_fraction: 0.1, ..Default::default() };
    let off = join(&build, &probe, JoinType::Inner, None).await;
    let on = join(&build, &probe, JoinType::Inner, Some(cfg)).await;
    assert_eq!(on.rows.len(), off.rows.len());
    assert!(on.rows == off.rows);
    assert_eq!((on.kept, on.gated_off, on.pruned), (0, 1, 0));
    assert!(on.checked >= 10_000 && on.checked < 200_000, "checked {} then stopped", on.checked);
}

/// An empty build side: an inner join's probe side is filtered away entirely (when the join reads it at all).
#[tokio::test]
async fn empty_build_side_prunes_every_probe_row() {
    let probe = side("p", 5_000, |i| Some(i as i64));
    for join_type in [JoinType::Inner, JoinType::LeftSemi, JoinType::RightSemi, JoinType::LeftAnti, JoinType::Left] {
        let on = join(&[], &probe, join_type, Some(JoinDynamicFilterConfig::default())).await;
        let off = join(&[], &probe, join_type, None).await;
        assert_eq!(on.rows, off.rows, "{join_type:?}");
        assert_eq!(on.pruned, on.checked, "{join_type:?}: every row checked is dropped");
    }
}

/// The driver's union of map tasks' summaries: the partition-wise filter passes what a part passes, the scan's
/// pruning holds the global bounds (and the keys when they are few), and a scan turns it into reader filters;
/// no build row → `IS NULL AND IS NOT NULL` on the key column.
#[test]
fn driver_union_and_scan_pruning() {
    use ember_engine::operators::parquet_scan::FilterOp;
    use ember_engine::planner::dynamic_filter::{scan_filters, union_dynamic_filters};
    let config = DynamicFilterConfig { max_set_values: 100, bloom_bytes: 1024 };
    let summary = |keys: Vec<Option<i32>>, routes: Vec<u32>| {
        let mut f = DynamicFilter::try_new(vec![DataType::Int32], 2, config).unwrap();
        f.update_routed(&routes, &[Arc::new(Int32Array::from(keys)) as ArrayRef]).unwrap();
        encode_dynamic_filter(&f).unwrap()
    };
    let a = summary(vec![Some(5), None, Some(9)], vec![0, 1, 1]);
    let b = summary(vec![Some(-3), Some(9)], vec![1, 1]);
    let union = union_dynamic_filters(&pb::DynamicFilterSummaries { summaries: vec![a, b] }).unwrap();
    let f = decode_dynamic_filter(union.filter.as_ref().unwrap()).unwrap();
    let probe: ArrayRef = Arc::new(Int32Array::from(vec![Some(5), Some(9), Some(-3), Some(7), None]));
    let in0 = f.might_contain_in(0, std::slice::from_ref(&probe)).unwrap();
    let in1 = f.might_contain_in(1, std::slice::from_ref(&probe)).unwrap();
    assert_eq!(in0.iter().map(Option::unwrap).collect::<Vec<_>>(), vec![true, false, false, false, false]);
    assert_eq!(in1.iter().map(Option::unwrap).collect::<Vec<_>>(), vec![false, true, true, false, false]);
    let scan =
        pb::ParquetScanDynamicFilter { columns: [(0u32, 3u32)].into_iter().collect(), pruning: union.pruning.clone() };
    let filters = scan_filters(&scan).unwrap();
    let kinds: Vec<_> = filters.iter().map(|f| (f.column, f.op, f.values.len())).collect();
    assert_eq!(kinds, vec![(3, FilterOp::Ge, 1), (3, FilterOp::Le, 1), (3, FilterOp::In, 3)]);
    assert_eq!(filters[0].values[0], datafusion_common::ScalarValue::Int32(Some(-3)));
    assert_eq!(filters[1].values[0], datafusion_common::ScalarValue::Int32(Some(9)));
    // A key that is not a scan column prunes nothing there.
    let elsewhere = pb::ParquetScanDynamicFilter { columns: Default::default(), pruning: union.pruning };
    assert!(scan_filters(&elsewhere).unwrap().is_empty());
    // Only null keys: nothing can match.
    let empty = summary(vec![None], vec![0]);
    let union = union_dynamic_filters(&pb::DynamicFilterSummaries { summaries: vec![empty] }).unwrap();
    assert!(union.pruning.as_ref().unwrap().empty);
    let scan = pb::ParquetScanDynamicFilter { columns: [(0u32, 0u32)].into_iter().collect(), pruning: union.pruning };
    let kinds: Vec<_> = scan_filters(&scan).unwrap().iter().map(|f| (f.column, f.op)).collect();
    assert_eq!(kinds, vec![(0, FilterOp::IsNull), (0, FilterOp::IsNotNull)]);
}

// ---- A join pruning its probe side's scan in the same task ----

/// A Parquet file of `rows` rows (`pk` ascending, so row groups hold key ranges; `pv` = pk * 10), 5,000 rows
/// per row group.
fn clustered_file(dir: &std::path::Path, rows: i64) -> pb::ParquetSplit {
    let path = dir.join("probe.parquet");
    let s = schema("p");
    let props = parquet::file::properties::WriterProperties::builder().set_max_row_group_row_count(Some(5_000)).build();
    let mut w =
        parquet::arrow::ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), s.clone(), Some(props)).unwrap();
    for start in (0..rows).step_by(10_000) {
        let k: Int64Array = (start..(start + 10_000).min(rows)).map(Some).collect();
        let v: Int64Array = (start..(start + 10_000).min(rows)).map(|i| Some(i * 10)).collect();
        w.write(&RecordBatch::try_new(s.clone(), vec![Arc::new(k), Arc::new(v)]).unwrap()).unwrap();
    }
    w.close().unwrap();
    let length = std::fs::metadata(&path).unwrap().len() as i64;
    let path = path.to_str().unwrap().to_string();
    pb::ParquetSplit { path: path.clone(), start: 0, length, display_path: path, partition_values: vec![] }
}

struct ScanRun {
    rows: Vec<String>,
    row_groups_skipped: u64,
    rows_read: u64,
}

/// Joins `build` (input 0) with the scan of `split` (input 1, through a filter and a projection that swaps its
/// columns), building on the left; with `stacked`, a second join above builds on `outer` (input 2) and probes
/// the first join's output by the scan's key. Returns the rows and what the scan skipped.
fn join_over_scan(
    split: &pb::ParquetSplit,
    build: &[RecordBatch],
    join_type: pb::JoinType,
    prune: bool,
    stacked: Option<&[RecordBatch]>,
) -> ScanRun {
    use ember_engine::planner::spilling_hash_join::ScanSlot;
    use ember_engine::planner::Planner;
    let (bs, ps) = (schema("b"), schema("p"));
    let task = pb::ParquetScanTask {
        splits: vec![split.clone()],
        columns: vec!["pk".into(), "pv".into()],
        datetime_rebase_mode: pb::ParquetScanRebaseMode::Corrected as i32,
        int96_rebase_mode: pb::ParquetScanRebaseMode::Corrected as i32,
        filter_rows: true,
        default_time_zone: "UTC".into(),
        ..Default::default()
    };
    let skipped = Arc::new(std::sync::Mutex::new((0u64, 0u64)));
    let seen = skipped.clone();
    let slot = ScanSlot { filters: Arc::default(), data_columns: 2 };
    let reader = ember_engine::planner::parquet_scan::parquet_scan_reader(
        task,
        ps.clone(),
        1024,
        || Ok(()),
        Box::new(move |p| {
            let mut s = seen.lock().unwrap();
            s.0 += p.row_groups;
            s.1 += p.rows_read;
            Ok(())
        }),
    )
    .unwrap()
    .with_dynamic_filters(slot.filters.clone());
    let key = |c: u32| common::col(c, &DataType::Int64);
    let mut scan = common::input(1, &ps);
    if let Some(pb::operator::Kind::Input(i)) = scan.kind.as_mut() {
        i.kind = pb::InputKind::Parquet as i32;
    }
    let filter = pb::Filter { predicate: Some(common::cmp(pb::CmpOp::GtEq, key(1), common::lit_long(0))) };
    let projection = pb::Projection { exprs: vec![key(1), key(0)], names: vec!["pv".into(), "pk".into()] };
    let probe = common::op(
        3,
        pb::operator::Kind::Projection(projection),
        vec![common::op(2, pb::operator::Kind::Filter(filter), vec![scan])],
    );
    let hj = |left_key: u32, right_key: u32, join_type: pb::JoinType| pb::SpillingHashJoin {
        join_type: join_type as i32,
        build_side: pb::BuildSide::Left as i32,
        left_keys: vec![key(left_key)],
        right_keys: vec![key(right_key)],
        null_safe: vec![false],
        prune_probe_scans: prune,
        ..Default::default()
    };
    let inner =
        common::op(4, pb::operator::Kind::SpillingHashJoin(hj(0, 1, join_type)), vec![common::input(0, &bs), probe]);
    let mut readers = vec![common::reader(build.to_vec(), bs.clone()), Box::new(reader) as _];
    let root = match stacked {
        None => inner,
        Some(outer) => {
            readers.push(common::reader(outer.to_vec(), bs.clone()));
            let mut outer_input = common::input(2, &bs);
            if let Some(pb::operator::Kind::Input(i)) = outer_input.kind.as_mut() {
                i.input_index = 2;
            }
            // The first join's output: b's two columns, then pv, pk; the key is pk (column 3).
            common::op(5, pb::operator::Kind::SpillingHashJoin(hj(0, 3, pb::JoinType::Inner)), vec![outer_input, inner])
        }
    };
    let plan = Planner::new(readers).with_scan_slots([(1, slot)].into_iter().collect()).create_plan(&root).unwrap();
    let batches = common::run(plan, common::task_ctx(1024, None, None)).unwrap();
    let mut rows = common::rows_as_strings(&batches);
    rows.sort();
    let (row_groups_skipped, rows_read) = *skipped.lock().unwrap();
    ScanRun { rows, row_groups_skipped, rows_read }
}

/// A join whose build side holds a narrow key range prunes its probe side's Parquet scan in the same task —
/// through a filter and a projection — to the one row group that can match; the rows are those of the join
/// without pruning, for every join type (a probe side the join preserves is never pruned). An empty build side
/// reads nothing. A second join above prunes the same scan through the first join's output.
#[test]
fn a_join_prunes_its_probe_scan_in_the_task() {
    let dir = tempfile::tempdir().unwrap();
    let split = clustered_file(dir.path(), 100_000);
    // Keys 40,000..40,999 (every 7th), a null, and duplicates.
    let build = side("b", 3_000, |i| (i != 5).then_some(40_000 + (i as i64 * 7) % 1_000));
    use pb::JoinType as J;
    for join_type in [J::Inner, J::LeftOuter, J::RightOuter, J::FullOuter, J::LeftSemi, J::LeftAnti, J::LeftMark] {
        let off = join_over_scan(&split, &build, join_type, false, None);
        let on = join_over_scan(&split, &build, join_type, true, None);
        assert!(on.rows == off.rows, "{join_type:?}: {} rows pruned, {} not", on.rows.len(), off.rows.len());
        assert_eq!(off.row_groups_skipped, 0, "{join_type:?}");
        // Building on the left, the probe side is the right one: pruned where unmatched probe rows are dropped.
        let prunes = matches!(join_type, J::Inner | J::LeftOuter | J::LeftSemi | J::LeftAnti | J::LeftMark);
        if prunes {
            assert_eq!(on.row_groups_skipped, 19, "{join_type:?}: all row groups but 40,000..44,999");
            assert!(on.rows_read <= 5_000, "{join_type:?}: read {} rows", on.rows_read);
        } else {
            assert_eq!(on.row_groups_skipped, 0, "{join_type:?}: a preserved probe side was pruned");
            assert_eq!(on.rows_read, 100_000, "{join_type:?}");
        }
    }
    // (Whether the join reads its probe side at all, or the scan skips every row group: no row is read.)
    let empty = join_over_scan(&split, &[], J::Inner, true, None);
    assert_eq!((empty.rows.len(), empty.rows_read), (0, 0));

    // Stacked: the inner join's build side holds every key, the outer one keys 70,000..70,099.
    let all = side("b", 100_000, |i| Some(i as i64));
    let outer = side("b", 100, |i| Some(70_000 + i as i64));
    let off = join_over_scan(&split, &all, J::Inner, false, Some(&outer));
    let on = join_over_scan(&split, &all, J::Inner, true, Some(&outer));
    assert!(on.rows == off.rows, "stacked: {} rows pruned, {} not", on.rows.len(), off.rows.len());
    assert_eq!(on.rows.len(), 100);
    assert_eq!(on.row_groups_skipped, 19, "the outer join's keys reach the scan through the inner join");
}
