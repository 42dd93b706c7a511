//! A Parquet scan's task (proto `ParquetScanTask`: the task's file splits, requested columns, rebase modes and
//! pushed filters, handed over per task by the JVM's `ParquetSource`) → the engine's `ParquetScanReader`.
use std::collections::HashMap;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use datafusion_common::Result;
use ember_proto as pb;

use super::dynamic_filter::scan_filters;
use super::types::to_scalar;
use crate::error::plan_error;
use crate::operators::parquet_scan::{
    DatetimeRebase, FilterOp, ParquetScanReader, ParquetSplit, PrunedCallback, RebaseMode, ScanFilter, ZoneRebase,
};

/// `v` as a value of a column of type `to`: a string as bytes or bytes as a string (None when they are not valid
/// UTF-8), anything else as it is.
fn fit(
    v: datafusion_common::ScalarValue,
    to: Option<&arrow::datatypes::DataType>,
) -> Option<datafusion_common::ScalarValue> {
    use arrow::datatypes::DataType;
    use datafusion_common::ScalarValue;
    match (v, to) {
        (ScalarValue::Utf8(s), Some(DataType::Binary)) => Some(ScalarValue::Binary(s.map(String::into_bytes))),
        (ScalarValue::Binary(b), Some(DataType::Utf8)) => match b {
            None => Some(ScalarValue::Utf8(None)),
            Some(b) => String::from_utf8(b).ok().map(|s| ScalarValue::Utf8(Some(s))),
        },
        (v, _) => Some(v),
    }
}

/// The reader of `task` into `schema` (the plan's `Input` leaf), in batches of `batch_size` rows; `alive` is
/// asked between batches whether the task goes on, `on_pruned` told what the filters skipped.
pub fn parquet_scan_reader<F>(
    task: pb::ParquetScanTask,
    schema: SchemaRef,
    batch_size: usize,
    alive: F,
    on_pruned: PrunedCallback,
) -> Result<ParquetScanReader<F>>
where
    F: FnMut() -> Result<()>,
{
    let type_of = |column: usize| schema.fields().get(column).map(|f| f.data_type().clone());
    let data_columns = task.columns.len();
    let splits = task
        .splits
        .into_iter()
        .map(|s| {
            let partition_values = s
                .partition_values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let v = to_scalar(v)?;
                    fit(v, type_of(data_columns + i).as_ref())
                        .ok_or_else(|| plan_error("a partition value that does not fit its column"))
                })
                .collect::<Result<Vec<_>>>()
                .map_err(|e| plan_error(format!("Parquet split partition value: {e}")))?;
            Ok(ParquetSplit {
                path: s.path,
                start: s.start,
                length: s.length,
                display_path: s.display_path,
                partition_values,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let mode = |m: i32| match pb::ParquetScanRebaseMode::try_from(m) {
        Ok(pb::ParquetScanRebaseMode::Exception) => Ok(RebaseMode::Exception),
        Ok(pb::ParquetScanRebaseMode::Corrected) => Ok(RebaseMode::Corrected),
        Ok(pb::ParquetScanRebaseMode::Legacy) => Ok(RebaseMode::Legacy),
        Err(_) => Err(plan_error(format!("unknown Parquet rebase mode {m}"))),
    };
    let rebase = DatetimeRebase {
        datetime_mode: mode(task.datetime_rebase_mode)?,
        int96_mode: mode(task.int96_rebase_mode)?,
        last_switch_julian_day: task.last_switch_julian_day,
        last_switch_julian_ts: task.last_switch_julian_ts,
    };
    let mut filters = task
        .filters
        .iter()
        .map(|f| {
            use pb::ParquetScanFilterOp as P;
            let op = match P::try_from(f.op) {
                Ok(P::Eq) => FilterOp::Eq,
                Ok(P::Lt) => FilterOp::Lt,
                Ok(P::Le) => FilterOp::Le,
                Ok(P::Gt) => FilterOp::Gt,
                Ok(P::Ge) => FilterOp::Ge,
                Ok(P::IsNull) => FilterOp::IsNull,
                Ok(P::IsNotNull) => FilterOp::IsNotNull,
                Ok(P::In) => FilterOp::In,
                Err(_) => return Err(plan_error(format!("unknown filter op {}", f.op))),
            };
            let values = f
                .values
                .iter()
                .map(to_scalar)
                .collect::<Result<Vec<_>>>()
                .map_err(|e| plan_error(format!("Parquet scan filter value: {e}")))?;
            Ok(ScanFilter { column: f.column as usize, op, values })
        })
        .collect::<Result<Vec<_>>>()?;
    for d in &task.dynamic_filters {
        for f in scan_filters(d)? {
            if f.column >= task.columns.len() {
                return Err(plan_error(format!("dynamic filter on column {} of {}", f.column, task.columns.len())));
            }
            filters.push(f);
        }
    }
    // Literals as the scan's columns type them (strings as bytes, or the other way for a dynamic filter made by a
    // plan that carried them as bytes). A filter only saves reading: one whose values do not fit is dropped.
    let filters = filters
        .into_iter()
        .filter_map(|mut f| {
            let to = type_of(f.column);
            f.values = f.values.into_iter().map(|v| fit(v, to.as_ref())).collect::<Option<Vec<_>>>()?;
            Some(f)
        })
        .collect();
    let reader = ParquetScanReader::new(schema, task.columns, task.case_sensitive, rebase, splits, batch_size, alive)
        .map_err(|e| plan_error(e.to_string()))?;
    Ok(reader
        .with_default_zone(task.default_time_zone)
        .with_filters(filters, on_pruned)
        .with_row_filter(task.filter_rows))
}

pub use crate::operators::parquet_scan::{register_calendar_rebase, CalendarRebase};

/// Spark's rebase tables (proto `JulianRebaseTables`) → the Parquet reader's, once per process.
pub fn register_julian_rebase(bytes: &[u8]) -> Result<()> {
    let tables = <pb::JulianRebaseTables as prost::Message>::decode(bytes)
        .map_err(|e| plan_error(format!("JulianRebaseTables: {e}")))?;
    let zones = tables
        .zones
        .into_iter()
        .map(|t| {
            let table =
                ZoneRebase::new(t.switches, t.diffs).map_err(|e| plan_error(format!("zone {}: {e}", t.zone)))?;
            Ok((t.zone, Arc::new(table)))
        })
        .collect::<Result<HashMap<_, _>>>()?;
    crate::operators::parquet_scan::register_julian_rebase(zones);
    Ok(())
}
