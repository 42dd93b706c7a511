//! HyperLogLog++ sketches of group keys, fed with a 64-bit key hash that is computed once per row (over all
//! grouping columns, with DataFusion's quality foldhash state) and reused by every sketch the row goes into:
//! the sketch's own hasher is the identity, so inserting costs a register update, not a second hash.
use std::hash::{BuildHasher, Hasher};

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
}

impl KeySketch {
    /// `precision` in 4..=18; the standard error is about `1.04 / sqrt(2^precision)` (0.8% at 14).
    pub fn try_new(precision: u8) -> Result<Self> {
        let hll = HyperLogLogPlus::new(precision, IdentityState)
            .map_err(|e| internal_datafusion_err!("invalid HyperLogLog precision {precision}: {e:?}"))?;
        Ok(Self { hll, precision })
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
        self.hll.insert(&hash);
    }

    pub fn insert_hashes(&mut self, hashes: &[u64]) {
        for h in hashes {
            self.hll.insert(h);
        }
    }

    /// Adds every key of `other` to this sketch (set union).
    pub fn merge(&mut self, other: &KeySketch) -> Result<()> {
        self.hll.merge(&other.hll).map_err(|e| internal_datafusion_err!("cannot merge sketches: {e:?}"))
    }

    /// The estimated number of distinct keys inserted.
    pub fn estimate(&mut self) -> f64 {
        self.hll.count()
    }

    /// Forgets every key.
    pub fn clear(&mut self) {
        self.hll = HyperLogLogPlus::new(self.precision, IdentityState).expect("precision checked at creation");
    }

    /// Upper bound of the bytes this sketch holds (the dense registers, which the sparse form never exceeds
    /// by much), for memory accounting.
    pub fn size_bytes(&self) -> usize {
        // 6-bit registers packed in u32 words, plus the sparse list / temporary set before densifying.
        (self.registers() * 6).div_ceil(8) * 2 + std::mem::size_of::<Self>()
    }
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
    fn bad_precision_is_an_error() {
        assert!(KeySketch::try_new(2).is_err());
        assert!(KeySketch::try_new(19).is_err());
    }
}
