package org.apache.spark.sql.ember.execution

import java.io.ByteArrayInputStream

import scala.jdk.CollectionConverters._

import org.apache.arrow.memory.BufferAllocator

import org.apache.arrow.vector.ipc.ArrowStreamReader
import org.apache.spark.TaskContext
import org.apache.spark.internal.Logging
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.util.ArrowUtils
import org.apache.spark.sql.types.DataType
import org.apache.spark.sql.vectorized.ColumnarBatch
import org.apache.spark.unsafe.Platform

/**
 * Decodes one task's shuffle blocks (Arrow IPC streams) into batches, one per IPC record batch. A batch stays
 * valid until the next is asked for; everything left is freed at the end of the task.
 */
class DecodedBlocks(rows: Iterator[InternalRow], types: Seq[DataType])
    extends Iterator[ColumnarBatch]
    with Logging {
  private val context = TaskContext.get()
  private val allocator: BufferAllocator =
    ArrowUtils.rootAllocator.newChildAllocator(
      s"ember-shuffle-read-${context.taskAttemptId()}",
      0,
      Long.MaxValue
    )
  private var reader: ArrowStreamReader = _
  private var previous: ColumnarBatch = _
  private var pending: ColumnarBatch = _
  private var closed = false

  context.addTaskCompletionListener[Unit](_ => close())

  override def hasNext: Boolean = {
    if (pending != null) return true
    releasePrevious()
    while (!closed) {
      if (reader != null && reader.loadNextBatch()) {
        val root = reader.getVectorSchemaRoot
        if (root.getRowCount > 0) {
          val vectors = root.getFieldVectors.asScala.map { v =>
            val transfer = v.getTransferPair(allocator)
            transfer.transfer()
            transfer.getTo
          }
          pending = new ColumnarBatch(EmberColumnVectors.of(vectors.toSeq, types), root.getRowCount)
          return true
        }
      } else {
        closeReader()
        if (!rows.hasNext) return false
        reader = new ArrowStreamReader(blockStream(rows.next()), allocator)
      }
    }
    false
  }

  /** The block's bytes in place when the row points into a byte array (as the shuffle reader's rows do). */
  private def blockStream(row: InternalRow): ByteArrayInputStream = row match {
    case u: UnsafeRow if u.getBaseObject.isInstanceOf[Array[Byte]] =>
      val offset = (ShuffleBlocks.blockAddress(u) - Platform.BYTE_ARRAY_OFFSET).toInt
      new ByteArrayInputStream(u.getBaseObject.asInstanceOf[Array[Byte]], offset, ShuffleBlocks.blockSize(u))
    case other => new ByteArrayInputStream(other.getBinary(0))
  }

  override def next(): ColumnarBatch = {
    if (!hasNext) throw new NoSuchElementException("end of shuffle blocks")
    previous = pending
    pending = null
    previous
  }

  private def releasePrevious(): Unit = if (previous != null) {
    previous.close()
    previous = null
  }

  private def closeReader(): Unit = if (reader != null) {
    reader.close()
    reader = null
  }

  private def close(): Unit = if (!closed) {
    closed = true
    releasePrevious()
    if (pending != null) {
      pending.close()
      pending = null
    }
    closeReader()
    try allocator.close()
    catch {
      case e: IllegalStateException =>
        NativePlanIterator.arrowLeaks.incrementAndGet()
        logError(s"Ember: shuffle blocks leaked Arrow buffers: ${e.getMessage}")
    }
  }
}
