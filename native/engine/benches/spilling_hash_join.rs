//! The spilling hash join against DataFusion's `HashJoinExec` (200k build rows, 1M probe rows, inner and full
//! outer): in memory, and capped at a quarter and a sixteenth of the build side (buckets spilled, split,
//! chunked), with its spill metrics. Data from the integration tests' fixtures. The Spark-level benchmark is
//! `dev/bench/spilling_hash_join.py`.
//!
//!     cargo bench -p ember-engine --bench spilling_hash_join
#[allow(dead_code, unused_imports)]
#[path = "../tests/engine/common.rs"]
mod common;
#[allow(dead_code, unused_imports)]
#[path = "../tests/engine/spilling_hash_join.rs"]
mod fixtures;

use std::sync::Arc;

use datafusion_common::config::SpillCompression;
use datafusion_common::{JoinType, NullEquality};
use datafusion_execution::TaskContext;
use datafusion_physical_plan::joins::{HashJoinExec, PartitionMode};
use datafusion_physical_plan::ExecutionPlan;
use ember_engine::operators::spilling_hash_join::{SpillingHashJoinConfig, SpillingHashJoinExec};
use fixtures::{build_schema, collect, env, on, probe_schema, side, source, Shape};

fn main() {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(measure());
}

async fn measure() {
    let build = side(build_schema(), Shape { rows: 200_000, domain: 200_000, null_keys: 0.0, hot: 0.0 }, 11);
    let probe = side(probe_schema(), Shape { rows: 1_000_000, domain: 400_000, null_keys: 0.0, hot: 0.0 }, 12);
    let build_cost: usize = build.iter().map(ember_engine::operators::spilling_hash_join::batch_cost).sum();
    for join_type in [JoinType::Inner, JoinType::Full] {
        let t = std::time::Instant::now();
        let reference = HashJoinExec::try_new(
            source(build_schema(), build.clone()),
            source(probe_schema(), probe.clone()),
            on(),
            None,
            &join_type,
            None,
            PartitionMode::CollectLeft,
            NullEquality::NullEqualsNothing,
            false,
        )
        .unwrap();
        let n: usize = collect(Arc::new(reference), Arc::new(TaskContext::default()))
            .await
            .unwrap()
            .iter()
            .map(|b| b.num_rows())
            .sum();
        println!("{join_type:?} HashJoinExec: {n} rows in {:?}", t.elapsed());
        for (what, cap) in [("in memory", 0), ("cap 1/4 of build", build_cost / 4), ("cap 1/16", build_cost / 16)] {
            let e = env(1 << 30, SpillCompression::Lz4Frame);
            let t = std::time::Instant::now();
            let join = Arc::new(
                SpillingHashJoinExec::try_new(
                    source(build_schema(), build.clone()),
                    source(probe_schema(), probe.clone()),
                    on(),
                    None,
                    join_type,
                    NullEquality::NullEqualsNothing,
                    SpillingHashJoinConfig { max_build_buffer_bytes: cap, bucket_bits: 4, ..Default::default() },
                )
                .unwrap(),
            );
            let m: usize = collect(join.clone(), e.ctx.clone()).await.unwrap().iter().map(|b| b.num_rows()).sum();
            assert_eq!(n, m);
            let metrics = join.metrics().unwrap();
            let get = |name: &str| metrics.sum_by_name(name).map(|v| v.as_usize()).unwrap_or(0);
            println!(
                "{join_type:?} spilling join, {what}: {:?}; spilled {} buckets, split {}, chunked {}, {} files, \
                 {} bytes, peak reserved {}",
                t.elapsed(),
                get("spilled_buckets"),
                get("split_buckets"),
                get("chunked_buckets"),
                metrics.spill_count().unwrap_or(0),
                metrics.spilled_bytes().unwrap_or(0),
                get("peak_reserved_bytes")
            );
        }
    }
}
