//! The HLL-gated partial aggregate: results against DataFusion's own partial + final aggregate, and the gate's
//! decisions on synthetic key streams whose best decision is known.

use std::collections::HashSet;
use std::sync::Arc;

use crate::common::{agg, assert_same_rows, reader, run, source, task_ctx};
use arrow::array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion_execution::TaskContext;
use datafusion_functions_aggregate::average::avg_udaf;
use datafusion_functions_aggregate::count::count_udaf;
use datafusion_functions_aggregate::first_last::{first_value_udaf, last_value_udaf};
use datafusion_functions_aggregate::min_max::{max_udaf, min_udaf};
use datafusion_functions_aggregate::sum::sum_udaf;
use datafusion_physical_expr::aggregate::AggregateFunctionExpr;
use datafusion_physical_expr::expressions::{cast, col, lit, Column};
use datafusion_physical_expr::PhysicalExpr;
use datafusion_physical_plan::aggregates::{AggregateExec, AggregateMode, PhysicalGroupBy};
use datafusion_physical_plan::ExecutionPlan;
use ember_engine::operators::aggregate::adaptive::{AdaptiveAggregateExec, GateConfig};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

type Groups = Vec<(Arc<dyn PhysicalExpr>, String)>;

fn ctx(batch_size: usize, pool_bytes: Option<usize>) -> Arc<TaskContext> {
    task_ctx(batch_size, pool_bytes, None)
}

/// The functions of the issue: count(*), count(x), sum, min, max, avg, first/last with and without ignoreNulls.
fn all_aggs(schema: &SchemaRef) -> Vec<Arc<AggregateFunctionExpr>> {
    let v = || col("v", schema).unwrap();
    let d = || col("d", schema).unwrap();
    let s = || col("s", schema).unwrap();
    vec![
        agg(count_udaf(), vec![lit(1i64)], schema, "count_star", false),
        agg(count_udaf(), vec![v()], schema, "count_v", false),
        agg(sum_udaf(), vec![v()], schema, "sum_v", false),
        agg(min_udaf(), vec![d()], schema, "min_d", false),
        agg(max_udaf(), vec![s()], schema, "max_s", false),
        // DataFusion's avg takes Float64 (its type coercion casts); Spark's avg(long) also computes in double.
        agg(avg_udaf(), vec![cast(v(), schema, DataType::Float64).unwrap()], schema, "avg_v", false),
        agg(first_value_udaf(), vec![s()], schema, "first_s", false),
        agg(last_value_udaf(), vec![v()], schema, "last_v", false),
        agg(first_value_udaf(), vec![d()], schema, "first_d_ignore_nulls", true),
        agg(last_value_udaf(), vec![s()], schema, "last_s_ignore_nulls", true),
    ]
}

fn final_over(
    partial: Arc<dyn ExecutionPlan>,
    groups: &Groups,
    aggs: &[Arc<AggregateFunctionExpr>],
    raw: &SchemaRef,
) -> Arc<dyn ExecutionPlan> {
    let final_groups: Groups = groups
        .iter()
        .enumerate()
        .map(|(i, (_, n))| (Arc::new(Column::new(n, i)) as Arc<dyn PhysicalExpr>, n.clone()))
        .collect();
    Arc::new(
        AggregateExec::try_new(
            AggregateMode::Final,
            PhysicalGroupBy::new_single(final_groups),
            aggs.to_vec(),
            vec![None; aggs.len()],
            partial,
            raw.clone(),
        )
        .unwrap(),
    )
}

fn df_partial(
    input: Arc<dyn ExecutionPlan>,
    groups: &Groups,
    aggs: &[Arc<AggregateFunctionExpr>],
) -> Arc<dyn ExecutionPlan> {
    let schema = input.schema();
    Arc::new(
        AggregateExec::try_new(
            AggregateMode::Partial,
            PhysicalGroupBy::new_single(groups.clone()),
            aggs.to_vec(),
            vec![None; aggs.len()],
            input,
            schema,
        )
        .unwrap(),
    )
}

