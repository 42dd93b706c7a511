//! Routing rows to spill buckets and writing them as full batches: Ember's writer (`operators/spill.rs`
//! `CoalescingWriter`, the code the spilling hash join, the radix aggregate and the window run: a `take` per
//! bucket and input batch, copied into the bucket's arrow `BatchCoalescer`, its buffers reserved) against the
//! staging it replaced (the slivers held as they are, one `concat_batches` per full batch). Both write the same
//! spill files; reported side by side: time and the peak bytes held (the writer's reservation; the slivers').
//!
//!     cargo bench -p ember-engine --bench spill [-- <rows> <repeat>]
use std::sync::Arc;
use std::time::Instant;

use arrow::array::{Array, ArrayRef, Int64Array, RecordBatch, StringArray, UInt32Array};
use arrow::compute::{concat_batches, take_record_batch};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion_common::utils::memory::get_record_batch_memory_size;
use datafusion_execution::memory_pool::{GreedyMemoryPool, MemoryConsumer, MemoryPool};
use datafusion_execution::runtime_env::RuntimeEnv;
use datafusion_physical_plan::metrics::{ExecutionPlanMetricsSet, SpillMetrics};
use datafusion_physical_plan::spill::SpillManager;
use ember_engine::operators::spill::CoalescingWriter;

const BATCH: usize = 8192;

fn input(rows: usize) -> (SchemaRef, Vec<RecordBatch>) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, true),
        Field::new("a", DataType::Int64, true),
        Field::new("b", DataType::Int64, true),
        Field::new("s", DataType::Utf8, true),
    ]));
    let hash = |i: u64| i.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29);
    let batches = (0..rows)
        .step_by(BATCH)
        .map(|start| {
            let ids: Vec<u64> = (start as u64..(start + BATCH).min(rows) as u64).collect();
            let k: Int64Array = ids.iter().map(|&i| (hash(i) % 97 != 0).then_some((hash(i) >> 8) as i64)).collect();
            let a: Int64Array = ids.iter().map(|&i| Some(i as i64)).collect();
            let b: Int64Array = ids.iter().map(|&i| (i % 13 != 0).then_some(hash(i + 1) as i64)).collect();
            let s: StringArray =
                ids.iter().map(|&i| (i % 17 != 0).then(|| "é".repeat((hash(i) % 12) as usize) + "row")).collect();
            let cols: Vec<ArrayRef> = vec![Arc::new(k), Arc::new(a), Arc::new(b), Arc::new(s)];
            RecordBatch::try_new(schema.clone(), cols).unwrap()
        })
        .collect();
    (schema, batches)
}

/// Each batch's row indices per bucket (by the key's hash, as the join routes).
fn buckets(batch: &RecordBatch, n: usize) -> Vec<UInt32Array> {
    let k = batch.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
    let mut idx: Vec<Vec<u32>> = vec![vec![]; n];
    for r in 0..batch.num_rows() {
        let h = if k.is_null(r) { 0 } else { (k.value(r) as u64).wrapping_mul(0xff51_afd7_ed55_8ccd) >> 40 };
        idx[h as usize % n].push(r as u32);
    }
    idx.into_iter().map(UInt32Array::from).collect()
}

fn spill_manager(schema: &SchemaRef) -> SpillManager {
    let metrics = ExecutionPlanMetricsSet::new();
    SpillManager::new(Arc::new(RuntimeEnv::default()), SpillMetrics::new(&metrics, 0), schema.clone())
}

/// What one way of writing gave: rows written, peak bytes held for staging.
struct Written {
    rows: usize,
    peak: usize,
}

/// Ember's `CoalescingWriter`, one per bucket, all reserving from one unbounded reservation (as the join's do).
fn ember(schema: &SchemaRef, input: &[RecordBatch], routes: &[Vec<UInt32Array>], n: usize) -> Written {
    let manager = spill_manager(schema);
    let pool: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(usize::MAX / 2));
    let budget = MemoryConsumer::new("bench staging").register(&pool);
    let mut writers: Vec<CoalescingWriter> = (0..n).map(|_| CoalescingWriter::new(&manager, BATCH).unwrap()).collect();
    let mut peak = 0;
    for (batch, route) in input.iter().zip(routes) {
        for (p, idx) in route.iter().enumerate() {
            if !idx.is_empty() {
                writers[p].push(take_record_batch(batch, idx).unwrap(), &budget).unwrap();
            }
        }
        peak = peak.max(budget.size());
    }
    let rows = writers.into_iter().map(|w| w.finish(&budget).unwrap().rows).sum();
    assert_eq!(budget.size(), 0, "the writer returns what it reserved");
    Written { rows, peak }
}

