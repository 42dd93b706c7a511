//! [`AdaptiveAggregateExec`]: the `ExecutionPlan` of the HLL-gated partial aggregate.
use std::fmt;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use datafusion_common::tree_node::TreeNodeRecursion;
use datafusion_common::{internal_err, plan_err, Result};
use datafusion_execution::TaskContext;
use datafusion_physical_expr::aggregate::AggregateFunctionExpr;
use datafusion_physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion_physical_plan::aggregates::{AggregateExec, AggregateMode, PhysicalGroupBy};
use datafusion_physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion_physical_plan::metrics::{
    BaselineMetrics, Count, ExecutionPlanMetricsSet, Gauge, MetricBuilder, MetricsSet, Time,
};
use datafusion_physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};

use super::gate::GateConfig;
use super::metric_names;
use super::stream::{group_schema, AdaptiveAggregateStream};

/// A partial (`AggregateMode::Partial`) grouped aggregate whose output — group keys, then each aggregate's
/// intermediate state — is exactly that of DataFusion's `AggregateExec` in partial mode, so any final
/// aggregate that takes DataFusion's partial states can consume it. See the module doc for the gate.
#[derive(Debug)]
pub struct AdaptiveAggregateExec {
    input: Arc<dyn ExecutionPlan>,
    group_by: Vec<(Arc<dyn PhysicalExpr>, String)>,
    aggr_expr: Vec<Arc<AggregateFunctionExpr>>,
    /// Per aggregate, Spark's `FILTER (WHERE …)`: only rows where it is true reach the aggregate.
    filters: Vec<Option<Arc<dyn PhysicalExpr>>>,
    config: GateConfig,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

/// The gate's metrics, besides the baseline (output rows, elapsed compute).
#[derive(Debug, Clone)]
pub struct AdaptiveAggregateMetrics {
    /// Times the operator emitted its state and started passing rows through.
    pub switches_to_pass_through: Count,
    /// Times it went back to aggregating (keys started repeating again).
    pub switches_to_aggregate: Count,
    /// Input rows seen before the first switch to pass-through (0 when forced; unset when never).
    pub pass_through_at_row: Gauge,
    pub rows_passed_through: Count,
    /// Sum over emitted states of the sketch's estimate of their group count, and of the exact count.
    pub estimated_groups: Count,
    pub actual_groups: Count,
    /// States emitted early because the memory pool refused more.
    pub memory_emits: Count,
    /// Hashing keys and updating / counting sketches.
    pub sketch_time: Time,
    /// Hash table and accumulators (or the conversion of rows to states when passing through).
    pub aggregate_time: Time,
}

impl AdaptiveAggregateMetrics {
    fn new(set: &ExecutionPlanMetricsSet, partition: usize) -> Self {
        let b = || MetricBuilder::new(set);
        Self {
            switches_to_pass_through: b().counter(metric_names::SWITCHES_TO_PASS_THROUGH, partition),
            switches_to_aggregate: b().counter(metric_names::SWITCHES_TO_AGGREGATE, partition),
            pass_through_at_row: b().gauge(metric_names::PASS_THROUGH_AT_ROW, partition),
            rows_passed_through: b().counter(metric_names::ROWS_PASSED_THROUGH, partition),
            estimated_groups: b().counter(metric_names::ESTIMATED_GROUPS, partition),
            actual_groups: b().counter(metric_names::ACTUAL_GROUPS, partition),
            memory_emits: b().counter(metric_names::MEMORY_EMITS, partition),
            sketch_time: b().subset_time(metric_names::SKETCH_TIME, partition),
            aggregate_time: b().subset_time(metric_names::AGGREGATE_TIME, partition),
        }
    }
}

impl AdaptiveAggregateExec {
    /// `group_by`: at least one grouping expression with its output name (a global aggregate has nothing to
    /// gate: plan DataFusion's `AggregateExec` for it). `aggr_expr` built against `input`'s schema.
    pub fn try_new(
        input: Arc<dyn ExecutionPlan>,
        group_by: Vec<(Arc<dyn PhysicalExpr>, String)>,
        aggr_expr: Vec<Arc<AggregateFunctionExpr>>,
        config: GateConfig,
    ) -> Result<Self> {
        config.validate()?;
        if group_by.is_empty() {
            return plan_err!("AdaptiveAggregateExec needs grouping keys");
        }
        if aggr_expr.iter().any(|a| a.is_distinct() || !a.order_bys().is_empty()) {
            return plan_err!("AdaptiveAggregateExec: DISTINCT and ORDER BY inside aggregates are not supported");
        }
        // The output schema is DataFusion's partial schema, by construction.
        let reference = AggregateExec::try_new(
            AggregateMode::Partial,
            PhysicalGroupBy::new_single(group_by.clone()),
            aggr_expr.clone(),
            vec![None; aggr_expr.len()],
            Arc::clone(&input),
            input.schema(),
        )?;
        let schema = reference.schema();
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            Partitioning::UnknownPartitioning(input.output_partitioning().partition_count()),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        let filters = vec![None; aggr_expr.len()];
        Ok(Self {
            input,
            group_by,
            aggr_expr,
            filters,
            config,
            schema,
            properties,
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }

    /// The same aggregate with a filter per aggregate function (`None`: every row), boolean expressions over
    /// the input.
    pub fn with_filters(mut self, filters: Vec<Option<Arc<dyn PhysicalExpr>>>) -> Result<Self> {
        if filters.len() != self.aggr_expr.len() {
            return internal_err!("{} filters for {} aggregates", filters.len(), self.aggr_expr.len());
        }
        self.filters = filters;
        Ok(self)
    }

    pub fn group_by(&self) -> &[(Arc<dyn PhysicalExpr>, String)] {
        &self.group_by
    }

    pub fn aggr_expr(&self) -> &[Arc<AggregateFunctionExpr>] {
        &self.aggr_expr
    }

    pub fn config(&self) -> &GateConfig {
        &self.config
    }
}

impl DisplayAs for AdaptiveAggregateExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let groups: Vec<_> = self.group_by.iter().map(|(e, n)| format!("{e} as {n}")).collect();
        let aggrs: Vec<_> = self.aggr_expr.iter().map(|a| a.name().to_string()).collect();
        write!(
            f,
            "AdaptiveAggregateExec: gby=[{}], aggr=[{}], gate={}",
            groups.join(", "),
            aggrs.join(", "),
            if self.config.force_pass_through {
                "forced pass-through".to_string()
            } else if self.config.enabled {
                format!(
                    "min_rows={} min_reduction={} precision={}",
                    self.config.min_rows, self.config.min_reduction, self.config.precision
                )
            } else {
                "off".to_string()
            }
        )
    }
}

impl ExecutionPlan for AdaptiveAggregateExec {
    fn name(&self) -> &str {
        "AdaptiveAggregateExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        let mut tnr = TreeNodeRecursion::Continue;
        for (e, _) in &self.group_by {
            tnr = tnr.visit_sibling(|| f(e))?;
        }
        for a in &self.aggr_expr {
            for e in a.expressions() {
                tnr = tnr.visit_sibling(|| f(&e))?;
            }
        }
        for e in self.filters.iter().flatten() {
            tnr = tnr.visit_sibling(|| f(e))?;
        }
        Ok(tnr)
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![false]
    }

    fn with_new_children(self: Arc<Self>, mut children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        if children.len() != 1 {
            return internal_err!("AdaptiveAggregateExec has one child");
        }
        Ok(Arc::new(
            Self::try_new(children.remove(0), self.group_by.clone(), self.aggr_expr.clone(), self.config.clone())?
                .with_filters(self.filters.clone())?,
        ))
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, Arc::clone(&context))?;
        let input_schema = self.input.schema();
        let stream = AdaptiveAggregateStream::try_new(
            self.schema.clone(),
            input,
            self.group_by.iter().map(|(e, _)| Arc::clone(e)).collect(),
            group_schema(&self.group_by, &input_schema)?,
            self.aggr_expr.clone(),
            self.filters.clone(),
            self.config.clone(),
            &context,
            partition,
            BaselineMetrics::new(&self.metrics, partition),
            AdaptiveAggregateMetrics::new(&self.metrics, partition),
        )?;
        Ok(Box::pin(stream))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}
