//! End-to-end native plans (proto → DataFusion → batches) over in-memory inputs, with a fake of Spark's
//! memory manager: results, spilling under a small budget, memory returned, and malformed plans rejected.

use std::sync::Arc;

use crate::common::*;
use arrow::array::{Array, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use ember_engine::execution::NativePlan;
use ember_engine::memory::FixedBroker;
use ember_engine::proto as pb;
use prost::Message;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, true),
        Field::new("d", DataType::Float64, true),
        Field::new("s", DataType::Utf8, true),
    ]))
}

fn batch(n: i64, offset: i64) -> RecordBatch {
    let k: Int64Array = (0..n).map(|i| if i % 7 == 0 { None } else { Some((i * 7919 + offset) % 1000) }).collect();
    let d: Float64Array = (0..n)
        .map(|i| match i % 5 {
            0 => Some(f64::NAN),
            1 => Some(-0.0),
            2 => Some(0.0),
            3 => None,
            _ => Some(i as f64 / 3.0),
        })
        .collect();
    let s: StringArray = (0..n).map(|i| Some(format!("v{}", (i + offset) % 13))).collect();
    RecordBatch::try_new(schema(), vec![Arc::new(k), Arc::new(d), Arc::new(s)]).unwrap()
}

fn run(plan: &pb::Plan, inputs: Vec<RecordBatch>, budget: usize) -> (Vec<RecordBatch>, Arc<FixedBroker>, u64) {
    let broker = Arc::new(FixedBroker::new(budget));
    let bytes = plan.encode_to_vec();
    let mut p = NativePlan::try_new(&bytes, vec![reader(inputs, schema())], broker.clone()).unwrap();
    let mut out = vec![];
    // Plans that only move strings carry them as bytes (`planner/strings.rs`); `schema()` has no binary column.
    while let Some(b) = p.next_batch().unwrap() {
        out.push(strings_as_text(b));
    }
    let spills: u64 = p.metrics().iter().map(|m| m.spill_count).sum();
    drop(p);
    (out, broker, spills)
}

fn sort_plan(fetch: u64) -> pb::Plan {
    let s = schema();
    let order = vec![
        pb::SortOrder { child: Some(col(1, &DataType::Float64)), ascending: true, nulls_first: true },
        pb::SortOrder { child: Some(col(0, &DataType::Int64)), ascending: false, nulls_first: false },
    ];
    let sort = op(1, pb::operator::Kind::Sort(pb::Sort { order, fetch, radix: true }), vec![input(0, &s)]);
    plan(sort, &s)
}

/// Spark's order for (d ASC NULLS FIRST, k DESC NULLS LAST): NaN largest, -0.0 == 0.0.
fn spark_order(a: &(Option<i64>, Option<f64>), b: &(Option<i64>, Option<f64>)) -> std::cmp::Ordering {
    use std::cmp::Ordering::*;
    let norm = |d: f64| if d.is_nan() { f64::INFINITY } else { d + 0.0 };
    let dc = match (a.1, b.1) {
        (None, None) => Equal,
        (None, _) => Less,
        (_, None) => Greater,
        (Some(x), Some(y)) => match (x.is_nan(), y.is_nan()) {
            (true, true) => Equal,
            (true, false) => Greater,
            (false, true) => Less,
            _ => norm(x).partial_cmp(&norm(y)).unwrap(),
        },
    };
    dc.then_with(|| match (a.0, b.0) {
        (None, None) => Equal,
        (None, _) => Greater,
        (_, None) => Less,
        (Some(x), Some(y)) => y.cmp(&x),
    })
}

fn rows(batches: &[RecordBatch]) -> Vec<(Option<i64>, Option<f64>)> {
    let mut out = vec![];
    for b in batches {
        let k = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        let d = b.column(1).as_any().downcast_ref::<Float64Array>().unwrap();
        for i in 0..b.num_rows() {
            out.push((k.is_valid(i).then(|| k.value(i)), d.is_valid(i).then(|| d.value(i))));
        }
    }
    out
}

#[test]
fn sort_matches_spark_order_in_memory() {
    let inputs: Vec<_> = (0..4).map(|i| batch(1000, i * 1000)).collect();
    let (out, broker, spills) = run(&sort_plan(0), inputs.clone(), usize::MAX);
    assert_eq!(spills, 0);
    let got = rows(&out);
    let mut expected = rows(&inputs);
    expected.sort_by(spark_order);
    assert_eq!(got.len(), expected.len());
    for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
        assert_eq!(spark_order(g, e), std::cmp::Ordering::Equal, "row {i}: {g:?} vs {e:?}");
    }
    assert_eq!(broker.used(), 0, "all memory returned");
}