fn random_batches(n_batches: usize, rows: usize, key_space: i64, seed: u64) -> (SchemaRef, Vec<RecordBatch>) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, true),
        Field::new("k2", DataType::Utf8, true),
        Field::new("v", DataType::Int64, true),
        Field::new("d", DataType::Float64, true),
        Field::new("s", DataType::Utf8, true),
    ]));
    let mut rng = StdRng::seed_from_u64(seed);
    let batches = (0..n_batches)
        .map(|_| {
            let k: Int64Array =
                (0..rows).map(|_| (rng.random_range(0..20) != 0).then(|| rng.random_range(0..key_space))).collect();
            let k2: StringArray = (0..rows)
                .map(|_| (rng.random_range(0..10) != 0).then(|| format!("g{}", rng.random_range(0..3))))
                .collect();
            let v: Int64Array =
                (0..rows).map(|_| (rng.random_range(0..5) != 0).then(|| rng.random_range(-1000..1000))).collect();
            let d: Float64Array = (0..rows)
                .map(|_| match rng.random_range(0..6) {
                    0 => None,
                    1 => Some(-0.0),
                    _ => Some(rng.random_range(-100.0..100.0)),
                })
                .collect();
            let s: StringArray = (0..rows)
                .map(|_| (rng.random_range(0..4) != 0).then(|| format!("s{}", rng.random_range(0..50))))
                .collect();
            RecordBatch::try_new(
                schema.clone(),
                vec![Arc::new(k) as ArrayRef, Arc::new(k2), Arc::new(v), Arc::new(d), Arc::new(s)],
            )
            .unwrap()
        })
        .collect();
    (schema, batches)
}

fn groups_k_k2(schema: &SchemaRef) -> Groups {
    vec![(col("k", schema).unwrap(), "k".into()), (col("k2", schema).unwrap(), "k2".into())]
}

fn cfg(min_rows: usize) -> GateConfig {
    GateConfig { min_rows, ..Default::default() }
}

/// Gated partial + DataFusion final == DataFusion partial + final, on random data with nulls, for a gate
/// that switches (high-cardinality keys), one that does not (low), forced pass-through, and a gate that is off.
#[test]
fn gated_partial_matches_datafusion() {
    for (key_space, config) in [
        (1_000_000, cfg(2_000)),
        (50, cfg(2_000)),
        (5_000, GateConfig { force_pass_through: true, ..cfg(2_000) }),
        (5_000, GateConfig { enabled: false, ..cfg(2_000) }),
        // Mid-cardinality with a tiny window: the gate flips both ways on noise; the answer must not change.
        (3_000, GateConfig { min_reduction: 0.5, ..cfg(500) }),
    ] {
        let (schema, batches) = random_batches(12, 1000, key_space, key_space as u64);
        let groups = groups_k_k2(&schema);
        let aggs = all_aggs(&schema);
        let expected = run(
            final_over(df_partial(source(&batches, &schema), &groups, &aggs), &groups, &aggs, &schema),
            ctx(1024, None),
        )
        .unwrap();
        let gated = Arc::new(
            AdaptiveAggregateExec::try_new(source(&batches, &schema), groups.clone(), aggs.clone(), config.clone())
                .unwrap(),
        );
        let actual = run(final_over(gated.clone(), &groups, &aggs, &schema), ctx(1024, None)).unwrap();
        assert_same_rows(&actual, &expected, &format!("key space {key_space}, {config:?}"));
        let m = gated.metrics().unwrap();
        let passed = m.sum_by_name("rows_passed_through").map(|v| v.as_usize()).unwrap_or(0);
        if config.force_pass_through {
            assert_eq!(passed, 12_000);
        }
        if !config.enabled {
            assert_eq!(passed, 0);
        }
        if key_space == 1_000_000 && !config.force_pass_through {
            assert!(passed > 8_000, "unique keys should pass through, passed {passed}");
        }
        if key_space == 50 {
            assert_eq!(passed, 0);
        }
    }
}

