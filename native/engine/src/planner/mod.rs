//! Proto plan → DataFusion `ExecutionPlan`. One arm per operator; expressions in [`expr`], types in [`types`].
pub mod aggregate;
pub mod dynamic_filter;
pub mod expr;
pub mod functions;
pub mod parquet_scan;
pub mod prefix_window;
pub mod shuffle;
pub mod sort;
pub mod spilling_hash_join;
pub mod strings;
pub mod take_ordered_and_project;
pub mod types;

use std::collections::HashMap;
use std::sync::Arc;

use datafusion_common::Result;
use datafusion_physical_plan::filter::FilterExec;
use datafusion_physical_plan::limit::GlobalLimitExec;
use datafusion_physical_plan::projection::ProjectionExec;
use datafusion_physical_plan::ExecutionPlan;
use ember_proto as pb;

use crate::error::plan_error;
use crate::expressions::RowPipeline;
use crate::operators::input::BatchReader;
use crate::operators::spilling_hash_join::{SharedBuild, SharedBuilds};
use crate::operators::{ExpandExec, InputExec};

/// The Arrow schema of each of the plan's inputs, by input index (the rows of a Spark child are decoded into it),
/// with strings as `Binary` when `strings_as_bytes` ([`strings::as_bytes`]).
pub fn input_schemas(plan: &pb::Plan, strings_as_bytes: bool) -> Result<Vec<(usize, arrow::datatypes::SchemaRef)>> {
    let context = expr::PlanContext { strings_as_bytes, ..expr::plan_context() };
    expr::with_plan_context(context, || input_schemas_in_context(plan))
}

fn input_schemas_in_context(plan: &pb::Plan) -> Result<Vec<(usize, arrow::datatypes::SchemaRef)>> {
    let mut out = vec![];
    collect_input_schemas(plan.root.as_ref().ok_or_else(|| plan_error("plan without a root operator"))?, &mut out)?;
    Ok(out)
}

/// Whether the engine runs `op` natively over inputs of the schemas its `Input` leaves declare: the planning
/// error, if any, is the reason it does not. Asked by the driver (no data, no memory, nothing executed), so that
/// the engine alone decides what it supports and a disagreement is a fallback there, never a task failure.
///
/// `config` is the session's `ExecConfig` the plan will carry (its `jdk_feature` decides the casts that follow
/// `Double.toString`).
pub fn check_support(op: &pb::Operator, config: &pb::ExecConfig) -> Result<()> {
    let context = expr::PlanContext { jdk_feature: config.jdk_feature, ..Default::default() };
    let text = expr::with_plan_context(context, || dry_run(op).map(|_| ()));
    // What only a plan carrying strings as bytes runs (a literal of Spark's bytes that are not UTF-8,
    // `CAST(binary AS STRING)`).
    let bytes = || expr::with_plan_context(expr::PlanContext { strings_as_bytes: true, ..context }, || dry_run(op));
    match text {
        Err(_) if config.strings_as_bytes.unwrap_or(true) && bytes().is_ok() => Ok(()),
        other => other,
    }
}

/// Plans `op` over empty inputs of the schemas its `Input` leaves declare, in the calling thread's plan context:
/// its output schema, or why the engine does not run it.
fn dry_run(op: &pb::Operator) -> Result<arrow::datatypes::SchemaRef> {
    let mut schemas = vec![];
    collect_input_schemas(op, &mut schemas)?;
    let count = schemas.iter().map(|(i, _)| i + 1).max().unwrap_or(0);
    let mut inputs: Vec<BatchReader> = Vec::with_capacity(count);
    for i in 0..count {
        let schema = schemas.iter().find(|(idx, _)| *idx == i).map(|(_, s)| s.clone());
        let schema = schema.ok_or_else(|| plan_error(format!("no input #{i} in the operator")))?;
        inputs.push(Box::new(arrow::record_batch::RecordBatchIterator::new(std::iter::empty(), schema)));
    }
    Ok(Planner::new(inputs).create_plan(op)?.schema())
}

/// A plan node's address, which names it while the plan is built.
fn node_address(node: &Arc<dyn ExecutionPlan>) -> usize {
    Arc::as_ptr(node) as *const () as usize
}

