//! Ember's own execution operators (DataFusion `ExecutionPlan`s). Each operator is a module; larger ones are
//! folders in DataFusion's manner (`mod.rs` explains the algorithm, `exec.rs`, `stream.rs`, ...).
/// Declares an operator's own metric names once: a `const` per name, used where the operator registers the
/// metric (`MetricBuilder`), and `ALL`, the list the engine reports to the JVM (`metrics::metric_names`), whose
/// SQL metrics are checked against it.
macro_rules! metric_names {
    ($($(#[$doc:meta])* $name:ident = $value:literal),* $(,)?) => {
        $($(#[$doc])* pub const $name: &str = $value;)*
        /// Every metric name above.
        pub const ALL: &[&str] = &[$($name),*];
    };
}

pub mod aggregate;
pub mod cached_batch;
pub mod dynamic_filter;
pub mod expand;
pub mod input;
pub(crate) mod once;
pub mod parquet_scan;
pub mod prefix_window;
pub mod range_source;
pub(crate) mod shared;
pub mod shuffle;
pub mod sort;
pub mod spill;
pub mod spilling_hash_join;

pub use aggregate::{AdaptiveAggregateExec, RadixAggregateExec};
pub use cached_batch::CachedBatchReader;
pub use dynamic_filter::{DynamicFilter, DynamicFilterConfig};
pub use expand::ExpandExec;
pub use input::InputExec;
pub use prefix_window::PrefixWindowExec;
pub use shuffle::{DropFilterSpec, KeySummarySpec, RangePartitioner, ShuffleBlockReader, ShuffleWriterExec};
pub use sort::RadixSortExec;
pub use spilling_hash_join::SpillingHashJoinExec;
