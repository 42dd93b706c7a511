package org.apache.spark.sql.ember.execution

import org.apache.spark.TaskContext
import org.apache.spark.sql.execution.metric.SQLMetric

/**
 * One task's Parquet file splits, read natively ([[NativeParquetScan]]): the engine takes `task` (a
 * `ParquetScanTask` proto) and calls [[checkKilled]] before every batch, so a cancelled task stops.
 */
final class ParquetSource(val task: Array[Byte], metrics: ParquetScanMetrics) extends NativeInputSource {

  /**
   * Called by the engine with what its filters skipped — row groups and pages by their statistics, and rows of
   * the row groups read that it did not return — and what it read: bytes taken from the files and rows returned,
   * which also go to the task's input metrics (Spark's "Input Size / Records"), as Spark's file scan reports
   * them (the native reader bypasses the file system statistics Spark reads).
   */
  def pruned(rowGroups: Long, pages: Long, rows: Long, bytesRead: Long, rowsRead: Long): Unit = {
    metrics.rowGroupsPruned += rowGroups
    metrics.pagesPruned += pages
    metrics.rowsSkipped += rows
    metrics.bytesRead += bytesRead
    val task = TaskContext.get()
    if (task != null) {
      task.taskMetrics().inputMetrics.incBytesRead(bytesRead)
      task.taskMetrics().inputMetrics.incRecordsRead(rowsRead)
    }
  }
}

/** The native Parquet scan's metrics on its `EmberInput` node. */
final case class ParquetScanMetrics(
    splitsRead: SQLMetric,
    rowGroupsPruned: SQLMetric,
    pagesPruned: SQLMetric,
    rowsSkipped: SQLMetric,
    bytesRead: SQLMetric
)
