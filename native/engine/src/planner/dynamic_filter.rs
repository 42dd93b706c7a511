//! [`DynamicFilter`] ⇄ proto `DynamicFilter`: the form in which tasks' summaries travel to the driver.
use std::io::Cursor;
use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch};
use arrow::datatypes::Schema;
use arrow::ipc::reader::StreamReader;
use arrow::ipc::writer::StreamWriter;
use datafusion_common::{internal_err, Result, ScalarValue};
use ember_proto as pb;

use crate::operators::dynamic_filter::{DynamicFilter, DynamicFilterConfig, DynamicFilterParts, KeySummaryParts};
use crate::operators::parquet_scan::{FilterOp, ScanFilter};

pub fn encode_dynamic_filter(filter: &DynamicFilter) -> Result<pb::DynamicFilter> {
    let parts = filter.to_parts()?;
    let schema = Arc::new(Schema::new(filter.key_fields()));
    let columns = parts
        .key_types
        .iter()
        .enumerate()
        .map(|(c, t)| {
            let null = ScalarValue::try_from(t)?;
            let values = parts.partitions.iter().flat_map(|p| match &p.bounds[c] {
                Some((lo, hi)) => [lo.clone(), hi.clone()],
                None => [null.clone(), null.clone()],
            });
            if parts.partitions.is_empty() {
                return Ok(arrow::array::new_empty_array(t));
            }
            ScalarValue::iter_to_array(values)
        })
        .collect::<Result<Vec<ArrayRef>>>()?;
    let bounds = ipc(&RecordBatch::try_new(schema, columns)?)?;
    Ok(pb::DynamicFilter {
        bounds,
        max_set_values: parts.config.max_set_values as u32,
        bloom_bytes: parts.config.bloom_bytes as u64,
        partitions: parts
            .partitions
            .into_iter()
            .map(|p| pb::DynamicFilterPartition {
                rows: p.rows,
                set_values: p.set,
                has_bloom: p.bloom.is_some(),
                bloom: p.bloom.unwrap_or_default(),
            })
            .collect(),
    })
}

