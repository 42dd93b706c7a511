//! Builders for proto plans and in-memory inputs, shared by the engine's integration tests.
use std::path::Path;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::{DataType, SchemaRef, TimeUnit};
use arrow::record_batch::RecordBatchIterator;
use datafusion_common::{DataFusionError, Result, ScalarValue};
use datafusion_execution::config::SessionConfig;
use datafusion_execution::disk_manager::{DiskManagerBuilder, DiskManagerMode};
use datafusion_execution::memory_pool::{GreedyMemoryPool, TrackConsumersPool};
use datafusion_execution::runtime_env::RuntimeEnvBuilder;
use datafusion_execution::TaskContext;
use datafusion_physical_expr::aggregate::{AggregateExprBuilder, AggregateFunctionExpr};
use datafusion_physical_expr::PhysicalExpr;
use datafusion_physical_plan::{collect, ExecutionPlan};
use ember_engine::execution::NativePlan;
use ember_engine::operators::input::BatchReader;
use ember_engine::operators::InputExec;
use ember_engine::proto as pb;

pub fn pb_type(dt: &DataType) -> pb::DataType {
    use pb::TypeId;
    let (id, precision, scale, timezone) = match dt {
        DataType::Null => (TypeId::Null, 0, 0, String::new()),
        DataType::Boolean => (TypeId::Boolean, 0, 0, String::new()),
        DataType::Int8 => (TypeId::Int8, 0, 0, String::new()),
        DataType::Int16 => (TypeId::Int16, 0, 0, String::new()),
        DataType::Int32 => (TypeId::Int32, 0, 0, String::new()),
        DataType::Int64 => (TypeId::Int64, 0, 0, String::new()),
        DataType::Float32 => (TypeId::Float32, 0, 0, String::new()),
        DataType::Float64 => (TypeId::Float64, 0, 0, String::new()),
        DataType::Decimal128(p, s) => (TypeId::Decimal, *p as i32, *s as i32, String::new()),
        DataType::Utf8 => (TypeId::Utf8, 0, 0, String::new()),
        DataType::Binary => (TypeId::Binary, 0, 0, String::new()),
        DataType::Date32 => (TypeId::Date, 0, 0, String::new()),
        DataType::Timestamp(TimeUnit::Microsecond, Some(tz)) => (TypeId::Timestamp, 0, 0, tz.to_string()),
        DataType::Timestamp(TimeUnit::Microsecond, None) => (TypeId::TimestampNtz, 0, 0, String::new()),
        other => panic!("no proto type for {other}"),
    };
    pb::DataType { id: id as i32, precision, scale, timezone, ..Default::default() }
}

pub fn pb_schema(schema: &SchemaRef) -> pb::Schema {
    pb::Schema {
        fields: schema
            .fields()
            .iter()
            .map(|f| pb::Field {
                name: f.name().clone(),
                r#type: Some(pb_type(f.data_type())),
                nullable: f.is_nullable(),
            })
            .collect(),
    }
}

