//! The shuffle writer end to end (proto plan → blocks): every row lands in exactly one block of the partition
//! Spark's `HashPartitioning` gives it (checked against a row-at-a-time reference built on the scalar hash
//! functions, themselves pinned to Spark's values in `spark_hash`'s unit tests), in input order; blocks decode as
//! Arrow IPC streams of the block schema; partitions ascending over the whole output, also after spills (at a
//! threshold or on the pool's refusals, with the spill files gone at the end); empty inputs.

use std::io::Cursor;
use std::sync::Arc;

use crate::common::*;
use arrow::array::{
    Array, ArrayRef, AsArray, BinaryArray, BooleanArray, Date32Array, Decimal128Array, Float64Array, Int32Array,
    Int64Array, RecordBatch, StringArray, StringViewArray, UInt32Array,
};
use arrow::compute::{concat_batches, take_record_batch};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::ipc::reader::StreamReader;
use datafusion_execution::TaskContext;
use datafusion_physical_plan::ExecutionPlan;
use ember_engine::execution::NativePlan;
use ember_engine::memory::FixedBroker;
use ember_engine::operators::{InputExec, ShuffleWriterExec};
use ember_engine::proto as pb;
use ember_engine::spark_hash::{hash_bytes, hash_decimal, hash_f64, hash_int, hash_long, pmod, SPARK_HASH_SEED};
use prost::Message;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

pub(crate) fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("i", DataType::Int32, true),
        Field::new("l", DataType::Int64, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("d", DataType::Float64, true),
        Field::new("small_dec", DataType::Decimal128(10, 2), true),
        Field::new("big_dec", DataType::Decimal128(25, 3), true),
        Field::new("b", DataType::Boolean, true),
        Field::new("date", DataType::Date32, true),
    ]))
}

fn random_batch(rng: &mut StdRng, rows: usize) -> RecordBatch {
    let null = |rng: &mut StdRng| rng.random_range(0..8) == 0;
    let i: Int32Array = (0..rows).map(|_| (!null(rng)).then(|| rng.random_range(-50..50))).collect();
    let l: Int64Array =
        (0..rows).map(|_| (!null(rng)).then(|| rng.random::<i64>() >> rng.random_range(0..64))).collect();
    let alphabet = ['a', 'b', 'é', '日', 'ÿ', 'z', '0'];
    let s: StringArray = (0..rows)
        .map(|_| {
            (!null(rng)).then(|| {
                let len = rng.random_range(0..10);
                (0..len).map(|_| alphabet[rng.random_range(0..alphabet.len())]).collect::<String>()
            })
        })
        .collect();
    let d: Float64Array = (0..rows)
        .map(|_| {
            (!null(rng)).then(|| match rng.random_range(0..6) {
                0 => f64::NAN,
                1 => -0.0,
                2 => 0.0,
                _ => rng.random_range(-1e6..1e6),
            })
        })
        .collect();
    let small: Decimal128Array = (0..rows)
        .map(|_| (!null(rng)).then(|| rng.random_range(-9_999_999_999i128..=9_999_999_999)))
        .collect::<Decimal128Array>()
        .with_precision_and_scale(10, 2)
        .unwrap();
    let big: Decimal128Array = (0..rows)
        .map(|_| {
            (!null(rng)).then(|| rng.random_range(-(10i128.pow(25) - 1)..10i128.pow(25)) >> rng.random_range(0..80))
        })
        .collect::<Decimal128Array>()
        .with_precision_and_scale(25, 3)
        .unwrap();
    let b: BooleanArray = (0..rows).map(|_| (!null(rng)).then(|| rng.random_bool(0.5))).collect();
    let date: Date32Array = (0..rows).map(|_| (!null(rng)).then(|| rng.random_range(-20000..30000))).collect();
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(i),
            Arc::new(l),
            Arc::new(s),
            Arc::new(d),
            Arc::new(small),
            Arc::new(big),
            Arc::new(b),
            Arc::new(date),
        ],
    )
    .unwrap()
}

pub(crate) fn random_batches(seed: u64, batches: usize, rows: usize) -> Vec<RecordBatch> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..batches).map(|_| random_batch(&mut rng, rows)).collect()
}

/// The partition Spark gives a row, one value at a time (not the vectorized path the operator uses).
pub(crate) fn reference_partition(batch: &RecordBatch, row: usize, keys: &[usize], n: u32) -> u32 {
    let mut h = SPARK_HASH_SEED;
    for &k in keys {
        let c = batch.column(k);
        if c.is_null(row) {
            continue;
        }
        h = match c.data_type() {
            DataType::Int32 => hash_int(c.as_primitive::<arrow::datatypes::Int32Type>().value(row), h),
            DataType::Date32 => hash_int(c.as_primitive::<arrow::datatypes::Date32Type>().value(row), h),
            DataType::Int64 => hash_long(c.as_primitive::<arrow::datatypes::Int64Type>().value(row), h),
            DataType::Boolean => hash_int(c.as_boolean().value(row) as i32, h),
            DataType::Float64 => hash_f64(c.as_primitive::<arrow::datatypes::Float64Type>().value(row), h),
            DataType::Decimal128(p, _) => {
                hash_decimal(c.as_primitive::<arrow::datatypes::Decimal128Type>().value(row), *p, h)
            }
            DataType::Utf8 => hash_bytes(c.as_string::<i32>().value(row).as_bytes(), h),
            DataType::Utf8View => hash_bytes(c.as_string_view().value(row).as_bytes(), h),
            other => panic!("no reference hash for {other}"),
        };
    }
    pmod(h, n)
}

