//! [`SpillingHashJoinExec`]: the `ExecutionPlan` (properties, children, `execute`, metrics).
use std::fmt;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use datafusion_common::tree_node::TreeNodeRecursion;
use datafusion_common::{exec_err, plan_err, JoinType, NullEquality, Result};
use datafusion_execution::memory_pool::MemoryConsumer;
use datafusion_execution::TaskContext;
use datafusion_physical_expr::{EquivalenceProperties, PhysicalExpr, PhysicalExprRef};
use datafusion_physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion_physical_plan::joins::utils::{build_join_schema, JoinFilter};
use datafusion_physical_plan::metrics::{ExecutionPlanMetricsSet, MetricsSet};
use datafusion_physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};

use super::shared_build::{shares_build, SharedBuild};
use super::stream::{JoinContext, JoinMetrics, JoinStream};
use crate::operators::dynamic_filter::DynamicFilterConfig;
use crate::operators::parquet_scan::DynamicScanFilters;

/// Knobs of the spilling join.
#[derive(Debug, Clone, Copy)]
pub struct SpillingHashJoinConfig {
    /// Caps the join's reservation (a test knob that forces spilling); 0 = only the pool limits it.
    pub max_build_buffer_bytes: usize,
    /// Buckets per split: 2^bucket_bits.
    pub bucket_bits: u32,
    /// False: never spill; a refusal fails the join with `ResourcesExhausted`.
    pub spill_enabled: bool,
    /// Some: summarize the build keys in a [`DynamicFilter`] and drop probe rows that cannot match, where valid
    /// (see [`prunes_probe`]).
    pub dynamic_filter: Option<JoinDynamicFilterConfig>,
}

impl Default for SpillingHashJoinConfig {
    fn default() -> Self {
        Self { max_build_buffer_bytes: 0, bucket_bits: 4, spill_enabled: true, dynamic_filter: None }
    }
}

/// The join's dynamic filter: the summary's sizes and the cost gate.
#[derive(Debug, Clone, Copy)]
pub struct JoinDynamicFilterConfig {
    pub filter: DynamicFilterConfig,
    /// Whether probe rows are filtered before the hash probe (else the summary only prunes probe scans).
    pub filter_probe: bool,
    /// Probe rows filtered before the gate decides.
    pub sample_rows: usize,
    /// The filter stays on only if it dropped at least this fraction of the sampled probe rows.
    pub min_pruned_fraction: f64,
}

impl Default for JoinDynamicFilterConfig {
    fn default() -> Self {
        Self {
            filter: DynamicFilterConfig::default(),
            filter_probe: true,
            sample_rows: 65536,
            min_pruned_fraction: 0.1,
        }
    }
}

/// Whether dropping probe rows whose key matches no build key leaves the join's result unchanged: the probe side
/// (right here) is not preserved — inner, left outer, left semi/anti/mark (build rows out, the probe only
/// matched), right semi (matched probe rows out) — and keys are null-rejecting (`=`: a null key matches nothing,
/// so the filter's null rule holds). Never a probe-preserving join (right, full, right anti/mark). A null-aware
/// anti join builds on Spark's right and keeps its streamed side, so it is a right anti join here: never pruned.
pub fn prunes_probe(join_type: JoinType, null_equality: NullEquality) -> bool {
    null_equality == NullEquality::NullEqualsNothing
        && matches!(
            join_type,
            JoinType::Inner
                | JoinType::Left
                | JoinType::LeftSemi
                | JoinType::LeftAnti
                | JoinType::LeftMark
                | JoinType::RightSemi
        )
}

/// Hash join building on its left child, spilling when the pool refuses memory (see the module doc).
pub struct SpillingHashJoinExec {
    left: Arc<dyn ExecutionPlan>,
    right: Arc<dyn ExecutionPlan>,
    on: Vec<(PhysicalExprRef, PhysicalExprRef)>,
    filter: Option<JoinFilter>,
    join_type: JoinType,
    null_equality: NullEquality,
    config: SpillingHashJoinConfig,
    /// The join's own schema: build (left) columns, then probe (right) columns.
    schema: SchemaRef,
    /// When Spark built on its right side (so the children are swapped): the output column order that restores
    /// Spark's left ++ right, and the schema after it.
    reorder: Option<(Vec<usize>, SchemaRef)>,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
    /// The executor's table of the broadcast this join builds on, where it may share one (see
    /// [`with_shared_build`](Self::with_shared_build)).
    shared: Option<SharedBuild>,
    probe_scans: Vec<ProbeScan>,
}

