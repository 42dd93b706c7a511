//! A shuffled hash join whose build side may spill.
//!
//! **Algorithm.** The operator's left child is the build side, its right child the probe side (a Spark plan that
//! builds on the right is swapped by [`SpillingHashJoinExec::try_new_with_build_side`], as DataFusion's own
//! `swap_inputs` does, and the operator puts the output columns back in Spark's order). It buffers the build side, reserving for every batch what DataFusion's `HashJoinExec`
//! will hold for it: the batch, its concatenated copy and the hash table with its chain (see [`batch_cost`]).
//! - If the whole build side fits, the join *is* DataFusion's `HashJoinExec` (`PartitionMode::CollectLeft`),
//!   fed the buffered batches and the probe stream, unchanged.
//! - On the first refusal of the pool (or of the `max_build_buffer_bytes` cap) both sides are routed to 2^k
//!   buckets by a seeded foldhash of the join keys (bits `k*level..k*(level+1)` of it — unrelated to Spark's
//!   murmur3 shuffle hash). The largest buckets spill as Arrow IPC files through DataFusion's `SpillManager`
//!   (compression from the session: none or lz4), coalesced into batches of `batch_size` rows. Resident buckets
//!   join (one `HashJoinExec` over all of them) while the probe side streams; probe rows of spilled buckets are
//!   spilled beside them. Then each spilled bucket is joined from disk.
//! - A spilled bucket whose build side still does not fit is split again on the next k hash bits. One that
//!   cannot shrink (one hot key, or the null keys, which all hash alike) is joined in chunks of its build rows,
//!   its probe rows replayed from disk per chunk. Build-preserving joins (inner, left, left semi/anti/mark) are
//!   exact per chunk because every build row meets every probe row in its chunk; probe-preserving joins (right,
//!   full, right semi/anti/mark) tag probe rows with their position, record across chunks which probe rows
//!   matched, and emit the unmatched / matched probe rows in a last replay.
//!
//! **Dynamic filter** (`SpillingHashJoinConfig::dynamic_filter`, off by default). While the build side is read
//! (in memory or into buckets) its keys are summarized in a [`DynamicFilter`](crate::operators::DynamicFilter);
//! once it is read, probe batches are filtered by it before they reach the hash probe or the bucket router, where
//! [`prunes_probe`] says dropping probe rows without a matching key is exact. A cost gate measures the fraction
//! dropped over the first `sample_rows` probe rows and switches the filter off when it is below
//! `min_pruned_fraction`; metrics `dynamic_filter_*` show the decisions, rows checked and dropped, the summary's
//! size and the time spent.
//!
//! **Shared build** ([`SharedBuild`], broadcast joins). A join whose build side is a broadcast probes one table
//! per executor, built by the first task and reserved once in Spark's storage memory (see `shared_build.rs`);
//! when that memory is refused the join runs as above in every task.
//!
//! **Memory.** Everything held is reserved through one `MemoryReservation` of the plan's pool: buffered and
//! resident build batches at [`batch_cost`], staging buffers of spill files, the matched-row bitmap. The batch in
//! hand and `HashJoinExec`'s output batches are not. `HashJoinExec` itself runs under an unbounded private pool,
//! because its memory is already reserved here. When nothing is left to spill and a chunk of a single batch cannot
//! be reserved, the join fails with `ResourcesExhausted`; with spilling disabled
//! (`SpillingHashJoinConfig::spill_enabled`, proto `spill_disabled`) so does the first refusal. Spill files are
//! reference-counted temp files: they are deleted when the stream finishes, fails or is dropped.

/// The join's own metrics (`JoinMetrics`), by the names the JVM's SQL metrics use.
pub mod metric_names {
    metric_names!(
        BUILD_ROWS = "build_rows",
        PROBE_ROWS = "probe_rows",
        SPILLED_BUCKETS = "spilled_buckets",
        SPLIT_BUCKETS = "split_buckets",
        CHUNKED_BUCKETS = "chunked_buckets",
        PEAK_RESERVED_BYTES = "peak_reserved_bytes",
        DYNAMIC_FILTER_ROWS_CHECKED = "dynamic_filter_rows_checked",
        DYNAMIC_FILTER_ROWS_PRUNED = "dynamic_filter_rows_pruned",
        DYNAMIC_FILTER_KEPT = "dynamic_filter_kept",
        DYNAMIC_FILTER_GATED_OFF = "dynamic_filter_gated_off",
        DYNAMIC_FILTER_BYTES = "dynamic_filter_bytes",
        DYNAMIC_FILTER_TIME = "dynamic_filter_time",
    );
}
mod buckets;
mod chunks;
mod exec;
mod shared_build;
mod stream;

pub use buckets::batch_cost;
pub use exec::{prunes_probe, JoinDynamicFilterConfig, ProbeScan, SpillingHashJoinConfig, SpillingHashJoinExec};
pub use shared_build::{shares_build, BroadcastMemory, SharedBuild, SharedBuilds};
