//! HyperLogLog++ sketches of group keys, fed with a 64-bit key hash that is computed once per row (over all
//! grouping columns, with DataFusion's quality foldhash state) and reused by every sketch the row goes into:
//! the sketch's own hasher is the identity, so inserting costs a register update, not a second hash.
use std::collections::HashSet;
use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

use arrow::array::ArrayRef;
use datafusion_common::hash_utils::{create_hashes, HLL_RANDOM_STATE};
use datafusion_common::{internal_datafusion_err, Result};
use hyperloglogplus::{HyperLogLog, HyperLogLogPlus};

/// The identity "hasher": the value inserted is already a well-mixed 64-bit hash.
#[derive(Clone, Copy, Debug, Default)]
pub struct IdentityHasher(u64);

impl Hasher for IdentityHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only u64 hashes are ever inserted; fold anything else rather than panic.
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.0 = i;
    }
}

#[derive(Clone, Copy, Debug, Default)]
pub struct IdentityState;

impl BuildHasher for IdentityState {
    type Hasher = IdentityHasher;

    fn build_hasher(&self) -> IdentityHasher {
        IdentityHasher(0)
    }
}

/// Hashes the group keys of a batch, one `u64` per row, into `out` (resized to the row count).
/// Rows with equal keys (nulls included) get equal hashes.
pub fn hash_keys(keys: &[ArrayRef], num_rows: usize, out: &mut Vec<u64>) -> Result<()> {
    out.clear();
    out.resize(num_rows, 0);
    create_hashes(keys, &HLL_RANDOM_STATE, out)?;
    Ok(())
}

/// A HyperLogLog++ sketch of key hashes. Its memory is bounded (sparse while small, then `2^precision`
/// six-bit registers: 12 KiB at precision 14), whatever the number of keys.
#[derive(Clone, Debug)]
pub struct KeySketch {
    hll: HyperLogLogPlus<u64, IdentityState>,
    precision: u8,
    /// The exact set of hashes inserted so far, while there are at most [`SMALL_KEYS`] of them. The crate's
    /// sparse representation (which small key sets can keep forever) pays a `HashSet` insert for every row and
    /// re-encodes its sparse list every ~130 inserts: ~220 ns per row on 1k repeating keys, measured. Inserting
    /// a hash twice never changes a sketch, so repeats found here are skipped — exactly — and only the first
    /// occurrence of each key reaches the sparse form. Past [`SMALL_KEYS`] keys the sketch is dense (~8 ns per
    /// insert) and the set is dropped.
    small: Option<HashSet<u64, IdentityState>>,
    /// A direct-mapped cache of the last hash seen per slot, in front of everything: on small key sets most rows
    /// repeat a key seen a moment ago, and a hit costs one compare (~1 ns) rather than a set lookup (~4 ns).
    recent: Box<[u64]>,
}

const RECENT_SLOTS: usize = 1 << 12;
/// An empty slot. A key whose hash is exactly this is never inserted: a 2^-64 chance, one key.
const EMPTY: u64 = u64::MAX;

/// More distinct keys than the sparse representation holds at precision ≤ 14 (it densifies at ~6.5k).
const SMALL_KEYS: usize = 8192;

impl KeySketch {
    /// `precision` in 4..=18; the standard error is about `1.04 / sqrt(2^precision)` (0.8% at 14).
    pub fn try_new(precision: u8) -> Result<Self> {
        let hll = HyperLogLogPlus::new(precision, IdentityState)
            .map_err(|e| internal_datafusion_err!("invalid HyperLogLog precision {precision}: {e:?}"))?;
        let mut s = Self {
            hll,
            precision,
            small: Some(HashSet::with_hasher(IdentityState)),
            recent: vec![EMPTY; RECENT_SLOTS].into_boxed_slice(),
        };
        s.densify();
        Ok(s)
    }

    pub fn precision(&self) -> u8 {
        self.precision
    }

    /// Number of registers of the dense representation.
    pub fn registers(&self) -> usize {
        1 << self.precision
    }

    #[inline]
    pub fn insert_hash(&mut self, hash: u64) {
        // Seen very recently: inserting again would change nothing.
        let slot = hash as usize & (RECENT_SLOTS - 1);
        if self.recent[slot] == hash {
            return;
        }
        self.recent[slot] = hash;
        match &mut self.small {
            Some(set) => {
                if set.insert(hash) {
                    self.hll.insert(&hash);
                    if set.len() > SMALL_KEYS {
                        self.small = None;
                    }
                }
            }
            None => self.hll.insert(&hash),
        }
    }

    pub fn insert_hashes(&mut self, hashes: &[u64]) {
        for &h in hashes {
            self.insert_hash(h);
        }
    }

    /// Adds every key of `other` to this sketch (set union).
    pub fn merge(&mut self, other: &KeySketch) -> Result<()> {
        self.hll.merge(&other.hll).map_err(|e| internal_datafusion_err!("cannot merge sketches: {e:?}"))
    }

    /// The estimated number of distinct keys inserted (exact up to [`SMALL_KEYS`] keys).
    pub fn estimate(&mut self) -> f64 {
        match &self.small {
            Some(set) => set.len() as f64,
            None => self.hll.count(),
        }
    }

    /// Starts the sketch in the dense representation. The crate has no such switch, but merging a dense sketch
    /// into a sparse one densifies it: the template is a sketch made dense by inserting hashes that all land in
    /// a few registers (`R` of them, set to the lowest rank, 1), so the merge presets `R` registers to 1. That
    /// biases the estimate by at most `R` keys (13 at precision 14) while the count is in the linear-counting
    /// range, and by nothing measurable above; below [`SMALL_KEYS`] keys the count is exact anyway. The sparse
    /// phase it skips costs ~10 ms per sketch fill (~1.5 µs per key for the first 6.5k keys), paid again after
    /// every reset. Above precision 14 the preset would be too many registers: those sketches start sparse.
    fn densify(&mut self) {
        if let Some(template) = dense_template(self.precision) {
            self.hll.merge(template).expect("same precision");
        }
    }

