//! HLL-gated partial aggregation.
//!
//! A partial aggregate exists only to shrink the data before the shuffle. [`AdaptiveAggregateExec`] is a
//! partial grouped aggregate (DataFusion's `GroupValues` hash table and `GroupsAccumulator`s, output identical
//! to `AggregateExec` in `AggregateMode::Partial`) that decides at run time whether combining pays:
//!
//! 1. It aggregates as usual for the first `min_rows` input rows.
//! 2. Every row's grouping key is hashed once for the sketches (one 64-bit hash over all key columns;
//!    DataFusion's `GroupValues` hashes again internally and does not expose its hashes) and the hash is
//!    inserted into HyperLogLog++ sketches ([`sketch`]) whose own hasher is the identity: one sketch of the keys
//!    seen in the current epoch, one of the keys in the current state (fed only when they differ). The
//!    sketch's growth over a window of input rows estimates how many of the window's keys are new, hence the
//!    share of rows that combining removes ([`gate`] explains the rule and the window length).
//! 3. When that share falls below `min_reduction`, it emits the state and passes rows through: each input row
//!    becomes a one-row partial state (`GroupsAccumulator::convert_to_state`), no hash table touched. It keeps
//!    sketching, and goes back to aggregating when keys start repeating again (bursts, cycles).
//!
//! Order: emitted states and passed-through batches leave in input order (a state holds only rows that
//! arrived before the rows passed through after it, and vice versa), so order-sensitive functions
//! (`first`/`last` without ORDER BY) see consecutive runs of rows combine, never rows from far apart out of
//! order; for the other functions order does not matter and nothing is spent on it.
//!
//! Memory: the hash table and accumulators are reserved through the task's memory pool after every batch, the
//! sketches as they grow (12 KiB of registers at precision 14, a 32 KiB cache, and an exact set of the first
//! 8k keys that is dropped past them or when the pool refuses: ~200 KiB each at most). When the pool refuses,
//! the state is emitted early (a partial aggregate may always flush; the final aggregate combines again) and a
//! new epoch starts; the operator never spills and never fails for lack of memory beyond one batch's worth.
//!
//! Metrics: switches to pass-through (and back), the input row of the first switch, rows passed through,
//! estimated vs exact groups of the emitted states, early emits, sketch time vs aggregation time.

/// The partial aggregate's own metrics (`AdaptiveAggregateMetrics`), by the names the JVM's SQL metrics use.
pub mod metric_names {
    metric_names!(
        SWITCHES_TO_PASS_THROUGH = "switches_to_pass_through",
        SWITCHES_TO_AGGREGATE = "switches_to_aggregate",
        PASS_THROUGH_AT_ROW = "pass_through_at_row",
        ROWS_PASSED_THROUGH = "rows_passed_through",
        ESTIMATED_GROUPS = "estimated_groups",
        ACTUAL_GROUPS = "actual_groups",
        MEMORY_EMITS = "memory_emits",
        SKETCH_TIME = "sketch_time",
        AGGREGATE_TIME = "aggregate_time",
    );
}
pub mod exec;
pub mod gate;
pub mod sketch;
mod stream;

pub use exec::{AdaptiveAggregateExec, AdaptiveAggregateMetrics};
pub use gate::{Decision, Gate, GateConfig, Mode};
pub use sketch::KeySketch;
