//! A one-shot leaf that hands a ready stream to a DataFusion operator run inside one of Ember's (the spilling
//! join's `HashJoinExec`, the radix sort's fallback `SortExec`).
use std::fmt;
use std::sync::{Arc, Mutex};

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use datafusion_common::tree_node::TreeNodeRecursion;
use datafusion_common::{exec_err, Result};
use datafusion_execution::TaskContext;
use datafusion_physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion_physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion_physical_plan::stream::RecordBatchStreamAdapter;
use datafusion_physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties, SendableRecordBatchStream,
};

pub(crate) struct OnceExec {
    stream: Mutex<Option<SendableRecordBatchStream>>,
    properties: Arc<PlanProperties>,
}

impl OnceExec {
    pub(crate) fn new(schema: SchemaRef, stream: SendableRecordBatchStream) -> Self {
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(schema),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        Self { stream: Mutex::new(Some(stream)), properties }
    }

    pub(crate) fn from_batches(schema: SchemaRef, batches: Vec<RecordBatch>) -> Self {
        let stream = batches_stream(schema.clone(), batches);
        Self::new(schema, stream)
    }
}

pub(crate) fn batches_stream(schema: SchemaRef, batches: Vec<RecordBatch>) -> SendableRecordBatchStream {
    Box::pin(RecordBatchStreamAdapter::new(schema, futures::stream::iter(batches.into_iter().map(Ok))))
}

impl fmt::Debug for OnceExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OnceExec")
    }
}

impl DisplayAs for OnceExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "OnceExec")
    }
}

impl ExecutionPlan for OnceExec {
    fn name(&self) -> &str {
        "OnceExec"
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
            exec_err!("OnceExec has no children")
        }
    }

    fn execute(&self, _partition: usize, _context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        match self.stream.lock().unwrap().take() {
            Some(s) => Ok(s),
            None => exec_err!("OnceExec executed twice"),
        }
    }
}
