//! Integral, floating point and planning cases of Spark's arithmetic. Every error class and message parameter
//! below was confirmed with Spark 4.1.3's own Catalyst expressions (interpreted and generated code) in jshell.
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, Decimal128Array, Float32Array, Float64Array, Int16Array, Int32Array, Int64Array, Int8Array,
    RecordBatch,
};
use arrow::datatypes::{DataType, Field, Schema};
use datafusion_common::ScalarValue;
use datafusion_expr::ColumnarValue;
use datafusion_physical_expr::expressions::{Column, Literal};
use datafusion_physical_expr::PhysicalExpr;
use ember_engine::error::find_spark_error;
use ember_engine::expressions::arithmetic;
use ember_engine::expressions::arithmetic::Op;
use ember_engine::expressions::Mode;

use Mode::{Ansi, Legacy, Try};
use Op::{Add, Div as Divide, IntDiv as IntegralDivide, Mul as Multiply, Rem as Remainder, Sub as Subtract};

const CONFIG: (&str, &str) = ("config", "\"spark.sql.ansi.enabled\"");

fn schema2(dt: &DataType) -> Arc<Schema> {
    Arc::new(Schema::new(vec![Field::new("a", dt.clone(), true), Field::new("b", dt.clone(), true)]))
}

/// Evaluates `a op b` over two columns; an error comes back as (error class, params).
fn run(op: Op, mode: Mode, a: ArrayRef, b: ArrayRef) -> Result<ArrayRef, (String, Vec<(String, String)>)> {
    let dt = a.data_type().clone();
    let result = if op == IntegralDivide { DataType::Int64 } else { dt.clone() };
    let schema = schema2(&dt);
    let batch = RecordBatch::try_new(Arc::clone(&schema), vec![a, b]).unwrap();
    let e = arithmetic::create(op, Arc::new(Column::new("a", 0)), Arc::new(Column::new("b", 1)), result, mode, &schema)
        .unwrap();
    match e.evaluate(&batch) {
        Ok(v) => Ok(v.into_array(batch.num_rows()).unwrap()),
        Err(err) => {
            let s = find_spark_error(&err).unwrap_or_else(|| panic!("not a Spark error: {err}"));
            Err((s.error_class.clone(), s.params.clone()))
        }
    }
}

fn err(class: &str, params: &[(&str, &str)]) -> (String, Vec<(String, String)>) {
    (class.to_string(), params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
}

fn overflow(message: &str, alternative: &str) -> (String, Vec<(String, String)>) {
    err("ARITHMETIC_OVERFLOW", &[("message", message), ("alternative", alternative), CONFIG])
}

fn hint(f: &str) -> String {
    format!(" Use '{f}' to tolerate overflow and return NULL instead.")
}

fn small_overflow(v1: &str, sym: &str, v2: &str, f: &str) -> (String, Vec<(String, String)>) {
    err("BINARY_ARITHMETIC_OVERFLOW", &[("value1", v1), ("symbol", sym), ("value2", v2), ("functionName", f)])
}

fn i64s(a: &ArrayRef) -> Vec<Option<i64>> {
    a.as_any().downcast_ref::<Int64Array>().unwrap().iter().collect()
}

fn i32s(a: &ArrayRef) -> Vec<Option<i32>> {
    a.as_any().downcast_ref::<Int32Array>().unwrap().iter().collect()
}

fn i16s(a: &ArrayRef) -> Vec<Option<i16>> {
    a.as_any().downcast_ref::<Int16Array>().unwrap().iter().collect()
}

fn i8s(a: &ArrayRef) -> Vec<Option<i8>> {
    a.as_any().downcast_ref::<Int8Array>().unwrap().iter().collect()
}

fn f64s(a: &ArrayRef) -> Vec<Option<f64>> {
    a.as_any().downcast_ref::<Float64Array>().unwrap().iter().collect()
}

fn f32s(a: &ArrayRef) -> Vec<Option<f32>> {
    a.as_any().downcast_ref::<Float32Array>().unwrap().iter().collect()
}

fn arr<T: Array + 'static>(a: T) -> ArrayRef {
    Arc::new(a)
}

