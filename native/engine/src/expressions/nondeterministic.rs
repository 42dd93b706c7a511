//! Spark's nondeterministic expressions, whose values depend on the task's partition and on the rows evaluated
//! before them: `spark_partition_id()`, `monotonically_increasing_id()`, `rand(seed)`, `randn(seed)`,
//! `randstr(length, seed)`, `uuid()` and `shuffle(array)`. Each
//! keeps Spark's per-partition state, started from the partition index the task computes, and advances it by
//! one value per row of each batch it evaluates; the planner takes them only where Spark evaluates them on every
//! row (`planner::expr::every_row`), so the sequence of values is Spark's.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use arrow::array::{ArrayRef, Float64Array, Int32Array, Int64Array};
use arrow::datatypes::{DataType, Schema};
use arrow::record_batch::RecordBatch;
use datafusion_common::{DataFusionError, Result};
use datafusion_expr::ColumnarValue;
use datafusion_physical_expr::PhysicalExpr;

use super::functions::array::ListOut;
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
    /// `RandStr`: `length` characters of 0-9a-zA-Z, one `XORShiftRandom.nextInt()` each.
    RandStr { length: i32, seed: i64 },
    /// `Uuid`: `RandomUUIDGenerator(seed + partitionIndex)` (commons-math3's MersenneTwister), a version 4 UUID.
    Uuid { seed: i64 },
    /// `Shuffle`: the array's elements in `RandomIndicesGenerator(seed + partitionIndex)`'s order; a NULL array
    /// takes no numbers.
    Shuffle { seed: i64 },
}

