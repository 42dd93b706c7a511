//! Spark's nondeterministic expressions, whose values depend on the task's partition and on the rows evaluated
//! before them: `spark_partition_id()`, `monotonically_increasing_id()`, `rand(seed)` and `randn(seed)`. Each
//! keeps Spark's per-partition state, started from the partition index the task computes, and advances it by
//! one value per row of each batch it evaluates; the planner takes them only where Spark evaluates them on every
//! row (`planner::expr::every_row`), so the sequence of values is Spark's.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use arrow::array::{ArrayRef, Float64Array, Int32Array, Int64Array};
use arrow::datatypes::{DataType, Schema};
use arrow::record_batch::RecordBatch;
use datafusion_common::Result;
use datafusion_expr::ColumnarValue;
use datafusion_physical_expr::PhysicalExpr;

use super::functions::fdlibm;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Nondeterministic {
    /// `SparkPartitionID`: the partition index.
    PartitionId,
    /// `MonotonicallyIncreasingID`: the partition index in the upper 31 bits, the row's number in the lower 33.
    MonotonicallyIncreasingId,
    /// `Rand`: `XORShiftRandom(seed + partitionIndex).nextDouble()` per row.
    Rand { seed: i64 },
    /// `Randn`: `XORShiftRandom(seed + partitionIndex).nextGaussian()` per row.
    Randn { seed: i64 },
}

impl Nondeterministic {
    pub fn name(&self) -> &'static str {
        match self {
            Self::PartitionId => "spark_partition_id",
            Self::MonotonicallyIncreasingId => "monotonically_increasing_id",
            Self::Rand { .. } => "rand",
            Self::Randn { .. } => "randn",
        }
    }
}

/// Spark's `org.apache.spark.util.random.XORShiftRandom`, with the `java.util.Random` methods Spark calls on it.
#[derive(Debug, Clone)]
pub struct XorShiftRandom {
    seed: i64,
    /// `java.util.Random`'s second Gaussian of a pair, returned by the next `nextGaussian`.
    next_gaussian: Option<f64>,
}

impl XorShiftRandom {
    pub fn new(init: i64) -> Self {
        Self { seed: hash_seed(init), next_gaussian: None }
    }

    fn next(&mut self, bits: u32) -> i32 {
        let mut next = self.seed ^ (self.seed << 21);
        next ^= ((next as u64) >> 35) as i64;
        next ^= next << 4;
        self.seed = next;
        (next & ((1i64 << bits) - 1)) as i32
    }

    /// `java.util.Random.nextDouble`: 53 random bits scaled to [0, 1).
    pub fn next_double(&mut self) -> f64 {
        let high = (self.next(26) as i64) << 27;
        (high + self.next(27) as i64) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// `java.util.Random.nextGaussian` (Knuth's polar method, `StrictMath.log`), in pairs.
    pub fn next_gaussian(&mut self) -> f64 {
        if let Some(g) = self.next_gaussian.take() {
            return g;
        }
        loop {
            let v1 = 2.0 * self.next_double() - 1.0;
            let v2 = 2.0 * self.next_double() - 1.0;
            let s = v1 * v1 + v2 * v2;
            if s < 1.0 && s != 0.0 {
                let multiplier = (-2.0 * fdlibm::log(s) / s).sqrt();
                self.next_gaussian = Some(v2 * multiplier);
                return v1 * multiplier;
            }
        }
    }
}

/// `XORShiftRandom.hashSeed`: Scala's `MurmurHash3.bytesHash` of the seed's big-endian bytes, twice.
fn hash_seed(seed: i64) -> i64 {
    let bytes = seed.to_be_bytes();
    let low = bytes_hash(&bytes, 0x3c07_4a61);
    let high = bytes_hash(&bytes, low);
    ((high as i64) << 32) | (low as i64 & 0xFFFF_FFFF)
}

/// Scala's `MurmurHash3.bytesHash` (32-bit MurmurHash3 over little-endian words).
fn bytes_hash(data: &[u8], seed: i32) -> i32 {
    fn mix_last(h: i32, k: i32) -> i32 {
        h ^ k.wrapping_mul(0xcc9e2d51u32 as i32).rotate_left(15).wrapping_mul(0x1b873593)
    }
    let mut h = seed;
    let mut words = data.chunks_exact(4);
    for w in &mut words {
        let k = i32::from_le_bytes([w[0], w[1], w[2], w[3]]);
        h = mix_last(h, k).rotate_left(13).wrapping_mul(5).wrapping_add(0xe6546b64u32 as i32);
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        let k = tail.iter().enumerate().fold(0i32, |k, (i, b)| k ^ ((*b as i32) << (8 * i)));
        h = mix_last(h, k);
    }
    // finalizeHash: avalanche(h ^ length).
    let mut h = h ^ data.len() as i32;
    h ^= ((h as u32) >> 16) as i32;
    h = h.wrapping_mul(0x85ebca6bu32 as i32);
    h ^= ((h as u32) >> 13) as i32;
    h = h.wrapping_mul(0xc2b2ae35u32 as i32);
    h ^ ((h as u32) >> 16) as i32
}

#[derive(Debug)]
enum State {
    /// Rows numbered so far.
    Count(i64),
    Random(XorShiftRandom),
}

/// One nondeterministic expression of one task's plan, with its state.
#[derive(Debug)]
pub struct NondeterministicExpr {
    kind: Nondeterministic,
    partition_index: i32,
    state: Mutex<State>,
}

impl NondeterministicExpr {
    pub fn new(kind: Nondeterministic, partition_index: i32) -> Self {
        let state = match kind {
            Nondeterministic::Rand { seed } | Nondeterministic::Randn { seed } => {
                State::Random(XorShiftRandom::new(seed.wrapping_add(partition_index as i64)))
            }
            _ => State::Count(0),
        };
        Self { kind, partition_index, state: Mutex::new(state) }
    }
}

impl fmt::Display for NondeterministicExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            Nondeterministic::Rand { seed } | Nondeterministic::Randn { seed } => {
                write!(f, "{}({seed})", self.kind.name())
            }
            _ => write!(f, "{}()", self.kind.name()),
        }
    }
}

