package org.apache.spark.sql.ember.execution

import java.lang.ref.Cleaner

import org.apache.spark.SparkEnv
import org.apache.spark.memory.MemoryMode
import org.apache.spark.storage.BroadcastBlockId
import org.ember.jni.NativeLib

/**
 * What an [[EmberBroadcastExchangeExec]] broadcasts: its child's rows as Arrow IPC stream blocks. On an
 * executor the value is one object for all its tasks (Spark's block manager holds it), so it also owns the
 * native registry of the hash tables built from it and shared by those tasks ([[sharedBuilds]]), closed when
 * the value is collected after the broadcast is removed.
 */
final case class EmberBroadcastBlocks(blocks: Array[Array[Byte]], rows: Long) {
  @transient private var shared: Long = 0L

  /** The handle of this value's native registry of shared hash tables, opened on first use. */
  def sharedBuilds(broadcastId: Long): Long = synchronized {
    if (shared == 0L) shared = EmberBroadcastBlocks.open(this, broadcastId)
    shared
  }
}

object EmberBroadcastBlocks {
  private lazy val cleaner = Cleaner.create()

  private def open(owner: EmberBroadcastBlocks, broadcastId: Long): Long = {
    val handle = NativeLib.openSharedBuilds(new SharedBuildMemory(broadcastId))
    // The action must not reach `owner`, or it would never become unreachable.
    cleaner.register(owner, () => NativeLib.closeSharedBuilds(handle))
    handle
  }
}

/**
 * Spark's off-heap storage memory for a shared hash table (broadcast values live in storage memory, and
 * Ember's native memory is off-heap): asked once per table, released when the table goes.
 */
final class SharedBuildMemory(broadcastId: Long) {
  private val blockId = BroadcastBlockId(broadcastId, "ember_hash_table")

  def acquire(bytes: Long): Boolean =
    SparkEnv.get != null && SparkEnv.get.memoryManager.acquireStorageMemory(
      blockId,
      bytes,
      MemoryMode.OFF_HEAP
    )

  def release(bytes: Long): Unit =
    if (SparkEnv.get != null) SparkEnv.get.memoryManager.releaseStorageMemory(bytes, MemoryMode.OFF_HEAP)
}
