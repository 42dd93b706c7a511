//! Joining a bucket that cannot shrink (one hot key, the null keys) in chunks of its build rows, its probe rows
//! replayed from disk per chunk. Build-preserving joins are exact per chunk; probe-preserving ones record which
//! probe rows matched in any chunk and emit the probe-side rows in a last replay.
use std::sync::Arc;

use arrow::array::{ArrayRef, AsArray, BooleanBufferBuilder, RecordBatch, UInt64Array};
use arrow::datatypes::{SchemaRef, UInt64Type};
use datafusion_common::{internal_datafusion_err, internal_err, DataFusionError, JoinType, Result};
use datafusion_physical_plan::stream::RecordBatchStreamAdapter;
use datafusion_physical_plan::SendableRecordBatchStream;
use futures::StreamExt;

use super::buckets::{batch_cost, Budget};
use super::stream::{BucketTask, JoinContext};

/// Joins that must know, across chunks, which probe rows matched.
pub(super) fn tracks_probe(join_type: JoinType) -> bool {
    matches!(
        join_type,
        JoinType::Right | JoinType::Full | JoinType::RightSemi | JoinType::RightAnti | JoinType::RightMark
    )
}

/// The join run per chunk of a chunked bucket.
pub(super) fn chunk_join_type(join_type: JoinType) -> JoinType {
    match join_type {
        JoinType::Right => JoinType::Inner,
        JoinType::Full => JoinType::Left,
        JoinType::RightSemi | JoinType::RightAnti | JoinType::RightMark => JoinType::RightSemi,
        other => other,
    }
}

/// A bucket joined in chunks of its build rows, its probe rows replayed per chunk.
pub(super) struct Chunked {
    task: BucketTask,
    build: SendableRecordBatchStream,
    pending: Option<RecordBatch>,
    build_done: bool,
    tracking: bool,
    /// Which probe rows (by position in the bucket's probe file) met a build row in some chunk.
    matched: BooleanBufferBuilder,
    matched_bytes: usize,
    current: Option<(SendableRecordBatchStream, usize)>,
    final_pass: Option<(SendableRecordBatchStream, usize)>,
    finished: bool,
}

impl Chunked {
    pub(super) fn new(jc: &JoinContext, budget: &Budget, task: BucketTask) -> Result<Self> {
        let tracking = tracks_probe(jc.join_type);
        let mut matched = BooleanBufferBuilder::new(0);
        let mut matched_bytes = 0;
        if tracking {
            matched_bytes = task.probe.rows.div_ceil(8);
            budget.try_grow(matched_bytes)?;
            matched.append_n(task.probe.rows, false);
        }
        Ok(Self {
            build: jc.read_build(&task.build)?,
            task,
            pending: None,
            build_done: false,
            tracking,
            matched,
            matched_bytes,
            current: None,
            final_pass: None,
            finished: false,
        })
    }

    pub(super) async fn next(&mut self, jc: &JoinContext, budget: &Budget) -> Result<Option<RecordBatch>> {
        let emits_pairs = !matches!(jc.join_type, JoinType::RightSemi | JoinType::RightAnti | JoinType::RightMark);
        loop {
            if let Some((stream, reserved)) = &mut self.current {
                match stream.next().await {
                    Some(b) => {
                        let b = b?;
                        let mut columns = b.columns().to_vec();
                        if self.tracking {
                            let idx = columns
                                .pop()
                                .ok_or_else(|| internal_datafusion_err!("chunked join: no row position column"))?;
                            for i in idx.as_primitive::<UInt64Type>().iter().flatten() {
                                self.matched.set_bit(i as usize, true);
                            }
                        }
                        if emits_pairs && b.num_rows() > 0 {
                            return Ok(Some(RecordBatch::try_new(jc.schema.clone(), columns)?));
                        }
                    }
                    None => {
                        budget.shrink(*reserved);
                        self.current = None;
                    }
                }
                continue;
            }
            if !self.build_done {
                let mut chunk = vec![];
                let mut reserved = 0;
                loop {
                    let b = match self.pending.take() {
                        Some(b) => b,
                        None => match self.build.next().await {
                            Some(b) => b?,
                            None => {
                                self.build_done = true;
                                break;
                            }
                        },
                    };
                    let cost = batch_cost(&b);
                    if budget.try_grow(cost).is_ok() {
                        reserved += cost;
                        chunk.push(b);
                    } else if chunk.is_empty() {
                        return Err(DataFusionError::ResourcesExhausted(format!(
                            "spilling hash join: cannot reserve {cost} bytes for one build batch of {} rows, \
                             and nothing is left to spill",
                            b.num_rows()
                        )));
                    } else {
                        self.pending = Some(b);
                        break;
                    }
                }
                if chunk.is_empty() {
                    continue;
                }
                let mut probe = jc.read_probe(&self.task.probe)?;
                if self.tracking {
                    probe = with_row_positions(probe, jc.probe_idx_schema.clone());
                }
                let stream = jc.hash_join(chunk, probe, chunk_join_type(jc.join_type))?;
                self.current = Some((stream, reserved));
                continue;
            }
            if self.tracking && !self.finished {
                if self.final_pass.is_none() {
                    self.final_pass = Some((jc.read_probe(&self.task.probe)?, 0));
                }
                let Some((stream, offset)) = self.final_pass.as_mut() else {
                    return internal_err!("chunked join: no final pass over the probe side");
                };
                match stream.next().await {
                    Some(b) => {
                        let b = b?;
                        let start = *offset;
                        *offset += b.num_rows();
                        if let Some(out) = jc.probe_leftovers(&b, &self.matched, start)? {
                            return Ok(Some(out));
                        }
                        continue;
                    }
                    None => {
                        self.final_pass = None;
                        self.finished = true;
                    }
                }
            }
            budget.shrink(std::mem::take(&mut self.matched_bytes));
            return Ok(None);
        }
    }
}

/// Appends each probe row's position (0, 1, ...) as a last column.
fn with_row_positions(input: SendableRecordBatchStream, schema: SchemaRef) -> SendableRecordBatchStream {
    let mut offset = 0u64;
    let out_schema = schema.clone();
    let stream = input.map(move |b| {
        let b = b?;
        let n = b.num_rows() as u64;
        let positions: ArrayRef = Arc::new(UInt64Array::from_iter_values(offset..offset + n));
        offset += n;
        let mut columns = b.columns().to_vec();
        columns.push(positions);
        Ok(RecordBatch::try_new(schema.clone(), columns)?)
    });
    Box::pin(RecordBatchStreamAdapter::new(out_schema, stream))
}
