//! Routing rows to spill buckets and gathering them into full batches: Ember's staging
//! (`operators/spill.rs` `CoalescingWriter`: a `take` per bucket and input batch, the slivers held, one
//! `concat_batches` per full batch) against arrow's `BatchCoalescer` (`push_batch_with_indices`: the same
//! `take`, then copied into per-bucket in-progress buffers). Same input, same buckets, side by side, as ratios.
//!
//!     cargo bench -p ember-engine --bench coalesce [-- <rows> <repeat>]
use std::sync::Arc;
use std::time::Instant;

use arrow::array::{Array, ArrayRef, Int64Array, RecordBatch, StringArray, UInt32Array};
use arrow::compute::{concat_batches, take_record_batch, BatchCoalescer};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};

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

/// Ember's staging: slivers held per bucket until a batch's worth, then one concat (and a slice per batch).
fn staged(schema: &SchemaRef, input: &[RecordBatch], routes: &[Vec<UInt32Array>], n: usize) -> (usize, usize) {
    let mut staged: Vec<Vec<RecordBatch>> = vec![vec![]; n];
    let mut staged_rows = vec![0usize; n];
    let (mut out_rows, mut out_batches) = (0, 0);
    let mut emit = |parts: Vec<RecordBatch>| {
        let b = concat_batches(schema, &parts).unwrap();
        let mut o = 0;
        while o < b.num_rows() {
            let len = BATCH.min(b.num_rows() - o);
            out_rows += b.slice(o, len).num_rows();
            out_batches += 1;
            o += len;
        }
    };
    for (batch, route) in input.iter().zip(routes) {
        for (p, idx) in route.iter().enumerate() {
            if idx.is_empty() {
                continue;
            }
            let sliver = take_record_batch(batch, idx).unwrap();
            staged_rows[p] += sliver.num_rows();
            staged[p].push(sliver);
            if staged_rows[p] >= BATCH {
                emit(std::mem::take(&mut staged[p]));
                staged_rows[p] = 0;
            }
        }
    }
    for parts in staged.into_iter().filter(|s| !s.is_empty()) {
        emit(parts);
    }
    (out_rows, out_batches)
}

/// arrow's `BatchCoalescer`, one per bucket.
fn coalescer(schema: &SchemaRef, input: &[RecordBatch], routes: &[Vec<UInt32Array>], n: usize) -> (usize, usize) {
    let mut cs: Vec<BatchCoalescer> = (0..n).map(|_| BatchCoalescer::new(schema.clone(), BATCH)).collect();
    let (mut out_rows, mut out_batches) = (0, 0);
    for (batch, route) in input.iter().zip(routes) {
        for (p, idx) in route.iter().enumerate() {
            if idx.is_empty() {
                continue;
            }
            cs[p].push_batch_with_indices(batch.clone(), idx).unwrap();
            while let Some(b) = cs[p].next_completed_batch() {
                out_rows += b.num_rows();
                out_batches += 1;
            }
        }
    }
    for c in &mut cs {
        c.finish_buffered_batch().unwrap();
        while let Some(b) = c.next_completed_batch() {
            out_rows += b.num_rows();
            out_batches += 1;
        }
    }
    (out_rows, out_batches)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let rows: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(4_000_000);
    let repeat: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(3);
    let (schema, batches) = input(rows);
    for n in [16usize, 64, 256] {
        let routes: Vec<Vec<UInt32Array>> = batches.iter().map(|b| buckets(b, n)).collect();
        let (mut best_staged, mut best_coalescer) = (f64::MAX, f64::MAX);
        for _ in 0..repeat {
            let t = Instant::now();
            let a = staged(&schema, &batches, &routes, n);
            best_staged = best_staged.min(t.elapsed().as_secs_f64());
            let t = Instant::now();
            let b = coalescer(&schema, &batches, &routes, n);
            best_coalescer = best_coalescer.min(t.elapsed().as_secs_f64());
            assert_eq!(a.0, b.0, "both keep every row");
            assert_eq!(a.0, rows);
        }
        println!(
            "{rows} rows into {n} buckets: staged+concat {:.1} ms, BatchCoalescer {:.1} ms, coalescer/staged {:.2}x",
            best_staged * 1e3,
            best_coalescer * 1e3,
            best_coalescer / best_staged
        );
    }
}
