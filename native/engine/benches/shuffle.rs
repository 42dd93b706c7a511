//! The shuffle writer's routing + encoding per row (one key and two, 1 and 200 partitions), and three ways to
//! gather a partition's rows out of ~8 MiB of buffered batches: `interleave` over (batch, row) pairs sorted by
//! partition (what the writer does), `take` per (batch, partition) then `concat` per partition, and a counting
//! sort of each batch then `concat` of slices. Data and plans from the integration tests' fixtures.
//!
//!     cargo bench -p ember-engine --bench shuffle
#[allow(dead_code, unused_imports)]
#[path = "../tests/engine/common.rs"]
mod common;
#[allow(dead_code, unused_imports)]
#[path = "../tests/engine/shuffle.rs"]
mod fixtures;

use std::sync::Arc;

use arrow::array::{AsArray, RecordBatch, UInt32Array};
use arrow::compute::{concat_batches, take_record_batch};
use common::reader;
use ember_engine::execution::NativePlan;
use ember_engine::memory::FixedBroker;
use fixtures::{random_batches, reference_partition, schema, writer_plan};
use prost::Message;

fn main() {
    let inputs = random_batches(6, 40, 8192);
    let s = schema();
    let rows = inputs.iter().map(|b| b.num_rows()).sum::<usize>();
    for keys in [vec![0usize], vec![0, 2]] {
        for n in [1u32, 200] {
            let plan = writer_plan(&keys, n, 0, &s, &s).encode_to_vec();
            let broker = Arc::new(FixedBroker::new(usize::MAX));
            let mut p = NativePlan::try_new(&plan, vec![reader(inputs.clone(), s.clone())], broker).unwrap();
            let start = std::time::Instant::now();
            let mut bytes = 0;
            while let Some(b) = p.next_batch().unwrap() {
                bytes += b.column(1).as_binary::<i32>().value_data().len();
            }
            let t = start.elapsed();
            println!(
                "keys={keys:?} n={n}: {rows} rows in {t:?}: {:.1} ns/row, {bytes} block bytes",
                t.as_nanos() as f64 / rows as f64
            );
        }
    }
    // Gathering 200 partitions out of ~8 MiB of buffered batches: `interleave` over (batch, row) pairs sorted by
    // partition (what the writer does) vs `take` per (batch, partition) then `concat` per partition.
    let buffered = &inputs[..8];
    let parts: Vec<Vec<u32>> =
        buffered.iter().map(|b| (0..b.num_rows()).map(|r| reference_partition(b, r, &[0, 2], 200)).collect()).collect();
    let start = std::time::Instant::now();
    let mut order: Vec<Vec<(usize, usize)>> = vec![vec![]; 200];
    for (bi, ps) in parts.iter().enumerate() {
        for (r, p) in ps.iter().enumerate() {
            order[*p as usize].push((bi, r));
        }
    }
    let refs: Vec<&RecordBatch> = buffered.iter().collect();
    let mut n1 = 0;
    for o in &order {
        n1 += arrow::compute::interleave_record_batch(&refs, o).unwrap().num_rows();
    }
    let t_interleave = start.elapsed();
    let start = std::time::Instant::now();
    let mut per_partition: Vec<Vec<RecordBatch>> = vec![vec![]; 200];
    for (b, ps) in buffered.iter().zip(&parts) {
        let mut idx: Vec<Vec<u32>> = vec![vec![]; 200];
        for (r, p) in ps.iter().enumerate() {
            idx[*p as usize].push(r as u32);
        }
        for (p, i) in idx.into_iter().enumerate() {
            per_partition[p].push(take_record_batch(b, &UInt32Array::from(i)).unwrap());
        }
    }
    let mut n2 = 0;
    for batches in &per_partition {
        n2 += concat_batches(&s, batches).unwrap().num_rows();
    }
    let t_take = start.elapsed();
    assert_eq!(n1, n2);
    // One `take` per batch in partition order (a counting sort), then per partition a `concat` of one slice per
    // batch.
    let start = std::time::Instant::now();
    let mut sorted = vec![];
    for (b, ps) in buffered.iter().zip(&parts) {
        let mut starts = vec![0u32; 201];
        for p in ps {
            starts[*p as usize + 1] += 1;
        }
        for i in 0..200 {
            starts[i + 1] += starts[i];
        }
        let mut next = starts.clone();
        let mut idx = vec![0u32; ps.len()];
        for (r, p) in ps.iter().enumerate() {
            idx[next[*p as usize] as usize] = r as u32;
            next[*p as usize] += 1;
        }
        sorted.push((take_record_batch(b, &UInt32Array::from(idx)).unwrap(), starts));
    }
    let mut n3 = 0;
    for p in 0..200 {
        let slices: Vec<RecordBatch> =
            sorted.iter().map(|(b, st)| b.slice(st[p] as usize, (st[p + 1] - st[p]) as usize)).collect();
        n3 += concat_batches(&s, &slices).unwrap().num_rows();
    }
    let t_sorted = start.elapsed();
    assert_eq!(n1, n3);
    println!(
        "gather {n1} rows into 200 partitions: interleave {t_interleave:?}, take + concat {t_take:?}, \
         sort each batch + concat slices {t_sorted:?}"
    );
}