/// Spark's `FILTER (WHERE …)` per function: the gated partial (aggregating, switching, passed through) with
/// filters, then DataFusion's final, equals DataFusion's own filtered partial + final. Filters that are NULL on
/// some rows count as false there.
#[test]
fn filtered_partial_matches_datafusion() {
    use datafusion_expr::Operator;
    use datafusion_physical_expr::expressions::{binary, is_null};
    for (key_space, config) in [
        (1_000_000, cfg(2_000)),
        (50, cfg(2_000)),
        (5_000, GateConfig { force_pass_through: true, ..cfg(2_000) }),
        (5_000, GateConfig { enabled: false, ..cfg(2_000) }),
    ] {
        let (schema, batches) = random_batches(8, 1000, key_space, 11 + key_space as u64);
        let groups = groups_k_k2(&schema);
        let aggs = all_aggs(&schema);
        let v_positive = binary(col("v", &schema).unwrap(), Operator::Gt, lit(0i64), &schema).unwrap();
        let d_null = is_null(col("d", &schema).unwrap()).unwrap();
        let k2_g1 = binary(col("k2", &schema).unwrap(), Operator::Eq, lit("g1"), &schema).unwrap();
        let filters: Vec<Option<Arc<dyn PhysicalExpr>>> = (0..aggs.len())
            .map(|i| match i % 4 {
                0 => Some(Arc::clone(&v_positive)),
                1 => Some(Arc::clone(&k2_g1)),
                2 => None,
                _ => Some(Arc::clone(&d_null)),
            })
            .collect();
        let reference = Arc::new(
            AggregateExec::try_new(
                AggregateMode::Partial,
                PhysicalGroupBy::new_single(groups.clone()),
                aggs.clone(),
                filters.clone(),
                source(&batches, &schema),
                schema.clone(),
            )
            .unwrap(),
        );
        let expected = run(final_over(reference, &groups, &aggs, &schema), ctx(1024, None)).unwrap();
        let gated = Arc::new(
            AdaptiveAggregateExec::try_new(source(&batches, &schema), groups.clone(), aggs.clone(), config.clone())
                .unwrap()
                .with_filters(filters)
                .unwrap(),
        );
        let actual = run(final_over(gated.clone(), &groups, &aggs, &schema), ctx(1024, None)).unwrap();
        assert_same_rows(&actual, &expected, &format!("filtered, key space {key_space}, {config:?}"));
        let passed = gated.metrics().unwrap().sum_by_name("rows_passed_through").map(|v| v.as_usize()).unwrap_or(0);
        if config.force_pass_through {
            assert_eq!(passed, 8_000, "every row passed through, filters applied to its state");
        }
    }
}

/// Under a pool too small for the whole state the gated partial emits early instead of failing, and the
/// final answer is unchanged.
#[test]
fn memory_refusal_emits_early() {
    let (schema, batches) = random_batches(20, 1000, 4_000, 7);
    let groups = groups_k_k2(&schema);
    let aggs = all_aggs(&schema);
    let expected = run(
        final_over(df_partial(source(&batches, &schema), &groups, &aggs), &groups, &aggs, &schema),
        ctx(1024, None),
    )
    .unwrap();
    // Never pass through (reduction ratio 0): only memory can make it emit.
    let config = GateConfig { min_reduction: 0.0, ..cfg(1_000) };
    let gated = Arc::new(
        AdaptiveAggregateExec::try_new(source(&batches, &schema), groups.clone(), aggs.clone(), config).unwrap(),
    );
    let small = ctx(1024, Some(400_000));
    let partial_out = run(gated.clone(), small.clone()).unwrap();
    assert_eq!(small.memory_pool().reserved(), 0, "all memory returned at the end");
    let m = gated.metrics().unwrap();
    assert!(m.sum_by_name("memory_emits").unwrap().as_usize() > 0, "expected early emits under a small pool");
    let actual =
        run(final_over(source(&partial_out, &gated.schema()), &groups, &aggs, &schema), ctx(1024, None)).unwrap();
    assert_same_rows(&actual, &expected, "memory refusal");
}

// ---------------------------------------------------------------------------------------------------------
// The gate on synthetic key streams. Rows emitted by the partial (what would be shuffled) are compared with
// always aggregating (unbounded memory), always passing through, and a fixed probe in the manner of DataFusion
// and Velox: after the first PROBE rows, if groups/rows > 0.8, pass everything through from then on.