pub fn decode_dynamic_filter(proto: &pb::DynamicFilter) -> Result<DynamicFilter> {
    let mut reader = StreamReader::try_new(Cursor::new(&proto.bounds), None)?;
    let key_types = reader.schema().fields().iter().map(|f| f.data_type().clone()).collect::<Vec<_>>();
    let batch = match reader.next() {
        Some(b) => b?,
        None => return internal_err!("dynamic filter: no bounds batch"),
    };
    let n = proto.partitions.len();
    if batch.num_rows() != 2 * n {
        return internal_err!("dynamic filter: {} bound rows for {n} partitions", batch.num_rows());
    }
    let partitions = proto
        .partitions
        .iter()
        .enumerate()
        .map(|(p, part)| {
            let bounds = batch
                .columns()
                .iter()
                .map(|col| {
                    let lo = ScalarValue::try_from_array(col, 2 * p)?;
                    let hi = ScalarValue::try_from_array(col, 2 * p + 1)?;
                    Ok((!lo.is_null() && !hi.is_null()).then_some((lo, hi)))
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(KeySummaryParts {
                rows: part.rows,
                bounds,
                set: part.set_values.clone(),
                bloom: part.has_bloom.then(|| part.bloom.clone()),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    DynamicFilter::from_parts(DynamicFilterParts {
        key_types,
        config: DynamicFilterConfig {
            max_set_values: proto.max_set_values as usize,
            bloom_bytes: proto.bloom_bytes as usize,
        },
        partitions,
    })
}

/// Distinct keys up to which a scan also gets them as an IN list (beyond, its bounds only; the probe side's writer
/// checks the keys themselves).
pub const PRUNING_VALUES: usize = 16;

/// The driver's union of a build side's summaries (one per map task, all over the same keys, sizes and
/// partitioning) → proto `DynamicFilterUnion`: the partition-wise filter for the probe side's writer and the
/// pruning for its scan.
pub fn union_dynamic_filters(summaries: &pb::DynamicFilterSummaries) -> Result<pb::DynamicFilterUnion> {
    let mut union: Option<DynamicFilter> = None;
    for proto in &summaries.summaries {
        let f = decode_dynamic_filter(proto)?;
        match &mut union {
            None => union = Some(f),
            Some(u) => u.union(&f)?,
        }
    }
    let Some(union) = union else { return internal_err!("dynamic filter: no summary to unite") };
    let global = union.global()?;
    let parts = global.to_parts()?;
    let columns = parts.partitions[0]
        .bounds
        .iter()
        .zip(&parts.key_types)
        .map(|(b, t)| match b {
            Some((lo, hi)) => ScalarValue::iter_to_array([lo.clone(), hi.clone()]),
            None => Ok(arrow::array::new_null_array(t, 2)),
        })
        .collect::<Result<Vec<ArrayRef>>>()?;
    let schema = Arc::new(Schema::new(union.key_fields()));
    let bounds = ipc(&RecordBatch::try_new(schema.clone(), columns)?)?;
    let values = match (union.key_types().len(), global.exact_values(PRUNING_VALUES)?) {
        (1, Some(v)) => ipc(&RecordBatch::try_new(schema, v)?)?,
        _ => vec![],
    };
    Ok(pb::DynamicFilterUnion {
        filter: Some(encode_dynamic_filter(&union)?),
        pruning: Some(pb::DynamicFilterPruning { empty: parts.partitions[0].rows == 0, bounds, values }),
    })
}

fn ipc(batch: &RecordBatch) -> Result<Vec<u8>> {
    let mut out = vec![];
    let mut w = StreamWriter::try_new(&mut out, batch.schema_ref())?;
    w.write(batch)?;
    w.finish()?;
    drop(w);
    Ok(out)
}

fn read_ipc(bytes: &[u8]) -> Result<Option<RecordBatch>> {
    if bytes.is_empty() {
        return Ok(None);
    }
    let mut reader = StreamReader::try_new(Cursor::new(bytes), None)?;
    reader.next().transpose().map_err(Into::into)
}

/// A scan's share of a dynamic filter → conjuncts its reader prunes with: per key column that is a scan column,
/// `>= min` and `<= max`, an IN list of the few keys, and, when nothing can match, `IS NULL AND IS NOT NULL`.
pub fn scan_filters(f: &pb::ParquetScanDynamicFilter) -> Result<Vec<ScanFilter>> {
    let Some(pruning) = &f.pruning else { return Ok(vec![]) };
    let mut out = vec![];
    let column_of = |key: usize| f.columns.get(&(key as u32)).map(|c| *c as usize);
    let filter = |column, op, values| ScanFilter { column, op, values };
    if pruning.empty {
        if let Some(c) = column_of(0) {
            out.push(filter(c, FilterOp::IsNull, vec![]));
            out.push(filter(c, FilterOp::IsNotNull, vec![]));
        }
        return Ok(out);
    }
    if let Some(bounds) = read_ipc(&pruning.bounds)? {
        if bounds.num_rows() != 2 {
            return internal_err!("dynamic filter pruning: {} bound rows", bounds.num_rows());
        }
        for (key, col) in bounds.columns().iter().enumerate() {
            let Some(c) = column_of(key) else { continue };
            let (lo, hi) = (ScalarValue::try_from_array(col, 0)?, ScalarValue::try_from_array(col, 1)?);
            if !lo.is_null() && !hi.is_null() {
                out.push(filter(c, FilterOp::Ge, vec![lo]));
                out.push(filter(c, FilterOp::Le, vec![hi]));
            }
        }
    }
    if let (Some(values), Some(c)) = (read_ipc(&pruning.values)?, column_of(0)) {
        let col = values.column(0);
        let list = (0..col.len()).map(|i| ScalarValue::try_from_array(col, i)).collect::<Result<Vec<_>>>()?;
        out.push(filter(c, FilterOp::In, list));
    }
    Ok(out)
}
