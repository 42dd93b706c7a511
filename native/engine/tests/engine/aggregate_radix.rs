//! The radix-partitioned merging aggregate against DataFusion's `AggregateExec` in the same mode, row for row:
//! one table, split into partitions, spilled partitions, partial-merge, empty input; memory returned and spill
//! files deleted, also when the stream is dropped half-way.

use std::sync::Arc;

use crate::common::{agg, assert_same_rows, files_under, rows_in_order, run, source, task_ctx as ctx};
use arrow::array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
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
use ember_engine::operators::aggregate::radix::{RadixAggregateExec, RadixConfig};
use futures::StreamExt;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

type Groups = Vec<(Arc<dyn PhysicalExpr>, String)>;

/// count(*), count, sum, min, max, avg (a double sum: merge order shows in the last bits), first/last with and
/// without ignoring nulls (arrival order shows).
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
        agg(avg_udaf(), vec![cast(d(), schema, DataType::Float64).unwrap()], schema, "avg_d", false),
        agg(first_value_udaf(), vec![s()], schema, "first_s", false),
        agg(last_value_udaf(), vec![v()], schema, "last_v", false),
        agg(first_value_udaf(), vec![d()], schema, "first_d_ignore_nulls", true),
        agg(last_value_udaf(), vec![s()], schema, "last_s_ignore_nulls", true),
    ]
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
            let v: Int64Array = (0..rows)
                .map(|_| match rng.random_range(0..6) {
                    0 => None,
                    1 => Some(i64::MAX - rng.random_range(0..10)),
                    _ => Some(rng.random_range(-1000..1000)),
                })
                .collect();
            let d: Float64Array = (0..rows)
                .map(|_| match rng.random_range(0..7) {
                    0 => None,
                    1 => Some(-0.0),
                    2 => Some(f64::NAN),
                    _ => Some(rng.random_range(-100.0..100.0) / 3.0),
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

/// Partial states of random rows, one state per row (so a group's states arrive spread over the input, in an
/// order `first`/`last` reveal): the input of a merging aggregate, with its grouping and function expressions.
struct States {
    raw: SchemaRef,
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
    groups: Groups,
    aggs: Vec<Arc<AggregateFunctionExpr>>,
}

fn states(n_batches: usize, rows: usize, key_space: i64, seed: u64) -> States {
    let (raw, batches) = random_batches(n_batches, rows, key_space, seed);
    let groups: Groups = vec![(col("k", &raw).unwrap(), "k".into()), (col("k2", &raw).unwrap(), "k2".into())];
    let aggs = all_aggs(&raw);
    let config = GateConfig { force_pass_through: true, ..Default::default() };
    let partial =
        Arc::new(AdaptiveAggregateExec::try_new(source(&batches, &raw), groups.clone(), aggs.clone(), config).unwrap());
    let schema = partial.schema();
    let batches = run(partial, ctx(1000, None, None)).unwrap();
    let groups = groups
        .iter()
        .enumerate()
        .map(|(i, (_, n))| (Arc::new(Column::new(n, i)) as Arc<dyn PhysicalExpr>, n.clone()))
        .collect();
    States { raw, schema, batches, groups, aggs }
}

impl States {
    fn datafusion(&self, mode: AggregateMode) -> Arc<dyn ExecutionPlan> {
        Arc::new(
            AggregateExec::try_new(
                mode,
                PhysicalGroupBy::new_single(self.groups.clone()),
                self.aggs.clone(),
                vec![None; self.aggs.len()],
                source(&self.batches, &self.schema),
                self.raw.clone(),
            )
            .unwrap(),
        )
    }

    fn radix(&self, mode: AggregateMode, config: RadixConfig) -> Arc<RadixAggregateExec> {
        Arc::new(
            RadixAggregateExec::try_new(
                mode,
                source(&self.batches, &self.schema),
                self.groups.clone(),
                self.aggs.clone(),
                self.raw.clone(),
                config,
            )
            .unwrap(),
        )
    }
}

fn metric(plan: &RadixAggregateExec, name: &str) -> usize {
    plan.metrics().unwrap().sum_by_name(name).map(|v| v.as_usize()).unwrap_or(0)
}

fn config(min_groups: usize, fanout_bits: u32, flush_rows: usize) -> RadixConfig {
    RadixConfig { min_groups, fanout_bits, flush_rows, first_seen_order: false }
}

fn ordered(c: RadixConfig) -> RadixConfig {
    RadixConfig { first_seen_order: true, ..c }
}

/// Same rows as DataFusion's aggregate, in the same (first-seen) order.
#[test]
fn final_and_partial_merge_match_datafusion_in_memory() {
    for (key_space, cfg, splits) in [
        // Few groups: one table, never split.
        (40, RadixConfig::default(), false),
        // Many groups, split early, several reorder passes of odd sizes, narrow and wide fan-outs.
        (100_000, config(100, 1, 700), true),
        (100_000, config(1_000, 4, 3_001), true),
        (5_000, config(10, 8, 257), true),
        (100_000, ordered(config(100, 1, 700)), true),
        (100_000, ordered(config(1_000, 4, 3_001)), true),
        (5_000, ordered(config(10, 8, 257)), true),
        // Fewer groups than partitions: empty sub-tables (row-at-a-time accumulators cannot emit zero groups).
        (40, config(1, 8, 100), true),
        (40, ordered(config(1, 8, 100)), true),
    ] {
        let s = states(12, 1000, key_space, key_space as u64);
        for mode in [AggregateMode::Final, AggregateMode::PartialReduce] {
            let expected = run(s.datafusion(mode), ctx(512, None, None)).unwrap();
            let radix = s.radix(mode, cfg.clone());
            let context = ctx(512, None, None);
            let actual = run(radix.clone(), context.clone()).unwrap();
            assert_same_rows(&actual, &expected, &format!("{mode:?} key space {key_space} {cfg:?}"));
            // With first-seen order (or one table), in the same order too.
            if cfg.first_seen_order || !splits {
                assert!(rows_in_order(&actual) == rows_in_order(&expected), "{mode:?} {cfg:?}: order differs");
            }
            assert!(actual.iter().all(|b| b.num_rows() <= 512), "output batches of at most batch_size rows");
            let partitions = metric(&radix, "radix_partitions");
            assert_eq!(partitions, if splits { 1 << cfg.fanout_bits } else { 0 }, "{cfg:?}");
            assert_eq!(metric(&radix, "spilled_partitions"), 0);
            assert_eq!(context.memory_pool().reserved(), 0, "all memory returned at the end");
        }
    }
}

/// A pool far smaller than the groups' state: partitions spill, are merged from their files by DataFusion's
/// aggregate, and the answer is unchanged; memory and files are returned.
#[test]
fn spilled_partitions_match_datafusion() {
    let s = states(30, 1000, 1_000_000, 11);
    for mode in [AggregateMode::Final, AggregateMode::PartialReduce] {
        let expected = run(s.datafusion(mode), ctx(1000, None, None)).unwrap();
        for (pool, cfg) in [
            (1_500_000, config(500, 3, 2_000)),
            (3_000_000, config(1 << 17, 6, 4_000)),
            (1_500_000, ordered(config(500, 3, 2_000))),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let radix = s.radix(mode, cfg.clone());
            let context = ctx(1000, Some(pool), Some(dir.path()));
            let actual = run(radix.clone(), context.clone()).unwrap();
            assert_same_rows(&actual, &expected, &format!("{mode:?} pool {pool} {cfg:?}"));
            let spilled = metric(&radix, "spilled_partitions");
            assert!(spilled > 0, "{cfg:?}: expected spilled partitions");
            if cfg.fanout_bits == 3 {
                // More than the first split has: spilled partitions were split and spilled again when merged.
                assert!(spilled > 8, "{cfg:?}: expected nested spills, {spilled} partitions spilled");
            }
            assert!(radix.metrics().unwrap().spill_count().unwrap_or(0) > 0, "spill files counted");
            assert_eq!(context.memory_pool().reserved(), 0, "all memory returned at the end");
            assert_eq!(files_under(dir.path()), 0, "spill files left behind");
        }
    }
}

#[test]
fn empty_input_has_no_groups() {
    let s = states(1, 1000, 100, 3);
    let empty = States { batches: vec![], ..s };
    for mode in [AggregateMode::Final, AggregateMode::PartialReduce] {
        let rows: usize =
            run(empty.radix(mode, config(1, 1, 10)), ctx(64, None, None)).unwrap().iter().map(|b| b.num_rows()).sum();
        assert_eq!(rows, 0);
    }
}

/// Dropped after its first output batch, with partitions still on disk: files deleted, memory returned.
#[test]
fn dropped_stream_deletes_its_files() {
    let s = states(30, 1000, 1_000_000, 5);
    let dir = tempfile::tempdir().unwrap();
    let radix = s.radix(AggregateMode::Final, config(500, 3, 2_000));
    let context = ctx(1000, Some(1_500_000), Some(dir.path()));
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    rt.block_on(async {
        let mut stream = radix.execute(0, context.clone()).unwrap();
        stream.next().await.unwrap().unwrap();
        assert!(files_under(dir.path()) > 0, "the test needs partitions on disk when it drops the stream");
        drop(stream);
    });
    assert_eq!(files_under(dir.path()), 0, "spill files left behind");
    assert_eq!(context.memory_pool().reserved(), 0);
}

/// Inputs not laid out as keys then states are refused (the planner then uses DataFusion's aggregate).
#[test]
fn refuses_other_layouts_and_modes() {
    let s = states(1, 100, 100, 1);
    let swapped: Groups = vec![s.groups[1].clone(), s.groups[0].clone()];
    let try_new = |mode, groups: Groups| {
        RadixAggregateExec::try_new(
            mode,
            source(&s.batches, &s.schema),
            groups,
            s.aggs.clone(),
            s.raw.clone(),
            RadixConfig::default(),
        )
    };
    assert!(try_new(AggregateMode::Final, swapped).is_err());
    assert!(try_new(AggregateMode::Partial, s.groups.clone()).is_err());
    assert!(try_new(AggregateMode::Final, vec![]).is_err());
    assert!(try_new(AggregateMode::Final, s.groups.clone()).is_ok());
}
