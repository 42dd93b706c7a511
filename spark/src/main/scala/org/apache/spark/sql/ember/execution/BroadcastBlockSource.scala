package org.apache.spark.sql.ember.execution

import org.apache.spark.unsafe.Platform

/**
 * A broadcast's Arrow IPC blocks for a native plan (the build side of a broadcast join): `nextRows` packs the
 * next blocks, each preceded by its size, up to about `targetBytes` per call, as [[ShuffleBlockSource]] does;
 * the native side decodes them (`operators/shuffle/reader.rs`). `sharedBuilds` is the handle of the
 * executor's shared hash tables of this broadcast (0: the task builds its own), valid while `value` is
 * reachable — this source holds it through `createPlan`.
 */
class BroadcastBlockSource(value: EmberBroadcastBlocks, shared: Long, targetBytes: Int = 4 << 20)
    extends NativeByteSource("broadcast blocks of one call", targetBytes) {
  private val blocks = value.blocks
  private var next = 0

  def sharedBuilds(): Long = shared

  override protected def fill(): Unit =
    while (filled < targetBytes && next < blocks.length) {
      val block = blocks(next)
      next += 1
      val at = reserve(block.length)
      Platform.copyMemory(block, Platform.BYTE_ARRAY_OFFSET, bytes, at, block.length)
    }
}