/// The staging `CoalescingWriter` used before (until 2026-12): each bucket's slivers held as they are, one
/// `concat_batches` per full batch, sliced into batches of `BATCH` rows; peak = the slivers' memory.
fn staged(schema: &SchemaRef, input: &[RecordBatch], routes: &[Vec<UInt32Array>], n: usize) -> Written {
    let manager = spill_manager(schema);
    let mut files: Vec<_> = (0..n).map(|_| manager.create_in_progress_file("bench bucket").unwrap()).collect();
    let mut slivers: Vec<Vec<RecordBatch>> = vec![vec![]; n];
    let (mut staged_rows, mut staged_bytes) = (vec![0usize; n], vec![0usize; n]);
    let (mut rows, mut peak, mut held) = (0, 0, 0);
    // One concat per full batch, written in slices of `BATCH` rows.
    let pieces = |parts: Vec<RecordBatch>| -> Vec<RecordBatch> {
        let b = concat_batches(schema, &parts).unwrap();
        (0..b.num_rows()).step_by(BATCH).map(|o| b.slice(o, BATCH.min(b.num_rows() - o))).collect()
    };
    for (batch, route) in input.iter().zip(routes) {
        for (p, idx) in route.iter().enumerate() {
            if idx.is_empty() {
                continue;
            }
            let sliver = take_record_batch(batch, idx).unwrap();
            staged_rows[p] += sliver.num_rows();
            staged_bytes[p] += get_record_batch_memory_size(&sliver);
            held += get_record_batch_memory_size(&sliver);
            slivers[p].push(sliver);
            if staged_rows[p] >= BATCH {
                for b in pieces(std::mem::take(&mut slivers[p])) {
                    rows += b.num_rows();
                    files[p].append_batch(&b).unwrap();
                }
                held -= std::mem::take(&mut staged_bytes[p]);
                staged_rows[p] = 0;
            }
        }
        peak = peak.max(held);
    }
    for (parts, f) in slivers.into_iter().zip(&mut files) {
        if !parts.is_empty() {
            for b in pieces(parts) {
                rows += b.num_rows();
                f.append_batch(&b).unwrap();
            }
        }
        f.finish().unwrap();
    }
    Written { rows, peak }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let rows: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(4_000_000);
    let repeat: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(3);
    let (schema, batches) = input(rows);
    for n in [16usize, 64, 256] {
        let routes: Vec<Vec<UInt32Array>> = batches.iter().map(|b| buckets(b, n)).collect();
        let (mut t_ember, mut t_staged) = (f64::MAX, f64::MAX);
        let (mut peak_ember, mut peak_staged) = (0, 0);
        for _ in 0..repeat {
            let t = Instant::now();
            let a = ember(&schema, &batches, &routes, n);
            t_ember = t_ember.min(t.elapsed().as_secs_f64());
            let t = Instant::now();
            let b = staged(&schema, &batches, &routes, n);
            t_staged = t_staged.min(t.elapsed().as_secs_f64());
            assert_eq!((a.rows, b.rows), (rows, rows), "both write every row");
            (peak_ember, peak_staged) = (a.peak, b.peak);
        }
        println!(
            "{rows} rows into {n} buckets: CoalescingWriter {:.1} ms, peak reserved {:.1} MiB; slivers + concat \
             {:.1} ms, peak {:.1} MiB; writer/slivers: time {:.2}x, peak {:.2}x",
            t_ember * 1e3,
            peak_ember as f64 / (1 << 20) as f64,
            t_staged * 1e3,
            peak_staged as f64 / (1 << 20) as f64,
            t_ember / t_staged,
            peak_ember as f64 / peak_staged as f64,
        );
    }
}
