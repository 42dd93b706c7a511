//! Decimal arithmetic against golden values computed by Spark 4.1.3's own Catalyst expressions.
//!
//! `data/decimal_arithmetic_spark.tsv` was produced with jshell over the Spark 4.1.3 jars: for each line, operands
//! bound from a row (as Spark reads them from a column), `Add/Subtract/Multiply/Divide/Remainder/IntegralDivide`
//! with `NumericEvalContext(mode, allowPrecisionLoss)` evaluated in LEGACY, ANSI and TRY, and `UnaryMinus`.
//! Columns: op, left (p,s), right (p,s), Spark's result type, left unscaled, right unscaled, then the LEGACY, ANSI
//! and TRY results: a plain decimal string, `null`, `E:<error class>;<param>=<value>...` for a Spark error, or
//! `X:<java exception>` for a plain Java exception (Ember must refuse those types at planning time).
//! Unary minus lines have one result column.
use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Decimal128Array, Int64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};
use datafusion_common::ScalarValue;
use datafusion_expr::ColumnarValue;
use datafusion_physical_expr::expressions::{Column, Literal};
use datafusion_physical_expr::PhysicalExpr;
use ember_engine::error::find_spark_error;
use ember_engine::expressions::arithmetic;
use ember_engine::expressions::arithmetic::Op;
use ember_engine::expressions::Mode;

const GOLDEN: &str = include_str!("../data/decimal_arithmetic_spark.tsv");

fn dec_type(s: &str) -> DataType {
    let s = s.trim_start_matches('d');
    let (p, sc) = s.split_once(',').unwrap();
    DataType::Decimal128(p.parse().unwrap(), sc.parse().unwrap())
}

fn result_type(s: &str) -> DataType {
    if s == "i64" {
        DataType::Int64
    } else {
        dec_type(s)
    }
}

fn plain(v: i128, scale: i8) -> String {
    let digits = v.unsigned_abs().to_string();
    let scale = scale as usize;
    let mut out = String::new();
    if v < 0 {
        out.push('-');
    }
    if scale == 0 {
        out.push_str(&digits);
        return out;
    }
    let padded =
        if digits.len() <= scale { format!("{}{}", "0".repeat(scale + 1 - digits.len()), digits) } else { digits };
    let (i, f) = padded.split_at(padded.len() - scale);
    out.push_str(i);
    out.push('.');
    out.push_str(f);
    out
}

fn render(a: &ArrayRef, i: usize) -> String {
    if a.is_null(i) {
        return "null".to_string();
    }
    match a.data_type() {
        DataType::Decimal128(_, s) => plain(a.as_any().downcast_ref::<Decimal128Array>().unwrap().value(i), *s),
        DataType::Int64 => a.as_any().downcast_ref::<Int64Array>().unwrap().value(i).to_string(),
        t => panic!("unexpected result type {t}"),
    }
}

fn render_error(e: &datafusion_common::DataFusionError) -> String {
    let spark = find_spark_error(e).unwrap_or_else(|| panic!("not a Spark error: {e}"));
    let params: BTreeMap<_, _> = spark.params.iter().cloned().collect();
    let mut s = format!("E:{}", spark.error_class);
    for (k, v) in params {
        s.push_str(&format!(";{k}={v}"));
    }
    s
}

const MODES: [Mode; 3] = [Mode::Legacy, Mode::Ansi, Mode::Try];

fn op_of(name: &str) -> Op {
    match name {
        "add" => Op::Add,
        "sub" => Op::Sub,
        "mul" => Op::Mul,
        "div" => Op::Div,
        "rem" => Op::Rem,
        "idiv" => Op::IntDiv,
        o => panic!("op {o}"),
    }
}

fn eval(e: &Arc<dyn PhysicalExpr>, batch: &RecordBatch) -> Result<ArrayRef, datafusion_common::DataFusionError> {
    e.evaluate(batch)?.into_array(batch.num_rows())
}

/// (op, left type, right type, result type, mode index).
type GroupKey = (String, String, String, String, usize);

