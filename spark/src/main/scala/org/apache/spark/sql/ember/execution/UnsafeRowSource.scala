package org.apache.spark.sql.ember.execution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types.StructType

/**
 * A Spark child's rows for a native plan: `nextRows` packs up to `batchSize` of them as `UnsafeRow` bytes, each
 * preceded by its size (a little-endian long), for the native side to decode into Arrow (called from native
 * code, on the task thread), and stops taking rows once it holds `maxBytes` (`spark.ember.rowBatch.maxBytes`):
 * a call packs at least one row, so it holds at most `maxBytes` plus one row. Rows that are not `UnsafeRow`s
 * are projected to one first. A failure of the child is kept, so the task fails with the child's own exception.
 */
class UnsafeRowSource(rows: Iterator[InternalRow], schema: StructType, batchSize: Int, maxBytes: Long)
    extends NativeByteSource("rows of one batch", maxBytes) {
  private lazy val toUnsafe = UnsafeProjection.create(schema)

  override protected def fill(): Unit = {
    var n = 0
    while (n < batchSize && filled < maxBytes && rows.hasNext) {
      val row = rows.next() match {
        case u: UnsafeRow => u
        case other => toUnsafe(other)
      }
      val at = reserve(row.getSizeInBytes)
      row.writeToMemory(bytes, at)
      n += 1
    }
  }
}
