package org.apache.spark.sql.ember.execution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.unsafe.Platform

/**
 * Shuffle blocks for a native plan: `nextRows` packs the next blocks of the task's shuffle read, each preceded by
 * its size (a little-endian long), up to about `targetBytes` per call; the native side
 * (`operators/shuffle/reader.rs`) decodes them. A failure of the read is kept, so the task fails with it.
 */
class ShuffleBlockSource(blockRows: Iterator[InternalRow], targetBytes: Int = 4 << 20)
    extends NativeByteSource("shuffle blocks of one call", targetBytes) {

  override protected def fill(): Unit =
    while (filled < targetBytes && blockRows.hasNext) {
      val row = blockRows.next().asInstanceOf[UnsafeRow]
      val size = ShuffleBlocks.blockSize(row)
      val at = reserve(size)
      Platform.copyMemory(row.getBaseObject, ShuffleBlocks.blockAddress(row), bytes, at, size)
    }
}
