package org.apache.spark.sql.ember.execution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.vectorized.ColumnarBatch

/** A Spark child's output for one task: rows, or columnar batches (copied column by column). */
sealed trait InputIterator

object InputIterator {
  final case class Rows(rows: Iterator[InternalRow]) extends InputIterator
  final case class Columnar(batches: Iterator[ColumnarBatch]) extends InputIterator

  /** Ember's shuffle blocks, one `UnsafeRow` with a BINARY field each: decoded natively. */
  final case class ShuffleBlocks(blockRows: Iterator[InternalRow]) extends InputIterator

  /**
   * An Ember broadcast's Arrow IPC blocks (the same for every task): decoded natively, or, for a hash join
   * building on them, the executor's shared table of them (`sharedBuilds`: its handle, 0 for none).
   */
  final case class BroadcastBlocks(value: EmberBroadcastBlocks, sharedBuilds: Long) extends InputIterator

  /** A slice of `spark.range`, generated natively. */
  final case class Range(slice: RangeSource) extends InputIterator

  /** A cached table's Arrow batches (Ember's cache serializer), decoded natively. */
  final case class CachedBatches(source: CachedBatchSource) extends InputIterator

  /** Parquet file splits, read natively. */
  final case class Parquet(source: ParquetSource) extends InputIterator

  def rows(it: Iterator[InternalRow]): InputIterator = Rows(it)
  def columnar(it: Iterator[ColumnarBatch]): InputIterator = Columnar(it)
}
