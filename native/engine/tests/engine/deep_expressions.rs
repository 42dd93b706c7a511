//! Deeply nested expressions on a thread with a small stack. Native plans run on Spark's task thread (a 1 MiB
//! Java stack by default, part of it already used by Spark's own frames), and decoding, planning, evaluating and
//! dropping an expression each recurse once per level. The driver declines expressions deeper than
//! `spark.ember.expression.maxDepth` (`ExprSerde`), so the executor never meets one; this test keeps that
//! default safe in the debug build (the engine at opt-level 0, the largest frames), and `measure_stack_depth`
//! (ignored) is how the default was chosen.

use std::sync::Arc;

use crate::common::*;
use arrow::array::{Int64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use ember_engine::execution::NativePlan;
use ember_engine::memory::FixedBroker;
use ember_engine::proto as pb;
use prost::Message;

/// `spark.ember.expression.maxDepth`'s default (`EmberConf.EXPRESSION_MAX_DEPTH`).
const DEFAULT_MAX_DEPTH: usize = 64;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, true)]))
}

/// `x + 1 + 1 + ...` (ANSI): `depth` nested additions.
fn additions(depth: usize) -> pb::Expr {
    let mut e = col(0, &DataType::Int64);
    for _ in 0..depth {
        e = pb::Expr {
            kind: Some(pb::expr::Kind::Arithmetic(Box::new(pb::Arithmetic {
                op: pb::ArithOp::Add as i32,
                left: Some(Box::new(e)),
                right: Some(Box::new(lit_long(1))),
                result_type: Some(pb_type(&DataType::Int64)),
                eval_mode: pb::EvalMode::Ansi as i32,
                query_context: 0,
            }))),
        };
    }
    e
}

/// `CASE WHEN x > i THEN <the next level> ELSE i END`, `depth` times.
fn cases(depth: usize) -> pb::Expr {
    let mut e = col(0, &DataType::Int64);
    for i in 0..depth {
        e = pb::Expr {
            kind: Some(pb::expr::Kind::CaseWhen(Box::new(pb::CaseWhen {
                when: vec![cmp(pb::CmpOp::Gt, col(0, &DataType::Int64), lit_long(i as i64))],
                then: vec![e],
                else_expr: Some(Box::new(lit_long(i as i64))),
                result_type: Some(pb_type(&DataType::Int64)),
            }))),
        };
    }
    e
}

/// `NOT NOT ... (x > 0)`: the smallest frames per level, for comparison.
fn nots(depth: usize) -> pb::Expr {
    let mut e = cmp(pb::CmpOp::Gt, col(0, &DataType::Int64), lit_long(0));
    for _ in 0..depth {
        e = pb::Expr { kind: Some(pb::expr::Kind::Not(Box::new(pb::Not { child: Some(Box::new(e)) }))) };
    }
    e
}

fn expression(kind: &str, depth: usize) -> (pb::Expr, DataType) {
    match kind {
        "add" => (additions(depth), DataType::Int64),
        "case" => (cases(depth), DataType::Int64),
        "not" => (nots(depth), DataType::Boolean),
        other => panic!("unknown expression kind {other}"),
    }
}

/// Encodes a projection of the expression, then decodes, plans, runs and drops it on a thread with `stack`
/// bytes of stack, as the bridge does on a task thread; returns the rows out. A stack overflow aborts the process.
fn run_on_small_stack(kind: &'static str, depth: usize, stack: usize) -> usize {
    let (expr, dt) = expression(kind, depth);
    let s = schema();
    let out: SchemaRef = Arc::new(Schema::new(vec![Field::new("e", dt, true)]));
    let projection = pb::operator::Kind::Projection(pb::Projection { exprs: vec![expr], names: vec!["e".into()] });
    let bytes = plan(op(0, projection, vec![input(0, &s)]), &out).encode_to_vec();
    let batch = RecordBatch::try_new(s.clone(), vec![Arc::new(Int64Array::from_iter(0..1000))]).unwrap();
    std::thread::Builder::new()
        .stack_size(stack)
        .spawn(move || {
            if std::env::var("EMBER_DEEP_PHASE").is_ok_and(|p| p == "decode") {
                let plan = pb::Plan::decode(bytes.as_slice()).unwrap();
                drop(plan);
                return 0;
            }
            let broker = Arc::new(FixedBroker::new(64 << 20));
            let mut p = NativePlan::try_new(&bytes, vec![reader(vec![batch], s)], broker).unwrap();
            if std::env::var("EMBER_DEEP_PHASE").is_ok_and(|p| p == "plan") {
                return 0;
            }
            let mut rows = 0;
            while let Some(b) = p.next_batch().unwrap() {
                rows += b.num_rows();
            }
            rows
        })
        .unwrap()
        .join()
        .unwrap()
}

#[test]
fn the_default_max_depth_runs_in_half_a_task_threads_stack() {
    for kind in ["add", "case", "not"] {
        assert_eq!(run_on_small_stack(kind, DEFAULT_MAX_DEPTH, 512 << 10), 1000, "{kind}");
    }
}

/// `EMBER_DEEP_KIND=add|case|not EMBER_DEEP_DEPTH=n EMBER_DEEP_STACK=bytes cargo test -p ember-engine --test
/// deep_expressions -- --ignored --nocapture`: runs one depth; a stack overflow aborts the process.
#[test]
#[ignore]
fn measure_stack_depth() {
    let kind: &'static str = std::env::var("EMBER_DEEP_KIND").unwrap_or("add".into()).leak();
    let depth: usize = std::env::var("EMBER_DEEP_DEPTH").map_or(100, |d| d.parse().unwrap());
    let stack: usize = std::env::var("EMBER_DEEP_STACK").map_or(1 << 20, |d| d.parse().unwrap());
    let rows = run_on_small_stack(kind, depth, stack);
    println!("{kind} depth {depth} on a {stack}-byte stack: {rows} rows");
}