#[test]
fn sort_spills_under_a_small_budget_and_returns_everything() {
    let inputs: Vec<_> = (0..200).map(|i| batch(4096, i * 4096)).collect();
    let (out, broker, spills) = run(&sort_plan(0), inputs.clone(), 4 << 20);
    assert!(spills > 0, "a 4 MiB budget must force the sort to spill");
    let got = rows(&out);
    let mut expected = rows(&inputs);
    expected.sort_by(spark_order);
    assert_eq!(got.len(), expected.len());
    assert!(got.iter().zip(&expected).all(|(g, e)| spark_order(g, e) == std::cmp::Ordering::Equal));
    assert_eq!(broker.used(), 0);
    assert!(broker.peak() <= 4 << 20);
}

/// The packed-key radix sort (integer key) through the memory broker: in memory it sorts every row itself; under
/// a 4 MiB budget it hands over to DataFusion's sort, which spills; all memory comes back either way.
#[test]
fn radix_sort_in_memory_and_handed_over_under_a_small_budget() {
    let s = schema();
    let order = vec![pb::SortOrder { child: Some(col(0, &DataType::Int64)), ascending: false, nulls_first: false }];
    let sort = op(1, pb::operator::Kind::Sort(pb::Sort { order, fetch: 0, radix: true }), vec![input(0, &s)]);
    let plan = plan(sort, &s);
    let keys = |batches: &[RecordBatch]| -> Vec<Option<i64>> { rows(batches).into_iter().map(|r| r.0).collect() };
    for (budget, inputs) in [(usize::MAX, 40), (4 << 20, 200)] {
        let inputs: Vec<_> = (0..inputs).map(|i| batch(4096, i * 4096)).collect();
        let mut expected = keys(&inputs);
        // DESC NULLS LAST.
        expected.sort_by(|a, b| match (a, b) {
            (None, None) => std::cmp::Ordering::Equal,
            (None, _) => std::cmp::Ordering::Greater,
            (_, None) => std::cmp::Ordering::Less,
            (Some(x), Some(y)) => y.cmp(x),
        });
        let broker = Arc::new(FixedBroker::new(budget));
        let mut p = NativePlan::from_proto(&plan, vec![reader(inputs.clone(), s.clone())], broker.clone()).unwrap();
        let mut out = vec![];
        while let Some(b) = p.next_batch().unwrap() {
            out.push(b);
        }
        assert_eq!(keys(&out), expected, "budget {budget}");
        let m = p.metrics();
        let named =
            |n: &str| m.iter().flat_map(|o| o.named.iter()).filter(|(k, _)| k == n).map(|(_, v)| *v).sum::<u64>();
        let spills: u64 = m.iter().map(|o| o.spill_count).sum();
        if budget == usize::MAX {
            assert_eq!((named("packed_sort_rows"), named("sort_fallbacks"), spills), (expected.len() as u64, 0, 0));
        } else {
            assert_eq!(named("sort_fallbacks"), 1);
            assert!(spills > 0, "the merge sort it handed over to spilled");
            assert!(broker.peak() <= 4 << 20);
        }
        drop(p);
        assert_eq!(broker.used(), 0, "all memory returned at budget {budget}");
    }
}

#[test]
fn top_k_sort() {
    let inputs: Vec<_> = (0..4).map(|i| batch(1000, i * 1000)).collect();
    let (out, _, _) = run(&sort_plan(10), inputs.clone(), usize::MAX);
    let got = rows(&out);
    let mut expected = rows(&inputs);
    expected.sort_by(spark_order);
    assert_eq!(got.len(), 10);
    assert!(got.iter().zip(&expected).all(|(g, e)| spark_order(g, e) == std::cmp::Ordering::Equal));
}

