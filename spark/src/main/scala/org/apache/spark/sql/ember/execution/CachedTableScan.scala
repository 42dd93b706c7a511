package org.apache.spark.sql.ember.execution

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.TableCacheQueryStageExec
import org.apache.spark.sql.execution.columnar.InMemoryTableScanExec
import org.apache.spark.sql.internal.SQLConf
import org.ember.EmberConf

/** A cached table's scan (`InMemoryTableScanExec`) read natively: its Arrow batches go to the engine as bytes. */
object CachedTableScan {

  /** The scan under whatever AQE wraps it in. */
  def of(plan: SparkPlan): Option[InMemoryTableScanExec] = plan match {
    case s: InMemoryTableScanExec => Some(s)
    case TableCacheQueryStageExec(_, s: InMemoryTableScanExec) => Some(s)
    case _ => None
  }

  /** Why the engine cannot read this scan's batches (None: it can). */
  def unsupported(scan: InMemoryTableScanExec): Option[String] = {
    val builder = scan.relation.cacheBuilder
    if (!EmberConf.EXEC_IN_MEMORY_SCAN.get(SQLConf.get)) {
      Some(s"${EmberConf.EXEC_IN_MEMORY_SCAN.key} is false")
    } else if (!builder.serializer.isInstanceOf[EmberCachedBatchSerializer]) {
      Some(
        s"cached by ${builder.serializer.getClass.getSimpleName}, not Ember's (spark.sql.cache.serializer, " +
          s"set by ${EmberConf.CACHE_ENABLED.key})"
      )
    } else if (!EmberCachedBatchSerializer.arrow(scan.relation.output)) {
      Some("a column's type is cached by Spark's serializer")
    } else None
  }

  /**
   * The scan's batches per task, pruned by their statistics as Spark's scan prunes them
   * (`spark.sql.inMemoryColumnarStorage.partitionPruning`), its accumulators and row metric kept.
   */
  def rdd(scan: InMemoryTableScanExec): RDD[InputIterator] = {
    val relation = scan.relation
    val buffers = relation.cacheBuilder.cachedColumnBuffers
    val pruned =
      if (SQLConf.get.inMemoryPartitionPruning) {
        buffers.mapPartitionsWithIndexInternal(
          relation.cacheBuilder.serializer.buildFilter(scan.predicates, relation.output)
        )
      } else buffers
    val countForTests = scan.enableAccumulatorsForTest
    if (countForTests) {
      scan.readPartitions.setValue(0)
      scan.readBatches.setValue(0)
    }
    val (readPartitions, readBatches) = (scan.readPartitions, scan.readBatches)
    val columns = EmberCachedBatchSerializer.columnIndices(relation.output, scan.output)
    val numOutputRows = scan.metrics("numOutputRows")
    pruned.mapPartitionsInternal { it =>
      val batches =
        if (!countForTests) it
        else {
          if (it.hasNext) readPartitions.add(1)
          it.map { b => readBatches.add(1); b }
        }
      Iterator(InputIterator.CachedBatches(new CachedBatchSource(batches, columns, numOutputRows)))
    }
  }
}
