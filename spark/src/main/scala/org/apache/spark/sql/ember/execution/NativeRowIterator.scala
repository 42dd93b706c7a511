package org.apache.spark.sql.ember.execution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.unsafe.Platform

/**
 * A native plan's output as `UnsafeRow`s pointing into one byte array on the JVM heap, reused from batch to
 * batch ([[NativePlanIterator.nextRowsInto]], about `maxBytes` of rows per call) and grown when a batch needs
 * more. One row object, re-pointed for
 * every row, as Spark's own `ColumnarToRowExec` does; as with Spark's, a consumer that keeps a row past the next
 * one copies it (the next batch overwrites the bytes).
 */
class NativeRowIterator(plan: NativePlanIterator, numFields: Int, numOutputRows: SQLMetric, maxBytes: Long)
    extends Iterator[InternalRow] {
  private val row = new UnsafeRow(numFields)
  private val initialBytes = 1 << 20
  private var buffer = new Array[Byte](initialBytes)
  private var filled = 0
  private var position = 0
  private var done = false

  override def hasNext: Boolean = {
    while (!done && position >= filled) {
      // The native side writes about maxBytes per call (a bigger row alone): a buffer grown well past that
      // for one huge row is dropped once its rows are read.
      if (filled > 0 && buffer.length > initialBytes && buffer.length > 2 * maxBytes) {
        buffer = new Array[Byte](initialBytes)
      }
      position = 0
      filled = 0
      val n = plan.nextRowsInto(buffer)
      if (n == -1L) done = true
      else if (n < 0) buffer = new Array[Byte](math.min(Int.MaxValue - 16L, -n + (-n >> 2)).toInt)
      else filled = n.toInt
    }
    !done
  }

  override def next(): InternalRow = {
    if (!hasNext) throw new NoSuchElementException("end of native output")
    val at = Platform.BYTE_ARRAY_OFFSET + position
    val size = Platform.getLong(buffer, at).toInt
    row.pointTo(buffer, at + 8, size)
    position += 8 + size
    numOutputRows += 1
    row
  }
}