pub(crate) fn writer_plan(
    keys: &[usize],
    n: u32,
    spill_bytes: u64,
    input_schema: &SchemaRef,
    block: &SchemaRef,
) -> pb::Plan {
    let keys = keys.iter().map(|&k| col(k as u32, input_schema.field(k).data_type())).collect();
    let w = pb::ShuffleWriter {
        keys,
        num_partitions: n,
        block_schema: Some(pb_schema(block)),
        spill_bytes,
        ..Default::default()
    };
    // What the JVM declares: partition INT NOT NULL, block BINARY NOT NULL.
    let output = Arc::new(Schema::new(vec![
        Field::new("partition", DataType::Int32, false),
        Field::new("block", DataType::Binary, false),
    ]));
    plan(op(1, pb::operator::Kind::ShuffleWriter(w), vec![input(0, input_schema)]), &output)
}

struct Run {
    /// (partition, decoded rows) of every block, in output order.
    blocks: Vec<(u32, RecordBatch)>,
    broker: Arc<FixedBroker>,
    named: Vec<(String, u64)>,
    output_rows: u64,
    spills: u64,
    spilled_rows: u64,
    /// Block bytes of each output batch.
    output_batch_bytes: Vec<usize>,
}

fn run(plan: &pb::Plan, inputs: Vec<RecordBatch>, input_schema: SchemaRef, budget: usize) -> Run {
    let broker = Arc::new(FixedBroker::new(budget));
    let mut p = NativePlan::try_new(&plan.encode_to_vec(), vec![reader(inputs, input_schema)], broker.clone()).unwrap();
    let mut out = vec![];
    while let Some(b) = p.next_batch().unwrap() {
        out.push(b);
    }
    assert_eq!(p.memory().0, 0, "the writer's reservation is released at the end");
    let m = p.metrics().into_iter().find(|m| m.id == 1).unwrap();
    // What crosses JNI: the writer's own values under exactly the names it declares (and reports to the JVM).
    let reported = ember_engine::metrics::plan_metrics(&p);
    let mut names: Vec<String> =
        reported.operators.iter().find(|o| o.id == 1).unwrap().values.iter().map(|v| v.name.clone()).collect();
    names.sort();
    let declared = ember_engine::metrics::metric_names().operators.into_iter().find(|o| o.operator == "shuffle_writer");
    assert_eq!(names, declared.unwrap().names, "the shuffle writer's metric names");
    drop(p);
    let output_batch_bytes = out.iter().map(|b| b.column(1).as_binary::<i32>().value_data().len()).collect();
    Run {
        blocks: decode(&out),
        broker,
        named: m.named,
        output_rows: m.output_rows,
        spills: m.spill_count,
        spilled_rows: m.spilled_rows,
        output_batch_bytes,
    }
}

/// Each block is exactly one IPC stream holding the rows of one batch.
fn decode(out: &[RecordBatch]) -> Vec<(u32, RecordBatch)> {
    let mut blocks = vec![];
    for b in out {
        assert_eq!(b.num_columns(), 2);
        assert_eq!(b.column(0).null_count() + b.column(1).null_count(), 0);
        let partitions = b.column(0).as_primitive::<arrow::datatypes::Int32Type>();
        let bytes: &BinaryArray = b.column(1).as_binary();
        for i in 0..b.num_rows() {
            let reader = StreamReader::try_new(Cursor::new(bytes.value(i)), None).unwrap();
            let schema = reader.schema();
            let batches: Vec<_> = reader.map(Result::unwrap).collect();
            assert_eq!(batches.len(), 1, "one record batch per block");
            assert!(batches[0].num_rows() > 0, "no empty blocks");
            assert_eq!(batches[0].schema(), schema);
            // The writers here only move strings, so they carry them as bytes; the inputs hold no binary column.
            blocks.push((partitions.value(i) as u32, strings_as_text(batches.into_iter().next().unwrap())));
        }
    }
    blocks
}

fn named(run: &Run, name: &str) -> u64 {
    run.named.iter().find(|(n, _)| n == name).map(|(_, v)| *v).unwrap_or_else(|| panic!("no metric {name}"))
}

