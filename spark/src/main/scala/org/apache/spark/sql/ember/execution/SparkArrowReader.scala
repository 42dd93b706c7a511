package org.apache.spark.sql.ember.execution

import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.VectorSchemaRoot
import org.apache.arrow.vector.ipc.ArrowReader
import org.apache.arrow.vector.types.pojo.Schema
import org.apache.spark.TaskContext
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.arrow.ArrowWriter
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.ArrowUtils
import org.apache.spark.sql.vectorized.ColumnarBatch

/**
 * A Spark child's output → Arrow batches, exported to the native plan through the Arrow C stream interface:
 * rows through Spark's own `ArrowWriter` (up to `batchSize` rows, and, for `UnsafeRow`s, until their bytes
 * reach `maxBytes`), columnar batches column by column ([[ColumnarToArrow]]), each as one
 * Arrow batch. Each batch gets fresh buffers: the native side may still hold the previous one (a sort keeps
 * its input), so buffers are handed over, never reset in place. A failure of the Spark child is kept, so the
 * task fails with the child's own exception rather than the C interface's generic error.
 */
class SparkArrowReader(
    input: InputIterator,
    schema: StructType,
    timeZoneId: String,
    batchSize: Int,
    maxBytes: Long,
    allocator: BufferAllocator
) extends ArrowReader(allocator) {

  @volatile var failure: Throwable = _
  private var writer: ArrowWriter = _
  private val context = TaskContext.get()

  override def loadNextBatch(): Boolean =
    try {
      if (context != null) context.killTaskIfInterrupted()
      val root = getVectorSchemaRoot
      root.clear()
      input match {
        case InputIterator.Rows(rows) => loadRows(root, rows)
        case InputIterator.Columnar(batches) => loadColumns(root, batches)
        case InputIterator.ShuffleBlocks(_) =>
          throw new IllegalStateException("shuffle blocks are decoded natively")
      }
    } catch {
      case t: Throwable =>
        failure = t
        throw t
    }

  private def loadRows(root: VectorSchemaRoot, rows: Iterator[InternalRow]): Boolean = {
    if (writer == null) writer = ArrowWriter.create(root)
    root.allocateNew()
    writer.reset()
    var n = 0
    var bytes = 0L
    while (n < batchSize && bytes < maxBytes && rows.hasNext) {
      val row = rows.next()
      row match {
        case u: UnsafeRow => bytes += u.getSizeInBytes
        case _ =>
      }
      writer.write(row)
      n += 1
    }
    writer.finish()
    n > 0
  }

  /** The next non-empty batch (an empty one would read as the end of the stream). */
  private def loadColumns(root: VectorSchemaRoot, batches: Iterator[ColumnarBatch]): Boolean = {
    while (batches.hasNext) {
      val batch = batches.next()
      val n = batch.numRows()
      if (n > 0) {
        val vectors = root.getFieldVectors
        var c = 0
        while (c < vectors.size()) {
          ColumnarToArrow.copy(batch.column(c), vectors.get(c), n)
          c += 1
        }
        root.setRowCount(n)
        return true
      }
    }
    false
  }

  override def bytesRead(): Long = 0L
  override protected def closeReadSource(): Unit = ()
  // Positional names: Spark allows null and duplicate column names (e.g. after a join), Arrow's struct export
  // does not, and the native plan binds columns by position anyway.
  override protected def readSchema(): Schema =
    ArrowUtils.toArrowSchema(SparkArrowReader.positional(schema), timeZoneId, true, false)
}

object SparkArrowReader {
  def positional(schema: StructType): StructType =
    StructType(schema.fields.zipWithIndex.map { case (f, i) => f.copy(name = s"c$i") })
}