/// TakeOrderedAndProject's final step: top-k in Spark's order (NaN largest, -0.0 == 0.0, nulls as asked), the
/// offset dropped, then the projection; a limit beyond the input keeps every row; limit 0 or an offset not below
/// the limit is a plan error (the driver's fallback).
#[test]
fn take_ordered_and_project() {
    let s = schema();
    let toap = |limit: u64, offset: u64| {
        let order = vec![
            pb::SortOrder { child: Some(col(1, &DataType::Float64)), ascending: true, nulls_first: true },
            pb::SortOrder { child: Some(col(0, &DataType::Int64)), ascending: false, nulls_first: false },
        ];
        let t = pb::TakeOrderedAndProject {
            order,
            limit,
            offset,
            exprs: vec![col(0, &DataType::Int64), col(1, &DataType::Float64)],
            names: vec!["k".into(), "d".into()],
        };
        let out: SchemaRef = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new("d", DataType::Float64, true),
        ]));
        plan(op(0, pb::operator::Kind::TakeOrderedAndProject(t), vec![input(0, &s)]), &out)
    };
    let inputs: Vec<_> = (0..4).map(|i| batch(1000, i * 1000)).collect();
    let mut expected = rows(&inputs);
    expected.sort_by(spark_order);
    for (limit, offset) in [(10u64, 0u64), (25, 7), (5000, 3990), (1, 0)] {
        let (out, broker, _) = run(&toap(limit, offset), inputs.clone(), usize::MAX);
        let got = rows(&out);
        let want: Vec<_> = expected.iter().skip(offset as usize).take((limit - offset) as usize).collect();
        assert_eq!(got.len(), want.len(), "limit {limit} offset {offset}");
        for (i, (g, e)) in got.iter().zip(&want).enumerate() {
            assert_eq!(spark_order(g, e), std::cmp::Ordering::Equal, "limit {limit} offset {offset} row {i}");
        }
        assert_eq!(broker.used(), 0);
    }
    let (out, _, _) = run(&toap(10, 0), vec![], usize::MAX);
    assert_eq!(rows(&out).len(), 0, "no input, no rows");
    for (limit, offset) in [(0u64, 0u64), (5, 5)] {
        let bytes = toap(limit, offset).encode_to_vec();
        let broker = Arc::new(FixedBroker::new(usize::MAX));
        assert!(NativePlan::try_new(&bytes, vec![reader(vec![], schema())], broker).is_err(), "{limit} {offset}");
    }
}

#[test]
fn filter_project_limit() {
    let s = schema();
    let filter = op(
        2,
        pb::operator::Kind::Filter(pb::Filter {
            predicate: Some(cmp(pb::CmpOp::Gt, col(0, &DataType::Int64), lit_long(500))),
        }),
        vec![input(0, &s)],
    );
    let out_schema: SchemaRef =
        Arc::new(Schema::new(vec![Field::new("s2", DataType::Utf8, true), Field::new("k2", DataType::Int64, true)]));
    let project = op(
        1,
        pb::operator::Kind::Projection(pb::Projection {
            exprs: vec![col(2, &DataType::Utf8), col(0, &DataType::Int64)],
            names: vec!["s2".into(), "k2".into()],
        }),
        vec![filter],
    );
    let limit = op(0, pb::operator::Kind::Limit(pb::Limit { limit: 50, offset: 5 }), vec![project]);
    let inputs: Vec<_> = (0..3).map(|i| batch(100, i * 100)).collect();
    let (out, _, _) = {
        let broker = Arc::new(FixedBroker::new(usize::MAX));
        let mut p =
            NativePlan::from_proto(&plan(limit, &out_schema), vec![reader(inputs.clone(), s.clone())], broker.clone())
                .unwrap();
        let mut out = vec![];
        while let Some(b) = p.next_batch().unwrap() {
            out.push(strings_as_text(b));
        }
        let m = p.metrics();
        assert!(m.iter().any(|m| m.id == 2 && m.output_rows > 0), "filter metrics reported: {m:?}");
        (out, broker, 0)
    };
    let mut expected = vec![];
    for b in &inputs {
        let k = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        let sv = b.column(2).as_any().downcast_ref::<StringArray>().unwrap();
        for i in 0..b.num_rows() {
            if k.is_valid(i) && k.value(i) > 500 {
                expected.push((sv.value(i).to_string(), k.value(i)));
            }
        }
    }
    let expected: Vec<_> = expected.into_iter().skip(5).take(50).collect();
    let mut got = vec![];
    for b in &out {
        assert_eq!(b.schema(), out_schema);
        let sv = b.column(0).as_any().downcast_ref::<StringArray>().unwrap();
        let k = b.column(1).as_any().downcast_ref::<Int64Array>().unwrap();
        for i in 0..b.num_rows() {
            got.push((sv.value(i).to_string(), k.value(i)));
        }
    }
    assert_eq!(got, expected);
}