#[test]
fn tinyint_and_smallint() {
    let b = |v: Vec<Option<i8>>| arr(Int8Array::from(v));
    let s = |v: Vec<Option<i16>>| arr(Int16Array::from(v));
    // LEGACY wraps like Java's (byte)/(short) casts.
    assert_eq!(
        i8s(&run(Subtract, Legacy, b(vec![Some(-100), None]), b(vec![Some(100), Some(1)])).unwrap()),
        vec![Some(56), None]
    );
    assert_eq!(i8s(&run(Add, Legacy, b(vec![Some(127)]), b(vec![Some(1)])).unwrap()), vec![Some(-128)]);
    assert_eq!(i16s(&run(Multiply, Legacy, s(vec![Some(-300)]), s(vec![Some(300)])).unwrap()), vec![Some(-24464)]);
    assert_eq!(i16s(&run(Add, Legacy, s(vec![Some(32767)]), s(vec![Some(1)])).unwrap()), vec![Some(-32768)]);
    // ANSI: BINARY_ARITHMETIC_OVERFLOW with SMALLINT literals (also for TINYINT) and the try_ function.
    assert_eq!(
        run(Add, Ansi, b(vec![Some(100)]), b(vec![Some(100)])).unwrap_err(),
        small_overflow("100S", "+", "100S", "`try_add`")
    );
    assert_eq!(
        run(Subtract, Ansi, b(vec![Some(-100)]), b(vec![Some(100)])).unwrap_err(),
        small_overflow("-100S", "-", "100S", "`try_subtract`")
    );
    assert_eq!(
        run(Multiply, Ansi, s(vec![Some(300)]), s(vec![Some(300)])).unwrap_err(),
        small_overflow("300S", "*", "300S", "`try_multiply`")
    );
    assert_eq!(i16s(&run(Add, Ansi, s(vec![Some(32766)]), s(vec![Some(1)])).unwrap()), vec![Some(32767)]);
    // TRY: NULL.
    assert_eq!(
        i8s(&run(Subtract, Try, b(vec![Some(-100), Some(3)]), b(vec![Some(100), Some(1)])).unwrap()),
        vec![None, Some(2)]
    );
    assert_eq!(i16s(&run(Add, Try, s(vec![Some(32767)]), s(vec![Some(1)])).unwrap()), vec![None]);
    // Remainder: Java's, MIN % -1 == 0, zero divisor.
    for mode in [Legacy, Ansi, Try] {
        assert_eq!(i8s(&run(Remainder, mode, b(vec![Some(-128)]), b(vec![Some(-1)])).unwrap()), vec![Some(0)]);
        assert_eq!(i16s(&run(Remainder, mode, s(vec![Some(-7)]), s(vec![Some(2)])).unwrap()), vec![Some(-1)]);
    }
    assert_eq!(i8s(&run(Remainder, Try, b(vec![Some(-128)]), b(vec![Some(0)])).unwrap()), vec![None]);
    assert_eq!(
        run(Remainder, Ansi, s(vec![Some(1)]), s(vec![Some(0)])).unwrap_err(),
        err("REMAINDER_BY_ZERO", &[CONFIG])
    );
}

