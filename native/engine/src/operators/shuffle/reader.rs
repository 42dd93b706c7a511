//! The reduce side of Ember's columnar shuffle: the Arrow IPC stream blocks `ShuffleWriterExec` wrote, fetched
//! by Spark's shuffle reader and handed over by the JVM (`ShuffleBlockSource.nextRows`: several blocks per call,
//! each preceded by its size as a little-endian u64), decoded here and coalesced into batches of `batch_size`
//! rows. A reduce task reads one block per (map task, partition, flush) — with hundreds of shuffle partitions
//! those are a few hundred rows each — and operators above (a sort above all) pay per batch, so the small
//! batches are glued together before they go on.
use std::io::Cursor;

use arrow::compute::BatchCoalescer;
use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;
use arrow::ipc::reader::StreamReader;
use arrow::record_batch::{RecordBatch, RecordBatchReader};
use datafusion_common::Result;

pub struct ShuffleBlockReader<F> {
    schema: SchemaRef,
    next_blocks: F,
    coalescer: BatchCoalescer,
    finished: bool,
}

impl<F: FnMut() -> Result<Option<Vec<u8>>>> ShuffleBlockReader<F> {
    pub fn new(schema: SchemaRef, batch_size: usize, next_blocks: F) -> Self {
        // Batches already this big pass through without a copy.
        let coalescer = BatchCoalescer::new(schema.clone(), batch_size.max(1))
            .with_biggest_coalesce_batch_size(Some(batch_size / 2));
        Self { schema, next_blocks, coalescer, finished: false }
    }

    /// Decodes every block of one buffer into the coalescer.
    fn push_blocks(&mut self, bytes: &[u8]) -> std::result::Result<(), ArrowError> {
        let mut at = 0;
        while at < bytes.len() {
            let header = bytes
                .get(at..at + 8)
                .ok_or_else(|| ArrowError::IpcError(format!("shuffle block header cut at byte {at}")))?;
            let size = u64::from_le_bytes(header.try_into().unwrap()) as usize;
            let block = bytes
                .get(at + 8..at + 8 + size)
                .ok_or_else(|| ArrowError::IpcError(format!("shuffle block of {size} bytes cut at byte {at}")))?;
            for batch in StreamReader::try_new(Cursor::new(block), None)? {
                let batch = batch?;
                if batch.num_rows() > 0 {
                    // The plan's input schema (names, nullability, strings as text or bytes) over the block's
                    // columns.
                    let batch = crate::unsafe_row::conform_strings(batch, &self.schema, false)
                        .map_err(|e| ArrowError::ExternalError(Box::new(e)))?;
                    self.coalescer.push_batch(batch)?;
                }
            }
            at += 8 + size;
        }
        Ok(())
    }
}

impl<F: FnMut() -> Result<Option<Vec<u8>>>> Iterator for ShuffleBlockReader<F> {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(batch) = self.coalescer.next_completed_batch() {
                return Some(Ok(batch));
            }
            if self.finished {
                return None;
            }
            match (self.next_blocks)() {
                Ok(Some(bytes)) => {
                    if let Err(e) = self.push_blocks(&bytes) {
                        self.finished = true;
                        return Some(Err(e));
                    }
                }
                Ok(None) => {
                    self.finished = true;
                    if let Err(e) = self.coalescer.finish_buffered_batch() {
                        return Some(Err(e));
                    }
                }
                Err(e) => {
                    self.finished = true;
                    return Some(Err(ArrowError::ExternalError(Box::new(e))));
                }
            }
        }
    }
}

impl<F: FnMut() -> Result<Option<Vec<u8>>>> RecordBatchReader for ShuffleBlockReader<F> {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, Int64Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    use arrow::ipc::writer::StreamWriter;
    use std::sync::Arc;

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, true), Field::new("s", DataType::Utf8, true)]))
    }

    fn block(from: i64, rows: i64) -> Vec<u8> {
        let keys: Int64Array = (from..from + rows).map(|v| if v % 5 == 0 { None } else { Some(v) }).collect();
        let strings: StringArray = (from..from + rows).map(|v| Some(format!("s{v}"))).collect();
        let batch = RecordBatch::try_new(schema(), vec![Arc::new(keys), Arc::new(strings)]).unwrap();
        let mut out = Vec::new();
        let mut w = StreamWriter::try_new(&mut out, &schema()).unwrap();
        w.write(&batch).unwrap();
        w.finish().unwrap();
        drop(w);
        out
    }

    fn framed(blocks: &[Vec<u8>]) -> Vec<u8> {
        let mut out = Vec::new();
        for b in blocks {
            out.extend_from_slice(&(b.len() as u64).to_le_bytes());
            out.extend_from_slice(b);
        }
        out
    }

    #[test]
    fn small_blocks_come_out_as_full_batches_in_order() {
        // 3 buffers of 7 blocks of 30 rows: 630 rows → batches of 100 (the last 30).
        let mut buffers: Vec<Vec<u8>> =
            (0..3).map(|b| framed(&(0..7).map(|i| block((b * 7 + i) * 30, 30)).collect::<Vec<_>>())).collect();
        buffers.reverse();
        let reader = ShuffleBlockReader::new(schema(), 100, move || Ok(buffers.pop()));
        let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
        assert_eq!(batches.iter().map(|b| b.num_rows()).collect::<Vec<_>>(), vec![100, 100, 100, 100, 100, 100, 30]);
        let keys: Vec<Option<i64>> = batches
            .iter()
            .flat_map(|b| b.column(0).as_any().downcast_ref::<Int64Array>().unwrap().iter().collect::<Vec<_>>())
            .collect();
        let expected: Vec<Option<i64>> = (0..630).map(|v| if v % 5 == 0 { None } else { Some(v) }).collect();
        assert_eq!(keys, expected);
        let strings = batches[6].column(1).as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(strings.value(29), "s629");
    }

    #[test]
    fn no_blocks_no_batches_and_a_cut_block_is_an_error() {
        let mut none = vec![framed(&[])];
        let reader = ShuffleBlockReader::new(schema(), 100, move || Ok(none.pop()));
        assert_eq!(reader.count(), 0);

        let mut bytes = framed(&[block(0, 10)]);
        bytes.truncate(bytes.len() - 3);
        let mut cut = vec![bytes];
        let mut reader = ShuffleBlockReader::new(schema(), 100, move || Ok(cut.pop()));
        let err = reader.next().unwrap().unwrap_err();
        assert!(err.to_string().contains("cut"), "{err}");
        assert!(reader.next().is_none());
    }
}
