//! The spilling hash join against DataFusion's `HashJoinExec`, row for row, on every path: in memory, bucketed,
//! split again, chunked (hot key, null keys), every bucket spilled, empty sides; uncompressed and lz4 spill
//! files; under a fake of Spark's memory manager. Also: files and reservations after completion, drop and error.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Float32Array, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Float32Type, Float64Type, Schema, SchemaRef};
use arrow::record_batch::RecordBatchIterator;
use arrow::util::display::array_value_to_string;
use datafusion_common::config::SpillCompression;
use datafusion_common::{DataFusionError, JoinSide, JoinType, NullEquality, Result};
use datafusion_execution::config::SessionConfig;
use datafusion_execution::disk_manager::{DiskManagerBuilder, DiskManagerMode};
use datafusion_execution::memory_pool::MemoryPool;
use datafusion_execution::runtime_env::RuntimeEnvBuilder;
use datafusion_execution::TaskContext;
use datafusion_expr::Operator;
use datafusion_physical_expr::expressions::{BinaryExpr, Column};
use datafusion_physical_expr::PhysicalExprRef;
use datafusion_physical_plan::joins::utils::{ColumnIndex, JoinFilter};
use datafusion_physical_plan::joins::{HashJoinExec, PartitionMode};
use datafusion_physical_plan::ExecutionPlan;
use ember_engine::memory::{BrokerMemoryPool, FixedBroker};
use ember_engine::operators::dynamic_filter::DynamicFilterConfig;
use ember_engine::operators::spilling_hash_join::{
    prunes_probe, shares_build, BroadcastMemory, JoinDynamicFilterConfig, SharedBuild, SharedBuilds,
    SpillingHashJoinConfig, SpillingHashJoinExec,
};
use ember_engine::operators::InputExec;
use ember_engine::proto as pb;
use futures::StreamExt;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::common;
use crate::common::files_under;

const BATCH: usize = 256;

const ALL_TYPES: [JoinType; 10] = common::ALL_JOIN_TYPES;

pub(crate) fn build_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("bk", DataType::Int64, true),
        Field::new("bp", DataType::Int64, true),
        Field::new("bs", DataType::Utf8, true),
    ]))
}

pub(crate) fn probe_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("pk", DataType::Int64, true),
        Field::new("pq", DataType::Int64, true),
        Field::new("ps", DataType::Utf8, true),
    ]))
}

/// Shape of one side's random data.
#[derive(Clone, Copy)]
pub(crate) struct Shape {
    pub(crate) rows: usize,
    /// Keys drawn from 0..domain.
    pub(crate) domain: i64,
    pub(crate) null_keys: f64,
    /// Fraction of rows on key 7.
    pub(crate) hot: f64,
}

pub(crate) fn side(schema: SchemaRef, shape: Shape, seed: u64) -> Vec<RecordBatch> {
    let rising = schema.field(0).name() == "bk";
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = vec![];
    let mut left = shape.rows;
    while left > 0 {
        let n = left.min(BATCH);
        left -= n;
        let k: Int64Array = (0..n)
            .map(|_| {
                if rng.random_bool(shape.null_keys) {
                    None
                } else if rng.random_bool(shape.hot) {
                    Some(7)
                } else {
                    Some(rng.random_range(0..shape.domain))
                }
            })
            .collect();
        // Build payloads rise with the row number: chunks of a hot bucket then hold different payload ranges,
        // so the residual `bp < pq` matches a probe row in some chunks and not in others.
        let first = shape.rows - left - n;
        let p: Int64Array = (0..n)
            .map(|i| {
                if rng.random_bool(0.1) {
                    None
                } else if rising {
                    Some(((first + i) * 100 / shape.rows) as i64)
                } else {
                    Some(rng.random_range(0..100))
                }
            })
            .collect();
        let s: StringArray = (0..n).map(|i| Some(format!("s{}", (i * 31) % 17))).collect();
        out.push(RecordBatch::try_new(schema.clone(), vec![Arc::new(k), Arc::new(p), Arc::new(s)]).unwrap());
    }
    out
}

pub(crate) fn source(schema: SchemaRef, batches: Vec<RecordBatch>) -> Arc<dyn ExecutionPlan> {
    let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), schema.clone());
    Arc::new(InputExec::new(0, schema, Box::new(reader)))
}

/// DataFusion's own `HashJoinExec` of the two sides (build left, on `keys`), unbounded: what every path must
/// return.
async fn reference_join(
    build: &[RecordBatch],
    probe: &[RecordBatch],
    keys: Vec<(PhysicalExprRef, PhysicalExprRef)>,
    filter: Option<JoinFilter>,
    join_type: JoinType,
    null_equality: NullEquality,
) -> Vec<RecordBatch> {
    let reference = HashJoinExec::try_new(
        source(build_schema(), build.to_vec()),
        source(probe_schema(), probe.to_vec()),
        keys,
        filter,
        &join_type,
        None,
        PartitionMode::CollectLeft,
        null_equality,
        false,
    )
    .unwrap();
    collect(Arc::new(reference), Arc::new(TaskContext::default())).await.unwrap()
}

pub(crate) fn on() -> Vec<(PhysicalExprRef, PhysicalExprRef)> {
    vec![(Arc::new(Column::new("bk", 0)) as PhysicalExprRef, Arc::new(Column::new("pk", 0)) as PhysicalExprRef)]
}

/// Residual condition `bp < pq`.
fn residual() -> JoinFilter {
    let schema =
        Arc::new(Schema::new(vec![Field::new("bp", DataType::Int64, true), Field::new("pq", DataType::Int64, true)]));
    let expr = Arc::new(BinaryExpr::new(Arc::new(Column::new("bp", 0)), Operator::Lt, Arc::new(Column::new("pq", 1))));
    JoinFilter::new(
        expr,
        vec![ColumnIndex { index: 1, side: JoinSide::Left }, ColumnIndex { index: 1, side: JoinSide::Right }],
        schema,
    )
}

fn rows(batches: &[RecordBatch]) -> Vec<String> {
    let mut out = vec![];
    for b in batches {
        for r in 0..b.num_rows() {
            let cells: Vec<String> = b
                .columns()
                .iter()
                .map(|c| if c.is_null(r) { "∅".into() } else { array_value_to_string(c, r).unwrap() })
                .collect();
            out.push(cells.join("|"));
        }
    }
    out.sort();
    out
}

pub(crate) async fn collect(plan: Arc<dyn ExecutionPlan>, ctx: Arc<TaskContext>) -> Result<Vec<RecordBatch>> {
    let mut stream = plan.execute(0, ctx)?;
    let mut out = vec![];
    while let Some(b) = stream.next().await {
        out.push(b?);
    }
    Ok(out)
}

pub(crate) struct Env {
    pub(crate) ctx: Arc<TaskContext>,
    pool: Arc<BrokerMemoryPool>,
    broker: Arc<FixedBroker>,
    dir: tempfile::TempDir,
}

pub(crate) fn env(budget: usize, compression: SpillCompression) -> Env {
    env_with_batch_size(budget, compression, BATCH)
}

fn env_with_batch_size(budget: usize, compression: SpillCompression, batch_size: usize) -> Env {
    let dir = tempfile::tempdir().unwrap();
    let broker = Arc::new(FixedBroker::new(budget));
    let pool = Arc::new(BrokerMemoryPool::new(broker.clone()));
    let runtime = RuntimeEnvBuilder::new()
        .with_memory_pool(pool.clone() as Arc<dyn MemoryPool>)
        .with_disk_manager_builder(
            DiskManagerBuilder::default().with_mode(DiskManagerMode::Directories(vec![dir.path().into()])),
        )
        .build_arc()
        .unwrap();
    let session = SessionConfig::new().with_batch_size(batch_size).with_spill_compression(compression);
    let ctx = Arc::new(TaskContext::default().with_session_config(session).with_runtime(runtime));
    Env { ctx, pool, broker, dir }
}

