//! The sort (proto `Sort`, planned by `planner/sort.rs`): Ember's radix sort, for keys that pack into one integer per row
//! (other sorts run as DataFusion's `SortExec`).
//!
//! Spark sorts by a radix sort of an 8-byte key prefix; DataFusion sorts each input batch and merges the
//! sorted batches (a k-way merge over row-encoded keys, ~log2(k) comparisons per row). When every sort key is
//! an integer-like or floating-point column (boolean, byte … long, float, double, date, timestamp, decimal up
//! to 18 digits; floats as their IEEE bits in total order after Spark's normalization), this operator does
//! neither: it buffers its whole input under its memory reservation, finds each key's range of values (min …
//! max, plus one code for NULL when there are nulls, placed first or last as asked; descending keys count down
//! from the max), and packs every row's key codes, most significant key first, into one `u128` in as few bits
//! as those ranges need, above the row's (batch, row) position. A least-significant-digit radix sort over the
//! key bits (11 bits per pass, passes where every row has the same digit skipped) then orders the rows;
//! LSD radix is stable, so equal keys keep input order. Rows are gathered into output batches of the session's
//! size with Arrow's `interleave`.
//!
//! Example: the window benchmark's `(seller BIGINT, day INT)` with sellers 0 … 10999 and days 0 … 179 packs
//! into 14 + 8 key bits: two radix passes over 1M rows, against a 200-way merge.
//!
//! What does not fit goes to DataFusion's `SortExec` with everything read so far followed by the rest of the
//! input: a refusal from the memory pool (this operator releases its reservation first; the sort reserves the
//! same batches again and spills), or key ranges that need more than 128 bits with the position. Its metrics
//! (spills) are reported as this operator's. Top-k sorts (`fetch`) and other key types are planned as
//! DataFusion's sort directly.

/// The sort's own metrics, by the names the JVM's SQL metrics use.
pub mod metric_names {
    metric_names!(
        /// Rows sorted by the packed-key radix sort.
        PACKED_SORT_ROWS = "packed_sort_rows",
        /// Sorts handed to DataFusion's merge sort (memory, key width).
        SORT_FALLBACKS = "sort_fallbacks",
    );
}
mod exec;
mod keys;

pub use exec::RadixSortExec;
