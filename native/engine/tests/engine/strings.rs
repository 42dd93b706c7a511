//! Spark's strings as bytes (`planner/strings.rs`): a plan that only moves, compares and sorts its strings, or
//! reads them as text through `Text` expressions, carries them as `Binary`, so invalid UTF-8 gets Spark's
//! answers; one that reads text otherwise keeps `Utf8` and fails on it, naming the column. Strings made inside
//! the plan (`CAST(binary AS STRING)`) are carried as bytes too, or checked inside a `Text` with Spark's twin.
use std::sync::Arc;

use crate::common::*;
use arrow::array::{Array, AsArray, BinaryArray, Int64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use ember_engine::execution::NativePlan;
use ember_engine::memory::FixedBroker;
use ember_engine::planner::strings::as_bytes;
use ember_engine::proto as pb;

/// The schema Spark declares (a string `s`), and the rows as the JVM hands them over: bytes, some not UTF-8.
fn spark_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, true), Field::new("s", DataType::Utf8, true)]))
}

fn rows() -> RecordBatch {
    let s: Vec<Option<&[u8]>> =
        vec![Some(&[0xff, 0x41]), Some(&[0xc3]), Some("ü".as_bytes()), None, Some(b"ab"), Some(&[0xed, 0xa0, 0x80])];
    let bytes = Schema::new(vec![Field::new("k", DataType::Int64, true), Field::new("s", DataType::Binary, true)]);
    let k = Int64Array::from((0..s.len() as i64).collect::<Vec<_>>());
    RecordBatch::try_new(Arc::new(bytes), vec![Arc::new(k), Arc::new(BinaryArray::from(s))]).unwrap()
}

fn string_lit(v: &str) -> pb::Expr {
    pb::Expr {
        kind: Some(pb::expr::Kind::Literal(pb::Literal {
            r#type: Some(pb_type(&DataType::Utf8)),
            is_null: false,
            value: Some(pb::literal::Value::StringValue(v.into())),
        })),
    }
}

fn function(name: &str, args: Vec<pb::Expr>, return_type: &DataType) -> pb::Expr {
    pb::Expr {
        kind: Some(pb::expr::Kind::ScalarFunction(pb::ScalarFunction {
            name: name.into(),
            args,
            return_type: Some(pb_type(return_type)),
            ..Default::default()
        })),
    }
}

/// `SELECT k, <expr> AS s FROM input WHERE s <> 'ab' ORDER BY s` (NULLs first).
fn plan_of(expr: pb::Expr, out_type: &DataType) -> pb::Plan {
    let s = spark_schema();
    let filter = op(
        3,
        pb::operator::Kind::Filter(pb::Filter {
            predicate: Some(cmp(pb::CmpOp::NotEq, col(1, &DataType::Utf8), string_lit("ab"))),
        }),
        vec![input(0, &s)],
    );
    let order = vec![pb::SortOrder { child: Some(col(1, &DataType::Utf8)), ascending: true, nulls_first: true }];
    let sort = op(2, pb::operator::Kind::Sort(pb::Sort { order, fetch: 0, radix: true }), vec![filter]);
    let out: SchemaRef =
        Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, true), Field::new("s", out_type.clone(), true)]));
    let project = op(
        1,
        pb::operator::Kind::Projection(pb::Projection {
            exprs: vec![col(0, &DataType::Int64), expr],
            names: vec!["k".into(), "s".into()],
        }),
        vec![sort],
    );
    plan(project, &out)
}

fn run(plan: &pb::Plan) -> datafusion_common::Result<Vec<RecordBatch>> {
    run_over(plan, rows())
}

fn run_over(plan: &pb::Plan, rows: RecordBatch) -> datafusion_common::Result<Vec<RecordBatch>> {
    let broker = Arc::new(FixedBroker::new(usize::MAX));
    let mut p = NativePlan::from_proto(plan, vec![reader(vec![rows.clone()], rows.schema())], broker)?;
    match drain(&mut p, None) {
        (_, Some(e)) => Err(e),
        (out, None) => Ok(out),
    }
}

#[test]
fn a_plan_that_only_moves_strings_carries_their_bytes() {
    let moves = plan_of(col(1, &DataType::Utf8), &DataType::Utf8);
    assert!(as_bytes(&moves));
    // spark.ember.strings.asBytes.enabled=false: UTF-8, and the invalid bytes fail where they enter.
    let mut off = moves.clone();
    off.config.as_mut().unwrap().strings_as_bytes = Some(false);
    assert!(!as_bytes(&off));
    assert!(run(&off).unwrap_err().to_string().contains("string column `s` holds bytes that are not valid UTF-8"));
    let out = run(&moves).unwrap();
    let got: Vec<(i64, Option<Vec<u8>>)> = out
        .iter()
        .flat_map(|b| {
            let k = b.column(0).as_primitive::<arrow::datatypes::Int64Type>().clone();
            let s = b.column(1).as_binary::<i32>().clone();
            (0..b.num_rows()).map(move |i| (k.value(i), s.is_valid(i).then(|| s.value(i).to_vec())))
        })
        .collect();
    // Spark's order: unsigned bytes (a prefix first); NULL fails `<> 'ab'`, and so does "ab".
    let want: Vec<(i64, Option<Vec<u8>>)> = vec![
        (1, Some(vec![0xc3])),
        (2, Some("ü".as_bytes().to_vec())),
        (5, Some(vec![0xed, 0xa0, 0x80])),
        (0, Some(vec![0xff, 0x41])),
    ];
    assert_eq!(got, want);
}