#[derive(Default, Debug)]
struct Seen {
    spilled: usize,
    split: usize,
    chunked: usize,
    spill_files: usize,
    /// Probe rows the dynamic filter dropped.
    pruned: usize,
}

struct Case {
    build: Shape,
    probe: Shape,
    cap: usize,
    bits: u32,
}

/// Runs every join type (with and without the residual filter, both compressions) against `HashJoinExec`.
/// Returns the summed path metrics.
async fn check(case: &Case, null_equality: NullEquality) -> Seen {
    check_on(case, null_equality, on).await
}

/// Keys (bk, bs) = (pk, ps): a long and a string.
fn two_keys() -> Vec<(PhysicalExprRef, PhysicalExprRef)> {
    let mut keys = on();
    keys.push((Arc::new(Column::new("bs", 2)), Arc::new(Column::new("ps", 2))));
    keys
}

async fn check_on(
    case: &Case,
    null_equality: NullEquality,
    on: fn() -> Vec<(PhysicalExprRef, PhysicalExprRef)>,
) -> Seen {
    let build = side(build_schema(), case.build, 1);
    let probe = side(probe_schema(), case.probe, 2);
    let mut seen = Seen::default();
    for compression in [SpillCompression::Uncompressed, SpillCompression::Lz4Frame] {
        for join_type in ALL_TYPES {
            for (filter, dynamic_filter) in
                [(None, None), (Some(residual()), None), (None, Some(ALWAYS_ON)), (Some(residual()), Some(ALWAYS_ON))]
            {
                let what = format!(
                    "{join_type:?} filter={} dynamic_filter={} {compression:?}",
                    filter.is_some(),
                    dynamic_filter.is_some()
                );
                let expected = reference_join(&build, &probe, on(), filter.clone(), join_type, null_equality).await;

                let e = env(64 << 20, compression);
                let join = Arc::new(
                    SpillingHashJoinExec::try_new(
                        source(build_schema(), build.clone()),
                        source(probe_schema(), probe.clone()),
                        on(),
                        filter,
                        join_type,
                        null_equality,
                        SpillingHashJoinConfig {
                            max_build_buffer_bytes: case.cap,
                            bucket_bits: case.bits,
                            dynamic_filter,
                            ..Default::default()
                        },
                    )
                    .unwrap(),
                );
                let actual = collect(join.clone(), e.ctx.clone()).await.unwrap_or_else(|err| panic!("{what}: {err}"));
                assert_eq!(actual.first().map(|b| b.schema()).unwrap_or(join.schema()), join.schema(), "{what}");
                let (exp, act) = (rows(&expected), rows(&actual));
                assert_eq!(exp.len(), act.len(), "{what}: row count");
                assert!(exp == act, "{what}: rows differ");

                let m = join.metrics().unwrap();
                let get = |name: &str| m.sum_by_name(name).map(|v| v.as_usize()).unwrap_or(0);
                if case.cap > 0 {
                    assert!(get("peak_reserved_bytes") <= case.cap, "{what}: reserved over the cap");
                }
                // Without probe rows only the joins that output build rows alone read the build side.
                let reads_build = case.probe.rows > 0 || outputs_build_rows_alone(join_type);
                assert_eq!(get("build_rows"), if reads_build { case.build.rows } else { 0 }, "{what}");
                if case.build.rows > 0 {
                    assert_eq!(get("probe_rows"), case.probe.rows, "{what}");
                }
                assert_eq!(m.output_rows(), Some(act.len()), "{what}");
                seen.spilled += get("spilled_buckets");
                seen.split += get("split_buckets");
                seen.chunked += get("chunked_buckets");
                seen.spill_files += m.spill_count().unwrap_or(0);
                let pruned = get("dynamic_filter_rows_pruned");
                if dynamic_filter.is_none() || !prunes_probe(join_type, null_equality) {
                    // Never on a preserved probe side, nor with null-safe keys.
                    assert_eq!(get("dynamic_filter_rows_checked") + pruned, 0, "{what}: filtered");
                } else if case.build.rows > 0 && case.probe.rows > 0 {
                    assert!(get("dynamic_filter_rows_checked") > 0, "{what}: the filter did not run");
                    assert_eq!(get("dynamic_filter_gated_off"), 0, "{what}");
                    assert!(get("dynamic_filter_bytes") > 0, "{what}: summary size");
                }
                seen.pruned += pruned;
                drop(join);
                assert_eq!(e.pool.reserved(), 0, "{what}: bytes left reserved");
                assert_eq!(e.broker.used(), 0, "{what}: bytes not returned to the broker");
                assert_eq!(files_under(e.dir.path()), 0, "{what}: spill files left");
            }
        }
    }
    seen
}

/// The join's dynamic filter with the cost gate never switching it off.
const ALWAYS_ON: JoinDynamicFilterConfig = JoinDynamicFilterConfig {
    filter: DynamicFilterConfig { max_set_values: 64, bloom_bytes: 1024 },
    filter_probe: true,
    sample_rows: 1000,
    min_pruned_fraction: 0.0,
};

const PLAIN: Shape = Shape { rows: 3000, domain: 1500, null_keys: 0.05, hot: 0.0 };
const PROBE: Shape = Shape { rows: 3000, domain: 1500, null_keys: 0.05, hot: 0.0 };

#[tokio::test]
async fn in_memory_is_hash_join() {
    let seen = check(&Case { build: PLAIN, probe: PROBE, cap: 0, bits: 4 }, NullEquality::NullEqualsNothing).await;
    assert_eq!(seen.spilled + seen.split + seen.chunked + seen.spill_files, 0, "{seen:?}");
    assert!(seen.pruned > 0, "the dynamic filter dropped probe rows: {seen:?}");
}

#[tokio::test]
async fn bucketed_resident_and_spilled() {
    let seen =
        check(&Case { build: PLAIN, probe: PROBE, cap: 160 << 10, bits: 4 }, NullEquality::NullEqualsNothing).await;
    assert!(seen.spilled > 0 && seen.split == 0 && seen.chunked == 0, "{seen:?}");
    assert!(seen.pruned > 0, "the dynamic filter dropped probe rows: {seen:?}");
}

#[tokio::test]
async fn every_bucket_spilled_and_split_again() {
    // Two buckets, each larger than the cap: both spill, and both are split again.
    let seen =
        check(&Case { build: PLAIN, probe: PROBE, cap: 100 << 10, bits: 1 }, NullEquality::NullEqualsNothing).await;
    assert!(seen.spilled >= 2 * 40 && seen.split > 0 && seen.chunked == 0, "{seen:?}");
}

#[tokio::test]
async fn chunked_for_a_hot_key() {
    let build = Shape { rows: 1500, hot: 0.6, ..PLAIN };
    let probe = Shape { hot: 0.02, ..PROBE };
    let seen = check(&Case { build, probe, cap: 60 << 10, bits: 4 }, NullEquality::NullEqualsNothing).await;
    assert!(seen.chunked > 0, "{seen:?}");
}