fn collect_input_schemas(op: &pb::Operator, out: &mut Vec<(usize, arrow::datatypes::SchemaRef)>) -> Result<()> {
    if let Some(pb::operator::Kind::Input(input)) = &op.kind {
        let schema = input.schema.as_ref().ok_or_else(|| plan_error("input without a schema"))?;
        out.push((input.input_index as usize, Arc::new(types::to_arrow_schema(schema)?)));
    }
    op.children.iter().try_for_each(|c| collect_input_schemas(c, out))
}

/// Builds one native plan. Remembers, for every proto operator id, the DataFusion node that implements it,
/// so metrics can be reported per Spark operator.
pub struct Planner {
    inputs: Vec<Option<BatchReader>>,
    nodes: Vec<(u32, Arc<dyn ExecutionPlan>)>,
    /// The executor's shared hash tables of the broadcast inputs, by input index.
    shared: HashMap<usize, Arc<SharedBuilds>>,
    /// The Parquet scan inputs that joins may prune while they run, by input index.
    scans: HashMap<usize, spilling_hash_join::ScanSlot>,
    /// The row pipeline each node's output rows continue (a filter's, a projection's), by the node's address:
    /// the operator above adds its stage to it (see `expressions::first_error`).
    pipelines: HashMap<usize, Arc<RowPipeline>>,
}

impl Planner {
    pub fn new(inputs: Vec<BatchReader>) -> Self {
        Self {
            inputs: inputs.into_iter().map(Some).collect(),
            nodes: vec![],
            shared: HashMap::new(),
            scans: HashMap::new(),
            pipelines: HashMap::new(),
        }
    }

    /// The row pipeline `child`'s output continues, or a new one (Spark's row order starts again above an
    /// operator that is not row-at-a-time).
    fn pipeline(&self, child: &Arc<dyn ExecutionPlan>) -> Arc<RowPipeline> {
        self.pipelines.get(&node_address(child)).cloned().unwrap_or_else(RowPipeline::new)
    }

    pub fn with_scan_slots(mut self, scans: HashMap<usize, spilling_hash_join::ScanSlot>) -> Self {
        self.scans = scans;
        self
    }

    pub fn with_shared_builds(mut self, shared: HashMap<usize, Arc<SharedBuilds>>) -> Self {
        self.shared = shared;
        self
    }

    /// The shared tables of the broadcast a join builds on: its build child is the broadcast's Input leaf.
    fn shared_build(
        &self,
        j: &pb::SpillingHashJoin,
        op: &pb::Operator,
        children: &[Arc<dyn ExecutionPlan>],
    ) -> Option<SharedBuild> {
        let build = op.children.get(if j.build_side == pb::BuildSide::Right as i32 { 1 } else { 0 })?;
        let Some(pb::operator::Kind::Input(input)) = &build.kind else { return None };
        let builds = self.shared.get(&(input.input_index as usize))?.clone();
        // The table is this join's: its keys, type and condition, over these two sides' schemas.
        let mut key = prost::Message::encode_to_vec(j);
        for child in children {
            key.extend(format!("{:?}", child.schema()).into_bytes());
        }
        Some(SharedBuild { builds, key })
    }

    /// The DataFusion node of each proto operator, by operator id.
    pub fn into_nodes(self) -> Vec<(u32, Arc<dyn ExecutionPlan>)> {
        self.nodes
    }

