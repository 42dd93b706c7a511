package org.apache.spark.sql.ember.execution

import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.ipc.ArrowReader
import org.apache.arrow.vector.types.pojo.Schema
import org.apache.spark.TaskContext
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.arrow.ArrowWriter
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.ArrowUtils
import org.apache.spark.sql.vectorized.ColumnarBatch

/** A Spark child's output for one task: rows, or columnar batches read row by row. */
sealed trait InputIterator {
  def rows: Iterator[InternalRow]
}

object InputIterator {
  def rows(it: Iterator[InternalRow]): InputIterator = new InputIterator { val rows = it }
  def columnar(it: Iterator[ColumnarBatch]): InputIterator = new InputIterator {
    import scala.jdk.CollectionConverters._
    val rows: Iterator[InternalRow] = it.flatMap(_.rowIterator().asScala)
  }
}

/**
 * Spark rows → Arrow batches with Spark's own `ArrowWriter`, exported to the native plan through the Arrow C
 * stream interface. Each batch gets fresh buffers: the native side may still hold the previous one (a sort
 * keeps its input), so buffers are handed over, never reset in place. A failure of the Spark child is kept,
 * so the task fails with the child's own exception rather than the C interface's generic error.
 */
class SparkArrowReader(
    rows: Iterator[InternalRow],
    schema: StructType,
    timeZoneId: String,
    batchSize: Int,
    allocator: BufferAllocator
) extends ArrowReader(allocator) {

  @volatile var failure: Throwable = _
  private var writer: ArrowWriter = _
  private val context = TaskContext.get()

  override def loadNextBatch(): Boolean =
    try {
      if (context != null) context.killTaskIfInterrupted()
      val root = getVectorSchemaRoot
      if (writer == null) writer = ArrowWriter.create(root)
      root.clear()
      root.allocateNew()
      writer.reset()
      var n = 0
      while (n < batchSize && rows.hasNext) {
        writer.write(rows.next())
        n += 1
      }
      writer.finish()
      n > 0
    } catch {
      case t: Throwable =>
        failure = t
        throw t
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