#[test]
fn malformed_plans_are_errors() {
    let s = schema();
    let broker = || Arc::new(FixedBroker::new(usize::MAX));
    // Wrong column type.
    let bad = op(
        1,
        pb::operator::Kind::Filter(pb::Filter {
            predicate: Some(cmp(pb::CmpOp::Gt, col(0, &DataType::Int32), lit_long(1))),
        }),
        vec![input(0, &s)],
    );
    assert!(NativePlan::from_proto(&plan(bad, &s), vec![reader(vec![], s.clone())], broker()).is_err());
    // Column out of range.
    let bad = op(
        1,
        pb::operator::Kind::Filter(pb::Filter {
            predicate: Some(cmp(pb::CmpOp::Gt, col(9, &DataType::Int64), lit_long(1))),
        }),
        vec![input(0, &s)],
    );
    assert!(NativePlan::from_proto(&plan(bad, &s), vec![reader(vec![], s.clone())], broker()).is_err());
    // Missing input stream.
    assert!(NativePlan::from_proto(&plan(input(3, &s), &s), vec![], broker()).is_err());
    // Output schema Spark does not expect.
    let other: SchemaRef = Arc::new(Schema::new(vec![Field::new("x", DataType::Int32, true)]));
    assert!(NativePlan::from_proto(&plan(input(0, &s), &other), vec![reader(vec![], s.clone())], broker()).is_err());
    // Operator without children.
    let bad = op(1, pb::operator::Kind::Sort(pb::Sort::default()), vec![]);
    assert!(NativePlan::from_proto(&plan(bad, &s), vec![], broker()).is_err());
}

#[test]
fn random_bytes_never_panic() {
    use rand::{Rng, SeedableRng};
    let s = schema();
    let valid = sort_plan(3).encode_to_vec();
    let mut rng = rand::rngs::StdRng::seed_from_u64(42);
    for i in 0..3000 {
        let bytes: Vec<u8> = if i % 2 == 0 {
            (0..rng.random_range(0..200)).map(|_| rng.random()).collect()
        } else {
            // Mutations of a valid plan reach deeper into the planner than pure noise.
            let mut b = valid.clone();
            for _ in 0..rng.random_range(1..6) {
                let pos = rng.random_range(0..b.len());
                b[pos] = rng.random();
            }
            b
        };
        let result = std::panic::catch_unwind(|| {
            let broker = Arc::new(FixedBroker::new(usize::MAX));
            if let Ok(mut p) = NativePlan::try_new(&bytes, vec![reader(vec![batch(10, 0)], s.clone())], broker) {
                while let Ok(Some(_)) = p.next_batch() {}
            }
        });
        assert!(result.is_ok(), "panic on input {bytes:?}");
    }
}

#[test]
fn dropping_a_spilling_plan_mid_stream_returns_memory_and_deletes_spill_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = sort_plan(0);
    let task = pb::TaskSettings { spill_dirs: vec![dir.path().to_string_lossy().into_owned()], ..Default::default() };
    p.config.as_mut().unwrap().spill_compression = "lz4".into();
    let inputs: Vec<_> = (0..200).map(|i| batch(4096, i * 4096)).collect();
    let broker = Arc::new(FixedBroker::new(4 << 20));
    let mut plan = NativePlan::for_task(&p, &task, vec![reader(inputs, schema())], broker.clone()).unwrap();
    // The first output batch comes after the whole input was sorted and spilled.
    assert!(plan.next_batch().unwrap().is_some());
    assert!(plan.metrics().iter().map(|m| m.spill_count).sum::<u64>() > 0);
    let files = |d: &std::path::Path| walk(d).len();
    assert!(files(dir.path()) > 0, "spill files exist while the plan runs");
    drop(plan); // as when Spark kills the task
    assert_eq!(broker.used(), 0, "every reserved byte returned");
    assert_eq!(files(dir.path()), 0, "no spill file left behind");
}