    /// Forgets every key.
    pub fn clear(&mut self) {
        self.hll = HyperLogLogPlus::new(self.precision, IdentityState).expect("precision checked at creation");
        self.small = Some(HashSet::with_hasher(IdentityState));
        self.recent.fill(EMPTY);
        self.densify();
    }

    /// Drops the exact set of the first keys (the sketch already holds them): memory back, exact small counts
    /// and cheap repeats gone.
    pub fn shed(&mut self) {
        self.small = None;
    }

    /// The bytes this sketch holds now (registers, the exact set of the first keys while it lives, the cache),
    /// for memory accounting. At most ~200 KiB at precision 14, ~44 KiB once past the first 8k keys.
    pub fn size_bytes(&self) -> usize {
        let registers = (self.registers() * 6).div_ceil(8);
        let small = self.small.as_ref().map_or(0, |s| s.capacity() * (std::mem::size_of::<u64>() + 1));
        registers + small + self.recent.len() * std::mem::size_of::<u64>() + std::mem::size_of::<Self>()
    }
}

fn is_sparse(hll: &HyperLogLogPlus<u64, IdentityState>) -> bool {
    // Not public in the crate; its derived Debug shows the representation.
    format!("{hll:?}").contains("registers: None")
}

fn dense_template(precision: u8) -> Option<&'static HyperLogLogPlus<u64, IdentityState>> {
    static TEMPLATES: [OnceLock<Option<HyperLogLogPlus<u64, IdentityState>>>; 15] = [const { OnceLock::new() }; 15];
    if !(4..=14).contains(&precision) {
        return None;
    }
    TEMPLATES[(precision - 4) as usize]
        .get_or_init(|| {
            let p = u32::from(precision);
            let mut hll = HyperLogLogPlus::new(precision, IdentityState).ok()?;
            // Register r, rank 1 (the bit after the index set), and distinct bits in the rest of the 25-bit
            // sparse index, so every hash is a distinct sparse code.
            let per_register = 1u64 << (24 - p);
            for r in 0..(1u64 << p).min(64) {
                for j in 0..per_register.min(1 << 16) {
                    hll.insert(&((r << (64 - p)) | (1 << (63 - p)) | (j << 39)));
                }
                let _ = hll.count(); // folds the pending set into the sparse list, which may densify it
                if !is_sparse(&hll) {
                    return Some(hll);
                }
            }
            None
        })
        .as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int64Array, StringArray};
    use std::sync::Arc;

    fn estimate_of(n: i64, precision: u8) -> f64 {
        let keys: ArrayRef = Arc::new(Int64Array::from_iter_values(0..n));
        let mut hashes = vec![];
        hash_keys(&[keys], n as usize, &mut hashes).unwrap();
        let mut s = KeySketch::try_new(precision).unwrap();
        s.insert_hashes(&hashes);
        // Re-inserting the same keys never changes the estimate.
        let before = s.estimate();
        s.insert_hashes(&hashes);
        assert_eq!(before, s.estimate());
        before
    }

    #[test]
    fn estimate_within_a_few_percent_at_precision_14() {
        for n in [10, 1_000, 20_000, 100_000, 400_000] {
            let est = estimate_of(n, 14);
            let err = (est - n as f64).abs() / n as f64;
            assert!(err < 0.03, "n={n}: estimate {est} is {:.2}% off", err * 100.0);
        }
    }

    #[test]
    fn merge_is_union() {
        let a: ArrayRef = Arc::new(Int64Array::from_iter_values(0..60_000));
        let b: ArrayRef = Arc::new(Int64Array::from_iter_values(30_000..90_000));
        let (mut ha, mut hb) = (vec![], vec![]);
        hash_keys(&[a], 60_000, &mut ha).unwrap();
        hash_keys(&[b], 60_000, &mut hb).unwrap();
        let mut sa = KeySketch::try_new(14).unwrap();
        sa.insert_hashes(&ha);
        let mut sb = KeySketch::try_new(14).unwrap();
        sb.insert_hashes(&hb);
        sa.merge(&sb).unwrap();
        let est = sa.estimate();
        assert!((est - 90_000.0).abs() / 90_000.0 < 0.03, "union estimate {est}");
        sa.clear();
        assert_eq!(sa.estimate(), 0.0);
    }

    #[test]
    fn multi_column_keys_and_nulls_hash_consistently() {
        let k1: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), None, Some(1), None]));
        let k2: ArrayRef = Arc::new(StringArray::from(vec![Some("a"), Some("b"), Some("a"), Some("b")]));
        let mut h = vec![];
        hash_keys(&[k1, k2], 4, &mut h).unwrap();
        assert_eq!(h[0], h[2]);
        assert_eq!(h[1], h[3]);
        assert_ne!(h[0], h[1]);
    }

    #[test]
    fn sketches_start_dense_up_to_precision_14() {
        for p in 4..=14 {
            let s = KeySketch::try_new(p).unwrap();
            assert!(!is_sparse(&s.hll), "precision {p}");
        }
        assert!(is_sparse(&KeySketch::try_new(16).unwrap().hll));
        // The preset registers bias a fresh dense sketch by a few keys at most.
        let mut s = KeySketch::try_new(14).unwrap();
        s.small = None;
        assert!(s.estimate() < 20.0, "{}", s.estimate());
    }

    #[test]
    fn bad_precision_is_an_error() {
        assert!(KeySketch::try_new(2).is_err());
        assert!(KeySketch::try_new(19).is_err());
    }
}
