package org.apache.spark.sql.ember.execution

import org.apache.arrow.vector.VarBinaryVector
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.types.DataType
import org.apache.spark.sql.vectorized.{ArrowColumnVector, ColumnarBatch}
import org.apache.spark.unsafe.Platform

/** Arrow IPC blocks in and out of Spark's shuffle. */
object ShuffleBlocks {

  /**
   * The writer's output batches → one shuffle record per block: its partition, and the block as an `UnsafeRow`
   * with one BINARY field (null bits, offset-and-size word, the bytes padded to 8), built with a single copy.
   */
  def records(
      batches: Iterator[ColumnarBatch],
      onSummary: Option[Array[Byte] => Unit] = None
  ): Iterator[Product2[Int, InternalRow]] =
    batches.flatMap { batch =>
      val partitions = batch.column(0)
      val blocks =
        batch.column(1).asInstanceOf[ArrowColumnVector].getValueVector.asInstanceOf[VarBinaryVector]
      // Consumed before the next batch is pulled (which releases this one). Partition -1: the writer's key
      // summary (a dynamic filter's build side), which goes to the driver instead of the shuffle.
      Iterator.range(0, batch.numRows()).flatMap { i =>
        partitions.getInt(i) match {
          case -1 =>
            onSummary match {
              case Some(report) => report(blocks.get(i))
              case None =>
                throw new IllegalStateException("Ember: a key summary from a writer that keeps none")
            }
            None
          case p => Some((p, blockRow(blocks, i)))
        }
      }
    }

  private def blockRow(blocks: VarBinaryVector, i: Int): UnsafeRow = {
    val start = blocks.getStartOffset(i)
    val length = blocks.getEndOffset(i) - start
    val bytes = new Array[Byte](16 + ((length + 7) & ~7))
    Platform.putLong(bytes, Platform.BYTE_ARRAY_OFFSET + 8, (16L << 32) | length)
    Platform.copyMemory(
      null,
      blocks.getDataBuffer.memoryAddress() + start,
      bytes,
      Platform.BYTE_ARRAY_OFFSET + 16,
      length
    )
    val row = new UnsafeRow(1)
    row.pointTo(bytes, bytes.length)
    row
  }

  /** Where a block row's bytes start, relative to its base object (its field's offset-and-size word, high half). */
  def blockAddress(row: UnsafeRow): Long = row.getBaseOffset + (row.getLong(0) >>> 32)

  /** A block row's byte count (the word's low half). */
  def blockSize(row: UnsafeRow): Int = row.getLong(0).toInt

  /** The reduce side: block rows → Arrow-backed batches (see [[DecodedBlocksRDD]]). */
  def decode(blockRows: RDD[InternalRow], types: Seq[DataType]): RDD[ColumnarBatch] =
    new DecodedBlocksRDD(blockRows, types)
}
