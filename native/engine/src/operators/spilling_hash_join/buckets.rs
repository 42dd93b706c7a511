//! Memory budget of the join, and routing of rows to buckets by a seeded hash of their join keys.
use arrow::array::{ArrayRef, RecordBatch, UInt32Array};
use arrow::compute::take_record_batch;
use datafusion_common::hash_utils::{create_hashes, RandomState};
use datafusion_common::utils::memory::get_record_batch_memory_size;
use datafusion_common::{DataFusionError, Result};
use datafusion_execution::memory_pool::MemoryReservation;
use datafusion_physical_expr::PhysicalExprRef;
use datafusion_physical_plan::metrics::Gauge;

/// Bucket hash seed: any fixed value. The hash has nothing to do with Spark's murmur3 shuffle hash (all rows of a
/// task share `murmur3 % n`) nor with `HashJoinExec`'s own table hash.
const BUCKET_HASH: RandomState = RandomState::with_seed(0x454d_4245_525f_4a4e);

/// What holding `batch` as build rows costs once `HashJoinExec` has it: the batch, its concatenated copy, and
/// the hash table (hash + index per row at up to ~2x slack: ~40 B), its chain (8 B) and hashes (8 B) per row.
pub fn batch_cost(batch: &RecordBatch) -> usize {
    2 * get_record_batch_memory_size(batch) + 56 * batch.num_rows()
}

/// The join's reservation, optionally capped (a test knob forcing spills), with a peak gauge.
#[derive(Debug)]
pub(crate) struct Budget {
    reservation: MemoryReservation,
    cap: usize,
    peak: Gauge,
}

impl Budget {
    pub(crate) fn new(reservation: MemoryReservation, cap: usize, peak: Gauge) -> Self {
        Self { reservation, cap, peak }
    }

    pub(crate) fn try_grow(&self, bytes: usize) -> Result<()> {
        if self.cap > 0 && self.reservation.size() + bytes > self.cap {
            return Err(DataFusionError::ResourcesExhausted(format!(
                "spilling hash join: {bytes} bytes over its cap of {} ({} reserved)",
                self.cap,
                self.reservation.size()
            )));
        }
        self.reservation.try_grow(bytes)?;
        self.peak.set_max(self.reservation.size());
        Ok(())
    }

    pub(crate) fn shrink(&self, bytes: usize) {
        self.reservation.shrink(bytes.min(self.reservation.size()));
    }
}

impl crate::operators::spill::SpillBudget for Budget {
    fn try_grow(&self, bytes: usize) -> Result<()> {
        Budget::try_grow(self, bytes)
    }

    fn shrink(&self, bytes: usize) {
        Budget::shrink(self, bytes)
    }
}

/// Routes rows to `2^bits` buckets at a split `level` (hash bits `bits*level ..`).
#[derive(Debug, Clone)]
pub(crate) struct Router {
    pub(crate) keys: Vec<PhysicalExprRef>,
    pub(crate) bits: u32,
}

impl Router {
    pub(crate) fn fan_out(&self) -> usize {
        1 << self.bits
    }

    /// Deepest level whose bits still exist in a 64-bit hash.
    pub(crate) fn max_level(&self) -> u32 {
        64 / self.bits - 1
    }

    /// The bucket of every row of `batch`.
    pub(crate) fn bucket_of_rows(&self, batch: &RecordBatch, level: u32) -> Result<Vec<usize>> {
        let arrays = self
            .keys
            .iter()
            .map(|k| k.evaluate(batch)?.into_array(batch.num_rows()))
            .collect::<Result<Vec<ArrayRef>>>()?;
        let mut hashes = vec![0u64; batch.num_rows()];
        create_hashes(&arrays, &BUCKET_HASH, &mut hashes)?;
        let shift = self.bits * level;
        let mask = (self.fan_out() - 1) as u64;
        Ok(hashes.iter().map(|h| ((h >> shift) & mask) as usize).collect())
    }

    /// Splits `batch` into its non-empty pieces per bucket.
    pub(crate) fn partition(&self, batch: &RecordBatch, level: u32) -> Result<Vec<(usize, RecordBatch)>> {
        let buckets = self.bucket_of_rows(batch, level)?;
        let mut indices: Vec<Vec<u32>> = vec![vec![]; self.fan_out()];
        for (row, b) in buckets.into_iter().enumerate() {
            indices[b].push(row as u32);
        }
        indices
            .into_iter()
            .enumerate()
            .filter(|(_, idx)| !idx.is_empty())
            .map(|(b, idx)| {
                let piece = if idx.len() == batch.num_rows() {
                    batch.clone()
                } else {
                    take_record_batch(batch, &UInt32Array::from(idx))?
                };
                Ok((b, piece))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int64Array, RecordBatch};
    use arrow::datatypes::{DataType, Field, Schema};
    use datafusion_physical_expr::expressions::Column;

    use super::*;

    fn batch(keys: Vec<Option<i64>>) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, true)]));
        RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(keys))]).unwrap()
    }

    fn router(bits: u32) -> Router {
        Router { keys: vec![Arc::new(Column::new("k", 0))], bits }
    }

    #[test]
    fn equal_keys_share_a_bucket_at_every_level_and_levels_differ() {
        let r = router(4);
        let keys: Vec<Option<i64>> = (0..2000).map(|i| if i % 10 == 0 { None } else { Some(i % 500) }).collect();
        let b = batch(keys.clone());
        let mut per_level = vec![];
        for level in 0..=r.max_level() {
            let buckets = r.bucket_of_rows(&b, level).unwrap();
            let mut of_key = std::collections::HashMap::new();
            for (k, bucket) in keys.iter().zip(&buckets) {
                assert_eq!(*of_key.entry(*k).or_insert(*bucket), *bucket, "level {level}");
                assert!(*bucket < 16);
            }
            per_level.push(buckets);
        }
        // All 16 buckets used, and a level's bits are not the previous level's.
        assert_eq!(per_level[0].iter().collect::<std::collections::HashSet<_>>().len(), 16);
        assert_ne!(per_level[0], per_level[1]);
    }

    #[test]
    fn partition_keeps_every_row_once_in_order() {
        let r = router(2);
        let b = batch((0..100).map(|i| if i % 7 == 0 { None } else { Some(i) }).collect());
        let pieces = r.partition(&b, 1).unwrap();
        let total: usize = pieces.iter().map(|(_, p)| p.num_rows()).sum();
        assert_eq!(total, 100);
        for (_, p) in &pieces {
            let k = p.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
            let non_null: Vec<i64> = k.iter().flatten().collect();
            assert!(non_null.windows(2).all(|w| w[0] < w[1]), "order kept within a bucket");
        }
    }

    #[test]
    fn cost_covers_batch_copy_and_table() {
        let b = batch((0..1000).map(Some).collect());
        assert!(batch_cost(&b) >= 2 * 8000 + 8 * 1000);
    }
}