const BATCH: usize = 2048;
const MIN_ROWS: usize = 20_000;
const PROBE: usize = MIN_ROWS;

fn key_batches(keys: &[i64]) -> (SchemaRef, Vec<RecordBatch>) {
    let schema =
        Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, false), Field::new("v", DataType::Int64, false)]));
    let batches = keys
        .chunks(BATCH)
        .map(|c| {
            RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(Int64Array::from(c.to_vec())) as ArrayRef,
                    Arc::new(Int64Array::from_iter_values(0..c.len() as i64)),
                ],
            )
            .unwrap()
        })
        .collect();
    (schema, batches)
}

struct Outcome {
    emitted: usize,
    passed: usize,
    switches_to_pass: usize,
    switches_to_agg: usize,
    first_pass_at: usize,
    sketch_ns: usize,
    aggregate_ns: usize,
    estimated_groups: usize,
    actual_groups: usize,
}

fn gate_run(keys: &[i64], config: GateConfig) -> Outcome {
    let o = run_gate(keys, config);
    println!(
        "{} rows: gate emitted {} (passed through {}, switches {}/{}, first at row {}); always aggregate {}, \
         fixed probe {}",
        keys.len(),
        o.emitted,
        o.passed,
        o.switches_to_pass,
        o.switches_to_agg,
        o.first_pass_at,
        always_aggregate(keys),
        fixed_probe(keys)
    );
    o
}

fn run_gate(keys: &[i64], config: GateConfig) -> Outcome {
    let (schema, batches) = key_batches(keys);
    let groups: Groups = vec![(col("k", &schema).unwrap(), "k".into())];
    let aggs = vec![
        agg(sum_udaf(), vec![col("v", &schema).unwrap()], &schema, "sum_v", false),
        agg(count_udaf(), vec![lit(1i64)], &schema, "cnt", false),
    ];
    let gated = Arc::new(AdaptiveAggregateExec::try_new(source(&batches, &schema), groups, aggs, config).unwrap());
    let out = run(gated.clone(), ctx(BATCH, None)).unwrap();
    let m = gated.metrics().unwrap();
    let get = |n: &str| m.sum_by_name(n).map(|v| v.as_usize()).unwrap_or(0);
    Outcome {
        emitted: out.iter().map(|b| b.num_rows()).sum(),
        passed: get("rows_passed_through"),
        switches_to_pass: get("switches_to_pass_through"),
        switches_to_agg: get("switches_to_aggregate"),
        first_pass_at: get("pass_through_at_row"),
        sketch_ns: get("sketch_time"),
        aggregate_ns: get("aggregate_time"),
        estimated_groups: get("estimated_groups"),
        actual_groups: get("actual_groups"),
    }
}

fn always_aggregate(keys: &[i64]) -> usize {
    keys.iter().collect::<HashSet<_>>().len()
}

/// DataFusion's and Velox's fixed probe (`skip_partial_aggregation_probe_rows_threshold` = PROBE,
/// `_ratio_threshold` = 0.8), as the operator runs it with `fixed_probe`: groups/rows is checked once, after
/// the batch that brings the rows to PROBE; if it skips, it skips for good. Returns the rows emitted.
fn fixed_probe(keys: &[i64]) -> usize {
    let o = run_gate(keys, GateConfig { fixed_probe: true, min_reduction: 0.2, ..cfg(PROBE) });
    assert!(o.switches_to_agg == 0 && o.switches_to_pass <= 1);
    o.emitted
}

fn best(keys: &[i64]) -> usize {
    always_aggregate(keys).min(keys.len())
}

/// A bijective scramble so that "unique" keys are not in order.
fn scramble(i: i64) -> i64 {
    (i.wrapping_mul(0x9E37_79B9_7F4A_7C15u64 as i64)) ^ 0x5555
}

