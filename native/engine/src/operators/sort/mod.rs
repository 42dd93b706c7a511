//! The sort (proto `Sort` without a fetch, planned by `planner/sort.rs`): Ember's external sort, with a radix sort
//! of packed keys where they pack.
//!
//! Spark sorts by a radix sort of an 8-byte key prefix; DataFusion sorts each input batch and merges the
//! sorted batches (a k-way merge over row-encoded keys, ~log2(k) comparisons per row). When every sort key is
//! an integer-like or floating-point column (boolean, byte … long, float, double, date, timestamp, decimal up
//! to 18 digits; floats as their IEEE bits in total order after Spark's normalization), this operator does
//! neither: it buffers its input under its memory reservation, finds each key's range of values (min … max,
//! plus one code for NULL when there are nulls, placed first or last as asked; descending keys count down
//! from the max), and packs every row's key codes, most significant key first, into one `u128` in as few bits
//! as those ranges need, above the row's (batch, row) position. A least-significant-digit radix sort over the
//! key bits (11 bits per pass, passes where every row has the same digit skipped) then orders the rows;
//! LSD radix is stable, so equal keys keep input order. Other keys (strings, wide decimals, …), keys whose
//! ranges need more than 128 bits with the position, and every key when the radix sort is off are compared in
//! arrow's row format (a comparison sort of (batch, row) pairs, equal keys in input order).
//!
//! Example: the window benchmark's `(seller BIGINT, day INT)` with sellers 0 … 10999 and days 0 … 179 packs
//! into 14 + 8 key bits: two radix passes over 1M rows, against a 200-way merge.
//!
//! Memory: each buffered batch is reserved with what sorting it takes (packed values and the radix sort's
//! scratch, 32 bytes a row, or its row-format keys and 12 bytes a row) and, once, the largest batch (the output
//! batch being gathered), so sorting what is buffered never asks for more. When the pool refuses a batch, the
//! buffer is sorted and written as a sorted run (Arrow IPC, batches of at most 2 MiB) and the reservation freed.
//! At the end, an input that never spilled is sorted in memory (gathered a column at a time when the pool grants
//! a second copy, else a batch at a time); runs are merged with a fan-in bounded by what the pool grants
//! (`external.rs`: cascaded passes, each reserving everything it holds up front). Top-k sorts (`fetch`) are
//! DataFusion's `SortExec`.

/// The sort's own metrics, by the names the JVM's SQL metrics use.
pub mod metric_names {
    metric_names!(
        /// Rows sorted by the packed-key radix sort.
        PACKED_SORT_ROWS = "packed_sort_rows",
        /// Sorts not radix sorted in one piece: spilled and merged (memory), or ordered by row-format keys
        /// (keys wider than 128 bits).
        SORT_FALLBACKS = "sort_fallbacks",
        /// Merge passes over spilled runs (the last one is the output; more when the memory bounds the fan-in).
        SORT_MERGE_PASSES = "sort_merge_passes",
    );
}
mod exec;
mod external;
mod keys;

pub use exec::RadixSortExec;