pub fn col(index: u32, dt: &DataType) -> pb::Expr {
    pb::Expr { kind: Some(pb::expr::Kind::Column(pb::ColumnRef { index, r#type: Some(pb_type(dt)), nullable: true })) }
}

pub fn lit_long(v: i64) -> pb::Expr {
    pb::Expr {
        kind: Some(pb::expr::Kind::Literal(pb::Literal {
            r#type: Some(pb_type(&DataType::Int64)),
            is_null: false,
            value: Some(pb::literal::Value::LongValue(v)),
        })),
    }
}

pub fn cmp(op: pb::CmpOp, l: pb::Expr, r: pb::Expr) -> pb::Expr {
    pb::Expr {
        kind: Some(pb::expr::Kind::Comparison(Box::new(pb::Comparison {
            op: op as i32,
            left: Some(Box::new(l)),
            right: Some(Box::new(r)),
        }))),
    }
}

pub fn op(id: u32, kind: pb::operator::Kind, children: Vec<pb::Operator>) -> pb::Operator {
    pb::Operator { id, children, kind: Some(kind) }
}

pub fn input(index: u32, schema: &SchemaRef) -> pb::Operator {
    op(
        100 + index,
        pb::operator::Kind::Input(pb::Input {
            input_index: index,
            schema: Some(pb_schema(schema)),
            kind: pb::InputKind::ArrowStream as i32,
        }),
        vec![],
    )
}

pub fn plan(root: pb::Operator, output: &SchemaRef) -> pb::Plan {
    pb::Plan {
        root: Some(root),
        config: Some(pb::ExecConfig { batch_size: 1024, sort_spill_reservation_bytes: 1 << 20, ..Default::default() }),
        output_schema: Some(pb_schema(output)),
    }
}

pub fn reader(batches: Vec<RecordBatch>, schema: SchemaRef) -> BatchReader {
    Box::new(RecordBatchIterator::new(batches.into_iter().map(Ok), schema))
}

/// A leaf plan over in-memory batches.
pub fn source(batches: &[RecordBatch], schema: &SchemaRef) -> Arc<dyn ExecutionPlan> {
    Arc::new(InputExec::new(0, schema.clone(), reader(batches.to_vec(), schema.clone())))
}

/// A task context: `batch_size`, optionally a greedy pool of `pool_bytes` (tracking its top consumers, for
/// readable refusals) and spill files under `spill_dir`.
pub fn task_ctx(batch_size: usize, pool_bytes: Option<usize>, spill_dir: Option<&Path>) -> Arc<TaskContext> {
    let mut rt = RuntimeEnvBuilder::new();
    if let Some(b) = pool_bytes {
        rt = rt.with_memory_pool(Arc::new(TrackConsumersPool::new(
            GreedyMemoryPool::new(b),
            std::num::NonZeroUsize::new(5).unwrap(),
        )));
    }
    if let Some(d) = spill_dir {
        rt = rt.with_disk_manager_builder(
            DiskManagerBuilder::default().with_mode(DiskManagerMode::Directories(vec![d.into()])),
        );
    }
    Arc::new(
        TaskContext::default()
            .with_session_config(SessionConfig::new().with_batch_size(batch_size))
            .with_runtime(rt.build_arc().unwrap()),
    )
}

/// An aggregate function over `schema`, named `name`.
pub fn agg(
    f: Arc<datafusion_expr::AggregateUDF>,
    args: Vec<Arc<dyn PhysicalExpr>>,
    schema: &SchemaRef,
    name: &str,
    ignore_nulls: bool,
) -> Arc<AggregateFunctionExpr> {
    Arc::new(
        AggregateExprBuilder::new(f, args)
            .schema(schema.clone())
            .alias(name)
            .with_ignore_nulls(ignore_nulls)
            .build()
            .unwrap(),
    )
}

/// Every row as one string of its cells' `ScalarValue`s, in output order.
pub fn rows_in_order(batches: &[RecordBatch]) -> Vec<String> {
    let mut out = vec![];
    for b in batches {
        for r in 0..b.num_rows() {
            let cells: Vec<String> =
                b.columns().iter().map(|c| format!("{:?}", ScalarValue::try_from_array(c, r).unwrap())).collect();
            out.push(cells.join("|"));
        }
    }
    out
}

/// The same, sorted: for comparing row sets.
pub fn rows_as_strings(batches: &[RecordBatch]) -> Vec<String> {
    let mut out = rows_in_order(batches);
    out.sort();
    out
}

/// Sorted row-by-row equality; on a mismatch, reports the counts and the first differing row only.
pub fn assert_same_rows(actual: &[RecordBatch], expected: &[RecordBatch], what: &str) {
    let (a, e) = (rows_as_strings(actual), rows_as_strings(expected));
    if a != e {
        let i = a.iter().zip(&e).position(|(x, y)| x != y).unwrap_or(a.len().min(e.len()));
        panic!(
            "{what}: {} rows vs {} expected; first difference at sorted row {i}:\n  got      {:?}\n  expected {:?}",
            a.len(),
            e.len(),
            a.get(i),
            e.get(i)
        );
    }
}

/// Runs a plan to the end on a current-thread runtime.
pub fn run(plan: Arc<dyn ExecutionPlan>, ctx: Arc<TaskContext>) -> Result<Vec<RecordBatch>> {
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    rt.block_on(collect(plan, ctx))
}

/// Files anywhere under `dir` (spill files left behind).
pub fn files_under(dir: &Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            n += files_under(&e.path());
        } else {
            n += 1;
        }
    }
    n
}

/// The batches a native plan returns, until its end, its first error (returned too) or `stop_after` batches.
pub fn drain(p: &mut NativePlan, stop_after: Option<usize>) -> (Vec<RecordBatch>, Option<DataFusionError>) {
    let mut out = vec![];
    while stop_after.is_none_or(|n| out.len() < n) {
        match p.next_batch() {
            Ok(Some(b)) => out.push(b),
            Ok(None) => break,
            Err(e) => return (out, Some(e)),
        }
    }
    (out, None)
}

/// Every DataFusion join type the spilling hash join runs.
pub const ALL_JOIN_TYPES: [datafusion_common::JoinType; 10] = {
    use datafusion_common::JoinType::*;
    [Inner, Left, Right, Full, LeftSemi, LeftAnti, RightSemi, RightAnti, LeftMark, RightMark]
};

/// `b` with its `Binary` columns as `Utf8` (validated): what a plan over inputs whose only byte columns are Spark
/// strings returns when it carries them as bytes (`planner/strings.rs`), for comparison with text.
pub fn strings_as_text(b: RecordBatch) -> RecordBatch {
    let fields: Vec<arrow::datatypes::FieldRef> = b
        .schema()
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            DataType::Binary => Arc::new(f.as_ref().clone().with_data_type(DataType::Utf8)),
            _ => f.clone(),
        })
        .collect();
    let schema = Arc::new(arrow::datatypes::Schema::new_with_metadata(fields, b.schema().metadata().clone()));
    ember_engine::unsafe_row::conform_strings(b, &schema, false).unwrap()
}