#[tokio::test]
async fn two_keys_long_and_string() {
    let build = Shape { rows: 1500, hot: 0.5, ..PLAIN };
    let probe = Shape { hot: 0.05, ..PROBE };
    let seen =
        check_on(&Case { build, probe, cap: 60 << 10, bits: 4 }, NullEquality::NullEqualsNothing, two_keys).await;
    assert!(seen.spilled > 0, "{seen:?}");
    assert!(seen.pruned > 0, "the dynamic filter dropped probe rows: {seen:?}");
}

#[tokio::test]
async fn chunked_for_null_keys() {
    let build = Shape { null_keys: 0.6, ..PLAIN };
    let probe = Shape { null_keys: 0.3, ..PROBE };
    let seen = check(&Case { build, probe, cap: 120 << 10, bits: 4 }, NullEquality::NullEqualsNothing).await;
    assert!(seen.chunked > 0, "{seen:?}");
}

#[tokio::test]
async fn null_equals_null_chunked() {
    let build = Shape { rows: 1500, null_keys: 0.5, ..PLAIN };
    let probe = Shape { rows: 600, null_keys: 0.1, ..PROBE };
    let seen = check(&Case { build, probe, cap: 40 << 10, bits: 4 }, NullEquality::NullEqualsNull).await;
    assert!(seen.chunked > 0, "{seen:?}");
}

#[tokio::test]
async fn empty_build_and_empty_probe() {
    let empty = Shape { rows: 0, ..PLAIN };
    check(&Case { build: empty, probe: PROBE, cap: 100 << 10, bits: 4 }, NullEquality::NullEqualsNothing).await;
    let seen =
        check(&Case { build: PLAIN, probe: empty, cap: 100 << 10, bits: 4 }, NullEquality::NullEqualsNothing).await;
    assert!(seen.spilled > 0, "{seen:?}");
}

/// Whether a join (build side left) outputs build rows when no probe row comes.
fn outputs_build_rows_alone(join_type: JoinType) -> bool {
    matches!(join_type, JoinType::Left | JoinType::Full | JoinType::LeftAnti | JoinType::LeftMark)
}

/// With no probe row, a join that outputs no build row alone never reads its build side (a broadcast is otherwise
/// decoded and hashed in every task, also in those without probe rows); the others read it, as before.
#[tokio::test]
async fn an_empty_probe_side_leaves_the_build_side_unread() {
    for join_type in ALL_TYPES {
        let unreadable = RecordBatchIterator::new(
            vec![Err(arrow::error::ArrowError::ComputeError("the build side was read".into()))],
            build_schema(),
        );
        let build = Arc::new(InputExec::new(0, build_schema(), Box::new(unreadable)));
        let join = SpillingHashJoinExec::try_new(
            build,
            source(probe_schema(), vec![RecordBatch::new_empty(probe_schema())]),
            on(),
            None,
            join_type,
            NullEquality::NullEqualsNothing,
            SpillingHashJoinConfig::default(),
        )
        .unwrap();
        let e = env(1 << 30, SpillCompression::Uncompressed);
        let out = collect(Arc::new(join), e.ctx.clone()).await;
        let reads_build =
            matches!(join_type, JoinType::Left | JoinType::Full | JoinType::LeftAnti | JoinType::LeftMark);
        match out {
            Ok(batches) => {
                assert!(!reads_build, "{join_type:?} returned without its build side");
                assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 0, "{join_type:?}");
            }
            Err(err) => {
                assert!(reads_build, "{join_type:?} read its build side: {err}");
                assert!(err.to_string().contains("the build side was read"), "{join_type:?}: {err}");
            }
        }
        assert_eq!(e.broker.used(), 0, "{join_type:?}");
    }
}

/// Under a small budget of the fake Spark memory manager itself (no cap): spills, never over the budget.
#[tokio::test]
async fn under_a_small_broker_budget() {
    let build = side(build_schema(), Shape { hot: 0.3, ..PLAIN }, 3);
    let probe = side(probe_schema(), PROBE, 4);
    for join_type in ALL_TYPES {
        let expected =
            reference_join(&build, &probe, on(), Some(residual()), join_type, NullEquality::NullEqualsNothing).await;
        let budget = 150 << 10;
        let e = env(budget, SpillCompression::Lz4Frame);
        let join = Arc::new(
            SpillingHashJoinExec::try_new(
                source(build_schema(), build.clone()),
                source(probe_schema(), probe.clone()),
                on(),
                Some(residual()),
                join_type,
                NullEquality::NullEqualsNothing,
                SpillingHashJoinConfig::default(),
            )
            .unwrap(),
        );
        let actual = collect(join.clone(), e.ctx.clone()).await.unwrap();
        assert!(rows(&expected) == rows(&actual), "{join_type:?}");
        let m = join.metrics().unwrap();
        assert!(m.sum_by_name("spilled_buckets").unwrap().as_usize() > 0);
        assert!(e.pool.peak() <= budget && e.broker.peak() <= budget);
        drop(join);
        assert_eq!(e.broker.used(), 0);
        assert_eq!(files_under(e.dir.path()), 0);
    }
}

/// A join dropped mid-stream (a cancelled task) leaves no files and no reserved bytes.
#[tokio::test]
async fn dropped_mid_stream_leaves_nothing() {
    for join_type in [JoinType::Full, JoinType::RightAnti, JoinType::Inner] {
        let build = side(build_schema(), Shape { hot: 0.5, ..PLAIN }, 5);
        let probe = side(probe_schema(), Shape { hot: 0.2, ..PROBE }, 6);
        let e = env(64 << 20, SpillCompression::Lz4Frame);
        let join = SpillingHashJoinExec::try_new(
            source(build_schema(), build),
            source(probe_schema(), probe),
            on(),
            None,
            join_type,
            NullEquality::NullEqualsNothing,
            SpillingHashJoinConfig { max_build_buffer_bytes: 120 << 10, bucket_bits: 4, ..Default::default() },
        )
        .unwrap();
        let mut stream = join.execute(0, e.ctx.clone()).unwrap();
        let mut pulled = 0;
        while pulled < 3 {
            stream.next().await.unwrap().unwrap();
            pulled += 1;
        }
        assert!(e.pool.reserved() > 0 || files_under(e.dir.path()) > 0, "{join_type:?}: nothing was under way");
        drop(stream);
        assert_eq!(e.pool.reserved(), 0, "{join_type:?}");
        assert_eq!(e.broker.used(), 0, "{join_type:?}");
        assert_eq!(files_under(e.dir.path()), 0, "{join_type:?}");
    }
}

/// When not even one build batch can be reserved and nothing is left to spill: a clean error, nothing left over.
#[tokio::test]
async fn nothing_left_to_spill_is_resources_exhausted() {
    let e = env(64 << 20, SpillCompression::Uncompressed);
    let join = SpillingHashJoinExec::try_new(
        source(build_schema(), side(build_schema(), Shape { hot: 0.9, ..PLAIN }, 7)),
        source(probe_schema(), side(probe_schema(), PROBE, 8)),
        on(),
        None,
        JoinType::Inner,
        NullEquality::NullEqualsNothing,
        SpillingHashJoinConfig { max_build_buffer_bytes: 2 << 10, bucket_bits: 4, ..Default::default() },
    )
    .unwrap();
    let err = collect(Arc::new(join), e.ctx.clone()).await.unwrap_err();
    assert!(matches!(err, DataFusionError::ResourcesExhausted(_)), "{err}");
    assert_eq!(e.pool.reserved(), 0);
    assert_eq!(files_under(e.dir.path()), 0);
}

