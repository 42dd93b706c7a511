//! Real plans replayed from their bytes: `EmberPlanReplaySuite` (`make plans`) wrote, in `tests/data/plans/`,
//! the serialized `Plan` of queries Spark planned with Ember on (one native block over a native Parquet scan),
//! the scan's `ParquetScanTask`, Spark's answer and the data file. Each plan is decoded and run here as the
//! executor would, and must give Spark's rows: the bytes describe the plan completely.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use crate::common::*;
use arrow::compute::cast;
use arrow::record_batch::RecordBatch;
use ember_engine::execution::NativePlan;
use ember_engine::memory::FixedBroker;
use ember_engine::planner::{input_schemas, parquet_scan::parquet_scan_reader};
use ember_engine::proto as pb;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use prost::Message;

fn dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/plans"))
}

/// Spark's answer, in the plan's output types (Parquet stores some differently).
fn expected(name: &str, like: &RecordBatch) -> Vec<RecordBatch> {
    let file = File::open(dir().join(format!("{name}.expected.parquet"))).unwrap();
    ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap()
        .map(|b| {
            let b = b.unwrap();
            let columns =
                b.columns().iter().zip(like.schema().fields()).map(|(c, f)| cast(c, f.data_type()).unwrap()).collect();
            RecordBatch::try_new(like.schema(), columns).unwrap()
        })
        .collect()
}

fn replay(name: &str) -> Vec<RecordBatch> {
    let plan = pb::Plan::decode(std::fs::read(dir().join(format!("{name}.plan"))).unwrap().as_slice()).unwrap();
    let mut task =
        pb::ParquetScanTask::decode(std::fs::read(dir().join(format!("{name}.scan"))).unwrap().as_slice()).unwrap();
    // The task names the data file where it was written; it is checked in beside the plan.
    let data = dir().join("data.parquet").to_string_lossy().to_string();
    for split in &mut task.splits {
        split.path = data.clone();
        split.display_path = data.clone();
    }
    let schemas = input_schemas(&plan, ember_engine::planner::strings::as_bytes(&plan)).unwrap();
    assert_eq!(schemas.len(), 1, "{name}: one input");
    let batch_size = ember_engine::defaults::batch_size(plan.config.as_ref().map_or(0, |c| c.batch_size));
    let reader = parquet_scan_reader(task, schemas[0].1.clone(), batch_size, || Ok(()), Box::new(|_| Ok(()))).unwrap();
    let broker = Arc::new(FixedBroker::new(64 << 20));
    let mut p = NativePlan::from_proto(&plan, vec![Box::new(reader)], broker.clone()).unwrap();
    let mut out = vec![];
    while let Some(b) = p.next_batch().unwrap() {
        out.push(b);
    }
    drop(p);
    assert_eq!(broker.used(), 0, "{name}: memory returned");
    out
}

fn check(name: &str, ordered: bool) {
    let actual = replay(name);
    assert!(!actual.is_empty() && actual.iter().map(|b| b.num_rows()).sum::<usize>() > 0, "{name}: no rows");
    let expected = expected(name, &actual[0]);
    if ordered {
        assert_eq!(rows_in_order(&actual), rows_in_order(&expected), "{name}");
    } else {
        assert_same_rows(&actual, &expected, name);
    }
}

#[test]
fn filter_and_project_over_a_parquet_scan() {
    check("filter_project", false);
}

#[test]
fn sort_within_partitions_over_a_parquet_scan() {
    check("sort", true);
}

#[test]
fn casts_and_case_over_a_parquet_scan() {
    check("cast_case", false);
}