/// A Parquet scan in the join's task whose rows reach the probe side unchanged in the key columns: the build
/// side's summary prunes it (row groups, pages, rows) from its next row group on.
#[derive(Debug, Clone)]
pub struct ProbeScan {
    pub filters: Arc<DynamicScanFilters>,
    /// Per join key (in the operator's key order): the scan column holding it, if any.
    pub columns: Vec<Option<usize>>,
}

impl SpillingHashJoinExec {
    /// A join building on `left`. `filter` refers to left/right columns as DataFusion's `JoinFilter` does.
    pub fn try_new(
        left: Arc<dyn ExecutionPlan>,
        right: Arc<dyn ExecutionPlan>,
        on: Vec<(PhysicalExprRef, PhysicalExprRef)>,
        filter: Option<JoinFilter>,
        join_type: JoinType,
        null_equality: NullEquality,
        config: SpillingHashJoinConfig,
    ) -> Result<Self> {
        if on.is_empty() {
            return plan_err!("spilling hash join needs at least one key");
        }
        if !(1..=16).contains(&config.bucket_bits) {
            return plan_err!("spilling hash join: bucket_bits must be 1..=16, is {}", config.bucket_bits);
        }
        let (schema, _) = build_join_schema(&left.schema(), &right.schema(), &join_type);
        let schema = Arc::new(schema);
        let properties = Self::plan_properties(&schema, &right);
        Ok(Self {
            left,
            right,
            on,
            filter,
            join_type,
            null_equality,
            config,
            schema,
            reorder: None,
            properties,
            metrics: ExecutionPlanMetricsSet::new(),
            shared: None,
            probe_scans: vec![],
        })
    }

    fn plan_properties(schema: &SchemaRef, right: &Arc<dyn ExecutionPlan>) -> Arc<PlanProperties> {
        Arc::new(PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            Partitioning::UnknownPartitioning(right.output_partitioning().partition_count()),
            EmissionType::Both,
            Boundedness::Bounded,
        ))
    }

    /// Outputs Spark's right columns (the probe side here) first, then its left (build) columns.
    fn with_swapped_output(mut self) -> Self {
        let n_build = self.left.schema().fields().len();
        let n_probe = self.right.schema().fields().len();
        let order: Vec<usize> = (n_build..n_build + n_probe).chain(0..n_build).collect();
        let schema = Arc::new(self.schema.project(&order).expect("valid projection"));
        self.properties = Self::plan_properties(&schema, &self.right);
        self.reorder = Some((order, schema));
        self
    }

    /// A join as Spark plans it: `join_type` and `filter` over (left, right) as in Spark; when Spark builds on the
    /// right, the inputs are swapped and, where both sides are output, a projection restores Spark's column order.
    #[allow(clippy::too_many_arguments)]
    pub fn try_new_with_build_side(
        left: Arc<dyn ExecutionPlan>,
        right: Arc<dyn ExecutionPlan>,
        on: Vec<(PhysicalExprRef, PhysicalExprRef)>,
        filter: Option<JoinFilter>,
        join_type: JoinType,
        null_equality: NullEquality,
        build_right: bool,
        config: SpillingHashJoinConfig,
        shared: Option<SharedBuild>,
        probe_scans: Vec<ProbeScan>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if !build_right {
            return Ok(Arc::new(
                Self::try_new(left, right, on, filter, join_type, null_equality, config)?
                    .with_shared_build(shared)
                    .with_probe_scans(probe_scans),
            ));
        }
        let swapped_on = on.into_iter().map(|(l, r)| (r, l)).collect();
        let join = Self::try_new(
            right.clone(),
            left.clone(),
            swapped_on,
            filter.map(|f| f.swap()),
            join_type.swap(),
            null_equality,
            config,
        )?
        .with_shared_build(shared)
        .with_probe_scans(probe_scans);
        if matches!(
            join_type,
            JoinType::LeftSemi
                | JoinType::RightSemi
                | JoinType::LeftAnti
                | JoinType::RightAnti
                | JoinType::LeftMark
                | JoinType::RightMark
        ) {
            Ok(Arc::new(join))
        } else {
            Ok(Arc::new(join.with_swapped_output()))
        }
    }

    pub fn join_type(&self) -> JoinType {
        self.join_type
    }

    /// Probes the executor's table of a broadcast instead of building one per task, where that is exact and
    /// the join is not set to spill or filter its probe side (see [`shares_build`]); otherwise unchanged.
    pub fn with_shared_build(mut self, shared: Option<SharedBuild>) -> Self {
        let eligible = shares_build(self.join_type) && self.config.max_build_buffer_bytes == 0;
        self.shared = shared.filter(|_| eligible);
        self
    }

    /// Prunes `scans` by the build side's summary, where the join summarizes (`config.dynamic_filter`) and
    /// dropping probe rows is exact ([`prunes_probe`]).
    pub fn with_probe_scans(mut self, scans: Vec<ProbeScan>) -> Self {
        if self.config.dynamic_filter.is_some() && prunes_probe(self.join_type, self.null_equality) {
            self.probe_scans = scans;
        }
        self
    }

    pub fn probe_scans(&self) -> &[ProbeScan] {
        &self.probe_scans
    }

    /// Where output column `column` comes from: (0, c) the build child's column c, (1, c) the probe child's — the
    /// value unchanged or, on an outer join's null-extended rows, null; None for a mark column.
    pub fn column_source(&self, column: usize) -> Option<(usize, usize)> {
        let column = match &self.reorder {
            Some((order, _)) => *order.get(column)?,
            None => column,
        };
        let (build, probe) = (self.left.schema().fields().len(), self.right.schema().fields().len());
        match self.join_type {
            JoinType::Inner | JoinType::Left | JoinType::Right | JoinType::Full => {
                if column < build {
                    Some((0, column))
                } else {
                    (column < build + probe).then(|| (1, column - build))
                }
            }
            JoinType::LeftSemi | JoinType::LeftAnti | JoinType::LeftMark => (column < build).then_some((0, column)),
            JoinType::RightSemi | JoinType::RightAnti | JoinType::RightMark => (column < probe).then_some((1, column)),
        }
    }
}