#[test]
fn gate_all_unique_passes_through_early() {
    let keys: Vec<i64> = (0..300_000).map(scramble).collect();
    let o = gate_run(&keys, cfg(MIN_ROWS));
    assert_eq!(o.emitted, best(&keys));
    assert_eq!(o.switches_to_pass, 1);
    assert_eq!(o.switches_to_agg, 0);
    assert!(o.first_pass_at <= MIN_ROWS + BATCH, "switched at row {}", o.first_pass_at);
    assert!(o.passed >= keys.len() - MIN_ROWS - BATCH);
}

#[test]
fn gate_1k_keys_never_passes_through() {
    let keys: Vec<i64> = (0..300_000).map(|i| scramble(i * 7919 % 1000)).collect();
    let o = gate_run(&keys, cfg(MIN_ROWS));
    assert_eq!(o.emitted, 1000);
    assert_eq!(o.emitted, best(&keys));
    assert_eq!(o.passed, 0);
    assert_eq!(o.switches_to_pass, 0);
}

/// Unique for the first half, then 1k keys over and over. The fixed probe sees only unique keys and passes
/// everything through; the gate passes the unique half through and goes back to aggregating as soon as the
/// repeating half starts, where combining pays.
#[test]
fn gate_unique_then_repeating_switches_back_where_it_pays() {
    let n = 300_000i64;
    let keys: Vec<i64> = (0..n).map(|i| if i < n / 2 { scramble(i) } else { scramble(n + i % 1000) }).collect();
    let o = gate_run(&keys, cfg(MIN_ROWS));
    let half = (n / 2) as usize;
    let optimum = half + 1000; // unique half as it is, repeating half combined (any decision in the first half)
    assert_eq!(best(&keys), optimum);
    assert!(fixed_probe(&keys) >= n as usize - 1, "the fixed probe passes everything through");
    assert_eq!(o.switches_to_pass, 1);
    assert_eq!(o.switches_to_agg, 1);
    // Rows of the repeating half passed through before the gate noticed: at most a window (which has grown
    // with the epoch to 1024 · keys / 2^14 rows) and two batches.
    let late = o.passed - (half - o.first_pass_at);
    let window = (MIN_ROWS / 4).max(1024 * half / (1 << 14));
    assert!(late <= window + 2 * BATCH, "{late} repeating rows passed through (window {window})");
    assert!(o.emitted <= optimum + late, "emitted {} vs optimum {optimum}", o.emitted);
    assert!((o.emitted as f64) < 1.1 * optimum as f64);
}

/// Sorted keys, each repeated 4 times: every batch is disjoint from the state, but combining within a batch
/// removes 3/4 of the rows, so the gate must keep aggregating. Sorted unique keys: pass through.
#[test]
fn gate_sorted_keys() {
    let keys: Vec<i64> = (0..300_000).map(|i| i / 4).collect();
    let o = gate_run(&keys, cfg(MIN_ROWS));
    assert_eq!(o.emitted, best(&keys));
    assert_eq!(o.passed, 0);
    let keys: Vec<i64> = (0..300_000).collect();
    let o = gate_run(&keys, cfg(MIN_ROWS));
    assert_eq!(o.emitted, best(&keys));
    assert_eq!(o.switches_to_pass, 1);
    assert!(o.first_pass_at <= MIN_ROWS + BATCH);
}

/// Bursts: 40k unique keys, then 40k rows over 200 hot keys, alternating. Aggregating pays only in the hot
/// bursts; the gate follows the bursts both ways. The fixed probe (first rows unique) passes all through.
#[test]
fn gate_follows_bursts() {
    let burst = 40_000i64;
    let keys: Vec<i64> =
        (0..8 * burst).map(|i| if (i / burst) % 2 == 0 { scramble(i) } else { scramble(-1 - i % 200) }).collect();
    let o = gate_run(&keys, cfg(MIN_ROWS));
    let optimum = best(&keys); // 160k unique + 200 hot
    assert_eq!(optimum, 160_200);
    assert!(fixed_probe(&keys) >= keys.len() - 1);
    assert!(o.switches_to_pass >= 4 && o.switches_to_agg >= 3, "{} / {}", o.switches_to_pass, o.switches_to_agg);
    assert!((o.emitted as f64) < 1.25 * optimum as f64, "emitted {} vs optimum {optimum}", o.emitted);
}

