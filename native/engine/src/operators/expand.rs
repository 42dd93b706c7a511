//! Spark's `ExpandExec` (grouping sets, `ROLLUP`, `CUBE`, several `DISTINCT` aggregates): every input row once
//! per projection. Streaming: each input batch is evaluated by one projection at a time and passed on, so
//! nothing is held beyond the current input batch (no reservation, as DataFusion's `ProjectionExec`).
//!
//! Order: Spark emits row 1 under every projection, then row 2, …; this operator emits the whole batch under
//! projection 1, then under projection 2, …. The rows of one projection keep their input order either way, and
//! a grouping-set or distinct-aggregate plan groups by the projection's id column, so every group sees its
//! rows in Spark's order; only an order-sensitive consumer over rows of several projections (a `LIMIT` without
//! `ORDER BY`) can see the difference.
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use arrow::datatypes::{Field, Schema, SchemaRef};
use arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion_common::tree_node::TreeNodeRecursion;
use datafusion_common::{internal_err, Result};
use datafusion_execution::TaskContext;
use datafusion_physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion_physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion_physical_plan::metrics::{BaselineMetrics, ExecutionPlanMetricsSet, MetricsSet};
use datafusion_physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, Partitioning, PlanProperties,
    RecordBatchStream, SendableRecordBatchStream,
};
use futures::{Stream, StreamExt};

pub struct ExpandExec {
    projections: Vec<Vec<Arc<dyn PhysicalExpr>>>,
    input: Arc<dyn ExecutionPlan>,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl ExpandExec {
    /// `projections`: at least one, each with one expression per name, the same types in every projection;
    /// a column is nullable when any projection's expression is.
    pub fn try_new(
        projections: Vec<Vec<Arc<dyn PhysicalExpr>>>,
        names: Vec<String>,
        input: Arc<dyn ExecutionPlan>,
    ) -> Result<Self> {
        let input_schema = input.schema();
        let Some(first) = projections.first() else { return internal_err!("Expand needs at least one projection") };
        if let Some(p) = projections.iter().find(|p| p.len() != names.len()) {
            return internal_err!("Expand projection with {} expressions for {} columns", p.len(), names.len());
        }
        let mut fields = Vec::with_capacity(names.len());
        for (i, name) in names.iter().enumerate() {
            let data_type = first[i].data_type(&input_schema)?;
            let mut nullable = false;
            for p in &projections {
                let t = p[i].data_type(&input_schema)?;
                if t != data_type {
                    return internal_err!("Expand column {name} is {data_type} in one projection, {t} in another");
                }
                nullable |= p[i].nullable(&input_schema)?;
            }
            fields.push(Field::new(name, data_type, nullable));
        }
        let schema = Arc::new(Schema::new(fields));
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            Partitioning::UnknownPartitioning(input.output_partitioning().partition_count()),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        Ok(Self { projections, input, schema, properties, metrics: ExecutionPlanMetricsSet::new() })
    }
}

impl fmt::Debug for ExpandExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ExpandExec({} projections)", self.projections.len())
    }
}

impl DisplayAs for ExpandExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "ExpandExec: projections={}", self.projections.len())
    }
}

impl ExecutionPlan for ExpandExec {
    fn name(&self) -> &str {
        "ExpandExec"
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
        for e in self.projections.iter().flatten() {
            if f(e)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(self: Arc<Self>, children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        let [input] = <[_; 1]>::try_from(children).or_else(|_| internal_err!("ExpandExec has one child"))?;
        let names = self.schema.fields().iter().map(|f| f.name().clone()).collect();
        Ok(Arc::new(ExpandExec::try_new(self.projections.clone(), names, input)?))
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, context)?;
        Ok(Box::pin(ExpandStream {
            input,
            projections: self.projections.clone(),
            schema: self.schema.clone(),
            current: None,
            next: 0,
            baseline: BaselineMetrics::new(&self.metrics, partition),
        }))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}

struct ExpandStream {
    input: SendableRecordBatchStream,
    projections: Vec<Vec<Arc<dyn PhysicalExpr>>>,
    schema: SchemaRef,
    /// The input batch being expanded, and the projection to apply to it next.
    current: Option<RecordBatch>,
    next: usize,
    baseline: BaselineMetrics,
}

impl ExpandStream {
    fn project(&self, batch: &RecordBatch, projection: &[Arc<dyn PhysicalExpr>]) -> Result<RecordBatch> {
        let _timer = self.baseline.elapsed_compute().timer();
        let columns =
            projection.iter().map(|e| e.evaluate(batch)?.into_array(batch.num_rows())).collect::<Result<Vec<_>>>()?;
        let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
        Ok(RecordBatch::try_new_with_options(self.schema.clone(), columns, &options)?)
    }
}

impl Stream for ExpandStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if let Some(batch) = self.current.clone() {
                let i = self.next;
                if i < self.projections.len() {
                    self.next += 1;
                    let out = self.project(&batch, &self.projections[i]);
                    if let Ok(b) = &out {
                        self.baseline.record_output(b.num_rows());
                    }
                    return Poll::Ready(Some(out));
                }
                self.current = None;
            }
            match self.input.poll_next_unpin(cx) {
                Poll::Ready(Some(Ok(batch))) if batch.num_rows() == 0 => continue,
                Poll::Ready(Some(Ok(batch))) => {
                    self.current = Some(batch);
                    self.next = 0;
                }
                other => return other,
            }
        }
    }
}

impl RecordBatchStream for ExpandStream {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}