/// Every input row is in exactly one block, of its partition, and each partition's rows are in input order.
fn check_routing(run: &Run, inputs: &[RecordBatch], keys: &[usize], n: u32, batch_size: usize) {
    let schema = inputs[0].schema();
    let all = concat_batches(&schema, inputs).unwrap();
    let mut expected: Vec<Vec<u32>> = vec![vec![]; n as usize];
    for r in 0..all.num_rows() {
        expected[reference_partition(&all, r, keys, n) as usize].push(r as u32);
    }
    let mut got: Vec<Vec<RecordBatch>> = vec![vec![]; n as usize];
    for (p, b) in &run.blocks {
        assert!(*p < n, "partition {p} of {n}");
        assert!(b.num_rows() <= batch_size, "a block of {} rows", b.num_rows());
        assert_eq!(b.schema(), schema, "blocks carry the block schema");
        got[*p as usize].push(b.clone());
    }
    for p in 0..n as usize {
        let want = take_record_batch(&all, &UInt32Array::from(expected[p].clone())).unwrap();
        let have = concat_batches(&schema, &got[p]).unwrap();
        assert_eq!(have.num_rows(), want.num_rows(), "rows of partition {p}");
        // NaN != NaN in Arrow's equality of values; compare their ArrayData (bitwise for floats) instead.
        for c in 0..schema.fields().len() {
            assert_eq!(have.column(c).to_data(), want.column(c).to_data(), "partition {p}, column {c}");
        }
    }
    let rows: usize = run.blocks.iter().map(|(_, b)| b.num_rows()).sum();
    assert_eq!(rows, all.num_rows());
    assert_eq!(named(run, "shuffle_rows"), all.num_rows() as u64);
    assert_eq!(named(run, "blocks_written"), run.blocks.len() as u64);
    assert_eq!(run.output_rows, run.blocks.len() as u64);
    assert_eq!(run.broker.used(), 0, "all memory returned");
}

/// Partitions come out ascending over the whole output (the JVM writes them into one file in that order).
fn assert_ascending(run: &Run) {
    assert!(run.blocks.windows(2).all(|w| w[0].0 <= w[1].0), "partitions out of order");
}

#[test]
fn routes_every_row_to_its_spark_partition_in_input_order() {
    let inputs = random_batches(1, 6, 3000);
    let s = schema();
    for keys in [vec![0usize], vec![2], vec![1, 2, 3], vec![4, 5, 6, 7], vec![3, 0, 5, 2]] {
        for n in [1u32, 7, 200] {
            let r = run(&writer_plan(&keys, n, 0, &s, &s), inputs.clone(), s.clone(), usize::MAX);
            check_routing(&r, &inputs, &keys, n, 1024);
            assert_eq!(r.spills, 0, "no spill without memory pressure");
            assert_ascending(&r);
            // Every non-empty partition: ceil(rows / 1024) blocks.
            if n == 1 {
                assert_eq!(r.blocks.len(), 18, "18000 rows in blocks of at most 1024");
            }
            let bytes: u64 = named(&r, "block_bytes");
            assert!(bytes > 0);
        }
    }
}

#[test]
fn batches_smaller_than_the_partition_count_route_the_same() {
    // 37-row batches among 200 partitions: each batch is ordered by sorting (partition, row) keys rather than by
    // counting over every partition.
    let inputs = random_batches(9, 30, 37);
    let s = schema();
    for keys in [vec![0usize, 2], vec![5]] {
        let r = run(&writer_plan(&keys, 200, 0, &s, &s), inputs.clone(), s.clone(), usize::MAX);
        check_routing(&r, &inputs, &keys, 200, 1024);
    }
}

#[test]
fn an_expression_key_is_evaluated_on_the_child_rows() {
    // Key `l > 0`: a boolean, null where l is null.
    let inputs = random_batches(7, 3, 1000);
    let s = schema();
    let key = cmp(pb::CmpOp::Gt, col(1, &DataType::Int64), lit_long(0));
    let w = pb::ShuffleWriter {
        keys: vec![key],
        num_partitions: 7,
        block_schema: Some(pb_schema(&s)),
        spill_bytes: 0,
        ..Default::default()
    };
    let output = Arc::new(Schema::new(vec![
        Field::new("partition", DataType::Int32, false),
        Field::new("block", DataType::Binary, false),
    ]));
    let p = plan(op(1, pb::operator::Kind::ShuffleWriter(w), vec![input(0, &s)]), &output);
    let r = run(&p, inputs.clone(), s.clone(), usize::MAX);
    let mut rows = 0;
    for (p, b) in &r.blocks {
        let l = b.column(1).as_primitive::<arrow::datatypes::Int64Type>();
        for i in 0..b.num_rows() {
            let h = if l.is_null(i) { SPARK_HASH_SEED } else { hash_int((l.value(i) > 0) as i32, SPARK_HASH_SEED) };
            assert_eq!(pmod(h, 7), *p);
            rows += 1;
        }
    }
    assert_eq!(rows, 3000);
    assert!(r.blocks.iter().map(|(p, _)| p).collect::<std::collections::HashSet<_>>().len() >= 2);
}

