package org.apache.spark.sql.ember.execution

import org.apache.spark.sql.execution.metric.SQLMetric

/**
 * One task's Parquet file splits, read natively ([[NativeParquetScan]]): the engine takes `task` (a
 * `ParquetScanTask` proto) and calls [[checkKilled]] before every batch, so a cancelled task stops.
 */
final class ParquetSource(val task: Array[Byte], metrics: ParquetScanMetrics) extends NativeInputSource {

  /**
   * Called by the engine with what its filters skipped: row groups and pages by their statistics, and rows of
   * the row groups read that it did not return.
   */
  def pruned(rowGroups: Long, pages: Long, rows: Long): Unit = {
    metrics.rowGroupsPruned += rowGroups
    metrics.pagesPruned += pages
    metrics.rowsSkipped += rows
  }
}

/** The native Parquet scan's metrics on its `EmberInput` node. */
final case class ParquetScanMetrics(
    splitsRead: SQLMetric,
    rowGroupsPruned: SQLMetric,
    pagesPruned: SQLMetric,
    rowsSkipped: SQLMetric
)