#[test]
fn decimal_binary_ops_match_spark() {
    let mut checked = 0;
    let mut refused = 0;
    // (op, types, mode) → rows expected to succeed, to also run them as one multi-row batch.
    let mut groups: BTreeMap<GroupKey, Vec<(i128, i128, String)>> = BTreeMap::new();
    // `%` and `div` whose integral quotient can exceed 39 digits, where Spark can throw Java's "Division
    // impossible": Ember refuses these types for every value.
    let refused_type = |op: &str, l: &DataType, r: &DataType| match (l, r) {
        (DataType::Decimal128(p1, s1), DataType::Decimal128(_, s2)) => {
            (op == "rem" || op == "idiv") && (*p1 as i32 - *s1 as i32 + *s2 as i32) > 39
        }
        _ => false,
    };
    for line in GOLDEN.lines().filter(|l| !l.starts_with("neg")) {
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), 9, "{line}");
        let (lt, rt, res) = (dec_type(f[1]), dec_type(f[2]), result_type(f[3]));
        let (a, b): (i128, i128) = (f[4].parse().unwrap(), f[5].parse().unwrap());
        let schema = Arc::new(Schema::new(vec![Field::new("a", lt.clone(), true), Field::new("b", rt.clone(), true)]));
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(Decimal128Array::from(vec![a]).with_data_type(lt.clone())),
                Arc::new(Decimal128Array::from(vec![b]).with_data_type(rt.clone())),
            ],
        )
        .unwrap();
        for (m, mode) in MODES.iter().enumerate() {
            let expected = f[6 + m];
            let created = arithmetic::create(
                op_of(f[0]),
                Arc::new(Column::new("a", 0)),
                Arc::new(Column::new("b", 1)),
                res.clone(),
                *mode,
                &schema,
            );
            assert!(!expected.starts_with("X:") || refused_type(f[0], &lt, &rt), "{line}: unexpected Java exception");
            if refused_type(f[0], &lt, &rt) {
                assert!(created.is_err(), "{line}: Spark can throw a Java exception; Ember must refuse the plan");
                refused += 1;
                continue;
            }
            let e = created.unwrap_or_else(|err| panic!("{line} {mode:?}: {err}"));
            let got = match eval(&e, &batch) {
                Ok(arr) => render(&arr, 0),
                Err(err) => render_error(&err),
            };
            assert_eq!(got, expected, "{line} in {mode:?}");
            checked += 1;
            if !expected.starts_with("E:") {
                let key = (f[0].to_string(), f[1].to_string(), f[2].to_string(), f[3].to_string(), m);
                groups.entry(key).or_default().push((a, b, expected.to_string()));
            }
        }
    }
    assert!(checked > 3000, "only {checked} golden results checked");
    assert!(refused > 0);

    // The same results from multi-row batches (with a NULL row), and with the divisor as a scalar.
    for ((op, l, r, res, m), rows) in groups {
        let (lt, rt, res) = (dec_type(&l), dec_type(&r), result_type(&res));
        let schema = Arc::new(Schema::new(vec![Field::new("a", lt.clone(), true), Field::new("b", rt.clone(), true)]));
        let mut av: Vec<Option<i128>> = rows.iter().map(|x| Some(x.0)).collect();
        let mut bv: Vec<Option<i128>> = rows.iter().map(|x| Some(x.1)).collect();
        av.push(None);
        bv.push(Some(1));
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(Decimal128Array::from(av).with_data_type(lt.clone())),
                Arc::new(Decimal128Array::from(bv).with_data_type(rt.clone())),
            ],
        )
        .unwrap();
        let e = arithmetic::create(
            op_of(&op),
            Arc::new(Column::new("a", 0)),
            Arc::new(Column::new("b", 1)),
            res.clone(),
            MODES[m],
            &schema,
        )
        .unwrap();
        let out = eval(&e, &batch).unwrap();
        for (i, row) in rows.iter().enumerate() {
            assert_eq!(render(&out, i), row.2, "{op} {l} {r} row {i} as a batch");
        }
        assert!(out.is_null(rows.len()));

        // Scalar right operand, one row at a time.
        for row in rows.iter().take(3) {
            let lit = Arc::new(Literal::new(ScalarValue::Decimal128(Some(row.1), rt_p(&rt), rt_s(&rt))));
            let e = arithmetic::create(op_of(&op), Arc::new(Column::new("a", 0)), lit, res.clone(), MODES[m], &schema)
                .unwrap();
            let one = RecordBatch::try_new(
                Arc::clone(&schema),
                vec![
                    Arc::new(Decimal128Array::from(vec![row.0]).with_data_type(lt.clone())),
                    Arc::new(Decimal128Array::from(vec![row.1]).with_data_type(rt.clone())),
                ],
            )
            .unwrap();
            assert_eq!(render(&eval(&e, &one).unwrap(), 0), row.2, "{op} {l} {r} with a scalar divisor");
        }
    }
}

fn rt_p(t: &DataType) -> u8 {
    match t {
        DataType::Decimal128(p, _) => *p,
        _ => unreachable!(),
    }
}

fn rt_s(t: &DataType) -> i8 {
    match t {
        DataType::Decimal128(_, s) => *s,
        _ => unreachable!(),
    }
}

#[test]
fn decimal_unary_minus_matches_spark() {
    let mut checked = 0;
    for line in GOLDEN.lines().filter(|l| l.starts_with("neg")) {
        let f: Vec<&str> = line.split('\t').collect();
        let t = dec_type(f[1]);
        let u: i128 = f[4].parse().unwrap();
        let schema = Arc::new(Schema::new(vec![Field::new("a", t.clone(), true)]));
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![Arc::new(Decimal128Array::from(vec![u]).with_data_type(t.clone()))],
        )
        .unwrap();
        for mode in [Mode::Legacy, Mode::Ansi] {
            // Above 34 digits Spark negates through a Scala BigDecimal that rounds to 34 digits (HALF_EVEN) and
            // may then fail.
            let e = arithmetic::create_negate(Arc::new(Column::new("a", 0)), mode, &schema).unwrap();
            let got = match eval(&e, &batch) {
                Ok(a) => render(&a, 0),
                Err(err) => render_error(&err),
            };
            assert_eq!(got, f[6], "{line}");
            checked += 1;
        }
    }
    assert!(checked > 20);
}

#[test]
fn golden_scalar_scalar_is_scalar() {
    // Both operands literal: the result stays a scalar.
    let schema = Schema::new(vec![Field::new("x", DataType::Int32, true)]);
    let batch =
        RecordBatch::try_new(Arc::new(schema.clone()), vec![Arc::new(arrow::array::Int32Array::from(vec![1, 2]))])
            .unwrap();
    let l = Arc::new(Literal::new(ScalarValue::Decimal128(Some(15), 3, 1)));
    let r = Arc::new(Literal::new(ScalarValue::Decimal128(Some(10), 3, 1)));
    let e = arithmetic::create(Op::Div, l, r, DataType::Decimal128(9, 6), Mode::Ansi, &schema).unwrap();
    match e.evaluate(&batch).unwrap() {
        ColumnarValue::Scalar(ScalarValue::Decimal128(Some(v), 9, 6)) => assert_eq!(v, 1_500_000),
        other => panic!("{other:?}"),
    }
}
