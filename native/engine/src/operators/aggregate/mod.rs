//! The aggregate (proto `Aggregate`, planned by `planner/aggregate.rs`): Ember's two strategies beside
//! DataFusion's `AggregateExec`, which runs every other mode.
//! - [`adaptive`]: the partial aggregate gated by HyperLogLog++ estimates (PARTIAL with grouping keys).
//! - [`radix`]: the radix-partitioned merging aggregate that spills (FINAL and PARTIAL_MERGE with keys).
pub mod adaptive;
pub mod radix;

pub use adaptive::AdaptiveAggregateExec;
pub use radix::RadixAggregateExec;