#[test]
fn int_and_bigint() {
    let i = |v: Vec<Option<i32>>| arr(Int32Array::from(v));
    let l = |v: Vec<Option<i64>>| arr(Int64Array::from(v));
    assert_eq!(i32s(&run(Add, Legacy, i(vec![Some(i32::MAX)]), i(vec![Some(1)])).unwrap()), vec![Some(i32::MIN)]);
    assert_eq!(
        run(Add, Ansi, i(vec![Some(i32::MAX)]), i(vec![Some(1)])).unwrap_err(),
        overflow("integer overflow", &hint("try_add"))
    );
    assert_eq!(
        run(Multiply, Ansi, i(vec![Some(i32::MAX)]), i(vec![Some(2)])).unwrap_err(),
        overflow("integer overflow", &hint("try_multiply"))
    );
    assert_eq!(
        i32s(&run(Multiply, Try, i(vec![Some(i32::MAX), Some(-3)]), i(vec![Some(2), Some(3)])).unwrap()),
        vec![None, Some(-9)]
    );
    assert_eq!(
        run(Add, Ansi, l(vec![Some(i64::MAX)]), l(vec![Some(1)])).unwrap_err(),
        overflow("long overflow", &hint("try_add"))
    );
    assert_eq!(
        run(Subtract, Ansi, l(vec![Some(i64::MIN)]), l(vec![Some(1)])).unwrap_err(),
        overflow("long overflow", &hint("try_subtract"))
    );
    assert_eq!(
        run(Multiply, Ansi, l(vec![Some(i64::MIN)]), l(vec![Some(-1)])).unwrap_err(),
        overflow("long overflow", &hint("try_multiply"))
    );
    assert_eq!(i64s(&run(Multiply, Legacy, l(vec![Some(i64::MIN)]), l(vec![Some(-1)])).unwrap()), vec![Some(i64::MIN)]);
    assert_eq!(i64s(&run(Multiply, Try, l(vec![Some(i64::MIN)]), l(vec![Some(-1)])).unwrap()), vec![None]);
    assert_eq!(i64s(&run(Add, Try, l(vec![Some(i64::MAX)]), l(vec![Some(1)])).unwrap()), vec![None]);
    assert_eq!(
        i64s(&run(Subtract, Legacy, l(vec![Some(i64::MIN), None]), l(vec![Some(1), None])).unwrap()),
        vec![Some(i64::MAX), None]
    );
    // NULL rows are not checked for overflow (their buffer values are arbitrary).
    let a = Int64Array::from(vec![Some(1), None]);
    let mut values = a.values().to_vec();
    values[1] = i64::MAX;
    let a = Int64Array::new(values.into(), a.nulls().cloned());
    assert_eq!(i64s(&run(Add, Ansi, arr(a), l(vec![Some(1), Some(1)])).unwrap()), vec![Some(2), None]);

    // Remainder.
    for mode in [Legacy, Ansi, Try] {
        assert_eq!(i32s(&run(Remainder, mode, i(vec![Some(i32::MIN)]), i(vec![Some(-1)])).unwrap()), vec![Some(0)]);
        assert_eq!(i64s(&run(Remainder, mode, l(vec![Some(i64::MIN)]), l(vec![Some(-1)])).unwrap()), vec![Some(0)]);
        assert_eq!(
            i64s(&run(Remainder, mode, l(vec![Some(-7), Some(7)]), l(vec![Some(2), Some(-2)])).unwrap()),
            vec![Some(-1), Some(1)]
        );
    }
    assert_eq!(i32s(&run(Remainder, Try, i(vec![Some(-7)]), i(vec![Some(0)])).unwrap()), vec![None]);
    assert_eq!(i64s(&run(Remainder, Legacy, l(vec![Some(-7)]), l(vec![Some(0)])).unwrap()), vec![None]);
    assert_eq!(
        run(Remainder, Ansi, l(vec![Some(5)]), l(vec![Some(0)])).unwrap_err(),
        err("REMAINDER_BY_ZERO", &[CONFIG])
    );
    assert_eq!(i64s(&run(Remainder, Ansi, l(vec![None]), l(vec![Some(0)])).unwrap()), vec![None]);
}

#[test]
fn integral_divide() {
    let l = |v: Vec<Option<i64>>| arr(Int64Array::from(v));
    let int_div_overflow = overflow("Overflow in integral divide", &hint("try_divide"));
    assert_eq!(
        i64s(&run(IntegralDivide, Legacy, l(vec![Some(i64::MIN)]), l(vec![Some(-1)])).unwrap()),
        vec![Some(i64::MIN)]
    );
    assert_eq!(run(IntegralDivide, Ansi, l(vec![Some(i64::MIN)]), l(vec![Some(-1)])).unwrap_err(), int_div_overflow);
    // Spark's IntegralDivide has no TRY handling: TRY raises like ANSI.
    assert_eq!(run(IntegralDivide, Try, l(vec![Some(i64::MIN)]), l(vec![Some(-1)])).unwrap_err(), int_div_overflow);
    assert_eq!(
        run(IntegralDivide, Try, l(vec![Some(5)]), l(vec![Some(0)])).unwrap_err(),
        err("DIVIDE_BY_ZERO", &[CONFIG])
    );
    assert_eq!(
        run(IntegralDivide, Ansi, l(vec![Some(5)]), l(vec![Some(0)])).unwrap_err(),
        err("DIVIDE_BY_ZERO", &[CONFIG])
    );
    assert_eq!(
        i64s(&run(IntegralDivide, Legacy, l(vec![Some(5), None]), l(vec![Some(0), Some(0)])).unwrap()),
        vec![None, None]
    );
    // NULL dividend with a zero divisor: NULL, no error.
    assert_eq!(i64s(&run(IntegralDivide, Ansi, l(vec![None]), l(vec![Some(0)])).unwrap()), vec![None]);
    for mode in [Legacy, Ansi, Try] {
        assert_eq!(
            i64s(
                &run(
                    IntegralDivide,
                    mode,
                    l(vec![Some(-7), Some(7), Some(i64::MIN)]),
                    l(vec![Some(2), Some(-2), Some(1)])
                )
                .unwrap()
            ),
            vec![Some(-3), Some(-3), Some(i64::MIN)]
        );
    }
}