impl fmt::Debug for SpillingHashJoinExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SpillingHashJoinExec({:?})", self.join_type)
    }
}

impl DisplayAs for SpillingHashJoinExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let on = self.on.iter().map(|(l, r)| format!("({l}, {r})")).collect::<Vec<_>>().join(", ");
        write!(f, "SpillingHashJoinExec: join_type={:?}, on=[{on}]", self.join_type)?;
        if let Some(filter) = &self.filter {
            write!(f, ", filter={}", filter.expression())?;
        }
        Ok(())
    }
}

impl ExecutionPlan for SpillingHashJoinExec {
    fn name(&self) -> &str {
        "SpillingHashJoinExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.left, &self.right]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        for (l, r) in &self.on {
            if f(l)? == TreeNodeRecursion::Stop || f(r)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        if let Some(filter) = &self.filter {
            return f(filter.expression());
        }
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(self: Arc<Self>, children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        let [left, right]: [Arc<dyn ExecutionPlan>; 2] = match children.try_into() {
            Ok(c) => c,
            Err(_) => return exec_err!("SpillingHashJoinExec has two children"),
        };
        let join = Self::try_new(
            left,
            right,
            self.on.clone(),
            self.filter.clone(),
            self.join_type,
            self.null_equality,
            self.config,
        )?
        .with_shared_build(self.shared.clone())
        .with_probe_scans(self.probe_scans.clone());
        Ok(Arc::new(if self.reorder.is_some() { join.with_swapped_output() } else { join }))
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let build = self.left.execute(partition, context.clone())?;
        let probe = self.right.execute(partition, context.clone())?;
        let metrics = JoinMetrics::new(&self.metrics, partition);
        let reservation = MemoryConsumer::new(format!("SpillingHashJoinExec[{partition}]"))
            .with_can_spill(true)
            .register(context.memory_pool());
        let mut jc = JoinContext::new(
            &context,
            self.schema.clone(),
            self.left.schema(),
            self.right.schema(),
            self.on.clone(),
            self.filter.clone(),
            self.join_type,
            self.null_equality,
            self.config,
            metrics,
        )?;
        jc.shared = self.shared.clone();
        if jc.dynamic_filter.is_some() {
            jc.probe_scans = self.probe_scans.clone();
        }
        Ok(JoinStream::new(Arc::new(jc), reservation, build, probe).into_stream(self.reorder.clone()))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}
