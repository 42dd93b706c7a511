//! The one home of every default a plan may leave at 0: the engine's constants and its operators' `Default`
//! configs. The JVM reads them (`NativeLib.defaults`, proto `EngineDefaults`) for its configuration keys'
//! defaults, so no number is repeated in Scala or in the proto's comments.
use ember_proto as pb;

use crate::execution::DEFAULT_SORT_SPILL_RESERVATION_BYTES;
use crate::operators::aggregate::adaptive::GateConfig;
use crate::operators::aggregate::radix::RadixConfig;
use crate::operators::prefix_window::segment::DEFAULT_SEGMENT_ROWS;
use crate::operators::spilling_hash_join::SpillingHashJoinConfig;

/// Rows per batch when the plan does not say (`ExecConfig.batch_size` 0).
pub const BATCH_SIZE: usize = 8192;

/// `batch_size` as the plan gives it, or the default for 0.
pub fn batch_size(batch_size: u32) -> usize {
    if batch_size == 0 {
        BATCH_SIZE
    } else {
        batch_size as usize
    }
}

/// Every default, as the JVM reads it.
pub fn engine_defaults() -> pb::EngineDefaults {
    let (gate, radix, join) = (GateConfig::default(), RadixConfig::default(), SpillingHashJoinConfig::default());
    pb::EngineDefaults {
        batch_size: BATCH_SIZE as u32,
        sort_spill_reservation_bytes: DEFAULT_SORT_SPILL_RESERVATION_BYTES as u64,
        spilling_hash_join_bucket_bits: join.bucket_bits,
        prefix_window_segment_rows: DEFAULT_SEGMENT_ROWS as u64,
        adaptive_partial_min_rows: gate.min_rows as u64,
        adaptive_partial_precision: gate.precision as u32,
        adaptive_partial_min_reduction: gate.min_reduction,
        radix_merge_min_groups: radix.min_groups as u64,
        radix_merge_fanout_bits: radix.fanout_bits,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The defaults the JVM reads are the ones the planner applies to a plan that leaves the knobs at 0.
    #[test]
    fn defaults_are_what_the_planner_applies() {
        let d = engine_defaults();
        let radix = crate::planner::aggregate::radix_config(&pb::RadixMerge::default());
        assert_eq!((radix.min_groups as u64, radix.fanout_bits), (d.radix_merge_min_groups, d.radix_merge_fanout_bits));
        let gate = crate::planner::aggregate::gate_config(Some(&pb::AdaptivePartial {
            enabled: true,
            min_reduction: d.adaptive_partial_min_reduction,
            ..Default::default()
        }));
        assert_eq!(
            (gate.min_rows as u64, gate.precision as u32),
            (d.adaptive_partial_min_rows, d.adaptive_partial_precision)
        );
        assert_eq!(batch_size(0), d.batch_size as usize);
    }
}