#[test]
fn floating_point() {
    let d = |v: Vec<Option<f64>>| arr(Float64Array::from(v));
    let f = |v: Vec<Option<f32>>| arr(Float32Array::from(v));
    // IEEE, no errors, in every mode.
    for mode in [Legacy, Ansi, Try] {
        assert_eq!(
            f32s(&run(Add, mode, f(vec![Some(f32::MAX)]), f(vec![Some(f32::MAX)])).unwrap()),
            vec![Some(f32::INFINITY)]
        );
        assert_eq!(
            f64s(&run(Multiply, mode, d(vec![Some(-0.0)]), d(vec![Some(5.0)])).unwrap())[0].unwrap().to_bits(),
            (-0.0f64).to_bits()
        );
        assert!(f64s(&run(Subtract, mode, d(vec![Some(f64::INFINITY)]), d(vec![Some(f64::INFINITY)])).unwrap())[0]
            .unwrap()
            .is_nan());
        assert!(f64s(&run(Divide, mode, d(vec![Some(1.0)]), d(vec![Some(f64::NAN)])).unwrap())[0].unwrap().is_nan());
        assert_eq!(f64s(&run(Remainder, mode, d(vec![Some(-5.5)]), d(vec![Some(2.0)])).unwrap()), vec![Some(-1.5)]);
        assert!(f64s(&run(Remainder, mode, d(vec![Some(f64::INFINITY)]), d(vec![Some(2.0)])).unwrap())[0]
            .unwrap()
            .is_nan());
        assert!(f64s(&run(Remainder, mode, d(vec![Some(5.5)]), d(vec![Some(f64::NAN)])).unwrap())[0].unwrap().is_nan());
        let z = f64s(&run(Remainder, mode, d(vec![Some(-0.0)]), d(vec![Some(2.0)])).unwrap())[0].unwrap();
        assert_eq!(z.to_bits(), (-0.0f64).to_bits());
        assert_eq!(f64s(&run(Divide, mode, d(vec![Some(1.0)]), d(vec![Some(4.0)])).unwrap()), vec![Some(0.25)]);
        assert_eq!(
            f64s(&run(Divide, mode, d(vec![Some(f64::MAX)]), d(vec![Some(0.5)])).unwrap()),
            vec![Some(f64::INFINITY)]
        );
    }
    // Zero divisors (also -0.0): NULL in LEGACY/TRY, DIVIDE_BY_ZERO / REMAINDER_BY_ZERO under ANSI.
    for mode in [Legacy, Try] {
        assert_eq!(
            f64s(&run(Divide, mode, d(vec![Some(1.0), Some(1.0)]), d(vec![Some(0.0), Some(-0.0)])).unwrap()),
            vec![None, None]
        );
        assert_eq!(f32s(&run(Remainder, mode, f(vec![Some(-5.5)]), f(vec![Some(-0.0)])).unwrap()), vec![None]);
    }
    assert_eq!(
        run(Divide, Ansi, d(vec![Some(1.0)]), d(vec![Some(-0.0)])).unwrap_err(),
        err("DIVIDE_BY_ZERO", &[CONFIG])
    );
    assert_eq!(
        run(Divide, Ansi, d(vec![Some(f64::NAN)]), d(vec![Some(0.0)])).unwrap_err(),
        err("DIVIDE_BY_ZERO", &[CONFIG])
    );
    assert_eq!(
        run(Remainder, Ansi, f(vec![Some(-5.5)]), f(vec![Some(0.0)])).unwrap_err(),
        err("REMAINDER_BY_ZERO", &[CONFIG])
    );
    assert_eq!(f64s(&run(Divide, Ansi, d(vec![None]), d(vec![Some(0.0)])).unwrap()), vec![None]);
}

fn negate(mode: Mode, a: ArrayRef) -> Result<ArrayRef, (String, Vec<(String, String)>)> {
    let schema = Arc::new(Schema::new(vec![Field::new("a", a.data_type().clone(), true)]));
    let batch = RecordBatch::try_new(Arc::clone(&schema), vec![a]).unwrap();
    let e = arithmetic::create_negate(Arc::new(Column::new("a", 0)), mode, &schema).unwrap();
    match e.evaluate(&batch) {
        Ok(v) => Ok(v.into_array(batch.num_rows()).unwrap()),
        Err(err) => {
            let s = find_spark_error(&err).unwrap();
            Err((s.error_class.clone(), s.params.clone()))
        }
    }
}