fn walk(d: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = vec![];
    for e in std::fs::read_dir(d).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn zero_column_batches_keep_their_row_count() {
    let empty_schema: SchemaRef = Arc::new(Schema::empty());
    let batches: Vec<RecordBatch> = (0..3)
        .map(|n| {
            RecordBatch::try_new_with_options(
                empty_schema.clone(),
                vec![],
                &arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(10 + n)),
            )
            .unwrap()
        })
        .collect();
    let limit = op(0, pb::operator::Kind::Limit(pb::Limit { limit: 25, offset: 0 }), vec![input(0, &empty_schema)]);
    let broker = Arc::new(FixedBroker::new(usize::MAX));
    let mut p =
        NativePlan::from_proto(&plan(limit, &empty_schema), vec![reader(batches, empty_schema.clone())], broker)
            .unwrap();
    let mut rows = 0;
    while let Some(b) = p.next_batch().unwrap() {
        assert_eq!(b.num_columns(), 0);
        rows += b.num_rows();
    }
    assert_eq!(rows, 25);
}

#[test]
fn plans_can_nest_on_one_thread() {
    // The input of the outer plan pulls an inner plan on the same thread, as when a Spark operator between two
    // native blocks of one stage feeds the second from the first.
    struct InnerPlanReader {
        inner: NativePlan,
        schema: SchemaRef,
    }
    impl Iterator for InnerPlanReader {
        type Item = Result<RecordBatch, arrow::error::ArrowError>;
        fn next(&mut self) -> Option<Self::Item> {
            self.inner.next_batch().map_err(|e| arrow::error::ArrowError::ExternalError(Box::new(e))).transpose()
        }
    }
    impl arrow::record_batch::RecordBatchReader for InnerPlanReader {
        fn schema(&self) -> SchemaRef {
            self.schema.clone()
        }
    }
    let s = schema();
    let broker = Arc::new(FixedBroker::new(usize::MAX));
    let inputs: Vec<_> = (0..3).map(|i| batch(500, i * 500)).collect();
    let inner = NativePlan::from_proto(&sort_plan(0), vec![reader(inputs.clone(), s.clone())], broker.clone()).unwrap();
    let outer_reader = Box::new(InnerPlanReader { inner, schema: s.clone() });
    let mut outer = NativePlan::from_proto(&sort_plan(7), vec![outer_reader], broker.clone()).unwrap();
    let mut got = vec![];
    while let Some(b) = outer.next_batch().unwrap() {
        got.push(b);
    }
    let mut expected = rows(&inputs);
    expected.sort_by(spark_order);
    let got = rows(&got);
    assert_eq!(got.len(), 7);
    assert!(got.iter().zip(&expected).all(|(g, e)| spark_order(g, e) == std::cmp::Ordering::Equal));
}

/// The engine's one support call decides the casts that follow `Double.toString` by the JVM's version in the
/// request's `ExecConfig`: refused below JDK 19 (with the reason naming it), planned from 19 on and when no JVM
/// is named (0).
#[test]
fn support_of_double_to_string_casts_depends_on_the_jdk() {
    let schema = Arc::new(Schema::new(vec![Field::new("d", DataType::Float64, true)]));
    let cast = pb::Expr {
        kind: Some(pb::expr::Kind::Cast(Box::new(pb::Cast {
            child: Some(Box::new(col(0, &DataType::Float64))),
            to: Some(pb_type(&DataType::Utf8)),
            eval_mode: pb::EvalMode::Legacy as i32,
            timezone: "UTC".into(),
            query_context: 0,
        }))),
    };
    let projection = op(
        1,
        pb::operator::Kind::Projection(pb::Projection { exprs: vec![cast], names: vec!["s".into()] }),
        vec![input(0, &schema)],
    );
    let support = |jdk| {
        ember_engine::planner::check_support(&projection, &pb::ExecConfig { jdk_feature: jdk, ..Default::default() })
    };
    let refused = support(17).unwrap_err().to_string();
    assert!(refused.contains("JDK 19") && refused.contains("this JVM is 17"), "{refused}");
    support(21).unwrap();
    support(0).unwrap();
}

