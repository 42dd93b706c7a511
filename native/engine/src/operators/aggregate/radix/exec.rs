//! [`RadixAggregateExec`]: the `ExecutionPlan` of the radix-partitioned merging aggregate.
use std::fmt;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use datafusion_common::tree_node::TreeNodeRecursion;
use datafusion_common::{internal_err, plan_err, Result};
use datafusion_execution::TaskContext;
use datafusion_physical_expr::aggregate::AggregateFunctionExpr;
use datafusion_physical_expr::expressions::Column;
use datafusion_physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion_physical_plan::aggregates::{AggregateExec, AggregateMode, PhysicalGroupBy};
use datafusion_physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion_physical_plan::metrics::{BaselineMetrics, ExecutionPlanMetricsSet, MetricsSet};
use datafusion_physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};

use super::stream::{RadixAggregateStream, RadixMetrics};

/// When to split and how wide.
#[derive(Debug, Clone, PartialEq)]
pub struct RadixConfig {
    /// Groups the single table may hold before it splits into partitions.
    pub min_groups: usize,
    /// The split makes `2^fanout_bits` partitions.
    pub fanout_bits: u32,
    /// Input rows buffered between two reorder-and-merge passes once split.
    pub flush_rows: usize,
    /// Emit the resident groups in the order they were first met (Spark's and one table's order) rather than
    /// partition by partition: a gather of every output row at the end.
    pub first_seen_order: bool,
}

impl Default for RadixConfig {
    fn default() -> Self {
        // One table up to 128k groups (~8 MB of table and states with a few accumulators: L3-resident); past that
        // 64 partitions, so that 10M groups make sub-tables of ~150k; 8k rows per partition and pass.
        Self { min_groups: 1 << 17, fanout_bits: 6, flush_rows: 1 << 19, first_seen_order: false }
    }
}

/// A merging aggregate (`AggregateMode::Final` or `PartialReduce`) with grouping keys whose input is laid out as
/// `AggregateExec` expects it — the grouping columns first, then every function's state columns — and whose
/// output is exactly `AggregateExec`'s. See the module doc.
#[derive(Debug)]
pub struct RadixAggregateExec {
    input: Arc<dyn ExecutionPlan>,
    mode: AggregateMode,
    group_by: Vec<(Arc<dyn PhysicalExpr>, String)>,
    aggr_expr: Vec<Arc<AggregateFunctionExpr>>,
    raw_schema: SchemaRef,
    config: RadixConfig,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl RadixAggregateExec {
    /// `group_by` must be the input's first columns in order (`Column(i)` for the i-th key) and the input must
    /// hold nothing but them and the functions' states; `raw_schema` is what the functions' arguments refer to.
    pub fn try_new(
        mode: AggregateMode,
        input: Arc<dyn ExecutionPlan>,
        group_by: Vec<(Arc<dyn PhysicalExpr>, String)>,
        aggr_expr: Vec<Arc<AggregateFunctionExpr>>,
        raw_schema: SchemaRef,
        config: RadixConfig,
    ) -> Result<Self> {
        if !matches!(mode, AggregateMode::Final | AggregateMode::PartialReduce) {
            return plan_err!("RadixAggregateExec merges states: FINAL or PARTIAL_MERGE, not {mode:?}");
        }
        if group_by.is_empty() {
            return plan_err!("RadixAggregateExec needs grouping keys");
        }
        if config.fanout_bits == 0 || config.fanout_bits > 12 || config.flush_rows == 0 {
            return plan_err!("RadixAggregateExec: fan-out bits 1..12 and flush rows > 0, got {config:?}");
        }
        for (i, (e, _)) in group_by.iter().enumerate() {
            if e.downcast_ref::<Column>().map(|c| c.index()) != Some(i) {
                return plan_err!("RadixAggregateExec: grouping key {i} is not input column {i}: {e}");
            }
        }
        if aggr_expr.iter().any(|a| a.is_distinct() || !a.order_bys().is_empty()) {
            return plan_err!("RadixAggregateExec: DISTINCT and ORDER BY inside aggregates are not supported");
        }
        let states: usize = aggr_expr.iter().map(|a| a.state_fields().map(|f| f.len())).sum::<Result<usize>>()?;
        let columns = input.schema().fields().len();
        if columns != group_by.len() + states {
            return plan_err!(
                "RadixAggregateExec: input has {columns} columns, not {} keys + {states} states",
                group_by.len()
            );
        }
        // The output schema is DataFusion's, by construction.
        let reference = AggregateExec::try_new(
            mode,
            PhysicalGroupBy::new_single(group_by.clone()),
            aggr_expr.clone(),
            vec![None; aggr_expr.len()],
            Arc::clone(&input),
            Arc::clone(&raw_schema),
        )?;
        let schema = reference.schema();
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            Partitioning::UnknownPartitioning(input.output_partitioning().partition_count()),
            EmissionType::Final,
            Boundedness::Bounded,
        ));
        Ok(Self {
            input,
            mode,
            group_by,
            aggr_expr,
            raw_schema,
            config,
            schema,
            properties,
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }

    pub fn mode(&self) -> &AggregateMode {
        &self.mode
    }

    pub fn config(&self) -> &RadixConfig {
        &self.config
    }
}

impl DisplayAs for RadixAggregateExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let groups: Vec<_> = self.group_by.iter().map(|(e, n)| format!("{e} as {n}")).collect();
        let aggrs: Vec<_> = self.aggr_expr.iter().map(|a| a.name().to_string()).collect();
        write!(
            f,
            "RadixAggregateExec: mode={:?}, gby=[{}], aggr=[{}], min_groups={}, fanout=2^{}",
            self.mode,
            groups.join(", "),
            aggrs.join(", "),
            self.config.min_groups,
            self.config.fanout_bits
        )
    }
}

impl ExecutionPlan for RadixAggregateExec {
    fn name(&self) -> &str {
        "RadixAggregateExec"
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
        Ok(tnr)
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![false]
    }

    fn with_new_children(self: Arc<Self>, mut children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        if children.len() != 1 {
            return internal_err!("RadixAggregateExec has one child");
        }
        Ok(Arc::new(Self::try_new(
            self.mode,
            children.remove(0),
            self.group_by.clone(),
            self.aggr_expr.clone(),
            Arc::clone(&self.raw_schema),
            self.config.clone(),
        )?))
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, Arc::clone(&context))?;
        Ok(Box::pin(RadixAggregateStream::try_new(
            self.schema.clone(),
            input,
            self.mode,
            self.group_by.clone(),
            self.aggr_expr.clone(),
            Arc::clone(&self.raw_schema),
            self.config.clone(),
            context,
            partition,
            0,
            BaselineMetrics::new(&self.metrics, partition),
            RadixMetrics::new(&self.metrics, partition),
        )?))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}
