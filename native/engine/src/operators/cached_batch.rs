//! A cached table's batches (Ember's cache serializer, `EmberCachedBatchSerializer`), handed over by the JVM
//! (`CachedBatchSource.nextRows`: several records per call, each preceded by its size as a little-endian u64).
//! A record is one cached batch: its row count, then each selected column as its own Arrow IPC stream (one
//! record batch of one column), each preceded by its size. Columns are cached one stream each so that a scan
//! decodes only the columns it selects; here they are put side by side into one batch of the scan's schema.
use std::io::Cursor;

use arrow::array::ArrayRef;
use arrow::datatypes::{DataType, SchemaRef};
use arrow::error::ArrowError;
use arrow::ipc::reader::StreamReader;
use arrow::record_batch::{RecordBatch, RecordBatchOptions, RecordBatchReader};
use datafusion_common::Result;

pub struct CachedBatchReader<F> {
    schema: SchemaRef,
    next_records: F,
    decoded: std::vec::IntoIter<RecordBatch>,
    finished: bool,
}

impl<F: FnMut() -> Result<Option<Vec<u8>>>> CachedBatchReader<F> {
    pub fn new(schema: SchemaRef, next_records: F) -> Self {
        Self { schema, next_records, decoded: Vec::new().into_iter(), finished: false }
    }

    /// Every cached batch of one call's buffer.
    fn decode(&self, bytes: &[u8]) -> std::result::Result<Vec<RecordBatch>, ArrowError> {
        let mut out = Vec::new();
        let mut at = 0;
        while at < bytes.len() {
            let size = read_u64(bytes, at, "cached batch size")? as usize;
            let record = slice(bytes, at + 8, size, "cached batch")?;
            let batch = self.batch(record)?;
            if batch.num_rows() > 0 {
                out.push(batch);
            }
            at += 8 + size;
        }
        Ok(out)
    }

    /// One record: the row count, then one IPC stream per column of the schema.
    fn batch(&self, record: &[u8]) -> std::result::Result<RecordBatch, ArrowError> {
        let rows = read_u64(record, 0, "cached batch row count")? as usize;
        let mut at = 8;
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(self.schema.fields().len());
        for field in self.schema.fields() {
            let size = read_u64(record, at, "cached column size")? as usize;
            let stream = slice(record, at + 8, size, "cached column")?;
            let reader = StreamReader::try_new(Cursor::new(stream), None)?;
            // The JVM wrote Spark's strings as `Utf8`, whose bytes need not be UTF-8: read unvalidated, then every
            // column checked here — a string one as bytes (offsets and all but UTF-8), any other in full.
            // SAFETY: no value is read before `checked` has validated the column.
            let mut reader = unsafe { reader.with_skip_validation(true) };
            let column = match reader.next() {
                Some(batch) => checked(batch?.column(0).clone())?,
                None => return Err(ArrowError::IpcError("a cached column without a batch".into())),
            };
            let column = relabel(column, field.data_type())?;
            let column = crate::unsafe_row::conform_string_column(column, field.data_type(), field.name(), false)
                .map_err(|e| ArrowError::ExternalError(Box::new(e)))?;
            columns.push(column);
            at += 8 + size;
        }
        if at != record.len() {
            return Err(ArrowError::IpcError(format!(
                "a cached batch of {} bytes holds {} columns in its first {at}",
                record.len(),
                columns.len()
            )));
        }
        // The scan's schema (names, nullability) over the cached columns; the row count for a scan of no column.
        RecordBatch::try_new_with_options(
            self.schema.clone(),
            columns,
            &RecordBatchOptions::new().with_row_count(Some(rows)),
        )
    }
}

/// A cached column read without validation, validated: a string column as `Binary` (Spark's bytes, which
/// [`crate::unsafe_row::conform_string_column`] then checks for a plan reading them as text), any other in full.
fn checked(column: ArrayRef) -> std::result::Result<ArrayRef, ArrowError> {
    let data = column.to_data();
    if data.data_type() == &DataType::Utf8 {
        return Ok(arrow::array::make_array(data.into_builder().data_type(DataType::Binary).build()?));
    }
    data.validate_full()?;
    Ok(arrow::array::make_array(data))
}