#[test]
fn output_batches_stay_near_16_mib_of_blocks() {
    // ~22 MB of blocks in one partition, in blocks of at most 1024 rows (~70 KB).
    let inputs = random_batches(8, 40, 8192);
    let s = schema();
    // Everything written out at the end: its blocks must still come out in several output batches.
    let r = run(&writer_plan(&[], 1, 0, &s, &s), inputs.clone(), s.clone(), usize::MAX);
    check_routing(&r, &inputs, &[], 1, 1024);
    assert_eq!(r.spills, 0);
    assert!(r.output_batch_bytes.len() >= 2, "{:?}", r.output_batch_bytes);
    for b in &r.output_batch_bytes {
        assert!(*b < (16 << 20) + (1 << 20), "an output batch of {b} bytes");
    }
    assert_eq!(r.output_batch_bytes.iter().sum::<usize>() as u64, named(&r, "block_bytes"));
    // The same from spill files: one partition spread over ~40 of them still comes out in bounded batches.
    let spill_bytes = inputs[0].get_array_memory_size() as u64;
    let r = run(&writer_plan(&[], 1, spill_bytes, &s, &s), inputs.clone(), s.clone(), usize::MAX);
    check_routing(&r, &inputs, &[], 1, 1024);
    assert!(r.spills >= 20, "{} spills", r.spills);
    assert!(r.output_batch_bytes.len() >= 2, "{:?}", r.output_batch_bytes);
    for b in &r.output_batch_bytes {
        assert!(*b < (16 << 20) + (1 << 20), "an output batch of {b} bytes");
    }
}

#[test]
fn no_keys_sends_everything_to_partition_zero() {
    let inputs = random_batches(2, 3, 500);
    let s = schema();
    let r = run(&writer_plan(&[], 1, 0, &s, &s), inputs.clone(), s.clone(), usize::MAX);
    assert!(r.blocks.iter().all(|(p, _)| *p == 0));
    check_routing(&r, &inputs, &[], 1, 1024);
    assert_eq!(r.blocks.len(), 2, "1500 rows: blocks of 1024 and 476");
}

#[test]
fn rows_without_columns_keep_their_count() {
    // E.g. the shuffle under a `count(*)`: the blocks carry row counts only.
    let s = Arc::new(Schema::empty());
    let options = arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(700));
    let batch = RecordBatch::try_new_with_options(s.clone(), vec![], &options).unwrap();
    let r = run(&writer_plan(&[], 1, 0, &s, &s), vec![batch.clone(), batch], s.clone(), usize::MAX);
    assert_eq!(r.blocks.iter().map(|(_, b)| b.num_rows()).collect::<Vec<_>>(), [1024, 376]);
    assert!(r.blocks.iter().all(|(p, b)| *p == 0 && b.num_columns() == 0));
}

#[test]
fn empty_input_writes_no_blocks() {
    let s = schema();
    for inputs in [vec![], vec![RecordBatch::new_empty(s.clone()), RecordBatch::new_empty(s.clone())]] {
        let r = run(&writer_plan(&[0], 7, 0, &s, &s), inputs, s.clone(), usize::MAX);
        assert!(r.blocks.is_empty());
        assert_eq!(named(&r, "blocks_written"), 0);
        assert_eq!(r.spills, 0);
        assert_eq!(r.output_rows, 0);
    }
}

#[test]
fn spilling_at_a_threshold_keeps_partitions_ascending_and_rows_in_order() {
    let inputs = random_batches(3, 20, 1000);
    let s = schema();
    let keys = [0usize, 2];
    let whole = run(&writer_plan(&keys, 7, 0, &s, &s), inputs.clone(), s.clone(), usize::MAX);
    check_routing(&whole, &inputs, &keys, 7, 1024);
    // A spill after every few input batches (buffered batches are compacted by the sort, so smaller): each
    // partition's blocks come from every spill file in turn, then from memory.
    let batch_bytes = inputs[0].get_array_memory_size() as u64;
    let spilled = run(&writer_plan(&keys, 7, batch_bytes, &s, &s), inputs.clone(), s.clone(), usize::MAX);
    check_routing(&spilled, &inputs, &keys, 7, 1024);
    assert_ascending(&spilled);
    assert!(spilled.spills >= 8, "{} spills", spilled.spills);
    assert!(spilled.spilled_rows > 10_000 && spilled.spilled_rows <= 20_000, "{}", spilled.spilled_rows);
    assert!(spilled.blocks.len() > whole.blocks.len(), "{} vs {}", spilled.blocks.len(), whole.blocks.len());
    assert_eq!(named(&spilled, "memory_spills"), 0);
}

#[test]
fn a_budget_smaller_than_the_input_spills_and_returns_its_memory() {
    let inputs = random_batches(4, 40, 2000);
    let total: usize = inputs.iter().map(|b| b.get_array_memory_size()).sum();
    let s = schema();
    let keys = [1usize, 4];
    // About three input batches fit: the pool's refusals spill the buffer.
    let budget = 3 * inputs[0].get_array_memory_size() + 1000;
    assert!(budget * 10 < total);
    let r = run(&writer_plan(&keys, 200, 0, &s, &s), inputs.clone(), s.clone(), budget);
    check_routing(&r, &inputs, &keys, 200, 1024);
    assert_ascending(&r);
    assert!(named(&r, "memory_spills") > 5, "{:?}", r.named);
    // Each spill frees the buffer, so about two batches fit between spills (not one each).
    assert!(r.spills <= 25, "{} spills for 40 batches", r.spills);
    assert!(r.broker.peak() <= budget);
    // A budget smaller than one batch: each batch is accounted over budget alone and spilled at once.
    let r = run(&writer_plan(&keys, 200, 0, &s, &s), inputs.clone(), s.clone(), 1000);
    check_routing(&r, &inputs, &keys, 200, 1024);
    assert_ascending(&r);
    assert_eq!(r.spills, 40);
    assert_eq!(r.spilled_rows, 80_000);
    assert_eq!(named(&r, "memory_spills"), 40);
}

