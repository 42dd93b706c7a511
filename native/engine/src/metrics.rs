//! Metrics across JNI: a plan's measurements as the proto `PlanMetrics` (baseline values per operator, the
//! operator's own values by name), and every operator-specific name the engine reports, per proto operator
//! kind (`MetricNames`). Each name is declared once, in its operator's `metric_names` module; the JVM declares
//! SQL metrics under the same names and checks them against [`metric_names`].
use ember_proto as pb;

use crate::execution::NativePlan;
use crate::operators::aggregate::{adaptive, radix};
use crate::operators::{prefix_window, shuffle, sort, spilling_hash_join};

/// What `plan` measured so far, and its memory now and at its peak.
pub fn plan_metrics(plan: &NativePlan) -> pb::PlanMetrics {
    let operators = plan
        .metrics()
        .into_iter()
        .map(|m| pb::OperatorMetrics {
            id: m.id,
            output_rows: m.output_rows,
            elapsed_compute_ns: m.elapsed_compute_ns,
            spill_count: m.spill_count,
            spilled_bytes: m.spilled_bytes,
            spilled_rows: m.spilled_rows,
            values: m.named.into_iter().map(|(name, value)| pb::MetricValue { name, value }).collect(),
        })
        .collect();
    let (reserved, peak) = plan.memory();
    pb::PlanMetrics { operators, reserved_bytes: reserved as u64, peak_reserved_bytes: peak as u64 }
}

/// The operator-specific metric names of each proto `Operator` kind (by its field name), as the operators it
/// plans (`planner::create_plan`) declare them. Kinds without names of their own are left out.
pub fn metric_names() -> pb::MetricNames {
    let kinds: [(&str, Vec<&[&str]>); 5] = [
        ("sort", vec![sort::metric_names::ALL]),
        ("spilling_hash_join", vec![spilling_hash_join::metric_names::ALL]),
        ("aggregate", vec![adaptive::metric_names::ALL, radix::metric_names::ALL]),
        ("prefix_window", vec![prefix_window::metric_names::ALL]),
        ("shuffle_writer", vec![shuffle::writer::metric_names::ALL]),
    ];
    let operators = kinds
        .into_iter()
        .map(|(operator, lists)| {
            let mut names: Vec<String> = lists.concat().into_iter().map(String::from).collect();
            names.sort();
            names.dedup();
            pb::OperatorMetricNames { operator: operator.to_string(), names }
        })
        .collect();
    pb::MetricNames { operators }
}