/// A timestamp column cached in another session's time zone: the same instants, labelled with this plan's zone.
fn relabel(column: ArrayRef, to: &DataType) -> std::result::Result<ArrayRef, ArrowError> {
    match (column.data_type(), to) {
        (DataType::Timestamp(from_unit, from_tz), DataType::Timestamp(to_unit, to_tz))
            if from_unit == to_unit && from_tz.is_some() && to_tz.is_some() && from_tz != to_tz =>
        {
            arrow::compute::cast(&column, to)
        }
        _ => Ok(column),
    }
}

fn read_u64(bytes: &[u8], at: usize, what: &str) -> std::result::Result<u64, ArrowError> {
    let word = slice(bytes, at, 8, what)?;
    Ok(u64::from_le_bytes(word.try_into().expect("8 bytes")))
}

fn slice<'a>(bytes: &'a [u8], at: usize, size: usize, what: &str) -> std::result::Result<&'a [u8], ArrowError> {
    at.checked_add(size)
        .and_then(|end| bytes.get(at..end))
        .ok_or_else(|| ArrowError::IpcError(format!("{what} of {size} bytes cut at byte {at} of {}", bytes.len())))
}

impl<F: FnMut() -> Result<Option<Vec<u8>>>> Iterator for CachedBatchReader<F> {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(batch) = self.decoded.next() {
                return Some(Ok(batch));
            }
            if self.finished {
                return None;
            }
            match (self.next_records)() {
                Ok(Some(bytes)) => match self.decode(&bytes) {
                    Ok(batches) => self.decoded = batches.into_iter(),
                    Err(e) => {
                        self.finished = true;
                        return Some(Err(e));
                    }
                },
                Ok(None) => self.finished = true,
                Err(e) => {
                    self.finished = true;
                    return Some(Err(ArrowError::ExternalError(Box::new(e))));
                }
            }
        }
    }
}

