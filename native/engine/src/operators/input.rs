//! The leaf of every native plan: a Spark child's output, handed over as Arrow batches by an
//! `arrow::record_batch::RecordBatchReader` (over JNI, the Arrow C stream interface). Pulling a batch runs the
//! Spark child on the calling thread; batches are passed on as they come, without copying.
use std::fmt;
use std::sync::{Arc, Mutex};

use arrow::datatypes::SchemaRef;
use arrow::record_batch::{RecordBatch, RecordBatchReader};
use datafusion_common::tree_node::TreeNodeRecursion;
use datafusion_common::{exec_err, DataFusionError, Result};
use datafusion_execution::TaskContext;
use datafusion_physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion_physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion_physical_plan::metrics::{BaselineMetrics, ExecutionPlanMetricsSet, MetricsSet};
use datafusion_physical_plan::stream::RecordBatchStreamAdapter;
use datafusion_physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties, SendableRecordBatchStream,
};

pub type BatchReader = Box<dyn RecordBatchReader + Send>;

/// Batches the JVM exported over the Arrow C stream interface, their strings validated as they arrive
/// ([`crate::unsafe_row::check_strings`]): Spark's strings are bytes, Arrow's must be UTF-8. `schema` is the
/// plan's input schema: a plan carrying strings as bytes takes them as `Binary`, unvalidated.
pub struct CheckedStrings {
    pub reader: BatchReader,
    pub schema: SchemaRef,
}

impl Iterator for CheckedStrings {
    type Item = std::result::Result<RecordBatch, arrow::error::ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        Some(self.reader.next()?.and_then(|b| {
            crate::unsafe_row::conform_strings(b, &self.schema, true)
                .map_err(|e| arrow::error::ArrowError::ExternalError(Box::new(e)))
        }))
    }
}

impl RecordBatchReader for CheckedStrings {
    fn schema(&self) -> SchemaRef {
        self.reader.schema()
    }
}

pub struct InputExec {
    index: usize,
    schema: SchemaRef,
    reader: Mutex<Option<BatchReader>>,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl InputExec {
    pub fn new(index: usize, schema: SchemaRef, reader: BatchReader) -> Self {
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        Self { index, schema, reader: Mutex::new(Some(reader)), properties, metrics: ExecutionPlanMetricsSet::new() }
    }

    /// Which of the plan's inputs it reads.
    pub fn index(&self) -> usize {
        self.index
    }
}

impl fmt::Debug for InputExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "InputExec(#{})", self.index)
    }
}

impl DisplayAs for InputExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "InputExec: input={}", self.index)
    }
}

impl ExecutionPlan for InputExec {
    fn name(&self) -> &str {
        "InputExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(self: Arc<Self>, children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        if children.is_empty() {
            Ok(self)
        } else {
            exec_err!("InputExec has no children")
        }
    }

    fn execute(&self, partition: usize, _context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        if partition != 0 {
            return exec_err!("InputExec has one partition, asked for {partition}");
        }
        let Some(reader) = self.reader.lock().unwrap().take() else {
            return exec_err!("InputExec #{} executed twice", self.index);
        };
        let schema = self.schema.clone();
        let baseline = BaselineMetrics::new(&self.metrics, partition);
        let out_schema = schema.clone();
        let mut reader = reader;
        // Pulling runs the Spark child and the row → Arrow conversion on this thread: that time is this
        // operator's elapsed compute.
        let batches = std::iter::from_fn(move || loop {
            let timer = baseline.elapsed_compute().timer();
            let next = reader.next();
            timer.done();
            return match next? {
                Ok(b) if b.num_rows() == 0 => continue,
                // Re-label with the plan's schema (names, nullability, strings as text or bytes): a type
                // mismatch is an error here rather than a wrong answer later.
                Ok(b) => {
                    baseline.record_output(b.num_rows());
                    Some(crate::unsafe_row::conform_strings(b, &out_schema, false))
                }
                Err(e) => Some(Err(DataFusionError::ArrowError(Box::new(e), None))),
            };
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, futures::stream::iter(batches))))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}
