package org.apache.spark.sql.ember.execution

import org.apache.spark.sql.columnar.CachedBatch
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.unsafe.Platform

/**
 * A cached table's batches for the native side (`nextRows` / `packed`): per batch one record of its row count
 * and the selected columns' IPC streams, each preceded by its size (little-endian longs), decoded natively by
 * `CachedBatchReader`. Rows handed over count in the scan's `numOutputRows`, as Spark's scan counts them.
 */
class CachedBatchSource(
    batches: Iterator[CachedBatch],
    columns: Array[Int],
    numOutputRows: SQLMetric,
    targetBytes: Int = 4 << 20
) extends NativeByteSource("cached batches of one call", targetBytes) {

  override protected def fill(): Unit =
    while (filled < targetBytes && batches.hasNext) {
      val batch = batches.next().asInstanceOf[EmberCachedBatch]
      var size = 8L
      columns.foreach(c => size += 8L + batch.columns(c).length)
      if (size > Int.MaxValue - 16)
        throw new IllegalStateException(s"a cached batch of $size bytes exceeds 2 GiB")
      var at = reserve(size.toInt)
      Platform.putLong(bytes, at, batch.numRows.toLong)
      at += 8
      columns.foreach { c =>
        val column = batch.columns(c)
        Platform.putLong(bytes, at, column.length.toLong)
        Platform.copyMemory(column, Platform.BYTE_ARRAY_OFFSET, bytes, at + 8, column.length)
        at += 8L + column.length
      }
      numOutputRows += batch.numRows
    }
}