impl<F: FnMut() -> Result<Option<Vec<u8>>>> RecordBatchReader for CachedBatchReader<F> {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, Int64Array, StringArray, TimestampMicrosecondArray};
    use arrow::datatypes::{Field, Schema, TimeUnit};
    use arrow::ipc::writer::StreamWriter;
    use std::sync::Arc;

    fn stream(column: ArrayRef) -> Vec<u8> {
        let schema = Arc::new(Schema::new(vec![Field::new("c", column.data_type().clone(), true)]));
        let batch = RecordBatch::try_new(schema.clone(), vec![column]).unwrap();
        let mut out = Vec::new();
        let mut w = StreamWriter::try_new(&mut out, &schema).unwrap();
        w.write(&batch).unwrap();
        w.finish().unwrap();
        drop(w);
        out
    }

    fn record(rows: u64, columns: &[Vec<u8>]) -> Vec<u8> {
        let mut body = rows.to_le_bytes().to_vec();
        for c in columns {
            body.extend((c.len() as u64).to_le_bytes());
            body.extend(c);
        }
        let mut out = (body.len() as u64).to_le_bytes().to_vec();
        out.extend(body);
        out
    }

    fn read(schema: SchemaRef, calls: Vec<Vec<u8>>) -> Vec<std::result::Result<RecordBatch, ArrowError>> {
        let mut calls = calls.into_iter();
        CachedBatchReader::new(schema, move || Ok(calls.next())).collect()
    }

    #[test]
    fn columns_side_by_side_and_time_zones_relabelled() {
        let keys: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), None, Some(3)]));
        let names: ArrayRef = Arc::new(StringArray::from(vec![Some("ä"), Some(""), None]));
        let times: ArrayRef =
            Arc::new(TimestampMicrosecondArray::from(vec![Some(0), Some(-1), None]).with_timezone("Europe/Berlin"));
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Utf8, true),
            Field::new("b", DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())), true),
            Field::new("c", DataType::Int64, true),
        ]));
        let mut call = record(3, &[stream(names.clone()), stream(times), stream(keys.clone())]);
        call.extend(record(
            0,
            &[
                stream(Arc::new(StringArray::from(Vec::<Option<&str>>::new()))),
                stream(Arc::new(TimestampMicrosecondArray::from(Vec::<Option<i64>>::new()).with_timezone("UTC"))),
                stream(Arc::new(Int64Array::from(Vec::<Option<i64>>::new()))),
            ],
        ));
        let out = read(schema.clone(), vec![call]);
        assert_eq!(out.len(), 1, "the empty batch is skipped");
        let batch = out.into_iter().next().unwrap().unwrap();
        assert_eq!(batch.schema(), schema);
        assert_eq!(batch.column(0).as_ref(), names.as_ref());
        assert_eq!(batch.column(2).as_ref(), keys.as_ref());
        let t = batch.column(1).as_any().downcast_ref::<TimestampMicrosecondArray>().unwrap();
        assert_eq!((t.value(0), t.value(1), t.is_null(2)), (0, -1, true));
    }

    #[test]
    fn no_column_keeps_the_row_count() {
        let schema = Arc::new(Schema::empty());
        let out = read(schema, vec![record(7, &[]), record(5, &[])]);
        let rows: Vec<usize> = out.into_iter().map(|b| b.unwrap().num_rows()).collect();
        assert_eq!(rows, vec![7, 5]);
    }

    #[test]
    fn cut_and_mismatched_records_are_errors() {
        let schema = Arc::new(Schema::new(vec![Field::new("c", DataType::Int64, true)]));
        let full = record(2, &[stream(Arc::new(Int64Array::from(vec![1, 2])))]);
        let err = read(schema.clone(), vec![full[..full.len() - 3].to_vec()]).pop().unwrap().unwrap_err();
        assert!(err.to_string().contains("cut at byte"), "{err}");
        let strings = record(1, &[stream(Arc::new(StringArray::from(vec!["x"])))]);
        assert!(read(schema.clone(), vec![strings]).pop().unwrap().is_err(), "a column of another type");
        let two =
            record(1, &[stream(Arc::new(Int64Array::from(vec![1]))), stream(Arc::new(Int64Array::from(vec![2])))]);
        let err = read(schema, vec![two]).pop().unwrap().unwrap_err();
        assert!(err.to_string().contains("holds 1 columns"), "{err}");
    }

    /// Spark's strings as the JVM cached them, invalid UTF-8 included: a plan carrying strings as bytes gets the
    /// bytes, one reading text fails naming the column.
    #[test]
    fn cached_strings_pass_as_bytes_and_are_checked_as_text() {
        use arrow::array::BinaryArray;
        use arrow::buffer::{Buffer, OffsetBuffer};
        let invalid = |offsets: Vec<i32>| -> ArrayRef {
            let values = Buffer::from(vec![0xffu8, 0x41, 0xc3, b'o', b'k']);
            // SAFETY (of the test): bytes Spark allows in a string, which the reader must not trust.
            Arc::new(unsafe { StringArray::new_unchecked(OffsetBuffer::new_unchecked(offsets.into()), values, None) })
        };
        let call = || record(3, &[stream(invalid(vec![0, 2, 3, 5]))]);
        let bytes = Arc::new(Schema::new(vec![Field::new("s", DataType::Binary, true)]));
        let batch = read(bytes.clone(), vec![call()]).pop().unwrap().unwrap();
        let want = BinaryArray::from(vec![&[0xff, 0x41][..], &[0xc3], b"ok"]);
        assert_eq!(batch.column(0).as_ref(), &want as &dyn Array);
        let text = Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8, true)]));
        let err = read(text, vec![call()]).pop().unwrap().unwrap_err().to_string();
        assert!(err.contains("string column `s` holds bytes that are not valid UTF-8"), "{err}");
    }
}