/// Spilling disabled (`spark.ember.spillingHashJoin.spill.enabled=false`): a build side over the cap fails cleanly
/// instead of spilling, writes no file and leaves nothing reserved; the same join with spilling on completes.
#[tokio::test]
async fn spill_disabled_fails_instead_of_spilling() {
    for spill_enabled in [false, true] {
        let e = env(64 << 20, SpillCompression::Uncompressed);
        let join = SpillingHashJoinExec::try_new(
            source(build_schema(), side(build_schema(), PLAIN, 11)),
            source(probe_schema(), side(probe_schema(), PROBE, 12)),
            on(),
            None,
            JoinType::Inner,
            NullEquality::NullEqualsNothing,
            SpillingHashJoinConfig {
                max_build_buffer_bytes: 64 << 10,
                bucket_bits: 4,
                spill_enabled,
                ..Default::default()
            },
        )
        .unwrap();
        let join = Arc::new(join);
        let result = collect(join.clone(), e.ctx.clone()).await;
        let spills = join.metrics().unwrap().spill_count().unwrap_or(0);
        if spill_enabled {
            assert!(result.is_ok(), "{:?}", result.err());
            assert!(spills > 0, "the cap must force spilling");
        } else {
            let err = result.unwrap_err();
            assert!(matches!(err, DataFusionError::ResourcesExhausted(_)), "{err}");
            assert!(err.to_string().contains("spilling is disabled"), "{err}");
            assert_eq!(spills, 0);
        }
        assert_eq!(e.pool.reserved(), 0);
        assert_eq!(files_under(e.dir.path()), 0);
    }
}

/// A proto `SpillingHashJoin` over two in-memory inputs (left #0, right #1), planned as the engine plans it.
fn planned_join(
    hj: pb::SpillingHashJoin,
    left: (&SchemaRef, &[RecordBatch]),
    right: (&SchemaRef, &[RecordBatch]),
) -> Arc<dyn ExecutionPlan> {
    use crate::common::{input, op};
    use ember_engine::planner::Planner;
    let mut right_input = input(1, right.0);
    if let Some(pb::operator::Kind::Input(i)) = right_input.kind.as_mut() {
        i.input_index = 1;
    }
    let plan_op = op(1, pb::operator::Kind::SpillingHashJoin(hj), vec![input(0, left.0), right_input]);
    let readers: Vec<ember_engine::operators::input::BatchReader> = vec![
        Box::new(RecordBatchIterator::new(left.1.iter().cloned().map(Ok).collect::<Vec<_>>(), left.0.clone())),
        Box::new(RecordBatchIterator::new(right.1.iter().cloned().map(Ok).collect::<Vec<_>>(), right.0.clone())),
    ];
    Planner::new(readers).create_plan(&plan_op).unwrap()
}

/// The proto arm: Spark's join type, build side and condition (over left ++ right), forced to spill by the
/// `max_build_buffer_bytes` knob; build on the right is swapped inside and the columns come back in Spark's order.
#[tokio::test]
async fn from_proto_build_right_with_condition() {
    use crate::common::{cmp, col};

    let build = side(build_schema(), Shape { hot: 0.2, ..PLAIN }, 9);
    let probe = side(probe_schema(), PROBE, 10);
    let cases = [
        (pb::JoinType::Inner, JoinType::Inner),
        (pb::JoinType::LeftOuter, JoinType::Left),
        (pb::JoinType::RightOuter, JoinType::Right),
        (pb::JoinType::FullOuter, JoinType::Full),
        (pb::JoinType::LeftSemi, JoinType::LeftSemi),
        (pb::JoinType::LeftAnti, JoinType::LeftAnti),
        (pb::JoinType::LeftMark, JoinType::LeftMark),
    ];
    for build_side in [pb::BuildSide::Left, pb::BuildSide::Right] {
        for (pb_type, join_type) in cases {
            // Spark's left is the probe data, its right the build data, so building on the right spills.
            let (left, right) = (probe.clone(), build.clone());
            let (ls, rs) = (probe_schema(), build_schema());
            let hj = pb::SpillingHashJoin {
                join_type: pb_type as i32,
                build_side: build_side as i32,
                left_keys: vec![col(0, &DataType::Int64)],
                right_keys: vec![col(0, &DataType::Int64)],
                null_safe: vec![false],
                // pq (left #1) > bp (right #1, joined #4)
                condition: Some(cmp(pb::CmpOp::Gt, col(1, &DataType::Int64), col(4, &DataType::Int64))),
                max_build_buffer_bytes: 100 << 10,
                bucket_bits: 3,
                spill_disabled: false,
                ..Default::default()
            };
            let plan = planned_join(hj, (&ls, &left), (&rs, &right));

            let filter_schema = Arc::new(Schema::new(vec![
                Field::new("pq", DataType::Int64, true),
                Field::new("bp", DataType::Int64, true),
            ]));
            let filter = JoinFilter::new(
                Arc::new(BinaryExpr::new(Arc::new(Column::new("pq", 0)), Operator::Gt, Arc::new(Column::new("bp", 1)))),
                vec![ColumnIndex { index: 1, side: JoinSide::Left }, ColumnIndex { index: 1, side: JoinSide::Right }],
                filter_schema,
            );
            let on = vec![(
                Arc::new(Column::new("pk", 0)) as PhysicalExprRef,
                Arc::new(Column::new("bk", 0)) as PhysicalExprRef,
            )];
            let reference = HashJoinExec::try_new(
                source(ls.clone(), left),
                source(rs.clone(), right),
                on,
                Some(filter),
                &join_type,
                None,
                PartitionMode::CollectLeft,
                NullEquality::NullEqualsNothing,
                false,
            )
            .unwrap();
            let what = format!("{join_type:?} build {build_side:?}");
            assert_eq!(plan.schema().fields().len(), reference.schema().fields().len(), "{what}");
            let expected = collect(Arc::new(reference), Arc::new(TaskContext::default())).await.unwrap();
            let e = env(64 << 20, SpillCompression::Lz4Frame);
            let actual = collect(plan.clone(), e.ctx.clone()).await.unwrap();
            assert!(rows(&expected) == rows(&actual), "{what}");
            assert_eq!(plan.name(), "SpillingHashJoinExec", "no projection on top: metrics stay on the node");
            assert!(plan.metrics().unwrap().sum_by_name("spilled_buckets").unwrap().as_usize() > 0, "{what}");
            assert_eq!(e.broker.used(), 0, "{what}");
            assert_eq!(files_under(e.dir.path()), 0, "{what}");
        }
    }
}

/// Random shapes, caps and fan-outs (seeded): every join type, with and without the residual, against
/// `HashJoinExec`.
#[tokio::test]
async fn random_configurations() {
    let mut rng = StdRng::seed_from_u64(42);
    for _ in 0..4 {
        let build = Shape {
            rows: rng.random_range(1..1200),
            domain: rng.random_range(1..600),
            null_keys: rng.random_range(0.0..0.4),
            hot: rng.random_range(0.0..0.5),
        };
        let probe = Shape {
            rows: rng.random_range(0..1200),
            domain: rng.random_range(1..600),
            null_keys: rng.random_range(0.0..0.4),
            hot: rng.random_range(0.0..0.05),
        };
        let case = Case { build, probe, cap: rng.random_range(30..120) << 10, bits: rng.random_range(1..=5) };
        let null_equality =
            if rng.random_bool(0.3) { NullEquality::NullEqualsNull } else { NullEquality::NullEqualsNothing };
        check(&case, null_equality).await;
    }
}