/// The pool's headroom comes from the plan's config (spark.ember.memory.headroomBytes): 1 MiB when unset, none
/// when 0; the sort answers the same either way.
#[test]
fn the_pool_headroom_is_configured_by_the_plan() {
    // Debug strings: NaN equals NaN.
    let expected = format!("{:?}", rows(&run(&sort_plan(0), vec![batch(5000, 0)], usize::MAX).0));
    for (headroom, held) in [(None, 1 << 20), (Some(0), 0), (Some(64 << 10), 64 << 10)] {
        let mut plan = sort_plan(0);
        plan.config.as_mut().unwrap().memory_headroom_bytes = headroom;
        let broker = Arc::new(FixedBroker::new(usize::MAX));
        let p =
            NativePlan::try_new(&plan.encode_to_vec(), vec![reader(vec![batch(5000, 0)], schema())], broker.clone())
                .unwrap();
        assert_eq!(broker.used(), held, "held up front with headroom {headroom:?}");
        drop(p);
        assert_eq!(broker.used(), 0);
        let got = format!("{:?}", rows(&run(&plan, vec![batch(5000, 0)], 4 << 20).0));
        assert!(got == expected, "headroom {headroom:?}: other rows");
    }
}

/// Functions whose answer depends on the JVM are decided by the engine from the request's `jdk_feature`: round of
/// a double (Spark rounds `Double.toString`'s digits, which JDK 19 changed) below JDK 19, and the functions Spark
/// computes with `java.lang.Math` (fdlibm only up to JDK 21) above JDK 21.
#[test]
fn support_of_jvm_dependent_functions_depends_on_the_jdk() {
    let schema = Arc::new(Schema::new(vec![Field::new("d", DataType::Float64, true)]));
    let function = |name: &str, args: Vec<pb::Expr>| {
        let f = pb::Expr {
            kind: Some(pb::expr::Kind::ScalarFunction(pb::ScalarFunction {
                name: name.into(),
                args,
                return_type: Some(pb_type(&DataType::Float64)),
                eval_mode: pb::EvalMode::Legacy as i32,
                timezone: "UTC".into(),
                query_context: 0,
            })),
        };
        op(
            1,
            pb::operator::Kind::Projection(pb::Projection { exprs: vec![f], names: vec!["r".into()] }),
            vec![input(0, &schema)],
        )
    };
    let scale = pb::Expr {
        kind: Some(pb::expr::Kind::Literal(pb::Literal {
            r#type: Some(pb_type(&DataType::Int32)),
            is_null: false,
            value: Some(pb::literal::Value::LongValue(2)),
        })),
    };
    let round = function("round", vec![col(0, &DataType::Float64), scale]);
    let cbrt = function("cbrt", vec![col(0, &DataType::Float64)]);
    let support = |plan: &pb::Operator, jdk| {
        ember_engine::planner::check_support(plan, &pb::ExecConfig { jdk_feature: jdk, ..Default::default() })
    };
    let refused = support(&round, 17).unwrap_err().to_string();
    assert!(refused.contains("JDK 19") && refused.contains("this JVM is 17"), "{refused}");
    support(&round, 19).unwrap();
    support(&round, 0).unwrap();
    let refused = support(&cbrt, 25).unwrap_err().to_string();
    assert!(refused.contains("cbrt on JDK 25"), "{refused}");
    support(&cbrt, 21).unwrap();
    support(&cbrt, 17).unwrap();
}

fn null_long() -> pb::Expr {
    pb::Expr {
        kind: Some(pb::expr::Kind::Literal(pb::Literal {
            r#type: Some(pb_type(&DataType::Int64)),
            is_null: true,
            value: None,
        })),
    }
}