/// Keys cycling with a period (60k) longer than the probe: the first 20k rows look unique. The fixed probe
/// passes everything through; the gate passes the first lap through too, but sees the second lap repeat the
/// first (every key already in the epoch sketch), goes back to aggregating and combines laps 3-5. Always
/// aggregating would have been better still (60k rows): no online rule can know at row 20k that keys return.
#[test]
fn gate_cyclic_keys_beat_the_fixed_probe() {
    let period = 60_000i64;
    let keys: Vec<i64> = (0..5 * period).map(|i| scramble(i % period)).collect();
    let o = gate_run(&keys, cfg(MIN_ROWS));
    assert!(fixed_probe(&keys) >= keys.len() - 1);
    assert_eq!(o.switches_to_pass, 1);
    assert_eq!(o.switches_to_agg, 1);
    assert!(o.emitted <= 2 * period as usize + 2 * BATCH + MIN_ROWS / 4, "emitted {}", o.emitted);
}

/// Estimated vs actual groups of the emitted states stay within a few percent, and the sketch costs a small
/// share of the aggregation (timings printed: `cargo test -p ember-engine --test engine aggregate_adaptive::
/// sketch_estimates -- --nocapture --test-threads=1`).
#[test]
fn sketch_estimates_and_cost() {
    let keys: Vec<i64> = (0..300_000).map(|i| scramble(i % 150_000)).collect();
    let o = gate_run(&keys, GateConfig { min_reduction: 0.0, ..cfg(MIN_ROWS) });
    assert_eq!(o.actual_groups, 150_000);
    let err = (o.estimated_groups as f64 - o.actual_groups as f64).abs() / o.actual_groups as f64;
    assert!(err < 0.03, "estimated {} vs actual {}", o.estimated_groups, o.actual_groups);
    let off = gate_run(&keys, GateConfig { enabled: false, ..cfg(MIN_ROWS) });
    let few: Vec<i64> = (0..300_000).map(|i| scramble(i % 1000)).collect();
    let f = gate_run(&few, cfg(MIN_ROWS));
    let few_off = gate_run(&few, GateConfig { enabled: false, ..cfg(MIN_ROWS) });
    let per_row = |ns: usize| ns as f64 / 300_000.0;
    // The same work outside the operator, in one tight loop: hash each batch, insert into two sketches.
    let standalone = |keys: &[i64]| {
        use ember_engine::operators::aggregate::adaptive::sketch::hash_keys;
        use ember_engine::operators::aggregate::adaptive::KeySketch;
        let (_, batches) = key_batches(keys);
        let (mut a, mut b, mut h) = (KeySketch::try_new(14).unwrap(), KeySketch::try_new(14).unwrap(), vec![]);
        let t = std::time::Instant::now();
        for batch in &batches {
            hash_keys(&[batch.column(0).clone()], batch.num_rows(), &mut h).unwrap();
            a.insert_hashes(&h);
            b.insert_hashes(&h);
        }
        let _ = a.estimate();
        t.elapsed().as_nanos() as f64 / keys.len() as f64
    };
    println!(
        "standalone hash + 2 sketch inserts: {:.1} ns/row on 150k keys, {:.1} ns/row on 1k keys",
        standalone(&keys),
        standalone(&few)
    );
    println!(
        "300k rows, 150k groups: sketch {:.1} ns/row, aggregation {:.1} ns/row ({:.0}%), aggregation with the gate \
         off {:.1} ns/row\n300k rows, 1k groups: sketch {:.1} ns/row, aggregation {:.1} ns/row ({:.0}%), gate off \
         {:.1} ns/row",
        per_row(o.sketch_ns),
        per_row(o.aggregate_ns),
        100.0 * o.sketch_ns as f64 / o.aggregate_ns as f64,
        per_row(off.aggregate_ns),
        per_row(f.sketch_ns),
        per_row(f.aggregate_ns),
        100.0 * f.sketch_ns as f64 / f.aggregate_ns as f64,
        per_row(few_off.aggregate_ns),
    );
}

// ---------------------------------------------------------------------------------------------------------
// Through the proto and the planner: Input → Aggregate(PARTIAL, gated) → Aggregate(FINAL).