#[test]
fn spill_files_are_deleted_at_the_end_and_when_the_stream_is_dropped() {
    let inputs = random_batches(6, 12, 1000);
    let s = schema();
    let dir = tempfile::tempdir().unwrap();
    let runtime =
        datafusion_execution::runtime_env::RuntimeEnvBuilder::new()
            .with_disk_manager_builder(datafusion_execution::disk_manager::DiskManagerBuilder::default().with_mode(
                datafusion_execution::disk_manager::DiskManagerMode::Directories(vec![dir.path().to_owned()]),
            ))
            .build_arc()
            .unwrap();
    let context = Arc::new(TaskContext::default().with_runtime(runtime));
    let files = || walk(dir.path());
    let threshold = inputs_bytes(&inputs[..1]);
    let exec = |reader: ember_engine::operators::input::BatchReader| {
        let input = Arc::new(InputExec::new(0, s.clone(), reader));
        let key = Arc::new(datafusion_physical_expr::expressions::Column::new("i", 0));
        Arc::new(ShuffleWriterExec::try_new(input, vec![key], 5, s.clone(), threshold).unwrap())
    };
    // Read to the end: spilled, checked, and every spill file gone.
    let stream = exec(reader(inputs.clone(), s.clone())).execute(0, context.clone()).unwrap();
    let out = futures::executor::block_on(datafusion_physical_plan::common::collect(stream)).unwrap();
    assert_eq!(out.iter().map(|b| b.num_rows()).sum::<usize>(), decode(&out).len());
    assert_eq!(decode(&out).iter().map(|(_, b)| b.num_rows()).sum::<usize>(), 12_000);
    assert_eq!(files(), 0, "spill files left after the end");
    // The input fails after 8 batches (a task failing or killed midway): the spill files stay while the stream
    // lives, and go with it.
    let failing = inputs.into_iter().enumerate().map(|(i, b)| {
        if i == 8 {
            Err(arrow::error::ArrowError::ComputeError("killed".into()))
        } else {
            Ok(b)
        }
    });
    let failing = Box::new(arrow::record_batch::RecordBatchIterator::new(failing, s.clone()));
    let mut stream = exec(failing).execute(0, context).unwrap();
    let err = futures::executor::block_on(futures::StreamExt::next(&mut stream)).unwrap().unwrap_err();
    assert!(err.to_string().contains("killed"), "{err}");
    assert!(files() >= 3, "spill files before the failure: {}", files());
    drop(stream);
    assert_eq!(files(), 0, "spill files left after the stream was dropped");
}

fn inputs_bytes(batches: &[RecordBatch]) -> usize {
    batches.iter().map(|b| b.get_array_memory_size()).sum()
}

/// Regular files under `dir`, at any depth.
fn walk(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                walk(&e.path())
            } else {
                1
            }
        })
        .sum()
}

#[test]
fn blocks_carry_the_block_schema_names_and_types() {
    // Via the proto: the block schema renames the columns.
    let s = schema();
    let inputs = random_batches(5, 2, 700);
    let renamed = Arc::new(Schema::new(
        s.fields()
            .iter()
            .map(|f| Field::new(format!("c_{}", f.name()), f.data_type().clone(), true))
            .collect::<Vec<_>>(),
    ));
    let r = run(&writer_plan(&[2], 7, 0, &s, &renamed), inputs.clone(), s.clone(), usize::MAX);
    assert!(!r.blocks.is_empty());
    for (_, b) in &r.blocks {
        assert_eq!(b.schema(), renamed);
    }
    let rows: usize = r.blocks.iter().map(|(_, b)| b.num_rows()).sum();
    assert_eq!(rows, 1400);

    // A child producing Utf8View (and an Int32 the block widens to Int64): the blocks hold the block schema's
    // Utf8 / Int64, and the view strings are routed as Spark routes the same strings.
    let view_schema = Arc::new(Schema::new(vec![
        Field::new("sv", DataType::Utf8View, true),
        Field::new("n", DataType::Int32, false),
    ]));
    let strings: Vec<Option<String>> =
        (0..3000).map(|i| (i % 11 != 0).then(|| "xé日".repeat(i % 7) + &i.to_string())).collect();
    let view = StringViewArray::from_iter(strings.iter().map(|s| s.as_deref()));
    let batch = RecordBatch::try_new(
        view_schema.clone(),
        vec![Arc::new(view) as ArrayRef, Arc::new(Int32Array::from_iter_values(0..3000))],
    )
    .unwrap();
    let block_schema =
        Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8, true), Field::new("id", DataType::Int64, false)]));
    let input = Arc::new(InputExec::new(0, view_schema.clone(), reader(vec![batch.clone()], view_schema)));
    let key = Arc::new(datafusion_physical_expr::expressions::Column::new("sv", 0));
    let exec = Arc::new(ShuffleWriterExec::try_new(input, vec![key], 13, block_schema.clone(), 0).unwrap());
    let out = futures::executor::block_on(datafusion_physical_plan::common::collect(
        exec.execute(0, Arc::new(TaskContext::default())).unwrap(),
    ))
    .unwrap();
    let blocks = decode(&out);
    let mut seen = 0;
    for (p, b) in &blocks {
        assert_eq!(b.schema(), block_schema);
        let s: &StringArray = b.column(0).as_string();
        let id = b.column(1).as_primitive::<arrow::datatypes::Int64Type>();
        for r in 0..b.num_rows() {
            let i = id.value(r) as usize;
            assert_eq!(s.is_valid(r).then(|| s.value(r).to_string()), strings[i]);
            assert_eq!(reference_partition(&batch, i, &[0], 13), *p, "row {i}");
            seen += 1;
        }
    }
    assert_eq!(seen, 3000);
}