#[test]
fn a_plan_that_reads_text_keeps_utf8_and_fails_on_invalid_bytes() {
    let upper = plan_of(function("upper", vec![col(1, &DataType::Utf8)], &DataType::Utf8), &DataType::Utf8);
    let length = plan_of(function("length", vec![col(1, &DataType::Utf8)], &DataType::Int32), &DataType::Int32);
    let cast = pb::Expr {
        kind: Some(pb::expr::Kind::Cast(Box::new(pb::Cast {
            child: Some(Box::new(col(0, &DataType::Int64))),
            to: Some(pb_type(&DataType::Utf8)),
            ..Default::default()
        }))),
    };
    let made = plan_of(cast, &DataType::Utf8);
    for p in [&upper, &length, &made] {
        assert!(!as_bytes(p), "a plan reading or making text keeps strings as UTF-8");
        let err = run(p).unwrap_err().to_string();
        assert!(err.contains("string column `s`") && err.contains("not valid UTF-8"), "{err}");
    }
    // No string anywhere: bytes or not, the same plan.
    let ints = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, true)]));
    assert!(as_bytes(&plan(input(0, &ints), &ints)));
}

/// The rows with `s` declared BINARY by Spark (what `unhex` or a binary column gives).
fn binary_schema() -> SchemaRef {
    rows().schema()
}

fn cast(child: pb::Expr, to: &DataType) -> pb::Expr {
    pb::Expr {
        kind: Some(pb::expr::Kind::Cast(Box::new(pb::Cast {
            child: Some(Box::new(child)),
            to: Some(pb_type(to)),
            ..Default::default()
        }))),
    }
}

/// `SELECT k, <expr> AS s FROM input ORDER BY s, k` over an input whose `s` is BINARY, `<expr>` a string.
fn made_plan(expr: pb::Expr) -> pb::Plan {
    let out: SchemaRef =
        Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, true), Field::new("s", DataType::Utf8, true)]));
    let project = op(
        2,
        pb::operator::Kind::Projection(pb::Projection {
            exprs: vec![col(0, &DataType::Int64), expr],
            names: vec!["k".into(), "s".into()],
        }),
        vec![input(0, &binary_schema())],
    );
    let order = vec![
        pb::SortOrder { child: Some(col(1, &DataType::Utf8)), ascending: true, nulls_first: true },
        pb::SortOrder { child: Some(col(0, &DataType::Int64)), ascending: true, nulls_first: true },
    ];
    plan(op(1, pb::operator::Kind::Sort(pb::Sort { order, fetch: 0, radix: true }), vec![project]), &out)
}

fn string_bytes(out: &[RecordBatch]) -> Vec<Option<Vec<u8>>> {
    out.iter().flat_map(|b| b.column(1).as_binary::<i32>().iter().map(|v| v.map(<[u8]>::to_vec))).collect()
}

#[test]
fn a_string_made_from_bytes_is_carried_as_bytes_and_refused_as_utf8() {
    let made = made_plan(cast(col(1, &DataType::Binary), &DataType::Utf8));
    // No string among the inputs, yet the plan makes one: it is carried as bytes, which the cast keeps as they are.
    assert!(as_bytes(&made));
    let out = run(&made).unwrap();
    assert_eq!(out[0].schema().field(1).data_type(), &DataType::Binary);
    // Spark's order: NULL first, then unsigned bytes.
    let want: Vec<&[u8]> = vec![b"ab", &[0xc3], "ü".as_bytes(), &[0xed, 0xa0, 0x80], &[0xff, 0x41]];
    let want: Vec<Option<Vec<u8>>> = std::iter::once(None).chain(want.into_iter().map(|v| Some(v.to_vec()))).collect();
    assert_eq!(string_bytes(&out), want);
    // The driver's support check: only as bytes.
    let root = made.root.as_ref().unwrap();
    let config = made.config.clone().unwrap();
    ember_engine::planner::check_support(root, &config).unwrap();
    // Strings as UTF-8 (the switch off): the cast could make a string `Utf8` cannot hold, so it is refused on the
    // driver (the operator stays in Spark) instead of failing a task.
    let off = pb::ExecConfig { strings_as_bytes: Some(false), ..config };
    let err = ember_engine::planner::check_support(root, &off).unwrap_err().to_string();
    assert!(err.contains("CAST(binary AS STRING) may make strings that are not UTF-8"), "{err}");
    let mut plan_off = made.clone();
    plan_off.config = Some(off);
    assert!(!as_bytes(&plan_off));
}

