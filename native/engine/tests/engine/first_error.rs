//! Spark's first error through a whole native plan (`expressions/first_error.rs`): with several rows and
//! operators that raise in one batch, the error is the one Spark's row-at-a-time order meets first.

use std::sync::Arc;

use crate::common::*;
use arrow::array::{Int64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use ember_engine::error::find_spark_error;
use ember_engine::execution::NativePlan;
use ember_engine::memory::FixedBroker;
use ember_engine::proto as pb;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new("a", DataType::Int64, true), Field::new("b", DataType::Int64, true)]))
}

/// `a` and `b` by row.
fn batch(a: &[i64], b: &[i64]) -> RecordBatch {
    let (a, b) = (Int64Array::from(a.to_vec()), Int64Array::from(b.to_vec()));
    RecordBatch::try_new(schema(), vec![Arc::new(a), Arc::new(b)]).unwrap()
}

fn ansi(op: pb::ArithOp, left: pb::Expr, right: pb::Expr) -> pb::Expr {
    pb::Expr {
        kind: Some(pb::expr::Kind::Arithmetic(Box::new(pb::Arithmetic {
            op: op as i32,
            left: Some(Box::new(left)),
            right: Some(Box::new(right)),
            result_type: Some(pb_type(&DataType::Int64)),
            eval_mode: pb::EvalMode::Ansi as i32,
            query_context: 0,
        }))),
    }
}

/// `10 div a > 0`: DIVIDE_BY_ZERO where `a` is 0.
fn divides() -> pb::Expr {
    let div = ansi(pb::ArithOp::IntegralDivide, lit_long(10), col(0, &DataType::Int64));
    cmp(pb::CmpOp::Gt, div, lit_long(0))
}

/// `b + 9223372036854775807`: ARITHMETIC_OVERFLOW where `b` is positive.
fn overflows() -> pb::Expr {
    ansi(pb::ArithOp::Add, col(1, &DataType::Int64), lit_long(i64::MAX))
}

fn projection(id: u32, exprs: Vec<pb::Expr>, child: pb::Operator) -> pb::Operator {
    let names = (0..exprs.len()).map(|i| format!("c{i}")).collect();
    op(id, pb::operator::Kind::Projection(pb::Projection { exprs, names }), vec![child])
}

/// The error class the plan over `input` fails with; its output: columns of `types`.
fn error_class(root: pb::Operator, input: RecordBatch, types: &[DataType]) -> String {
    let fields: Vec<Field> =
        types.iter().enumerate().map(|(i, t)| Field::new(format!("c{i}"), t.clone(), true)).collect();
    let output = Arc::new(Schema::new(fields));
    let broker = Arc::new(FixedBroker::new(usize::MAX));
    let mut p = NativePlan::from_proto(&plan(root, &output), vec![reader(vec![input], schema())], broker).unwrap();
    let (_, err) = drain(&mut p, None);
    let err = err.expect("the plan fails");
    find_spark_error(&err).unwrap_or_else(|| panic!("not a Spark error: {err}")).error_class.clone()
}

#[test]
fn a_projection_fails_on_a_kept_row_before_its_filter_fails() {
    // The filter fails on row 2 (a = 0); the projection above on row 1, which the filter keeps.
    let input = batch(&[5, 1, 0, 2], &[0, 1, 0, 0]);
    let filter = op(2, pb::operator::Kind::Filter(pb::Filter { predicate: Some(divides()) }), vec![input_op()]);
    let root = projection(1, vec![col(0, &DataType::Int64), overflows()], filter);
    assert_eq!(error_class(root.clone(), input, &[DataType::Int64, DataType::Int64]), "ARITHMETIC_OVERFLOW");
    // A row the filter drops raises nothing above it: row 1's `b` only overflows on a row it drops (a = -1).
    let input = batch(&[5, -1, 0, 2], &[0, 1, 0, 0]);
    assert_eq!(error_class(root, input, &[DataType::Int64, DataType::Int64]), "DIVIDE_BY_ZERO");
}

#[test]
fn a_projection_raises_row_by_row_across_its_columns() {
    // The first column fails on row 2, the second on row 1.
    let input = batch(&[5, 1, 0, 2], &[0, 1, 0, 0]);
    let types = [DataType::Boolean, DataType::Int64];
    let root = projection(1, vec![divides(), overflows()], input_op());
    assert_eq!(error_class(root.clone(), input, &types), "ARITHMETIC_OVERFLOW");
    // On the same row, the first column's.
    assert_eq!(error_class(root, batch(&[5, 0, 0, 2], &[0, 1, 0, 0]), &types), "DIVIDE_BY_ZERO");
}

#[test]
fn an_aggregate_argument_fails_before_the_projection_below_it() {
    // The projection fails on row 2; the partial sum's argument (the projection's second column, `b`) on row 1.
    let input = batch(&[5, 1, 0, 2], &[0, 1, 0, 0]);
    let project = projection(2, vec![divides(), col(1, &DataType::Int64)], input_op());
    let argument = ansi(pb::ArithOp::Add, col(1, &DataType::Int64), lit_long(i64::MAX));
    let sum = pb::AggregateFunction {
        kind: pb::AggregateFunctionKind::Sum as i32,
        args: vec![argument],
        result_type: Some(pb_type(&DataType::Int64)),
        intermediate: vec![pb::Field { name: "sum".into(), r#type: Some(pb_type(&DataType::Int64)), nullable: true }],
        eval_mode: pb::EvalMode::Ansi as i32,
        name: "sum".into(),
        ..Default::default()
    };
    let aggregate =
        pb::Aggregate { mode: pb::AggregateMode::Partial as i32, functions: vec![sum], ..Default::default() };
    let root = op(1, pb::operator::Kind::Aggregate(aggregate), vec![project]);
    assert_eq!(error_class(root, input, &[DataType::Int64]), "ARITHMETIC_OVERFLOW");
}

fn input_op() -> pb::Operator {
    input(0, &schema())
}