mod via_proto {
    use super::*;
    use crate::common::{col as pcol, input, op, pb_schema, pb_type, plan};
    use ember_engine::execution::NativePlan;
    use ember_engine::memory::FixedBroker;
    use ember_engine::proto as pb;
    use std::collections::HashMap;

    fn function(
        kind: pb::AggregateFunctionKind,
        args: Vec<pb::Expr>,
        result: DataType,
        name: &str,
    ) -> pb::AggregateFunction {
        // Spark's buffer for these functions is one column of the result type.
        let intermediate = vec![pb::Field { name: "buf".into(), r#type: Some(pb_type(&result)), nullable: true }];
        pb::AggregateFunction {
            kind: kind as i32,
            args,
            result_type: Some(pb_type(&result)),
            intermediate,
            name: name.into(),
            ..Default::default()
        }
    }

    /// (count(*), count(v), sum(v), min(v), max(v)) of one group.
    type Aggs = (i64, i64, Option<i64>, Option<i64>, Option<i64>);
    type Row = (Option<i64>, i64, i64, Option<i64>, Option<i64>, Option<i64>);

    fn run_plan(adaptive: pb::AdaptivePartial) -> Vec<Row> {
        let (schema, batches) = random_batches(10, 1000, 3_000, 11);
        let kv = Arc::new(Schema::new(vec![schema.field(0).clone(), schema.field(2).clone()]));
        let batches: Vec<RecordBatch> = batches
            .iter()
            .map(|b| RecordBatch::try_new(kv.clone(), vec![b.column(0).clone(), b.column(2).clone()]).unwrap())
            .collect();
        use pb::AggregateFunctionKind as K;
        let functions = || {
            let v = || vec![pcol(1, &DataType::Int64)];
            vec![
                function(K::CountStar, vec![], DataType::Int64, "cnt"),
                function(K::Count, v(), DataType::Int64, "cnt_v"),
                function(K::Sum, v(), DataType::Int64, "sum_v"),
                function(K::Min, v(), DataType::Int64, "min_v"),
                function(K::Max, v(), DataType::Int64, "max_v"),
            ]
        };
        let partial = op(
            1,
            pb::operator::Kind::Aggregate(pb::Aggregate {
                mode: pb::AggregateMode::Partial as i32,
                grouping: vec![pcol(0, &DataType::Int64)],
                grouping_names: vec!["k".into()],
                functions: functions(),
                raw_input_schema: None,
                adaptive: Some(adaptive),
                ..Default::default()
            }),
            vec![input(0, &kv)],
        );
        let final_ = op(
            2,
            pb::operator::Kind::Aggregate(pb::Aggregate {
                mode: pb::AggregateMode::Final as i32,
                grouping: vec![pcol(0, &DataType::Int64)],
                grouping_names: vec!["k".into()],
                functions: functions(),
                raw_input_schema: Some(pb_schema(&kv)),
                adaptive: None,
                ..Default::default()
            }),
            vec![partial],
        );
        let out_schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new("cnt", DataType::Int64, false),
            Field::new("cnt_v", DataType::Int64, false),
            Field::new("sum_v", DataType::Int64, true),
            Field::new("min_v", DataType::Int64, true),
            Field::new("max_v", DataType::Int64, true),
        ]));
        let mut p = NativePlan::from_proto(
            &plan(final_, &out_schema),
            vec![reader(batches.clone(), kv.clone())],
            Arc::new(FixedBroker::new(64 << 20)),
        )
        .unwrap();
        let mut rows = vec![];
        while let Some(b) = p.next_batch().unwrap() {
            let c = |i: usize| b.column(i).as_any().downcast_ref::<Int64Array>().unwrap().clone();
            let (k, n, nv, s, mi, ma) = (c(0), c(1), c(2), c(3), c(4), c(5));
            for r in 0..b.num_rows() {
                let o = |a: &Int64Array| (!a.is_null(r)).then(|| a.value(r));
                rows.push((o(&k), n.value(r), nv.value(r), o(&s), o(&mi), o(&ma)));
            }
        }
        rows.sort();
        // Expected, in plain Rust.
        let mut m: HashMap<Option<i64>, Aggs> = HashMap::new();
        for b in &batches {
            let k = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
            let v = b.column(1).as_any().downcast_ref::<Int64Array>().unwrap();
            for r in 0..b.num_rows() {
                let e = m.entry((!k.is_null(r)).then(|| k.value(r))).or_insert((0, 0, None, None, None));
                e.0 += 1;
                if !v.is_null(r) {
                    let x = v.value(r);
                    e.1 += 1;
                    e.2 = Some(e.2.unwrap_or(0) + x);
                    e.3 = Some(e.3.map_or(x, |y: i64| y.min(x)));
                    e.4 = Some(e.4.map_or(x, |y: i64| y.max(x)));
                }
            }
        }
        let mut expected: Vec<_> = m.into_iter().map(|(k, e)| (k, e.0, e.1, e.2, e.3, e.4)).collect();
        expected.sort();
        assert_eq!(rows, expected);
        rows
    }

    use arrow::array::Array;

    #[test]
    fn planner_builds_gated_partial_and_final() {
        run_plan(pb::AdaptivePartial {
            enabled: true,
            min_rows: 2_000,
            min_reduction: 0.2,
            precision: 14,
            force_pass_through: false,
            min_state_bytes: 0,
            fixed_probe: false,
        });
        // The fixed probe through the planner.
        run_plan(pb::AdaptivePartial { enabled: true, min_rows: 2_000, fixed_probe: true, ..Default::default() });
        // The byte threshold decides before the rows do.
        run_plan(pb::AdaptivePartial {
            enabled: true,
            min_rows: 1_000_000,
            min_state_bytes: 64 << 10,
            min_reduction: 0.2,
            ..Default::default()
        });
        run_plan(pb::AdaptivePartial { enabled: true, force_pass_through: true, ..Default::default() });
        run_plan(pb::AdaptivePartial { enabled: false, ..Default::default() });
    }

    #[test]
    fn planner_rejects_what_it_cannot_do_exactly() {
        let kv =
            Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, true), Field::new("v", DataType::Int64, true)]));
        let bad = |f: pb::AggregateFunction| {
            let a = op(
                1,
                pb::operator::Kind::Aggregate(pb::Aggregate {
                    mode: pb::AggregateMode::Partial as i32,
                    grouping: vec![pcol(0, &DataType::Int64)],
                    grouping_names: vec!["k".into()],
                    functions: vec![f],
                    raw_input_schema: None,
                    adaptive: None,
                    ..Default::default()
                }),
                vec![input(0, &kv)],
            );
            NativePlan::from_proto(&plan(a, &kv), vec![reader(vec![], kv.clone())], Arc::new(FixedBroker::new(1 << 20)))
                .err()
        };
        use pb::AggregateFunctionKind as K;
        // TRY sum (try_sum): not implemented natively; ANSI is.
        let mut f = function(K::Sum, vec![pcol(1, &DataType::Int64)], DataType::Int64, "s");
        f.eval_mode = pb::EvalMode::Try as i32;
        assert!(bad(f.clone()).is_some());
        f.eval_mode = pb::EvalMode::Ansi as i32;
        assert!(bad(f).is_none());
        // A buffer that is not Spark's: avg's is (sum DOUBLE, count BIGINT).
        let mut avg = function(K::Avg, vec![pcol(1, &DataType::Int64)], DataType::Float64, "a");
        assert!(bad(avg.clone()).unwrap().to_string().contains("aggregation buffer"));
        avg.intermediate.push(pb::Field {
            name: "count".into(),
            r#type: Some(pb_type(&DataType::Int64)),
            nullable: false,
        });
        // Spark's buffer: the plan is built (it fails later only because this test's output schema is (k, v)).
        assert!(!bad(avg).unwrap().to_string().contains("aggregation buffer"));
        // A result type that is not Spark's.
        assert!(bad(function(K::Avg, vec![pcol(1, &DataType::Int64)], DataType::Int64, "a")).is_some());
        assert!(bad(function(K::Count, vec![], DataType::Int64, "c")).is_some());
    }
}