#[test]
fn unary_minus() {
    assert_eq!(negate(Ansi, arr(Int64Array::from(vec![i64::MIN]))).unwrap_err(), overflow("long overflow", ""));
    assert_eq!(negate(Ansi, arr(Int32Array::from(vec![i32::MIN]))).unwrap_err(), overflow("integer overflow", ""));
    assert_eq!(negate(Ansi, arr(Int16Array::from(vec![i16::MIN]))).unwrap_err(), overflow("short overflow", ""));
    assert_eq!(negate(Ansi, arr(Int8Array::from(vec![i8::MIN]))).unwrap_err(), overflow("byte overflow", ""));
    assert_eq!(
        i64s(&negate(Legacy, arr(Int64Array::from(vec![Some(i64::MIN), None, Some(5)]))).unwrap()),
        vec![Some(i64::MIN), None, Some(-5)]
    );
    assert_eq!(i16s(&negate(Legacy, arr(Int16Array::from(vec![i16::MIN]))).unwrap()), vec![Some(i16::MIN)]);
    assert_eq!(i8s(&negate(Ansi, arr(Int8Array::from(vec![Some(-127), None]))).unwrap()), vec![Some(127), None]);
    let z = f64s(&negate(Ansi, arr(Float64Array::from(vec![-0.0]))).unwrap())[0].unwrap();
    assert_eq!(z.to_bits(), 0.0f64.to_bits());
    assert_eq!(
        f32s(&negate(Legacy, arr(Float32Array::from(vec![f32::INFINITY]))).unwrap()),
        vec![Some(f32::NEG_INFINITY)]
    );
    let dec = negate(Ansi, arr(Decimal128Array::from(vec![Some(-125), None]).with_precision_and_scale(3, 1).unwrap()))
        .unwrap();
    assert_eq!(dec.data_type(), &DataType::Decimal128(3, 1));
    let dec = dec.as_any().downcast_ref::<Decimal128Array>().unwrap();
    assert_eq!(dec.iter().collect::<Vec<_>>(), vec![Some(125), None]);

    // Scalar child stays scalar.
    let schema = Schema::new(vec![Field::new("a", DataType::Int32, true)]);
    let batch = RecordBatch::try_new(Arc::new(schema.clone()), vec![arr(Int32Array::from(vec![1, 2]))]).unwrap();
    let e = arithmetic::create_negate(Arc::new(Literal::new(ScalarValue::Int32(Some(7)))), Legacy, &schema).unwrap();
    assert!(matches!(e.evaluate(&batch).unwrap(), ColumnarValue::Scalar(ScalarValue::Int32(Some(-7)))));
}

#[test]
fn scalar_operands() {
    let schema = schema2(&DataType::Int64);
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![
            arr(Int64Array::from(vec![Some(1), None, Some(i64::MAX)])),
            arr(Int64Array::from(vec![Some(0), Some(2), Some(3)])),
        ],
    )
    .unwrap();
    let lit = |v: Option<i64>| -> Arc<dyn PhysicalExpr> { Arc::new(Literal::new(ScalarValue::Int64(v))) };
    let col = |i: usize| -> Arc<dyn PhysicalExpr> { Arc::new(Column::new(if i == 0 { "a" } else { "b" }, i)) };
    let eval = |op, mode, l, r| {
        arithmetic::create(op, l, r, DataType::Int64, mode, &schema)
            .unwrap()
            .evaluate(&batch)
            .map(|v| v.into_array(3).unwrap())
    };
    // column + scalar
    assert_eq!(i64s(&eval(Add, Legacy, col(0), lit(Some(1))).unwrap()), vec![Some(2), None, Some(i64::MIN)]);
    assert!(eval(Add, Ansi, col(0), lit(Some(1))).is_err());
    // scalar - column
    assert_eq!(i64s(&eval(Subtract, Ansi, lit(Some(10)), col(1)).unwrap()), vec![Some(10), Some(8), Some(7)]);
    // NULL scalar: all NULL, as a scalar when both are scalars.
    assert_eq!(i64s(&eval(Multiply, Ansi, lit(None), col(0)).unwrap()), vec![None, None, None]);
    // Zero scalar divisor: NULL in LEGACY, error under ANSI (rows with a non-NULL dividend exist).
    assert_eq!(i64s(&eval(Remainder, Legacy, col(0), lit(Some(0))).unwrap()), vec![None, None, None]);
    assert!(eval(Remainder, Ansi, col(0), lit(Some(0))).is_err());
    // Two scalars give a scalar.
    let e = arithmetic::create(IntegralDivide, lit(Some(-7)), lit(Some(2)), DataType::Int64, Ansi, &schema).unwrap();
    assert!(matches!(e.evaluate(&batch).unwrap(), ColumnarValue::Scalar(ScalarValue::Int64(Some(-3)))));
    let e = arithmetic::create(Add, lit(Some(i64::MAX)), lit(Some(1)), DataType::Int64, Try, &schema).unwrap();
    assert!(matches!(e.evaluate(&batch).unwrap(), ColumnarValue::Scalar(ScalarValue::Int64(None))));
}