impl Nondeterministic {
    pub fn name(&self) -> &'static str {
        match self {
            Self::PartitionId => "spark_partition_id",
            Self::MonotonicallyIncreasingId => "monotonically_increasing_id",
            Self::Rand { .. } => "rand",
            Self::Randn { .. } => "randn",
            Self::RandStr { .. } => "randstr",
            Self::Uuid { .. } => "uuid",
            Self::Shuffle { .. } => "shuffle",
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
    /// `java.util.Random.nextInt()`: 32 random bits.
    pub fn next_int(&mut self) -> i32 {
        self.next(32)
    }

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

/// commons-math3's `MersenneTwister` (MT19937 seeded by `init_by_array` of a long's two halves), with the
/// `BitsStreamGenerator` methods Spark calls on it.
#[derive(Debug, Clone)]
pub struct MersenneTwister {
    mt: Box<[u32; 624]>,
    mti: usize,
}

impl MersenneTwister {
    const N: usize = 624;
    const M: usize = 397;

    pub fn new(seed: i64) -> Self {
        let mut t = Self { mt: Box::new([0; 624]), mti: 0 };
        t.seed_array(&[(seed as u64 >> 32) as u32, seed as u32]);
        t
    }

    fn seed_int(&mut self, seed: u32) {
        self.mt[0] = seed;
        for i in 1..Self::N {
            let prev = self.mt[i - 1];
            self.mt[i] = 1_812_433_253u32.wrapping_mul(prev ^ (prev >> 30)).wrapping_add(i as u32);
        }
        self.mti = Self::N;
    }

    fn seed_array(&mut self, seed: &[u32]) {
        self.seed_int(19_650_218);
        let (mut i, mut j) = (1, 0);
        for _ in 0..Self::N.max(seed.len()) {
            let prev = self.mt[i - 1];
            // Java adds the int seed sign-extended to a long; the low 32 bits are the same.
            self.mt[i] = (self.mt[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(seed[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= Self::N {
                self.mt[0] = self.mt[Self::N - 1];
                i = 1;
            }
            if j >= seed.len() {
                j = 0;
            }
        }
        for _ in 0..Self::N - 1 {
            let prev = self.mt[i - 1];
            self.mt[i] = (self.mt[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_566_083_941)).wrapping_sub(i as u32);
            i += 1;
            if i >= Self::N {
                self.mt[0] = self.mt[Self::N - 1];
                i = 1;
            }
        }
        self.mt[0] = 0x8000_0000;
    }

    fn next(&mut self, bits: u32) -> u32 {
        const MAG01: [u32; 2] = [0, 0x9908_b0df];
        if self.mti >= Self::N {
            for k in 0..Self::N {
                let y = (self.mt[k] & 0x8000_0000) | (self.mt[(k + 1) % Self::N] & 0x7fff_ffff);
                self.mt[k] = self.mt[(k + Self::M) % Self::N] ^ (y >> 1) ^ MAG01[(y & 1) as usize];
            }
            self.mti = 0;
        }
        let mut y = self.mt[self.mti];
        self.mti += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^= y >> 18;
        y >> (32 - bits)
    }

    /// `BitsStreamGenerator.nextInt(n)` for n > 0.
    pub fn next_int(&mut self, n: i32) -> i32 {
        if n & n.wrapping_neg() == n {
            return ((n as i64 * self.next(31) as i64) >> 31) as i32;
        }
        loop {
            let bits = self.next(31) as i32;
            let val = bits % n;
            if bits.wrapping_sub(val).wrapping_add(n - 1) >= 0 {
                return val;
            }
        }
    }

    /// `BitsStreamGenerator.nextLong()`.
    pub fn next_long(&mut self) -> i64 {
        let high = (self.next(32) as i64) << 32;
        high | self.next(32) as i64
    }

    /// Spark's `RandomIndicesGenerator.getNextIndices`: an inside-out Fisher-Yates permutation.
    pub fn next_indices(&mut self, length: usize, out: &mut Vec<usize>) {
        out.clear();
        out.resize(length, 0);
        for i in 0..length {
            let j = self.next_int(i as i32 + 1) as usize;
            if j != i {
                out[i] = out[j];
            }
            out[j] = i;
        }
    }

    /// Spark's `RandomUUIDGenerator.getNextUUID`, as `UUID.toString` prints it.
    pub fn next_uuid(&mut self) -> String {
        let most = (self.next_long() & 0xFFFF_FFFF_FFFF_0FFFu64 as i64) | 0x4000;
        let least = (self.next_long() | i64::MIN) & 0xBFFF_FFFF_FFFF_FFFFu64 as i64;
        let (m, l) = (most as u64, least as u64);
        format!(
            "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
            m >> 32,
            (m >> 16) & 0xffff,
            m & 0xffff,
            l >> 48,
            l & 0xffff_ffff_ffff
        )
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

#[derive(Debug, Clone)]
enum State {
    /// Rows numbered so far.
    Count(i64),
    Random(XorShiftRandom),
    Twister(MersenneTwister),
}

/// One nondeterministic expression of one task's plan, with its state.
#[derive(Debug)]
pub struct NondeterministicExpr {
    kind: Nondeterministic,
    partition_index: i32,
    state: Mutex<State>,
    /// `shuffle`'s array.
    child: Option<Arc<dyn PhysicalExpr>>,
}

impl NondeterministicExpr {
    pub fn new(kind: Nondeterministic, partition_index: i32) -> Self {
        let at = |seed: i64| seed.wrapping_add(partition_index as i64);
        let state = match kind {
            Nondeterministic::Rand { seed }
            | Nondeterministic::Randn { seed }
            | Nondeterministic::RandStr { seed, .. } => State::Random(XorShiftRandom::new(at(seed))),
            Nondeterministic::Uuid { seed } | Nondeterministic::Shuffle { seed } => {
                State::Twister(MersenneTwister::new(at(seed)))
            }
            _ => State::Count(0),
        };
        Self { kind, partition_index, state: Mutex::new(state), child: None }
    }

    /// `shuffle` over `child`'s arrays.
    pub fn with_child(mut self, child: Arc<dyn PhysicalExpr>) -> Self {
        self.child = Some(child);
        self
    }
}

impl fmt::Display for NondeterministicExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            Nondeterministic::Rand { seed }
            | Nondeterministic::Randn { seed }
            | Nondeterministic::Uuid { seed }
            | Nondeterministic::Shuffle { seed } => write!(f, "{}({seed})", self.kind.name()),
            Nondeterministic::RandStr { length, seed } => write!(f, "randstr({length}, {seed})"),
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
    fn data_type(&self, input_schema: &Schema) -> Result<DataType> {
        Ok(match (self.kind, &self.child) {
            (Nondeterministic::PartitionId, _) => DataType::Int32,
            (Nondeterministic::MonotonicallyIncreasingId, _) => DataType::Int64,
            (Nondeterministic::RandStr { .. } | Nondeterministic::Uuid { .. }, _) => DataType::Utf8,
            (Nondeterministic::Shuffle { .. }, Some(c)) => c.data_type(input_schema)?,
            _ => DataType::Float64,
        })
    }

    fn nullable(&self, _input_schema: &Schema) -> Result<bool> {
        Ok(self.child.is_some())
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
            (State::Random(rng), Nondeterministic::RandStr { length, .. }) => {
                let mut out = arrow::array::StringBuilder::with_capacity(rows, rows * length.max(0) as usize);
                let mut s = String::with_capacity(length.max(0) as usize);
                for _ in 0..rows {
                    s.clear();
                    for _ in 0..length {
                        let v = (rng.next_int() % 62).unsigned_abs() as u8;
                        s.push(match v {
                            0..=9 => b'0' + v,
                            10..=35 => b'a' + v - 10,
                            _ => b'A' + v - 36,
                        } as char);
                    }
                    out.append_value(&s);
                }
                Arc::new(out.finish())
            }
            (State::Random(rng), _) => Arc::new(Float64Array::from_iter_values((0..rows).map(|_| rng.next_double()))),
            (State::Twister(mt), Nondeterministic::Uuid { .. }) => {
                Arc::new(arrow::array::StringArray::from_iter_values((0..rows).map(|_| mt.next_uuid())))
            }
            (State::Twister(mt), _) => {
                let child =
                    self.child.as_ref().ok_or_else(|| DataFusionError::Internal("shuffle without its array".into()))?;
                shuffle(mt, &child.evaluate(batch)?.into_array(rows)?)?
            }
        };
        Ok(ColumnarValue::Array(out))
    }

    fn children(&self) -> Vec<&Arc<dyn PhysicalExpr>> {
        self.child.iter().collect()
    }

    fn with_new_children(self: Arc<Self>, children: Vec<Arc<dyn PhysicalExpr>>) -> Result<Arc<dyn PhysicalExpr>> {
        match (children.into_iter().next(), &self.child) {
            (Some(c), Some(_)) => {
                let state = self.state.lock().unwrap_or_else(|e| e.into_inner()).clone();
                Ok(Arc::new(Self {
                    kind: self.kind,
                    partition_index: self.partition_index,
                    state: Mutex::new(state),
                    child: Some(c),
                }))
            }
            _ => Ok(self),
        }
    }

    fn is_volatile_node(&self) -> bool {
        true
    }

    fn fmt_sql(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Each non-NULL array's elements in the generator's next permutation.
fn shuffle(mt: &mut MersenneTwister, arrays: &ArrayRef) -> Result<ArrayRef> {
    use arrow::array::{Array, AsArray};
    let (field, l) = match arrays.data_type() {
        DataType::List(f) => (f.clone(), arrays.as_list::<i32>()),
        t => return Err(DataFusionError::Internal(format!("shuffle of {t}"))),
    };
    let data = l.values().to_data();
    let mut out = ListOut::new(vec![&data], l.len());
    let mut order = Vec::new();
    for i in 0..l.len() {
        if l.is_valid(i) {
            let start = l.value_offsets()[i] as usize;
            mt.next_indices(l.value_length(i) as usize, &mut order);
            for &k in &order {
                out.pick(0, start + k)?;
            }
        }
        out.end_row(l.is_valid(i));
    }
    out.finish(&field)
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

    /// A sliced list array (offsets not starting at 0, as a batch slice has them): each row shuffled in place.
    #[test]
    fn shuffle_keeps_each_row_of_a_sliced_array() {
        use arrow::array::{Array, AsArray, ListArray};
        use arrow::datatypes::Int32Type;
        let lists = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
            Some(vec![Some(1), Some(2)]),
            Some(vec![Some(3)]),
            None,
            Some(vec![Some(4), Some(5), Some(6)]),
        ]);
        let sliced: ArrayRef = Arc::new(lists.slice(1, 3));
        let out = shuffle(&mut MersenneTwister::new(7), &sliced).unwrap();
        let out = out.as_list::<i32>();
        assert_eq!(out.len(), 3);
        assert!(out.is_null(1));
        let row = |i: usize| {
            let mut v: Vec<i32> = out.value(i).as_primitive::<Int32Type>().values().to_vec();
            v.sort();
            v
        };
        assert_eq!((row(0), row(2)), (vec![3], vec![4, 5, 6]));
    }
}
