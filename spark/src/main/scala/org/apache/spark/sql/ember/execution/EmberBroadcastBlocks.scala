package org.apache.spark.sql.ember.execution

import java.lang.ref.Cleaner

import org.apache.spark.SparkEnv
import org.apache.spark.memory.MemoryMode
import org.apache.spark.storage.BroadcastBlockId
import org.ember.EmberConf
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
 * Ember's native memory is off-heap): asked once per table, released when the table goes — to the memory
 * manager that granted it: a table collected after its SparkContext stopped must not release into the next
 * context's pool (Spark would zero that pool's count of storage memory in use). Spark cannot evict this memory
 * to make room for execution, so the executor's tables together hold at most
 * `spark.ember.exec.broadcastHashJoin.sharedBuild.maxMemoryFraction` of the off-heap pool; past it a table is
 * refused and the join's tasks build their own.
 */
final class SharedBuildMemory(broadcastId: Long) {
  private val blockId = BroadcastBlockId(broadcastId, "ember_hash_table")
  @volatile private var granter: org.apache.spark.memory.MemoryManager = _

  def acquire(bytes: Long): Boolean = {
    val env = SparkEnv.get
    env != null && {
      val manager = env.memoryManager
      val granted = SharedBuildMemory.reserve(env, bytes) && {
        val ok = manager.acquireStorageMemory(blockId, bytes, MemoryMode.OFF_HEAP)
        if (!ok) SharedBuildMemory.unreserve(manager, bytes)
        ok
      }
      if (granted) granter = manager
      granted
    }
  }

  def release(bytes: Long): Unit = {
    val manager = granter
    // A stopped context's block manager released all its storage memory already.
    val live = SparkEnv.get != null && (SparkEnv.get.memoryManager eq manager)
    if (manager != null && live) {
      manager.releaseStorageMemory(bytes, MemoryMode.OFF_HEAP)
      SharedBuildMemory.unreserve(manager, bytes)
    }
  }
}

object SharedBuildMemory {

  /** The memory manager whose pool the count is of, and the bytes the executor's shared tables hold there. */
  private var manager: org.apache.spark.memory.MemoryManager = _
  private var held = 0L

  private def reserve(env: SparkEnv, bytes: Long): Boolean = synchronized {
    if (!(manager eq env.memoryManager)) {
      manager = env.memoryManager
      held = 0L
    }
    val e = EmberConf.BROADCAST_SHARED_BUILD_MAX_FRACTION
    val fraction = env.conf.getOption(e.key).map(e.parse).getOrElse(e.default)
    val cap = (env.conf.getSizeAsBytes("spark.memory.offHeap.size", "0") * fraction).toLong
    held + bytes <= cap && { held += bytes; true }
  }

  private def unreserve(m: org.apache.spark.memory.MemoryManager, bytes: Long): Unit = synchronized {
    if (manager eq m) held = math.max(0L, held - bytes)
  }

  /** What the executor's shared tables hold now (tests). */
  def heldBytes: Long = synchronized(held)
}
