//! CAST through the proto planner: a projection of Spark casts over an input, end to end, and an ANSI failure
//! reaching the caller as Spark's error class.

use std::sync::Arc;

use crate::common::*;
use arrow::array::{Array, AsArray, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Int32Type, Int8Type, Schema, SchemaRef, TimeUnit};
use ember_engine::error::find_spark_error;
use ember_engine::execution::NativePlan;
use ember_engine::memory::FixedBroker;
use ember_engine::proto as pb;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, true),
        Field::new("d", DataType::Float64, true),
        Field::new("s", DataType::Utf8, true),
    ]))
}

fn input_batch() -> RecordBatch {
    let k = Int64Array::from(vec![Some(1), None, Some(300), Some(-129)]);
    let d = Float64Array::from(vec![Some(1e10), Some(f64::NAN), None, Some(-0.0)]);
    let s = StringArray::from(vec![Some(" 12 "), Some("1.9"), Some("x"), None]);
    RecordBatch::try_new(schema(), vec![Arc::new(k), Arc::new(d), Arc::new(s)]).unwrap()
}

fn cast(child: pb::Expr, to: &DataType, mode: pb::EvalMode) -> pb::Expr {
    pb::Expr {
        kind: Some(pb::expr::Kind::Cast(Box::new(pb::Cast {
            child: Some(Box::new(child)),
            to: Some(pb_type(to)),
            eval_mode: mode as i32,
            timezone: "UTC".into(),
            query_context: 0,
        }))),
    }
}

fn project(exprs: Vec<pb::Expr>, out: &SchemaRef) -> Result<Vec<RecordBatch>, datafusion_common::DataFusionError> {
    let s = schema();
    let names = out.fields().iter().map(|f| f.name().clone()).collect();
    let p = op(1, pb::operator::Kind::Projection(pb::Projection { exprs, names }), vec![input(0, &s)]);
    let broker = Arc::new(FixedBroker::new(usize::MAX));
    let mut native = NativePlan::from_proto(&plan(p, out), vec![reader(vec![input_batch()], s)], broker)?;
    let mut batches = vec![];
    while let Some(b) = native.next_batch()? {
        batches.push(b);
    }
    Ok(batches)
}

#[test]
fn legacy_casts_in_a_projection() {
    let ts = DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
    let out: SchemaRef = Arc::new(Schema::new(vec![
        Field::new("i", DataType::Int32, true),
        Field::new("t", DataType::Utf8, true),
        Field::new("b", DataType::Int8, true),
        Field::new("ts", ts.clone(), true),
    ]));
    let legacy = pb::EvalMode::Legacy;
    let batches = project(
        vec![
            cast(col(2, &DataType::Utf8), &DataType::Int32, legacy),
            cast(col(1, &DataType::Float64), &DataType::Utf8, legacy),
            cast(col(0, &DataType::Int64), &DataType::Int8, legacy),
            cast(col(0, &DataType::Int64), &ts, legacy),
        ],
        &out,
    )
    .unwrap();
    let b = &batches[0];
    assert_eq!(b.column(0).as_primitive::<Int32Type>().iter().collect::<Vec<_>>(), vec![Some(12), Some(1), None, None]);
    let t: Vec<_> = b.column(1).as_string::<i32>().iter().collect();
    assert_eq!(t, vec![Some("1.0E10"), Some("NaN"), None, Some("-0.0")]);
    assert_eq!(
        b.column(2).as_primitive::<Int8Type>().iter().collect::<Vec<_>>(),
        vec![Some(1), None, Some(44), Some(127)]
    );
    assert_eq!(b.column(3).data_type(), &ts);
    assert_eq!(b.column(3).null_count(), 1);
}

#[test]
fn ansi_failures_surface_as_spark_errors() {
    let out: SchemaRef = Arc::new(Schema::new(vec![Field::new("b", DataType::Int8, true)]));
    let err = project(vec![cast(col(0, &DataType::Int64), &DataType::Int8, pb::EvalMode::Ansi)], &out).unwrap_err();
    let spark = find_spark_error(&err).expect("a Spark error");
    assert_eq!(spark.error_class, "CAST_OVERFLOW");
    assert!(spark.params.contains(&("value".to_string(), "300L".to_string())), "{:?}", spark.params);

    let out: SchemaRef = Arc::new(Schema::new(vec![Field::new("i", DataType::Int32, true)]));
    let err = project(vec![cast(col(2, &DataType::Utf8), &DataType::Int32, pb::EvalMode::Ansi)], &out).unwrap_err();
    let spark = find_spark_error(&err).expect("a Spark error");
    assert_eq!(spark.error_class, "CAST_INVALID_INPUT");
    assert!(spark.params.contains(&("expression".to_string(), "'1.9'".to_string())), "{:?}", spark.params);

    // TRY never fails.
    let batches = project(vec![cast(col(2, &DataType::Utf8), &DataType::Int32, pb::EvalMode::Try)], &out).unwrap();
    assert_eq!(batches[0].column(0).null_count(), 3);
}

#[test]
fn unsupported_casts_are_plan_errors() {
    let out: SchemaRef =
        Arc::new(Schema::new(vec![Field::new("t", DataType::Timestamp(TimeUnit::Microsecond, None), true)]));
    // Spark has no BIGINT → TIMESTAMP_NTZ cast: the engine refuses it while planning.
    let err = project(vec![cast(col(0, &DataType::Int64), out.field(0).data_type(), pb::EvalMode::Legacy)], &out)
        .unwrap_err();
    assert!(matches!(err, datafusion_common::DataFusionError::Plan(_)), "{err}");
}
