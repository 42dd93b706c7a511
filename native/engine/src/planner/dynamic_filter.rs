//! [`DynamicFilter`] ⇄ proto `DynamicFilter`: the form in which tasks' summaries travel to the driver.
use std::io::Cursor;
use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch};
use arrow::datatypes::Schema;
use arrow::ipc::reader::StreamReader;
use arrow::ipc::writer::StreamWriter;
use datafusion_common::{internal_err, Result, ScalarValue};
use ember_proto as pb;

use crate::operators::dynamic_filter::{
    DynamicFilter, DynamicFilterConfig, DynamicFilterParts, KeyPruning, KeySummaryParts,
};
use crate::operators::parquet_scan::ScanFilter;

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
    let pruning = KeyPruning::of(&union.global()?)?;
    let columns = pruning
        .bounds
        .iter()
        .zip(union.key_types())
        .map(|(b, t)| match b {
            Some((lo, hi)) => ScalarValue::iter_to_array([lo.clone(), hi.clone()]),
            None => Ok(arrow::array::new_null_array(t, 2)),
        })
        .collect::<Result<Vec<ArrayRef>>>()?;
    let schema = Arc::new(Schema::new(union.key_fields()));
    let bounds = ipc(&RecordBatch::try_new(schema.clone(), columns)?)?;
    let values = match &pruning.values {
        Some(v) => ipc(&RecordBatch::try_new(schema, vec![ScalarValue::iter_to_array(v.iter().cloned())?])?)?,
        None => vec![],
    };
    Ok(pb::DynamicFilterUnion {
        filter: Some(encode_dynamic_filter(&union)?),
        pruning: Some(pb::DynamicFilterPruning { empty: pruning.empty, bounds, values }),
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

/// A scan's share of a dynamic filter → conjuncts its reader prunes with ([`KeyPruning::scan_filters`]).
pub fn scan_filters(f: &pb::ParquetScanDynamicFilter) -> Result<Vec<ScanFilter>> {
    let Some(pruning) = &f.pruning else { return Ok(vec![]) };
    let scalars =
        |col: &ArrayRef| (0..col.len()).map(|i| ScalarValue::try_from_array(col, i)).collect::<Result<Vec<_>>>();
    let bounds = match read_ipc(&pruning.bounds)? {
        Some(b) if b.num_rows() == 2 => b
            .columns()
            .iter()
            .map(|col| {
                let (lo, hi) = (ScalarValue::try_from_array(col, 0)?, ScalarValue::try_from_array(col, 1)?);
                Ok((!lo.is_null() && !hi.is_null()).then_some((lo, hi)))
            })
            .collect::<Result<Vec<_>>>()?,
        Some(b) => return internal_err!("dynamic filter pruning: {} bound rows", b.num_rows()),
        None => vec![],
    };
    let values = read_ipc(&pruning.values)?.map(|v| scalars(v.column(0))).transpose()?;
    let pruning = KeyPruning { empty: pruning.empty, bounds, values };
    Ok(pruning.scan_filters(|key| f.columns.get(&(key as u32)).map(|c| *c as usize)))
}
