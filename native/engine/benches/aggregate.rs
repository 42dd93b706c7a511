//! Merging (FINAL) aggregate over one state row per group — what a final aggregate receives after partial
//! aggregates that passed rows through — DataFusion's `AggregateExec` against `RadixAggregateExec` at several
//! fan-outs, side by side in one run, as ratios.
//!
//!     cargo bench -p ember-engine --bench aggregate [-- <groups> <repeat>]
use std::sync::Arc;
use std::time::Instant;

use arrow::array::{ArrayRef, Int64Array, RecordBatch, RecordBatchIterator};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion_execution::config::SessionConfig;
use datafusion_execution::TaskContext;
use datafusion_functions_aggregate::count::count_udaf;
use datafusion_functions_aggregate::min_max::{max_udaf, min_udaf};
use datafusion_functions_aggregate::sum::sum_udaf;
use datafusion_physical_expr::aggregate::{AggregateExprBuilder, AggregateFunctionExpr};
use datafusion_physical_expr::expressions::{col, Column};
use datafusion_physical_expr::PhysicalExpr;
use datafusion_physical_plan::aggregates::{AggregateExec, AggregateMode, PhysicalGroupBy};
use datafusion_physical_plan::{collect, ExecutionPlan};
use ember_engine::operators::aggregate::radix::{RadixAggregateExec, RadixConfig};
use ember_engine::operators::InputExec;

const BATCH: usize = 8192;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let groups: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(10_000_000);
    let repeat: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(2);

    let raw =
        Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, false), Field::new("v", DataType::Int64, false)]));
    let aggs: Vec<Arc<AggregateFunctionExpr>> =
        [(sum_udaf(), "s"), (count_udaf(), "c"), (min_udaf(), "lo"), (max_udaf(), "hi")]
            .into_iter()
            .map(|(f, n)| {
                Arc::new(
                    AggregateExprBuilder::new(f, vec![col("v", &raw).unwrap()])
                        .schema(raw.clone())
                        .alias(n)
                        .build()
                        .unwrap(),
                )
            })
            .collect();
    // States: k, sum, count, min, max; keys a bijective scramble of 0..groups (all distinct, random order).
    let states: SchemaRef = Arc::new(Schema::new(
        ["k", "s[sum]", "c[count]", "lo[min]", "hi[max]"].map(|n| Field::new(n, DataType::Int64, true)).to_vec(),
    ));
    let batches: Vec<RecordBatch> = (0..groups)
        .step_by(BATCH)
        .map(|start| {
            let ids = start as i64..(start + BATCH).min(groups) as i64;
            let k: Int64Array = ids.clone().map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15u64 as i64)).collect();
            let v: Int64Array = ids.clone().map(|i| i % 997).collect();
            let one: Int64Array = ids.map(|_| 1).collect();
            let v: ArrayRef = Arc::new(v);
            RecordBatch::try_new(states.clone(), vec![Arc::new(k), v.clone(), Arc::new(one), v.clone(), v]).unwrap()
        })
        .collect();
    let group_by: Vec<(Arc<dyn PhysicalExpr>, String)> = vec![(Arc::new(Column::new("k", 0)), "k".into())];
    let input = || -> Arc<dyn ExecutionPlan> {
        let reader = Box::new(RecordBatchIterator::new(batches.clone().into_iter().map(Ok), states.clone()));
        Arc::new(InputExec::new(0, states.clone(), reader))
    };
    let ctx = Arc::new(TaskContext::default().with_session_config(SessionConfig::new().with_batch_size(BATCH)));
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let run = |plan: Arc<dyn ExecutionPlan>| -> (f64, usize) {
        let t = Instant::now();
        let out = rt.block_on(collect(plan, ctx.clone())).unwrap();
        (t.elapsed().as_secs_f64(), out.iter().map(|b| b.num_rows()).sum())
    };

    println!("FINAL aggregate of {groups} one-row groups (sum, count, min, max of BIGINT), best of {repeat}");
    let mut baseline = f64::MAX;
    let mut configs: Vec<(String, Option<RadixConfig>)> = vec![("DataFusion AggregateExec".into(), None)];
    for bits in [4u32, 6, 8] {
        let c = RadixConfig { fanout_bits: bits, flush_rows: BATCH << bits, ..RadixConfig::default() };
        configs.push((format!("RadixAggregateExec 2^{bits}"), Some(c)));
    }
    let ordered = RadixConfig { first_seen_order: true, ..RadixConfig::default() };
    configs.push(("RadixAggregateExec 2^6 ordered".into(), Some(ordered)));
    // EMBER_BENCH_ONLY=<name prefix> runs one configuration (for profiling).
    let only = std::env::var("EMBER_BENCH_ONLY").unwrap_or_default();
    for (name, config) in configs.into_iter().filter(|(n, _)| n.starts_with(&only)) {
        let mut best = f64::MAX;
        for _ in 0..repeat {
            let plan: Arc<dyn ExecutionPlan> = match &config {
                None => Arc::new(
                    AggregateExec::try_new(
                        AggregateMode::Final,
                        PhysicalGroupBy::new_single(group_by.clone()),
                        aggs.clone(),
                        vec![None; aggs.len()],
                        input(),
                        raw.clone(),
                    )
                    .unwrap(),
                ),
                Some(c) => Arc::new(
                    RadixAggregateExec::try_new(
                        AggregateMode::Final,
                        input(),
                        group_by.clone(),
                        aggs.clone(),
                        raw.clone(),
                        c.clone(),
                    )
                    .unwrap(),
                ),
            };
            let (secs, rows) = run(plan);
            assert_eq!(rows, groups);
            best = best.min(secs);
        }
        if baseline == f64::MAX {
            baseline = best;
        }
        println!("{name:<28} {best:>7.3} s   {:>5.2}x", baseline / best);
    }
}
