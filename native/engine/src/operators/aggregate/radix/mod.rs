//! Radix-partitioned merging aggregate (FINAL and PARTIAL_MERGE with grouping keys).
//!
//! A merging aggregate with millions of groups per task is bound by memory latency, not by arithmetic: every
//! input row probes one hash table and updates one slot per accumulator state, each a likely cache and TLB miss
//! once the table outgrows the CPU caches (10M groups: ~1 GB of table and states, ~200 ns a row). ClickHouse
//! ("two-level aggregation") and DuckDB (radix-partitioned hash tables) answer this the same way, and so does
//! [`RadixAggregateExec`]:
//!
//! 1. It merges into one table (DataFusion's `GroupValues` and `GroupsAccumulator`s, as `AggregateExec` does)
//!    while that table has at most `min_groups` groups: small aggregates pay nothing.
//! 2. Past that it splits: the table's groups are emitted as states and re-merged into `2^fanout_bits`
//!    sub-tables chosen by the top bits of a seeded hash of the keys (seeded unlike the tables' own hash,
//!    whose top bits hashbrown uses as its tag). Input rows are buffered until `flush_rows` of them are
//!    held, then reordered by partition in one pass (a counting sort of row positions, one gather) and
//!    merged a partition at a time: each merge touches one cache-sized sub-table.
//! 3. Memory: the tables and the buffer are reserved from the task's pool. When the pool refuses, the largest
//!    sub-table is spilled (its groups as states, Arrow IPC with the session's compression) and the rest of its
//!    partition's rows go straight to its file. At the end, resident sub-tables emit their groups one after
//!    another, then each spilled partition — a `2^-fanout_bits` share of the groups — is merged again from its
//!    file by the same operator one level deeper (a fresh hash seed: if it still does not fit, it splits and
//!    spills on other bits; past 6 levels a partition that cannot fit is an error). Files are deleted once
//!    read, and on error or drop.
//!
//! Order: each partition merges its rows in arrival order (buffered rows keep their order within a partition,
//! a spilled table's states precede the rows appended after them), so `first`/`last` see, per group, what a
//! single table would have seen. The groups leave partition by partition; with `first_seen_order` the resident
//! ones leave in the order they were first met instead (Spark's hash aggregate's order, and one table's), at
//! the cost of recording each group's partition at creation and one gather of the output (~20% of the merge
//! when every input row is a new group). Groups of spilled partitions follow, in any case, after them.
//!
//! Metrics: `radix_partitions` (0 while one table sufficed), `spilled_partitions`, DataFusion's spill metrics.

/// The merging aggregate's own metrics, by the names the JVM's SQL metrics use.
pub mod metric_names {
    metric_names!(RADIX_PARTITIONS = "radix_partitions", SPILLED_PARTITIONS = "spilled_partitions",);
}
pub mod exec;
mod stream;

pub use exec::{RadixAggregateExec, RadixConfig};
