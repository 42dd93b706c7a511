package org.apache.spark.sql.ember.execution

import org.apache.spark.SparkContext
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference}
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.types.{BinaryType, IntegerType}
import org.ember.proto

/**
 * The native block under an [[EmberShuffleExchangeExec]], topped by its `ShuffleWriter`: (partition, block)
 * rows. Built when the exchange executes, never part of the plan tree; its metrics are the exchange's.
 */
case class EmberShuffleWriterExec(
    child: SparkPlan,
    nativeOperator: proto.Operator,
    writerMetrics: Map[String, SQLMetric]
) extends UnaryExecNode
    with EmberExec {
  override lazy val output: Seq[Attribute] = Seq(
    AttributeReference("partition", IntegerType, nullable = false)(),
    AttributeReference("block", BinaryType, nullable = false)()
  )
  override lazy val metrics: Map[String, SQLMetric] = writerMetrics
  override protected def withNewChildInternal(newChild: SparkPlan): EmberShuffleWriterExec =
    copy(child = newChild)
}

object EmberShuffleWriterExec {

  /**
   * What the native writer reports (its own metrics under the names its Rust module declares), for the exchange
   * that runs it; `rowsLabel` says what its rows are to that exchange.
   */
  def metrics(sc: SparkContext, rowsLabel: String): Map[String, SQLMetric] =
    EmberExec.baselineMetrics(sc, "blocks out of the native writer") ++ ownMetrics(sc, rowsLabel)

  /** The writer's own metrics, filled by name (checked by the tests against the engine's names). */
  def ownMetrics(sc: SparkContext, rowsLabel: String): Map[String, SQLMetric] = Map(
    "shuffle_rows" -> SQLMetrics.createMetric(sc, rowsLabel),
    "blocks_written" -> SQLMetrics.createMetric(sc, "Arrow IPC blocks written"),
    "block_bytes" -> SQLMetrics.createSizeMetric(sc, "Arrow IPC block bytes"),
    "dynamic_filter_rows_dropped" -> SQLMetrics.createMetric(sc, "rows dropped by the dynamic filter"),
    "dynamic_filter_switched_off" -> SQLMetrics.createMetric(sc, "dynamic filter switched off (tasks)"),
    "dynamic_filter_summary_bytes" -> SQLMetrics.createSizeMetric(sc, "dynamic filter key summary bytes"),
    "dynamic_filter_time" -> SQLMetrics.createNanoTimingMetric(
      sc,
      "time summarizing and applying dynamic filters"
    )
  )
}