// ---- FLOAT / DOUBLE keys as Spark sends them: `NormalizeFloat(column)` ----
//
// Spark wraps float join keys in `knownfloatingpointnormalized(normalizenanandzero(k))`; the plan carries
// `NormalizeFloat(k)` and the join must then equate every NaN with every NaN and -0.0 with 0.0, whatever their raw
// bits. The expected rows come from a nested loop over the raw inputs with Spark's key equality, written here
// without any normalization of bits, never from an operator.

/// Raw DOUBLE key bits beyond ordinary numbers: both zeros, NaNs of several bit patterns, infinities.
const SPECIAL_F64: [u64; 9] = [
    0x0000_0000_0000_0000, // 0.0
    0x8000_0000_0000_0000, // -0.0
    0x7ff8_0000_0000_0000, // the canonical NaN
    0x7ff8_0000_0000_0001, // a quiet NaN with a payload
    0xfff8_0000_0000_0000, // a negative NaN
    0x7ff0_0000_0000_0001, // a signalling NaN
    0xffff_ffff_ffff_ffff, // a negative NaN, every payload bit set
    0x7ff0_0000_0000_0000, // +inf
    0xfff0_0000_0000_0000, // -inf
];
const ORDINARY_F64: [f64; 8] = [-2.5, -1.5, 1.0, 1.5, 2.0, 3.25, 1e300, 5e-324];

/// The same for FLOAT.
const SPECIAL_F32: [u32; 9] = [
    0x0000_0000, // 0.0
    0x8000_0000, // -0.0
    0x7fc0_0000, // the canonical NaN
    0x7fc0_0001, // a quiet NaN with a payload
    0xffc0_0000, // a negative NaN
    0x7f80_0001, // a signalling NaN
    0xffff_ffff, // a negative NaN, every payload bit set
    0x7f80_0000, // +inf
    0xff80_0000, // -inf
];
const ORDINARY_F32: [f32; 7] = [-2.5, -1.5, 1.0, 1.5, 2.0, 3.25, 1e-45];

fn float_side_schema(p: &str) -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new(format!("{p}_id"), DataType::Int64, false),
        Field::new(format!("{p}_d"), DataType::Float64, true),
        Field::new(format!("{p}_f"), DataType::Float32, true),
        Field::new(format!("{p}_v"), DataType::Utf8, true),
    ]))
}

/// One side: ids, a DOUBLE and a FLOAT key (about 10% nulls, half special values, the rest ordinary numbers; the
/// many NaNs make one hot key once normalized), a payload. Each side also has a NaN pattern of its own, so that
/// some rows find no key of equal bits on the other side and only normalization matches them (a semi or anti
/// join would not notice un-normalized NaNs if every pattern were on both sides).
fn float_side(p: &str, rows: usize, seed: u64) -> Vec<RecordBatch> {
    let mut rng = StdRng::seed_from_u64(seed);
    let schema = float_side_schema(p);
    let (own_d, own_f) =
        if p == "l" { (0x7ff8_0000_0000_0002, 0x7fc0_0002) } else { (0xfff0_0000_0000_0001, 0xff80_0001) };
    let special_d: Vec<u64> = SPECIAL_F64.iter().copied().chain([own_d]).collect();
    let special_f: Vec<u32> = SPECIAL_F32.iter().copied().chain([own_f]).collect();
    let mut out = vec![];
    for start in (0..rows).step_by(100) {
        let n = (rows - start).min(100);
        let mut d = vec![];
        let mut f = vec![];
        for _ in 0..n {
            d.push(match rng.random_range(0..20) {
                0..2 => None,
                2..12 => Some(f64::from_bits(special_d[rng.random_range(0..special_d.len())])),
                _ => Some(ORDINARY_F64[rng.random_range(0..ORDINARY_F64.len())]),
            });
            f.push(match rng.random_range(0..20) {
                0..2 => None,
                2..12 => Some(f32::from_bits(special_f[rng.random_range(0..special_f.len())])),
                _ => Some(ORDINARY_F32[rng.random_range(0..ORDINARY_F32.len())]),
            });
        }
        let ids = Int64Array::from_iter_values((start..start + n).map(|i| i as i64));
        let v: StringArray = (start..start + n).map(|i| (i % 11 != 0).then(|| format!("{p}{}", i % 37))).collect();
        let columns: Vec<ArrayRef> =
            vec![Arc::new(ids), Arc::new(Float64Array::from(d)), Arc::new(Float32Array::from(f)), Arc::new(v)];
        out.push(RecordBatch::try_new(schema.clone(), columns).unwrap());
    }
    out
}

/// A cell as text; floats by their raw bits, so the output must carry each input row's own value.
fn raw_cell(c: &ArrayRef, r: usize) -> String {
    if c.is_null(r) {
        return "∅".into();
    }
    match c.data_type() {
        DataType::Float64 => format!("d{:016x}", c.as_primitive::<Float64Type>().value(r).to_bits()),
        DataType::Float32 => format!("f{:08x}", c.as_primitive::<Float32Type>().value(r).to_bits()),
        _ => array_value_to_string(c, r).unwrap(),
    }
}

fn raw_rows(batches: &[RecordBatch]) -> Vec<Vec<String>> {
    batches
        .iter()
        .flat_map(|b| (0..b.num_rows()).map(move |r| b.columns().iter().map(|c| raw_cell(c, r)).collect()))
        .collect()
}

/// A key value as Spark compares join keys: null, or a number.
#[derive(Clone, Copy, Debug)]
enum Key {
    Null,
    D(f64),
    F(f32),
}

/// Spark's key equality after `NormalizeNaNAndZero`: NaN = NaN, -0.0 = 0.0 (IEEE `==`), null = null only for `<=>`.
fn spark_key_eq(a: Key, b: Key, null_safe: bool) -> bool {
    match (a, b) {
        (Key::Null, Key::Null) => null_safe,
        (Key::D(x), Key::D(y)) => x == y || (x.is_nan() && y.is_nan()),
        (Key::F(x), Key::F(y)) => x == y || (x.is_nan() && y.is_nan()),
        _ => false,
    }
}

/// The key columns (indices into a side) of every row.
fn keys_of(batches: &[RecordBatch], key_cols: &[usize]) -> Vec<Vec<Key>> {
    let mut out = vec![];
    for b in batches {
        for r in 0..b.num_rows() {
            out.push(
                key_cols
                    .iter()
                    .map(|&k| {
                        let c = b.column(k);
                        if c.is_null(r) {
                            Key::Null
                        } else if let Some(d) = c.as_primitive_opt::<Float64Type>() {
                            Key::D(d.value(r))
                        } else {
                            Key::F(c.as_primitive::<Float32Type>().value(r))
                        }
                    })
                    .collect(),
            );
        }
    }
    out
}