/// `ROLLUP(k, s)`'s Expand: (k, s, 0), (k, NULL, 1), (NULL, NULL, 3) per row, with the measure `d` carried.
fn rollup_expand() -> (pb::Operator, SchemaRef) {
    let s = schema();
    let null_str = pb::Expr {
        kind: Some(pb::expr::Kind::Literal(pb::Literal {
            r#type: Some(pb_type(&DataType::Utf8)),
            is_null: true,
            value: None,
        })),
    };
    let (k, d, st) = (col(0, &DataType::Int64), col(1, &DataType::Float64), col(2, &DataType::Utf8));
    let projections = vec![
        vec![d.clone(), k.clone(), st.clone(), lit_long(0)],
        vec![d.clone(), k.clone(), null_str.clone(), lit_long(1)],
        vec![d.clone(), null_long(), null_str, lit_long(3)],
    ];
    let names = vec!["d".to_string(), "k".into(), "s".into(), "gid".into()];
    let expand = op(
        1,
        pb::operator::Kind::Expand(pb::Expand {
            projections: projections.into_iter().map(|exprs| pb::ExpandProjection { exprs }).collect(),
            names,
        }),
        vec![input(0, &s)],
    );
    let out: SchemaRef = Arc::new(Schema::new(vec![
        Field::new("d", DataType::Float64, true),
        Field::new("k", DataType::Int64, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("gid", DataType::Int64, false),
    ]));
    (expand, out)
}

#[test]
fn expand_emits_each_batch_under_every_projection() {
    let (expand, out_schema) = rollup_expand();
    // Empty batches in between are skipped, not expanded into empty output batches.
    let inputs = vec![batch(700, 0), batch(0, 0), batch(301, 5000)];
    let (out, broker, _) = run(&plan(expand.clone(), &out_schema), inputs.clone(), usize::MAX);
    assert_eq!(broker.used(), 0);
    let mut want = vec![];
    for b in inputs.iter().filter(|b| b.num_rows() > 0) {
        let (k, d, s) = (b.column(0), b.column(1), b.column(2));
        for (gid, keep_k, keep_s) in [(0, true, true), (1, true, false), (3, false, false)] {
            for r in 0..b.num_rows() {
                let cell = |c: &Arc<dyn Array>, keep: bool| {
                    let v = datafusion_common::ScalarValue::try_from_array(c, r).unwrap();
                    if keep {
                        format!("{v:?}")
                    } else {
                        format!("{:?}", datafusion_common::ScalarValue::try_from(v.data_type()).unwrap())
                    }
                };
                want.push(format!("{}|{}|{}|Int64({gid})", cell(d, true), cell(k, keep_k), cell(s, keep_s)));
            }
        }
    }
    assert_eq!(out.len(), 6, "one output batch per projection of each non-empty input batch");
    for b in &out {
        assert_eq!(b.schema(), out_schema);
    }
    assert_eq!(rows_in_order(&out), want, "every row under every projection, batch by batch");
    let (out, _, _) = run(&plan(expand, &out_schema), vec![], usize::MAX);
    assert!(out.is_empty(), "no input, no rows");
}

#[test]
fn expand_raises_a_projections_error_and_rejects_malformed_plans() {
    let s = schema();
    let overflow = pb::Expr {
        kind: Some(pb::expr::Kind::Arithmetic(Box::new(pb::Arithmetic {
            op: pb::ArithOp::Multiply as i32,
            left: Some(Box::new(col(0, &DataType::Int64))),
            right: Some(Box::new(lit_long(i64::MAX))),
            result_type: Some(pb_type(&DataType::Int64)),
            eval_mode: pb::EvalMode::Ansi as i32,
            query_context: 0,
        }))),
    };
    let expand = |projections: Vec<Vec<pb::Expr>>, names: Vec<String>| {
        op(
            1,
            pb::operator::Kind::Expand(pb::Expand {
                projections: projections.into_iter().map(|exprs| pb::ExpandProjection { exprs }).collect(),
                names,
            }),
            vec![input(0, &s)],
        )
    };
    let out: SchemaRef = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, true)]));
    // The second projection overflows (ANSI) on the first row whose k is not 0, 1 or NULL.
    let p = plan(expand(vec![vec![col(0, &DataType::Int64)], vec![overflow]], vec!["x".into()]), &out);
    let broker = Arc::new(FixedBroker::new(usize::MAX));
    let mut native =
        NativePlan::try_new(&p.encode_to_vec(), vec![reader(vec![batch(100, 0)], s.clone())], broker.clone()).unwrap();
    let (got, err) = drain(&mut native, None);
    assert_eq!(got.iter().map(|b| b.num_rows()).sum::<usize>(), 100, "the first projection's batch comes out");
    let err = err.expect("the overflow is raised").to_string();
    assert!(err.contains("ARITHMETIC_OVERFLOW"), "{err}");
    drop(native);
    assert_eq!(broker.used(), 0);
    // Malformed: no projection; a projection short of a column; types that differ between projections.
    let bad = [
        expand(vec![], vec!["x".into()]),
        expand(vec![vec![col(0, &DataType::Int64)], vec![]], vec!["x".into()]),
        expand(vec![vec![col(0, &DataType::Int64)], vec![col(1, &DataType::Float64)]], vec!["x".into()]),
    ];
    for b in bad {
        let bytes = plan(b, &out).encode_to_vec();
        let broker = Arc::new(FixedBroker::new(usize::MAX));
        assert!(NativePlan::try_new(&bytes, vec![reader(vec![], s.clone())], broker).is_err());
    }
}