#[test]
fn bad_plans_are_errors() {
    let s = schema();
    let broker = Arc::new(FixedBroker::new(usize::MAX));
    let build = |p: pb::Plan| NativePlan::try_new(&p.encode_to_vec(), vec![reader(vec![], s.clone())], broker.clone());
    assert!(build(writer_plan(&[0], 0, 0, &s, &s)).is_err(), "0 partitions");
    let fewer = Arc::new(Schema::new(s.fields()[..3].to_vec()));
    assert!(build(writer_plan(&[0], 7, 0, &s, &fewer)).is_err(), "a block schema of fewer columns");
    let mut no_schema = writer_plan(&[0], 7, 0, &s, &s);
    if let Some(pb::operator::Kind::ShuffleWriter(w)) = no_schema.root.as_mut().unwrap().kind.as_mut() {
        w.block_schema = None;
    }
    assert!(build(no_schema).is_err(), "no block schema");
}

fn lit_f64(v: Option<f64>) -> pb::Expr {
    pb::Expr {
        kind: Some(pb::expr::Kind::Literal(pb::Literal {
            r#type: Some(pb_type(&DataType::Float64)),
            is_null: v.is_none(),
            value: v.map(pb::literal::Value::DoubleValue),
        })),
    }
}

/// Spark's order of (d DESC NULLS LAST, l ASC NULLS FIRST): NaN largest, -0.0 == 0.0.
fn range_cmp(a: (Option<f64>, Option<i64>), b: (Option<f64>, Option<i64>)) -> std::cmp::Ordering {
    use std::cmp::Ordering::*;
    let norm = |d: f64| if d.is_nan() { f64::INFINITY } else { d + 0.0 };
    let d = match (a.0, b.0) {
        (None, None) => Equal,
        (None, _) => Greater,
        (_, None) => Less,
        (Some(x), Some(y)) => match (x.is_nan(), y.is_nan()) {
            (true, true) => Equal,
            (true, false) => Less,
            (false, true) => Greater,
            _ => norm(y).partial_cmp(&norm(x)).unwrap(),
        },
    };
    d.then_with(|| match (a.1, b.1) {
        (None, None) => Equal,
        (None, _) => Less,
        (_, None) => Greater,
        (Some(x), Some(y)) => x.cmp(&y),
    })
}

/// Range partitioning: every row goes to the number of bounds strictly before its key in Spark's order (as
/// Spark's RangePartitioner), with NaN, -0.0 and null keys and bounds; no bounds sends everything to partition 0;
/// bounds out of order are a plan error.
#[test]
fn range_partitioning_routes_by_the_bounds() {
    let s = schema();
    let order = vec![
        pb::SortOrder { child: Some(col(3, &DataType::Float64)), ascending: false, nulls_first: false },
        pb::SortOrder { child: Some(col(1, &DataType::Int64)), ascending: true, nulls_first: true },
    ];
    let bounds: Vec<(Option<f64>, Option<i64>)> = vec![
        (Some(f64::NAN), Some(5)),
        (Some(10.0), None),
        (Some(-0.0), Some(0)),
        (Some(0.0), Some(3)),
        (None, Some(1)),
    ];
    let range_plan = |bounds: &[(Option<f64>, Option<i64>)]| {
        let w = pb::ShuffleWriter {
            num_partitions: bounds.len() as u32 + 1,
            block_schema: Some(pb_schema(&s)),
            range: true,
            range_order: order.clone(),
            range_bounds: bounds
                .iter()
                .flat_map(|(d, l)| {
                    [
                        lit_f64(*d),
                        l.map(lit_long).unwrap_or_else(|| {
                            let mut e = lit_long(0);
                            if let Some(pb::expr::Kind::Literal(lit)) = e.kind.as_mut() {
                                lit.is_null = true;
                                lit.value = None;
                            }
                            e
                        }),
                    ]
                })
                .collect(),
            ..Default::default()
        };
        let output = Arc::new(Schema::new(vec![
            Field::new("partition", DataType::Int32, false),
            Field::new("block", DataType::Binary, false),
        ]));
        plan(op(1, pb::operator::Kind::ShuffleWriter(w), vec![input(0, &s)]), &output)
    };
    let inputs = random_batches(7, 4, 500);
    let r = run(&range_plan(&bounds), inputs.clone(), s.clone(), usize::MAX);
    let mut routed = 0;
    for (p, b) in &r.blocks {
        let d = b.column(3).as_primitive::<arrow::datatypes::Float64Type>();
        let l = b.column(1).as_primitive::<arrow::datatypes::Int64Type>();
        for i in 0..b.num_rows() {
            let key = (d.is_valid(i).then(|| d.value(i)), l.is_valid(i).then(|| l.value(i)));
            let want = bounds.iter().filter(|bd| range_cmp(**bd, key) == std::cmp::Ordering::Less).count() as u32;
            assert_eq!(*p, want, "row {key:?}");
            routed += 1;
        }
    }
    assert_eq!(routed, inputs.iter().map(|b| b.num_rows()).sum::<usize>());
    assert!(r.blocks.iter().map(|(p, _)| *p).collect::<std::collections::HashSet<_>>().len() > 3);
    let none = run(&range_plan(&[]), inputs.clone(), s.clone(), usize::MAX);
    assert!(none.blocks.iter().all(|(p, _)| *p == 0));
    let mut unordered = bounds.clone();
    unordered.swap(0, 1);
    let bytes = range_plan(&unordered).encode_to_vec();
    let broker = Arc::new(FixedBroker::new(usize::MAX));
    assert!(NativePlan::try_new(&bytes, vec![reader(vec![], s.clone())], broker).is_err());
}