#[test]
fn unsupported_plans_are_refused() {
    let ok = |op, dt: DataType, result: DataType, mode| {
        let schema = schema2(&dt);
        arithmetic::create(op, Arc::new(Column::new("a", 0)), Arc::new(Column::new("b", 1)), result, mode, &schema)
            .is_ok()
    };
    // Spark's Divide only takes DOUBLE and DECIMAL; IntegralDivide only BIGINT and DECIMAL.
    assert!(!ok(Divide, DataType::Int32, DataType::Int32, Legacy));
    assert!(!ok(Divide, DataType::Float32, DataType::Float32, Legacy));
    assert!(ok(Divide, DataType::Float64, DataType::Float64, Ansi));
    assert!(!ok(IntegralDivide, DataType::Int32, DataType::Int64, Legacy));
    assert!(ok(IntegralDivide, DataType::Int64, DataType::Int64, Try));
    assert!(!ok(Add, DataType::Int32, DataType::Int64, Legacy));
    assert!(!ok(Add, DataType::Utf8, DataType::Utf8, Legacy));
    // Decimal `%` / `div` whose integral quotient can exceed 39 digits ("Division impossible" in Java).
    let dec = |p, s| DataType::Decimal128(p, s);
    let ok2 = |op, l: DataType, r: DataType, res: DataType| {
        let schema = Arc::new(Schema::new(vec![Field::new("a", l, true), Field::new("b", r, true)]));
        arithmetic::create(op, Arc::new(Column::new("a", 0)), Arc::new(Column::new("b", 1)), res, Legacy, &schema)
            .is_ok()
    };
    assert!(!ok2(Remainder, dec(38, 0), dec(38, 2), dec(38, 2)));
    assert!(ok2(Remainder, dec(38, 0), dec(2, 1), dec(2, 1)));
    assert!(!ok2(IntegralDivide, dec(38, 0), dec(10, 2), DataType::Int64));
    assert!(ok2(IntegralDivide, dec(38, 0), dec(10, 1), DataType::Int64));
    assert!(!ok2(IntegralDivide, dec(10, 0), dec(10, 0), dec(10, 0)));
    assert!(ok2(Multiply, dec(38, 10), dec(38, 10), dec(38, 6)));
    // Unary minus: no TRY in Spark.
    let schema = Schema::new(vec![Field::new("a", dec(35, 0), true), Field::new("b", DataType::Int32, true)]);
    assert!(arithmetic::create_negate(Arc::new(Column::new("a", 0)), Try, &schema).is_err());
    assert!(arithmetic::create_negate(Arc::new(Column::new("b", 1)), Try, &schema).is_err());
    assert!(arithmetic::create_negate(Arc::new(Column::new("b", 1)), Ansi, &schema).is_ok());
}

#[test]
fn nullability_follows_spark() {
    let schema = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Int32, false),
        Field::new("b", DataType::Int32, false),
        Field::new("c", DataType::Decimal128(10, 2), false),
    ]));
    let make = |op, mode, l: usize, r: usize, res: DataType| {
        let names = ["a", "b", "c"];
        arithmetic::create(
            op,
            Arc::new(Column::new(names[l], l)),
            Arc::new(Column::new(names[r], r)),
            res,
            mode,
            &schema,
        )
        .unwrap()
        .nullable(&schema)
        .unwrap()
    };
    assert!(!make(Add, Ansi, 0, 1, DataType::Int32));
    assert!(!make(Add, Legacy, 0, 1, DataType::Int32));
    assert!(make(Add, Try, 0, 1, DataType::Int32));
    assert!(make(Remainder, Ansi, 0, 1, DataType::Int32));
    assert!(!make(Add, Ansi, 2, 2, DataType::Decimal128(11, 2)));
    assert!(make(Add, Legacy, 2, 2, DataType::Decimal128(11, 2)));
}