/// Expected output of a Spark join of `left` and `right` on the given key columns: a nested loop.
/// Also counts the matched key values whose raw bits differ (pairs that only normalization joins): (NaNs, zeros).
fn expected_join(
    left: &[RecordBatch],
    right: &[RecordBatch],
    key_cols: &[usize],
    null_safe: bool,
    join_type: pb::JoinType,
) -> (Vec<String>, (usize, usize)) {
    let (lk, rk) = (keys_of(left, key_cols), keys_of(right, key_cols));
    let (lrows, rrows) = (raw_rows(left), raw_rows(right));
    // (raw bits, is NaN)
    let bits = |k: &Key| match k {
        Key::Null => None,
        Key::D(d) => Some((d.to_bits(), d.is_nan())),
        Key::F(f) => Some((f.to_bits() as u64, f.is_nan())),
    };
    let mut right_matched = vec![false; rrows.len()];
    let mut out = vec![];
    let (mut differing_nans, mut differing_zeros) = (0, 0);
    let nulls = |n: usize| vec!["∅".to_string(); n];
    let (lw, rw) = (left[0].num_columns(), right[0].num_columns());
    for (l, lkey) in lk.iter().enumerate() {
        let mut matched = false;
        for (r, rkey) in rk.iter().enumerate() {
            if lkey.iter().zip(rkey).all(|(a, b)| spark_key_eq(*a, *b, null_safe)) {
                matched = true;
                right_matched[r] = true;
                for (a, b) in lkey.iter().zip(rkey) {
                    match (bits(a), bits(b)) {
                        (Some((x, true)), Some((y, _))) if x != y => differing_nans += 1,
                        (Some((x, false)), Some((y, _))) if x != y => differing_zeros += 1,
                        _ => {}
                    }
                }
                if matches!(
                    join_type,
                    pb::JoinType::Inner | pb::JoinType::LeftOuter | pb::JoinType::RightOuter | pb::JoinType::FullOuter
                ) {
                    out.push([lrows[l].clone(), rrows[r].clone()].concat());
                }
            }
        }
        match join_type {
            pb::JoinType::LeftOuter | pb::JoinType::FullOuter if !matched => {
                out.push([lrows[l].clone(), nulls(rw)].concat())
            }
            pb::JoinType::LeftSemi if matched => out.push(lrows[l].clone()),
            pb::JoinType::LeftAnti if !matched => out.push(lrows[l].clone()),
            pb::JoinType::LeftMark => out.push([lrows[l].clone(), vec![matched.to_string()]].concat()),
            _ => {}
        }
    }
    if matches!(join_type, pb::JoinType::RightOuter | pb::JoinType::FullOuter) {
        for (r, row) in rrows.iter().enumerate() {
            if !right_matched[r] {
                out.push([nulls(lw), row.clone()].concat());
            }
        }
    }
    let mut out: Vec<String> = out.into_iter().map(|r| r.join("|")).collect();
    out.sort();
    (out, (differing_nans, differing_zeros))
}

/// `NormalizeFloat(column)`: a float key as Spark's serde sends it.
fn normalized_col(index: u32, dt: &DataType) -> pb::Expr {
    pb::Expr {
        kind: Some(pb::expr::Kind::NormalizeFloat(Box::new(pb::NormalizeFloat {
            child: Some(Box::new(common::col(index, dt))),
        }))),
    }
}