/// Runs a writer plan, returning its data blocks, the summary row's bytes (partition -1: present exactly when
/// the writer summarizes, always last) and the writer's named metrics.
fn run_filtered(plan: &pb::Plan, inputs: Vec<RecordBatch>, input_schema: SchemaRef) -> (Run, Option<Vec<u8>>) {
    let broker = Arc::new(FixedBroker::new(usize::MAX));
    let mut p = NativePlan::try_new(&plan.encode_to_vec(), vec![reader(inputs, input_schema)], broker.clone()).unwrap();
    let mut out = vec![];
    while let Some(b) = p.next_batch().unwrap() {
        out.push(b);
    }
    assert_eq!(p.memory().0, 0, "the writer's reservations are released at the end");
    let m = p.metrics().into_iter().find(|m| m.id == 1).unwrap();
    drop(p);
    let mut summary = None;
    let mut data = vec![];
    for (i, b) in out.iter().enumerate() {
        let parts = b.column(0).as_primitive::<arrow::datatypes::Int32Type>();
        if (0..b.num_rows()).any(|r| parts.value(r) == -1) {
            assert!(i == out.len() - 1 && b.num_rows() == 1 && summary.is_none(), "the summary is the last row");
            summary = Some(b.column(1).as_binary::<i32>().value(0).to_vec());
        } else {
            data.push(b.clone());
        }
    }
    let run = Run {
        blocks: decode(&data),
        broker,
        named: m.named,
        output_rows: m.output_rows,
        spills: m.spill_count,
        spilled_rows: m.spilled_rows,
        output_batch_bytes: vec![],
    };
    (run, summary)
}

/// A build side's writer summarizes its keys per reduce partition: every non-null key passes the filter of the
/// partition Spark routes it to and, while the sets are exact, no other partition's (so a probe row can only
/// pass the filter of the partition it is routed to); an empty input reports an empty summary.
#[test]
fn a_build_side_writer_reports_its_keys_per_partition() {
    use ember_engine::operators::dynamic_filter::DynamicFilter;
    use ember_engine::planner::dynamic_filter::decode_dynamic_filter;
    let s = schema();
    let inputs = random_batches(11, 3, 2000);
    for (keys, n) in [(vec![1usize], 7u32), (vec![0, 2], 16), (vec![7], 1)] {
        let mut plan = writer_plan(&keys, n, 0, &s, &s);
        let pb::operator::Kind::ShuffleWriter(w) = plan.root.as_mut().unwrap().kind.as_mut().unwrap() else {
            unreachable!()
        };
        w.summarize_keys = true;
        w.summary_max_set_values = 1 << 20;
        w.summary_bloom_bytes = 1024;
        let (r, summary) = run_filtered(&plan, inputs.clone(), s.clone());
        check_rows_kept(&r, &inputs, &keys, n, |_, _| true);
        let proto = pb::DynamicFilter::decode(summary.expect("a summary row").as_slice()).unwrap();
        let f: DynamicFilter = decode_dynamic_filter(&proto).unwrap();
        assert_eq!(f.num_partitions(), n as usize);
        let all = concat_batches(&s, &inputs).unwrap();
        // The writer carried its string keys as bytes, and so does its summary.
        let cols: Vec<ArrayRef> = keys
            .iter()
            .zip(f.key_types())
            .map(|(&k, t)| {
                ember_engine::unsafe_row::conform_string_column(all.column(k).clone(), t, "key", false).unwrap()
            })
            .collect();
        for row in 0..all.num_rows() {
            let key: Vec<ArrayRef> = cols.iter().map(|c| c.slice(row, 1)).collect();
            let null = key.iter().any(|k| k.is_null(0));
            let home = reference_partition(&all, row, &keys, n) as usize;
            for p in 0..n as usize {
                let pass = f.might_contain_in(p, &key).unwrap().value(0);
                assert_eq!(pass, !null && p == home, "row {row}, partition {p} (home {home}), keys {keys:?}");
            }
        }
        let (_, empty) = run_filtered(&plan, vec![], s.clone());
        let empty = decode_dynamic_filter(&pb::DynamicFilter::decode(empty.unwrap().as_slice()).unwrap()).unwrap();
        assert!((0..n as usize).all(|p| empty.summary(p).unwrap().rows == 0));
    }
}

