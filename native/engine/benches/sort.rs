//! Sort of the window benchmark's shuffled input — (seller BIGINT, day INT) keys and 6 nullable BIGINT
//! measures, 1M rows arriving as 200 batches — by DataFusion's `SortExec` and by `RadixSortExec`, side by
//! side in one run, as ratios; once with each batch already sorted (as shuffle blocks of sorted map output
//! arrive), once with the rows in random order, and once with sellers spread over the whole 64-bit range.
//!
//!     cargo bench -p ember-engine --bench sort [-- <rows> <repeat>]
use std::sync::Arc;
use std::time::Instant;

use arrow::array::{ArrayRef, Int32Array, Int64Array, RecordBatch, RecordBatchIterator};
use arrow::compute::SortOptions;
use arrow::datatypes::{DataType, Field, Schema};
use datafusion_execution::config::SessionConfig;
use datafusion_execution::TaskContext;
use datafusion_physical_expr::expressions::col;
use datafusion_physical_expr::{LexOrdering, PhysicalSortExpr};
use datafusion_physical_plan::sorts::sort::SortExec;
use datafusion_physical_plan::{collect, ExecutionPlan};
use ember_engine::operators::{InputExec, RadixSortExec};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let rows: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(1_000_000);
    let repeat: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(3);
    let mut fields = vec![Field::new("seller", DataType::Int64, true), Field::new("day", DataType::Int32, true)];
    fields.extend((0..6).map(|j| Field::new(format!("m{j}"), DataType::Int64, true)));
    let schema = Arc::new(Schema::new(fields));
    let hash = |i: u64| i.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29);
    // Row i of seller s = i / 180 and day i % 180; a batch holds whole sellers (those of one shuffle partition).
    let batch_of = |ids: &[u64]| -> RecordBatch {
        let seller: Int64Array = ids.iter().map(|&i| Some((i / 180) as i64)).collect();
        let day: Int32Array = ids.iter().map(|&i| Some((i % 180) as i32)).collect();
        let mut columns: Vec<ArrayRef> = vec![Arc::new(seller), Arc::new(day)];
        for j in 0..6u64 {
            let m: Int64Array =
                ids.iter().map(|&i| (hash(i * 7 + j) % 50 != 0).then_some((hash(i + j) % 1_000_000) as i64)).collect();
            columns.push(Arc::new(m));
        }
        RecordBatch::try_new(schema.clone(), columns).unwrap()
    };
    let sellers = (rows / 180) as u64;
    let parts = 200u64;
    let sorted_batches: Vec<RecordBatch> = (0..parts)
        .map(|p| {
            let ids: Vec<u64> =
                (0..sellers).filter(|s| hash(*s) % parts == p).flat_map(|s| s * 180..s * 180 + 180).collect();
            batch_of(&ids)
        })
        .filter(|b| b.num_rows() > 0)
        .collect();
    let mut shuffled: Vec<u64> = (0..sellers * 180).collect();
    shuffled.sort_by_key(|&i| hash(i));
    let random_batches: Vec<RecordBatch> =
        shuffled.chunks(shuffled.len().div_ceil(parts as usize)).map(batch_of).collect();

    // Keys over the whole 64-bit range (hashes): nothing to compress, the widest packed values (u128).
    let wide_batches: Vec<RecordBatch> = random_batches
        .iter()
        .map(|b| {
            let mut cols = b.columns().to_vec();
            let seller = cols[0].as_any().downcast_ref::<Int64Array>().unwrap();
            cols[0] =
                Arc::new(seller.iter().map(|v| v.map(|v| hash(v as u64 * 31 + 7) as i64)).collect::<Int64Array>());
            RecordBatch::try_new(schema.clone(), cols).unwrap()
        })
        .collect();

    let ordering = LexOrdering::new(["seller", "day"].map(|c| {
        PhysicalSortExpr::new(col(c, &schema).unwrap(), SortOptions { descending: false, nulls_first: true })
    }))
    .unwrap();
    let ctx = Arc::new(TaskContext::default().with_session_config(SessionConfig::new().with_batch_size(8192)));
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    for (label, batches) in [
        ("batches each sorted", &sorted_batches),
        ("random order", &random_batches),
        ("random order, sellers as 64-bit hashes", &wide_batches),
    ] {
        println!("{} rows in {} batches, {label}; best of {repeat}", sellers * 180, batches.len());
        let mut baseline = 0.0;
        for radix in [false, true] {
            let mut best = f64::MAX;
            let mut out_rows = 0;
            for _ in 0..repeat {
                let reader = Box::new(RecordBatchIterator::new(batches.clone().into_iter().map(Ok), schema.clone()));
                let input: Arc<dyn ExecutionPlan> = Arc::new(InputExec::new(0, schema.clone(), reader));
                let plan: Arc<dyn ExecutionPlan> = if radix {
                    Arc::new(RadixSortExec::try_new(ordering.clone(), input).unwrap())
                } else {
                    Arc::new(SortExec::new(ordering.clone(), input))
                };
                let t = Instant::now();
                let out = rt.block_on(collect(plan, ctx.clone())).unwrap();
                best = best.min(t.elapsed().as_secs_f64());
                out_rows = out.iter().map(|b| b.num_rows()).sum();
            }
            if !radix {
                baseline = best;
            }
            let name = if radix { "RadixSortExec" } else { "DataFusion SortExec" };
            println!("  {name:<20} {:>8.1} ms  {:>5.2}x  ({out_rows} rows)", best * 1e3, baseline / best);
        }
    }
}
