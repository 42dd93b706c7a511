package org.apache.spark.sql.ember.memory

import java.util.concurrent.atomic.AtomicLong

import org.apache.spark.memory.{MemoryConsumer, MemoryMode, TaskMemoryManager}

/**
 * The JVM end of the native memory pool: every byte a native operator reserves is acquired here, from the
 * task's off-heap execution memory, like any Spark operator's. Spark may grant less than asked (after spilling
 * other consumers); the native side then spills itself. Spark asking *this* consumer to spill gets 0: native
 * operators spill on their own refusals.
 */
class NativeMemoryConsumer(tmm: TaskMemoryManager)
    extends MemoryConsumer(tmm, tmm.pageSizeBytes(), MemoryMode.OFF_HEAP) {

  /** Called from native code. Returns the bytes granted (possibly fewer than asked). */
  def acquire(bytes: Long): Long = {
    val granted = acquireMemory(bytes)
    NativeMemoryConsumer.outstanding.addAndGet(granted)
    granted
  }

  /** Called from native code. */
  def release(bytes: Long): Unit = {
    freeMemory(bytes)
    NativeMemoryConsumer.outstanding.addAndGet(-bytes)
  }

  override def spill(size: Long, trigger: MemoryConsumer): Long = 0L

  /** Returns whatever is still held (a native leak, which would be a bug); 0 when all is well. */
  def releaseAll(): Long = {
    val left = getUsed
    if (left > 0) release(left)
    left
  }
}

object NativeMemoryConsumer {

  /** Bytes held by native plans across this JVM: 0 whenever no native plan is running (tests assert it). */
  val outstanding = new AtomicLong(0)
}
