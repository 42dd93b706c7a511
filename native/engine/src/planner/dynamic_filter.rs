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
    let batch = RecordBatch::try_new(schema.clone(), columns)?;
    let mut bounds = vec![];
    {
        let mut w = StreamWriter::try_new(&mut bounds, &schema)?;
        w.write(&batch)?;
        w.finish()?;
    }
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
