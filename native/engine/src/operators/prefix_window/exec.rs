//! `PrefixWindowExec`: the `ExecutionPlan` of Ember's window operator.
use std::fmt;
use std::sync::Arc;

use arrow::datatypes::{Schema, SchemaRef};
use datafusion_common::tree_node::TreeNodeRecursion;
use datafusion_common::{internal_err, Result};
use datafusion_execution::memory_pool::MemoryConsumer;
use datafusion_execution::TaskContext;
use datafusion_physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion_physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion_physical_plan::metrics::{
    BaselineMetrics, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet, SpillMetrics,
};
use datafusion_physical_plan::spill::SpillManager;
use datafusion_physical_plan::ExecutionPlanProperties;
use datafusion_physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, SendableRecordBatchStream,
};

use super::metric_names;
use super::spec::{FrameCounters, WindowConfig, WindowSpec};
use super::stream::WindowStream;

/// Spark's `WindowExec` over input sorted by (partition keys, order keys): the input columns followed by one
/// column per window expression.
#[derive(Debug)]
pub struct PrefixWindowExec {
    input: Arc<dyn ExecutionPlan>,
    spec: Arc<WindowSpec>,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl PrefixWindowExec {
    /// The operator over `input`; a plan error for anything not evaluated exactly as Spark does.
    pub fn try_new(config: WindowConfig, input: Arc<dyn ExecutionPlan>) -> Result<Self> {
        let spec = WindowSpec::try_new(config, &input.schema())?;
        Ok(Self::new(Arc::new(spec), input))
    }

    fn new(spec: Arc<WindowSpec>, input: Arc<dyn ExecutionPlan>) -> Self {
        let in_schema = input.schema();
        let mut fields: Vec<_> = in_schema.fields().iter().map(|f| f.as_ref().clone()).collect();
        fields.extend(spec.output_fields());
        let schema = Arc::new(Schema::new(fields));
        let properties = Arc::new(PlanProperties::new(
            // Input columns come first, unchanged and in the same order: the input's ordering still holds.
            EquivalenceProperties::new_with_orderings(schema.clone(), input.output_ordering().cloned()),
            input.properties().output_partitioning().clone(),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        Self { input, spec, schema, properties, metrics: ExecutionPlanMetricsSet::new() }
    }

    pub fn spec(&self) -> &WindowSpec {
        &self.spec
    }
}

impl DisplayAs for PrefixWindowExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let names: Vec<String> =
            self.spec.exprs.iter().map(|x| format!("{}: {:?} {:?}", x.name, x.function, x.frame)).collect();
        write!(f, "PrefixWindowExec: prefix={} [{}]", self.spec.prefix_enabled, names.join(", "))
    }
}

impl ExecutionPlan for PrefixWindowExec {
    fn name(&self) -> &str {
        "PrefixWindowExec"
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
        let all = self
            .spec
            .partition_by
            .iter()
            .chain(&self.spec.order_by)
            .chain(self.spec.exprs.iter().flat_map(|x| x.args.iter().chain(x.default.iter())));
        for e in all {
            if f(e)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true]
    }

    fn with_new_children(self: Arc<Self>, mut children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        if children.len() != 1 {
            return internal_err!("PrefixWindowExec has one child");
        }
        Ok(Arc::new(Self::new(self.spec.clone(), children.remove(0))))
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, context.clone())?;
        // Two reservations, because only one of them can spill: the rows held (the open partition, a chunk being
        // evaluated, a spill file's staging) give memory back by segmenting or spilling, so a refusal of theirs
        // is answered, not fatal; a segment's scratch cannot, and a small one (down to one row) must be able to
        // draw on the pool's headroom (`memory.rs`) even while the rows hold the task's share.
        let reservation = MemoryConsumer::new(format!("PrefixWindowExec[{partition}]"))
            .with_can_spill(true)
            .register(context.memory_pool());
        let scratch =
            MemoryConsumer::new(format!("PrefixWindowExec[{partition}] scratch")).register(context.memory_pool());
        let counters = FrameCounters {
            prefix: MetricBuilder::new(&self.metrics).counter(metric_names::PREFIX_FRAMES, partition),
            refold: MetricBuilder::new(&self.metrics).counter(metric_names::REFOLD_FRAMES, partition),
            segmented_partitions: MetricBuilder::new(&self.metrics)
                .counter(metric_names::SEGMENTED_PARTITIONS, partition),
            segments: MetricBuilder::new(&self.metrics).counter(metric_names::WINDOW_SEGMENTS, partition),
            spilled_partitions: MetricBuilder::new(&self.metrics).counter(metric_names::SPILLED_PARTITIONS, partition),
        };
        // Spill files of partitions too large for memory (metrics `spill_count`, `spilled_bytes`, `spilled_rows`).
        let spill =
            SpillManager::new(context.runtime_env(), SpillMetrics::new(&self.metrics, partition), self.input.schema())
                .with_compression_type(context.session_config().spill_compression());
        Ok(Box::pin(WindowStream::new(
            input,
            self.spec.clone(),
            self.schema.clone(),
            reservation,
            scratch,
            spill,
            BaselineMetrics::new(&self.metrics, partition),
            counters,
            context.session_config().batch_size(),
        )))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}
