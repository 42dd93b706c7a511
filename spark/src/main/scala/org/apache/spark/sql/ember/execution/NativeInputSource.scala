package org.apache.spark.sql.ember.execution

import org.apache.spark.TaskContext

/**
 * An input object the native side calls back on the task thread. Each call first fails if the task was killed;
 * a failure (the kill, or the Spark child's own exception) is kept, so the task fails with Spark's exception
 * rather than the native side's report of it.
 */
abstract class NativeInputSource {
  @volatile var failure: Throwable = _
  private val context = TaskContext.get()

  /**
   * Throws when the task was killed: the engine calls it before every batch of an input it generates or reads
   * itself (a range, Parquet files), where nothing else calls back into the JVM.
   */
  final def checkKilled(): Unit = call(())

  protected final def call[T](f: => T): T =
    try {
      if (context != null) context.killTaskIfInterrupted()
      f
    } catch {
      case t: Throwable =>
        failure = t
        throw t
    }
}