/// Inner, outer, semi, anti and mark joins on DOUBLE, FLOAT and (DOUBLE, FLOAT) keys carrying -0.0 / 0.0, NaNs of
/// several bit patterns, infinities and nulls, built from the proto as Spark sends them (`NormalizeFloat` keys),
/// both build sides, `=` and `<=>`, in memory, bucketed with spilled buckets, and under a tight cap (split again,
/// the hot NaN key in chunks); against a nested loop with Spark's key equality.
#[tokio::test]
async fn float_keys_from_proto_normalized_as_spark() {
    use ember_engine::planner::Planner;

    let (ls, rs) = (float_side_schema("l"), float_side_schema("r"));
    let left = float_side("l", 900, 21);
    let right = float_side("r", 700, 22);
    let key_sets: [&[usize]; 3] = [&[1], &[2], &[1, 2]];
    let join_types = [
        pb::JoinType::Inner,
        pb::JoinType::LeftOuter,
        pb::JoinType::RightOuter,
        pb::JoinType::FullOuter,
        pb::JoinType::LeftSemi,
        pb::JoinType::LeftAnti,
        pb::JoinType::LeftMark,
    ];
    // (name, cap, bucket bits, batch size): the last cap is below the hot NaN key's build rows.
    let paths = [("in memory", 0u64, 4u32, BATCH), ("bucketed", 48 << 10, 3, BATCH), ("chunked", 12 << 10, 1, 32)];
    let (mut wrong, mut runs) = (vec![], 0);
    for key_cols in key_sets {
        for null_safe in [false, true] {
            for join_type in join_types {
                let (expected, differing) = expected_join(&left, &right, key_cols, null_safe, join_type);
                if join_type == pb::JoinType::Inner {
                    // Not vacuous: some matches exist only because NaNs / zeros of different bits are equal.
                    let (nans, zeros) = differing;
                    assert!(
                        nans > 0 && zeros > 0,
                        "keys {key_cols:?}: {nans} NaN and {zeros} zero pairs of other bits"
                    );
                }
                for (path, cap, bits, batch_size) in paths {
                    let (mut spilled, mut chunked) = (0, 0);
                    for build_side in [pb::BuildSide::Left, pb::BuildSide::Right] {
                        let what = format!(
                            "keys {key_cols:?} null_safe={null_safe} {join_type:?} {path} build {build_side:?}"
                        );
                        let keys = |s: &SchemaRef| {
                            key_cols
                                .iter()
                                .map(|&k| normalized_col(k as u32, s.field(k).data_type()))
                                .collect::<Vec<_>>()
                        };
                        let hj = pb::SpillingHashJoin {
                            join_type: join_type as i32,
                            build_side: build_side as i32,
                            left_keys: keys(&ls),
                            right_keys: keys(&rs),
                            null_safe: vec![null_safe; key_cols.len()],
                            condition: None,
                            max_build_buffer_bytes: cap,
                            bucket_bits: bits,
                            spill_disabled: false,
                            // Float keys are never filtered (see `exact_key_type`): asked for, it stays exact.
                            dynamic_filter_enabled: true,
                            ..Default::default()
                        };
                        let mut right_input = common::input(1, &rs);
                        if let Some(pb::operator::Kind::Input(i)) = right_input.kind.as_mut() {
                            i.input_index = 1;
                        }
                        let plan_op = common::op(
                            1,
                            pb::operator::Kind::SpillingHashJoin(hj),
                            vec![common::input(0, &ls), right_input],
                        );
                        let plan = Planner::new(vec![
                            common::reader(left.clone(), ls.clone()),
                            common::reader(right.clone(), rs.clone()),
                        ])
                        .create_plan(&plan_op)
                        .unwrap();
                        runs += 1;
                        let e = env_with_batch_size(64 << 20, SpillCompression::Lz4Frame, batch_size);
                        let out =
                            collect(plan.clone(), e.ctx.clone()).await.unwrap_or_else(|err| panic!("{what}: {err}"));
                        let mut actual: Vec<String> = raw_rows(&out).into_iter().map(|r| r.join("|")).collect();
                        actual.sort();
                        // Every wrong combination is listed at the end, so a failure shows which paths it reaches.
                        if actual != expected {
                            let first = (0..actual.len().min(expected.len())).find(|&i| actual[i] != expected[i]);
                            wrong.push(format!(
                                "{what}: {} rows, expected {}; first difference at sorted row {first:?}",
                                actual.len(),
                                expected.len()
                            ));
                        }
                        let m = plan.metrics().unwrap();
                        let get = |name: &str| m.sum_by_name(name).map(|v| v.as_usize()).unwrap_or(0);
                        if cap == 0 {
                            assert_eq!(get("spilled_buckets"), 0, "{what}");
                        } else {
                            assert!(get("peak_reserved_bytes") <= cap as usize, "{what}: over the cap");
                        }
                        spilled += get("spilled_buckets");
                        chunked += get("chunked_buckets");
                        drop(plan);
                        assert_eq!(e.broker.used(), 0, "{what}");
                        assert_eq!(files_under(e.dir.path()), 0, "{what}: spill files left");
                    }
                    if cap > 0 && spilled == 0 {
                        wrong.push(format!("keys {key_cols:?} {join_type:?} {path}: nothing spilled"));
                    }
                    // The normalized NaNs are one hot key: its bucket cannot shrink and is joined in chunks.
                    if path == "chunked" && key_cols.len() == 1 && chunked == 0 {
                        wrong.push(format!("keys {key_cols:?} {join_type:?} {path}: nothing chunked"));
                    }
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{} wrong of {runs} joins:\n{}", wrong.len(), wrong.join("\n"));
}

/// The key expressions the join holds, as planned from `NormalizeFloat` keys, give Spark's `NormalizeNaNAndZero`
/// values bit for bit (every NaN Java's `Double.NaN` / `Float.NaN`, -0.0 → 0.0, all else unchanged). The join's
/// rows cannot show the -0.0 half: DataFusion's hash join already hashes and compares -0.0 as 0.0.
#[tokio::test]
async fn float_join_keys_are_spark_normalized_bit_for_bit() {
    use datafusion_common::tree_node::TreeNodeRecursion;
    use ember_engine::planner::Planner;

    let (ls, rs) = (float_side_schema("l"), float_side_schema("r"));
    let left = float_side("l", 400, 31);
    let right = float_side("r", 300, 32);
    let keys =
        |s: &SchemaRef| vec![normalized_col(1, s.field(1).data_type()), normalized_col(2, s.field(2).data_type())];
    let hj = pb::SpillingHashJoin {
        join_type: pb::JoinType::Inner as i32,
        build_side: pb::BuildSide::Left as i32,
        left_keys: keys(&ls),
        right_keys: keys(&rs),
        null_safe: vec![false, false],
        ..Default::default()
    };
    let mut right_input = common::input(1, &rs);
    if let Some(pb::operator::Kind::Input(i)) = right_input.kind.as_mut() {
        i.input_index = 1;
    }
    let plan_op = common::op(1, pb::operator::Kind::SpillingHashJoin(hj), vec![common::input(0, &ls), right_input]);
    let plan = Planner::new(vec![common::reader(vec![], ls.clone()), common::reader(vec![], rs.clone())])
        .create_plan(&plan_op)
        .unwrap();
    assert_eq!(plan.name(), "SpillingHashJoinExec");
    // The join's key pairs, in order: (left, right) per key.
    let mut exprs = vec![];
    plan.apply_expressions(&mut |e| {
        exprs.push(e.clone());
        Ok(TreeNodeRecursion::Continue)
    })
    .unwrap();
    assert_eq!(exprs.len(), 4, "two key pairs, no condition");

    // Spark's NormalizeNaNAndZero: `if (isNaN) NaN else if (== -0.0) 0.0 else x`, with Java's NaN constants.
    let spark_d = |x: f64| {
        if x.is_nan() {
            0x7ff8_0000_0000_0000
        } else if x == 0.0 {
            0
        } else {
            x.to_bits()
        }
    };
    let spark_f = |x: f32| {
        if x.is_nan() {
            0x7fc0_0000
        } else if x == 0.0 {
            0
        } else {
            x.to_bits()
        }
    };
    let (mut nans, mut zeros) = (0, 0);
    for (side, batches) in [(0, &left), (1, &right)] {
        for b in batches.iter() {
            let d = exprs[side].evaluate(b).unwrap().into_array(b.num_rows()).unwrap();
            let f = exprs[2 + side].evaluate(b).unwrap().into_array(b.num_rows()).unwrap();
            let (d, f) = (d.as_primitive::<Float64Type>(), f.as_primitive::<Float32Type>());
            let (raw_d, raw_f) = (b.column(1).as_primitive::<Float64Type>(), b.column(2).as_primitive::<Float32Type>());
            for r in 0..b.num_rows() {
                assert_eq!(d.is_null(r), raw_d.is_null(r));
                assert_eq!(f.is_null(r), raw_f.is_null(r));
                if raw_d.is_valid(r) {
                    let x = raw_d.value(r);
                    assert_eq!(d.value(r).to_bits(), spark_d(x), "DOUBLE {:016x}", x.to_bits());
                    nans += x.is_nan() as usize;
                    zeros += (x.to_bits() == (-0.0f64).to_bits()) as usize;
                }
                if raw_f.is_valid(r) {
                    let x = raw_f.value(r);
                    assert_eq!(f.value(r).to_bits(), spark_f(x), "FLOAT {:08x}", x.to_bits());
                    nans += x.is_nan() as usize;
                    zeros += (x.to_bits() == (-0.0f32).to_bits()) as usize;
                }
            }
        }
    }
    assert!(nans > 0 && zeros > 0, "{nans} NaNs and {zeros} negative zeros seen");
}

/// The proto arm without keys (Spark's `BroadcastNestedLoopJoinExec`): every pair tried by the condition, as
/// DataFusion's `NestedLoopJoinExec` over the same rows; in memory and with the build side spilled (all of it on
/// one constant key, so the hot-key path joins it chunk by chunk).
#[tokio::test]
async fn from_proto_nested_loop() {
    use crate::common::{cmp, col};
    use datafusion_physical_plan::joins::NestedLoopJoinExec;

    let build = side(build_schema(), Shape { rows: 300, ..PLAIN }, 11);
    let probe = side(probe_schema(), Shape { rows: 300, ..PROBE }, 12);
    let cases = [
        (pb::JoinType::Inner, JoinType::Inner),
        (pb::JoinType::LeftOuter, JoinType::Left),
        (pb::JoinType::RightOuter, JoinType::Right),
        (pb::JoinType::LeftSemi, JoinType::LeftSemi),
        (pb::JoinType::LeftAnti, JoinType::LeftAnti),
        (pb::JoinType::LeftMark, JoinType::LeftMark),
    ];
    let (ls, rs) = (probe_schema(), build_schema());
    for build_side in [pb::BuildSide::Left, pb::BuildSide::Right] {
        for (pb_type, join_type) in cases {
            for (cap, condition) in [
                (0, None),
                (0, Some(cmp(pb::CmpOp::Gt, col(1, &DataType::Int64), col(4, &DataType::Int64)))),
                (30 << 10, Some(cmp(pb::CmpOp::Gt, col(1, &DataType::Int64), col(4, &DataType::Int64)))),
            ] {
                let hj = pb::SpillingHashJoin {
                    join_type: pb_type as i32,
                    build_side: build_side as i32,
                    condition: condition.clone(),
                    max_build_buffer_bytes: cap,
                    bucket_bits: 3,
                    dynamic_filter_enabled: true,
                    ..Default::default()
                };
                let plan = planned_join(hj, (&ls, &probe), (&rs, &build));
                let filter = condition.as_ref().map(|_| {
                    JoinFilter::new(
                        Arc::new(BinaryExpr::new(
                            Arc::new(Column::new("pq", 0)),
                            Operator::Gt,
                            Arc::new(Column::new("bp", 1)),
                        )),
                        vec![
                            ColumnIndex { index: 1, side: JoinSide::Left },
                            ColumnIndex { index: 1, side: JoinSide::Right },
                        ],
                        Arc::new(Schema::new(vec![
                            Field::new("pq", DataType::Int64, true),
                            Field::new("bp", DataType::Int64, true),
                        ])),
                    )
                });
                let reference = NestedLoopJoinExec::try_new(
                    source(ls.clone(), probe.clone()),
                    source(rs.clone(), build.clone()),
                    filter,
                    &join_type,
                    None,
                )
                .unwrap();
                let what = format!("{join_type:?} build {build_side:?} cap {cap} condition {}", condition.is_some());
                let expected = collect(Arc::new(reference), Arc::new(TaskContext::default())).await.unwrap();
                let e = env(64 << 20, SpillCompression::Lz4Frame);
                let actual = collect(plan.clone(), e.ctx.clone()).await.unwrap();
                assert!(!expected.is_empty(), "{what}");
                assert!(rows(&expected) == rows(&actual), "{what}");
                let spilled = plan.metrics().unwrap().sum_by_name("spilled_buckets").map_or(0, |m| m.as_usize());
                assert_eq!(spilled > 0, cap > 0, "{what}: spilled {spilled}");
                assert_eq!(e.broker.used(), 0, "{what}");
                assert_eq!(files_under(e.dir.path()), 0, "{what}");
            }
        }
    }
}

/// Spark's storage memory in the shared-table tests: grants or refuses, and counts.
#[derive(Default)]
struct CountingMemory {
    refuse: bool,
    asked: std::sync::atomic::AtomicUsize,
    granted: std::sync::atomic::AtomicUsize,
    released: std::sync::atomic::AtomicUsize,
}

impl BroadcastMemory for CountingMemory {
    fn acquire(&self, bytes: usize) -> bool {
        use std::sync::atomic::Ordering::SeqCst;
        self.asked.fetch_add(1, SeqCst);
        if !self.refuse {
            self.granted.fetch_add(bytes, SeqCst);
        }
        !self.refuse
    }

    fn release(&self, bytes: usize) {
        self.released.fetch_add(bytes, std::sync::atomic::Ordering::SeqCst);
    }
}

/// A broadcast's table shared by several tasks: each task's rows are `HashJoinExec`'s over its own probe side,
/// for every join type that may share (with and without the residual); the table is built (and its memory
/// asked for) once, and the grant is returned when the registry and the last plan are gone. When Spark refuses
/// the memory every task builds its own, with the same rows. A join type that emits build rows alone never
/// shares.
#[tokio::test]
async fn shared_build_probed_by_every_task() {
    use std::sync::atomic::Ordering::SeqCst;
    let build = side(build_schema(), Shape { rows: 2000, domain: 800, null_keys: 0.05, hot: 0.05 }, 71);
    let probes: Vec<_> = (0..3).map(|t| side(probe_schema(), PROBE, 80 + t)).collect();
    for refuse in [false, true] {
        for join_type in ALL_TYPES {
            for filter in [None, Some(residual())] {
                let memory = Arc::new(CountingMemory { refuse, ..Default::default() });
                let builds = Arc::new(SharedBuilds::new(memory.clone()));
                let shared = SharedBuild { builds: builds.clone(), key: b"join".to_vec() };
                let mut build_rows = 0;
                for probe in &probes {
                    let e = env(1 << 30, SpillCompression::Uncompressed);
                    let join = Arc::new(
                        SpillingHashJoinExec::try_new(
                            source(build_schema(), build.clone()),
                            source(probe_schema(), probe.clone()),
                            on(),
                            filter.clone(),
                            join_type,
                            NullEquality::NullEqualsNothing,
                            SpillingHashJoinConfig::default(),
                        )
                        .unwrap()
                        .with_shared_build(Some(shared.clone())),
                    );
                    let got = collect(join.clone(), e.ctx.clone()).await.unwrap();
                    let expected =
                        reference_join(&build, probe, on(), filter.clone(), join_type, NullEquality::NullEqualsNothing)
                            .await;
                    assert_eq!(rows(&got), rows(&expected), "{join_type:?}, refused: {refuse}");
                    build_rows += join.metrics().unwrap().sum_by_name("build_rows").map_or(0, |v| v.as_usize());
                    assert_eq!(e.pool.reserved(), 0, "a shared table is not the task's");
                }
                let all: usize = build.iter().map(RecordBatch::num_rows).sum();
                let asked = memory.asked.load(SeqCst);
                if !shares_build(join_type) {
                    assert_eq!((asked, build_rows), (0, 3 * all), "{join_type:?} builds per task");
                } else if refuse {
                    assert_eq!((asked, build_rows), (1, 3 * all), "{join_type:?}: asked once, then per task");
                } else {
                    assert_eq!((asked, build_rows), (1, all), "{join_type:?}: built once");
                    assert!(memory.granted.load(SeqCst) > 0);
                }
                drop(shared);
                drop(builds);
                assert_eq!(memory.released.load(SeqCst), memory.granted.load(SeqCst), "{join_type:?}");
            }
        }
    }
}

/// One broadcast feeds two joins whose protos are byte for byte the same (keys bound by position) but whose
/// probe sides differ (TPC-DS q4/q11/q74: a reused customer broadcast joined with store_sales in one stage and
/// web_sales in another). Each join must get a table of its own: the registry's key covers both sides'
/// schemas, not only the build side's.
#[tokio::test]
async fn joins_sharing_a_broadcast_with_different_probe_sides_keep_their_own_tables() {
    use ember_engine::planner::Planner;
    let build = side(build_schema(), Shape { rows: 500, domain: 200, null_keys: 0.05, hot: 0.0 }, 90);
    let renamed = |prefix: &str| {
        Arc::new(Schema::new(
            probe_schema()
                .fields()
                .iter()
                .map(|f| f.as_ref().clone().with_name(format!("{prefix}_{}", f.name())))
                .collect::<Vec<_>>(),
        )) as SchemaRef
    };
    let memory = Arc::new(CountingMemory::default());
    let builds = Arc::new(SharedBuilds::new(memory.clone()));
    let hj = pb::SpillingHashJoin {
        join_type: pb::JoinType::Inner as i32,
        build_side: pb::BuildSide::Left as i32,
        left_keys: vec![common::col(0, &DataType::Int64)],
        right_keys: vec![common::col(0, &DataType::Int64)],
        null_safe: vec![false],
        ..Default::default()
    };
    for (seed, prefix) in [(91, "ss"), (92, "ws"), (93, "ss")] {
        let ps = renamed(prefix);
        let base = side(probe_schema(), PROBE, seed);
        let probe: Vec<RecordBatch> =
            base.iter().map(|b| RecordBatch::try_new(ps.clone(), b.columns().to_vec()).unwrap()).collect();
        let mut right_input = common::input(1, &ps);
        if let Some(pb::operator::Kind::Input(i)) = right_input.kind.as_mut() {
            i.input_index = 1;
        }
        let plan_op = common::op(
            1,
            pb::operator::Kind::SpillingHashJoin(hj.clone()),
            vec![common::input(0, &build_schema()), right_input],
        );
        let plan = Planner::new(vec![
            common::reader(build.clone(), build_schema()),
            common::reader(probe.clone(), ps.clone()),
        ])
        .with_shared_builds([(0, builds.clone())].into_iter().collect())
        .create_plan(&plan_op)
        .unwrap();
        let e = env(1 << 30, SpillCompression::Uncompressed);
        let got = collect(plan, e.ctx.clone()).await.unwrap_or_else(|err| panic!("probe side {prefix}: {err}"));
        let expected =
            reference_join(&build, &base, on(), None, JoinType::Inner, NullEquality::NullEqualsNothing).await;
        assert_eq!(rows(&got), rows(&expected), "probe side {prefix}");
    }
    // One table per distinct probe side: the third join (ss again) probes the first one's.
    assert_eq!(memory.asked.load(std::sync::atomic::Ordering::SeqCst), 2);
}
