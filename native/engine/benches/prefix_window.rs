//! The prefix window's evaluation against refolding every frame: 200k rows (1112 partitions × 180 rows, in
//! batches of 8192), SUM over ROWS n PRECEDING .. CURRENT ROW for n = 2, 6, 29, 89, 179 (and every width ×4),
//! over 1 measure (5 columns) and over 3 measures (x, y and x again as a distinct expression: 15 columns), LEGACY
//! and ANSI, prefix evaluation on and off. Data and plans from the integration tests' fixtures.
//!
//!     cargo bench -p ember-engine --bench prefix_window
#[allow(dead_code, unused_imports)]
#[path = "../tests/engine/common.rs"]
mod common;
#[allow(dead_code, unused_imports)]
#[path = "../tests/engine/prefix_window.rs"]
mod fixtures;

use arrow::array::RecordBatch;
use arrow::compute::concat_batches;
use fixtures::{batches, exec_window, rows, schema, Data, B, F, W};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn main() {
    let mut rng = StdRng::seed_from_u64(12);
    let (parts, len) = (1112, 180);
    let mut data = Data { k: vec![], d: vec![], x: vec![], y: vec![], f: vec![] };
    for p in 0..parts {
        for i in 0..len {
            data.k.push(Some(p));
            data.d.push(Some(i as i64));
            data.x.push(rng.random_bool(0.95).then(|| rng.random_range(0..1_000_000)));
            data.y.push(rng.random_bool(0.95).then(|| rng.random_range(0..1_000_000)));
            data.f.push(None);
        }
    }
    let all = batches(&data, &mut rng);
    let one = concat_batches(&schema(), &all).unwrap();
    let input: Vec<RecordBatch> =
        (0..one.num_rows()).step_by(8192).map(|o| one.slice(o, 8192.min(one.num_rows() - o))).collect();
    for widths in [[2u64, 6, 29, 89, 179], [8, 24, 116, 356, 716]] {
        for measures in [vec![2usize], vec![2, 3, 2]] {
            for ansi in [false, true] {
                let mut ws = vec![];
                for (m, &arg) in measures.iter().enumerate() {
                    for &n in &widths {
                        // The third measure is x + 0 rows apart: a distinct frame set over the same column, as a
                        // separate measure would be (its prefix is shared, its frames are not).
                        let lo = if m == 2 { B::P(n + 1) } else { B::P(n) };
                        ws.push(W { f: F::Sum, arg, frame: rows(lo, B::CR), ansi });
                    }
                }
                let mut took = [0f64; 2];
                for (i, prefix) in [true, false].into_iter().enumerate() {
                    let t = std::time::Instant::now();
                    let (out, _) = exec_window(&ws, prefix, input.clone(), 1 << 30);
                    let n: usize = out.unwrap().iter().map(|b| b.num_rows()).sum();
                    assert_eq!(n, one.num_rows());
                    took[i] = t.elapsed().as_secs_f64();
                }
                println!(
                    "{} rows, widths {widths:?}, {} columns, ansi={ansi}: prefix {:.1} ms, refold {:.1} ms, \
                     refold/prefix {:.2}x",
                    one.num_rows(),
                    ws.len(),
                    took[0] * 1e3,
                    took[1] * 1e3,
                    took[1] / took[0]
                );
            }
        }
    }
}