/// Every row whose partition `keep` accepts is in a block of its partition, in input order; no other row is.
fn check_rows_kept(run: &Run, inputs: &[RecordBatch], keys: &[usize], n: u32, keep: impl Fn(usize, u32) -> bool) {
    let schema = inputs[0].schema();
    let all = concat_batches(&schema, inputs).unwrap();
    let mut expected: Vec<Vec<u32>> = vec![vec![]; n as usize];
    for r in 0..all.num_rows() {
        let p = reference_partition(&all, r, keys, n);
        if keep(r, p) {
            expected[p as usize].push(r as u32);
        }
    }
    for (p, rows) in expected.into_iter().enumerate() {
        let got: Vec<RecordBatch> =
            run.blocks.iter().filter(|(q, _)| *q as usize == p).map(|(_, b)| b.clone()).collect();
        let have = concat_batches(&schema, &got).unwrap();
        let want = take_record_batch(&all, &UInt32Array::from(rows)).unwrap();
        assert_eq!(have.num_rows(), want.num_rows(), "rows of partition {p}");
        for c in 0..schema.fields().len() {
            assert_eq!(have.column(c).to_data(), want.column(c).to_data(), "partition {p}, column {c}");
        }
    }
    assert_eq!(run.broker.used(), 0, "all memory returned");
}

/// A probe side's writer drops exactly the rows whose key is not among the build keys of the partition it routes
/// them to (null keys always); the filter of one partition applied to another's rows would drop rows that match
/// (checked: the partition-wise filter is not the union). A filter that drops too little is switched off.
#[test]
fn a_probe_side_writer_drops_rows_that_cannot_match_in_their_partition() {
    use ember_engine::operators::dynamic_filter::{DynamicFilter, DynamicFilterConfig};
    use ember_engine::planner::dynamic_filter::encode_dynamic_filter;
    let s = schema();
    let inputs = random_batches(12, 4, 2500);
    let all = concat_batches(&s, &inputs).unwrap();
    let (keys, n) = (vec![0usize], 8u32);
    // Build keys: the even values of `i` (a column of -50..50).
    let build: Int32Array = (-50..50).filter(|v| v % 2 == 0).map(Some).collect();
    let build_batch = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new("i", DataType::Int32, true)])),
        vec![Arc::new(build.clone())],
    )
    .unwrap();
    let routed: Vec<u32> = (0..build.len()).map(|r| reference_partition(&build_batch, r, &[0], n)).collect();
    let config = DynamicFilterConfig { max_set_values: 1000, bloom_bytes: 1024 };
    let mut f = DynamicFilter::try_new(vec![DataType::Int32], n as usize, config).unwrap();
    f.update_routed(&routed, &[Arc::new(build) as ArrayRef]).unwrap();
    let mut plan = writer_plan(&keys, n, 0, &s, &s);
    let pb::operator::Kind::ShuffleWriter(w) = plan.root.as_mut().unwrap().kind.as_mut().unwrap() else {
        unreachable!()
    };
    w.drop_filter = Some(encode_dynamic_filter(&f).unwrap());
    w.drop_sample_rows = u64::MAX;
    let (r, _) = run_filtered(&plan, inputs.clone(), s.clone());
    let i = all.column(0).as_primitive::<arrow::datatypes::Int32Type>();
    let matches = |row: usize| i.is_valid(row) && i.value(row) % 2 == 0;
    check_rows_kept(&r, &inputs, &keys, n, |row, _| matches(row));
    let dropped = (0..all.num_rows()).filter(|&row| !matches(row)).count() as u64;
    assert_eq!(named(&r, "dynamic_filter_rows_dropped"), dropped);
    assert_eq!(named(&r, "dynamic_filter_switched_off"), 0);
    // Partition 0's filter for every row drops matching rows of the other partitions.
    let p0 = f.filter_of(0).unwrap();
    let key: ArrayRef = all.column(0).clone();
    let wrong = p0.might_contain(&[key]).unwrap();
    let lost = (0..all.num_rows()).filter(|&row| matches(row) && !wrong.value(row)).count();
    assert!(lost > 0, "one partition's filter must not pass the others' keys");
    // The cost gate: after 1000 rows it needs 90% dropped; about half are, so it switches off and keeps the rest.
    w_gate(&mut plan, 1000, 0.9);
    let (r, _) = run_filtered(&plan, inputs.clone(), s.clone());
    assert_eq!(named(&r, "dynamic_filter_switched_off"), 1);
    let kept: usize = r.blocks.iter().map(|(_, b)| b.num_rows()).sum();
    assert!(kept > all.num_rows() - dropped as usize, "rows after the switch are all kept");
}

fn w_gate(plan: &mut pb::Plan, sample: u64, fraction: f64) {
    let pb::operator::Kind::ShuffleWriter(w) = plan.root.as_mut().unwrap().kind.as_mut().unwrap() else {
        unreachable!()
    };
    w.drop_sample_rows = sample;
    w.drop_min_pruned_fraction = fraction;
}