// Two instances are never the same expression: each has its own state.
impl PartialEq for NondeterministicExpr {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

impl Eq for NondeterministicExpr {}

impl Hash for NondeterministicExpr {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.kind.hash(state);
        self.partition_index.hash(state);
    }
}

impl PhysicalExpr for NondeterministicExpr {
    fn data_type(&self, _input_schema: &Schema) -> Result<DataType> {
        Ok(match self.kind {
            Nondeterministic::PartitionId => DataType::Int32,
            Nondeterministic::MonotonicallyIncreasingId => DataType::Int64,
            _ => DataType::Float64,
        })
    }

    fn nullable(&self, _input_schema: &Schema) -> Result<bool> {
        Ok(false)
    }

    fn evaluate(&self, batch: &RecordBatch) -> Result<ColumnarValue> {
        let rows = batch.num_rows();
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let out: ArrayRef = match (&mut *state, self.kind) {
            (_, Nondeterministic::PartitionId) => Arc::new(Int32Array::from(vec![self.partition_index; rows])),
            (State::Count(count), _) => {
                let base = ((self.partition_index as i64) << 33).wrapping_add(*count);
                *count += rows as i64;
                Arc::new(Int64Array::from_iter_values((0..rows as i64).map(|i| base.wrapping_add(i))))
            }
            (State::Random(rng), Nondeterministic::Randn { .. }) => {
                Arc::new(Float64Array::from_iter_values((0..rows).map(|_| rng.next_gaussian())))
            }
            (State::Random(rng), _) => Arc::new(Float64Array::from_iter_values((0..rows).map(|_| rng.next_double()))),
        };
        Ok(ColumnarValue::Array(out))
    }

    fn children(&self) -> Vec<&Arc<dyn PhysicalExpr>> {
        vec![]
    }

    fn with_new_children(self: Arc<Self>, _children: Vec<Arc<dyn PhysicalExpr>>) -> Result<Arc<dyn PhysicalExpr>> {
        Ok(self)
    }

    fn is_volatile_node(&self) -> bool {
        true
    }

    fn fmt_sql(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first values of `new XORShiftRandom(seed)` and Spark's `rand`/`randn` are checked against Spark in
    /// `EmberNondeterministicSuite`; here the pieces that can be checked alone.
    #[test]
    fn state_advances_per_row_across_batches() {
        let batch = |n| {
            RecordBatch::try_new_with_options(
                Arc::new(Schema::empty()),
                vec![],
                &arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(n)),
            )
            .unwrap()
        };
        let values = |e: &NondeterministicExpr, n| e.evaluate(&batch(n)).unwrap().into_array(n).unwrap();
        let ids = NondeterministicExpr::new(Nondeterministic::MonotonicallyIncreasingId, 3);
        let (a, b) = (values(&ids, 2), values(&ids, 3));
        let got: Vec<i64> =
            [a, b].iter().flat_map(|x| x.as_any().downcast_ref::<Int64Array>().unwrap().values().to_vec()).collect();
        assert_eq!(got, (0..5).map(|i| (3i64 << 33) + i).collect::<Vec<_>>());
        // rand over batches of 2 + 3 rows equals rand over one batch of 5.
        let split = NondeterministicExpr::new(Nondeterministic::Rand { seed: 7 }, 1);
        let whole = NondeterministicExpr::new(Nondeterministic::Rand { seed: 7 }, 1);
        let doubles = |a: ArrayRef| a.as_any().downcast_ref::<Float64Array>().unwrap().values().to_vec();
        let mut parts = doubles(values(&split, 2));
        parts.extend(doubles(values(&split, 3)));
        assert_eq!(parts, doubles(values(&whole, 5)));
        assert!(parts.iter().all(|v| (0.0..1.0).contains(v)));
        // Gaussians come in pairs: an odd batch leaves the second of a pair for the next one.
        let g_split = NondeterministicExpr::new(Nondeterministic::Randn { seed: 7 }, 0);
        let g_whole = NondeterministicExpr::new(Nondeterministic::Randn { seed: 7 }, 0);
        let mut g = doubles(values(&g_split, 3));
        g.extend(doubles(values(&g_split, 2)));
        assert_eq!(g, doubles(values(&g_whole, 5)));
    }
}