    pub fn create_plan(&mut self, op: &pb::Operator) -> Result<Arc<dyn ExecutionPlan>> {
        use pb::operator::Kind;
        let kind = op.kind.as_ref().ok_or_else(|| plan_error("operator kind not set"))?;
        let mut children = op.children.iter().map(|c| self.create_plan(c)).collect::<Result<Vec<_>>>()?;
        let expect_children = |n: usize| -> Result<()> {
            if op.children.len() == n {
                Ok(())
            } else {
                Err(plan_error(format!("operator #{} needs {n} children, has {}", op.id, op.children.len())))
            }
        };
        let plan: Arc<dyn ExecutionPlan> = match kind {
            Kind::Input(input) => {
                expect_children(0)?;
                let idx = input.input_index as usize;
                let reader = self
                    .inputs
                    .get_mut(idx)
                    .and_then(Option::take)
                    .ok_or_else(|| plan_error(format!("input #{idx} missing or used twice")))?;
                let schema =
                    types::to_arrow_schema(input.schema.as_ref().ok_or_else(|| plan_error("input without a schema"))?)?;
                Arc::new(InputExec::new(idx, Arc::new(schema), reader))
            }
            Kind::Projection(p) => {
                expect_children(1)?;
                let input = children.remove(0);
                let schema = input.schema();
                if p.names.len() != p.exprs.len() {
                    return Err(plan_error("projection needs one name per expression"));
                }
                let exprs =
                    p.exprs.iter().map(|e| expr::create_every_row_expr(e, &schema)).collect::<Result<Vec<_>>>()?;
                let pipeline = self.pipeline(&input);
                let exprs = pipeline.project(exprs).into_iter().zip(p.names.iter().cloned());
                let plan: Arc<dyn ExecutionPlan> = Arc::new(ProjectionExec::try_new(exprs, input)?);
                self.pipelines.insert(node_address(&plan), pipeline);
                plan
            }
            Kind::Expand(e) => {
                expect_children(1)?;
                let input = children.remove(0);
                let schema = input.schema();
                // Spark evaluates a row's projections one after the other.
                let pipeline = self.pipeline(&input);
                let stage = pipeline.evaluate_stage();
                let projections = e
                    .projections
                    .iter()
                    .map(|p| {
                        p.exprs
                            .iter()
                            .map(|x| Ok(pipeline.evaluate(stage, expr::create_expr(x, &schema)?)))
                            .collect::<Result<Vec<_>>>()
                    })
                    .collect::<Result<Vec<_>>>()?;
                if projections.is_empty() || projections.iter().any(|p| p.len() != e.names.len()) {
                    return Err(plan_error("expand needs projections with one expression per name"));
                }
                Arc::new(ExpandExec::try_new(projections, e.names.clone(), input)?)
            }
            Kind::Filter(f) => {
                expect_children(1)?;
                let input = children.remove(0);
                let schema = input.schema();
                let predicate = expr::create_expr(
                    f.predicate.as_ref().ok_or_else(|| plan_error("filter without a predicate"))?,
                    &schema,
                )?;
                let pipeline = self.pipeline(&input);
                let plan: Arc<dyn ExecutionPlan> = Arc::new(FilterExec::try_new(pipeline.filter(predicate), input)?);
                self.pipelines.insert(node_address(&plan), pipeline);
                plan
            }
            Kind::Sort(s) => {
                expect_children(1)?;
                sort::create_sort(s, children.remove(0))?
            }
            Kind::Limit(l) => {
                expect_children(1)?;
                let input = children.remove(0);
                let fetch = if l.limit < 0 { None } else { Some(l.limit as usize) };
                Arc::new(GlobalLimitExec::new(input, l.offset as usize, fetch))
            }
            Kind::PrefixWindow(w) => {
                expect_children(1)?;
                prefix_window::create_prefix_window(w, children.remove(0))?
            }
            Kind::SpillingHashJoin(j) => {
                expect_children(2)?;
                // Keyed by both sides: joins over one broadcast may differ in their probe side alone.
                let shared = self.shared_build(j, op, &children);
                let right = children.remove(1);
                let pipelines = [self.pipeline(&children[0]), self.pipeline(&right)];
                spilling_hash_join::create_spilling_hash_join(
                    j,
                    children.remove(0),
                    right,
                    shared,
                    &self.scans,
                    &pipelines,
                )?
            }
            Kind::Aggregate(a) => {
                expect_children(1)?;
                let pipeline = self.pipeline(&children[0]);
                aggregate::create_aggregate(a, children.remove(0), &pipeline)?
            }
            Kind::TakeOrderedAndProject(t) => {
                expect_children(1)?;
                take_ordered_and_project::create_take_ordered_and_project(t, children.remove(0))?
            }
            Kind::ShuffleWriter(w) => {
                expect_children(1)?;
                shuffle::create_shuffle_writer(w, children.remove(0))?
            }
        };
        // Every DataFusion node this operator is made of reports to its Spark node (e.g. a final aggregate's
        // AggregateExec, with its spills, under the ProjectionExec of Spark's result expressions); the top node
        // comes first, and gives the output rows.
        // Its own nodes end where the children's plans (registered before it) begin.
        let registered: std::collections::HashSet<*const ()> =
            self.nodes.iter().map(|(_, n)| Arc::as_ptr(n) as *const ()).collect();
        let mut own = vec![plan.clone()];
        while let Some(node) = own.pop() {
            own.extend(
                node.children().into_iter().filter(|c| !registered.contains(&(Arc::as_ptr(c) as *const ()))).cloned(),
            );
            self.nodes.push((op.id, node));
        }
        Ok(plan)
    }
}