/// `upper(CAST(b AS STRING))` as the JVM sends it: a `Text` over the binary column, with Spark's twin or without.
fn upper_of_bytes(twin: bool) -> pb::Expr {
    let spark = twin.then(|| pb::JvmExpr {
        expression: vec![1, 2, 3],
        result_type: Some(pb_type(&DataType::Utf8)),
        nullable: true,
        name: "upper(CAST(b AS STRING))".into(),
        ..Default::default()
    });
    let native = function("upper", vec![cast(col(0, &DataType::Binary), &DataType::Utf8)], &DataType::Utf8);
    pb::Expr {
        kind: Some(pb::expr::Kind::Text(Box::new(pb::Text {
            children: vec![col(1, &DataType::Binary)],
            native: Some(Box::new(native)),
            spark,
        }))),
    }
}

#[test]
fn a_text_making_strings_from_bytes_runs_natively_on_valid_ones_and_hands_invalid_ones_to_spark() {
    let upper = made_plan(upper_of_bytes(true));
    assert!(as_bytes(&upper));
    let valid: Vec<Option<&[u8]>> = vec![Some("ü".as_bytes()), None, Some("ß".as_bytes())];
    let batch = RecordBatch::try_new(
        binary_schema(),
        vec![Arc::new(Int64Array::from(vec![0, 1, 2])), Arc::new(BinaryArray::from(valid))],
    )
    .unwrap();
    let out = run_over(&upper, batch).unwrap();
    assert_eq!(string_bytes(&out), vec![None, Some(b"SS".to_vec()), Some("Ü".as_bytes().to_vec())]);
    // A batch where the cast makes invalid UTF-8: Spark's twin (no JVM in these tests: its message says so).
    let err = run(&upper).unwrap_err().to_string();
    assert!(err.contains("upper(CAST(b AS STRING)) is evaluated by Spark on the JVM"), "{err}");
    // Without the twin no plan takes it: the driver keeps the operator in Spark.
    let alone = made_plan(upper_of_bytes(false));
    assert!(!as_bytes(&alone));
    let err = ember_engine::planner::check_support(alone.root.as_ref().unwrap(), alone.config.as_ref().unwrap())
        .unwrap_err()
        .to_string();
    assert!(err.contains("CAST(binary AS STRING) may make strings that are not UTF-8"), "{err}");
}

/// `f(s)` as a `Text` over column 1 (the JVM's form of a function reading text), with Spark's twin or without.
fn text(f: &str, return_type: &DataType, twin: bool) -> pb::Expr {
    let spark = twin.then(|| pb::JvmExpr {
        expression: vec![1, 2, 3],
        result_type: Some(pb_type(return_type)),
        nullable: true,
        name: format!("{f}(s)"),
        ..Default::default()
    });
    pb::Expr {
        kind: Some(pb::expr::Kind::Text(Box::new(pb::Text {
            children: vec![col(1, &DataType::Utf8)],
            native: Some(Box::new(function(f, vec![col(0, &DataType::Utf8)], return_type))),
            spark,
        }))),
    }
}

#[test]
fn a_text_expression_runs_natively_on_valid_batches_and_hands_invalid_ones_to_spark() {
    let upper = plan_of(text("upper", &DataType::Utf8, true), &DataType::Utf8);
    assert!(as_bytes(&upper), "a function reading text through `Text` lets the plan carry bytes");
    // Valid strings: the native kernel, its result as bytes.
    let s: Vec<Option<&[u8]>> = vec![Some("ü".as_bytes()), Some(b"ab"), None, Some("ß".as_bytes())];
    let bytes = Schema::new(vec![Field::new("k", DataType::Int64, true), Field::new("s", DataType::Binary, true)]);
    let valid = RecordBatch::try_new(
        Arc::new(bytes),
        vec![Arc::new(Int64Array::from(vec![0, 1, 2, 3])), Arc::new(BinaryArray::from(s))],
    )
    .unwrap();
    let out = run_over(&upper, valid).unwrap();
    let got: Vec<Option<Vec<u8>>> =
        out.iter().flat_map(|b| b.column(1).as_binary::<i32>().iter().map(|v| v.map(<[u8]>::to_vec))).collect();
    // `s <> 'ab'` drops "ab" and NULL; "ß" (c3 9f) sorts before "ü" (c3 bc).
    let want = [Some("SS".as_bytes().to_vec()), Some("Ü".as_bytes().to_vec())];
    assert_eq!(got, want);
    // Invalid bytes: Spark's expression, which needs the JVM (none in these tests: its message says so).
    let err = run(&upper).unwrap_err().to_string();
    assert!(err.contains("upper(s) is evaluated by Spark on the JVM"), "{err}");
    // Without the twin the plan keeps UTF-8 and fails where the bytes enter, as any text plan.
    let alone = plan_of(text("upper", &DataType::Utf8, false), &DataType::Utf8);
    assert!(!as_bytes(&alone));
    assert!(run(&alone).unwrap_err().to_string().contains("string column `s` holds bytes that are not valid UTF-8"));
}
