package org.apache.spark.sql.ember.execution

import org.apache.spark.sql.execution.metric.SQLMetric

/**
 * One task's Parquet file splits, read natively ([[NativeParquetScan]]): the engine takes `task` (a
 * `ParquetScanTask` proto) and calls [[checkKilled]] before every batch, so a cancelled task stops.
 */
final class ParquetSource(val task: Array[Byte], prunedMetric: SQLMetric) extends NativeInputSource {

  /** Called by the engine with the row groups a split skipped by their statistics. */
  def rowGroupsPruned(n: Long): Unit = prunedMetric += n
}
