package org.apache.spark.sql.ember.execution

import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, NamedExpression}
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.ember.proto

/**
 * Spark's `HashAggregateExec` / `ObjectHashAggregateExec` run natively: the same fields, hence the same output,
 * required child distribution and output partitioning ([[BaseAggregateExec]]). A grouped partial aggregate is
 * the HLL-gated `AdaptiveAggregateExec` (see native/engine/src/operators/aggregate/adaptive); its gate's
 * metrics are the ones below, under the names the native operator registers.
 */
case class EmberAggregateExec(
    requiredChildDistributionExpressions: Option[Seq[Expression]],
    isStreaming: Boolean,
    numShufflePartitions: Option[Int],
    groupingExpressions: Seq[NamedExpression],
    aggregateExpressions: Seq[AggregateExpression],
    aggregateAttributes: Seq[Attribute],
    initialInputBufferOffset: Int,
    resultExpressions: Seq[NamedExpression],
    child: SparkPlan,
    nativeOperator: proto.Operator
) extends BaseAggregateExec
    with EmberExec {

  override protected def operatorMetrics: Map[String, SQLMetric] = Map(
    "switches_to_pass_through" -> SQLMetrics.createMetric(sparkContext, "switches to pass-through"),
    "switches_to_aggregate" -> SQLMetrics.createMetric(sparkContext, "switches back to aggregating"),
    "pass_through_at_row" -> SQLMetrics.createMetric(sparkContext, "input rows before first pass-through"),
    "rows_passed_through" -> SQLMetrics.createMetric(sparkContext, "rows passed through"),
    "estimated_groups" -> SQLMetrics.createMetric(sparkContext, "estimated groups (HLL) of emitted states"),
    "actual_groups" -> SQLMetrics.createMetric(sparkContext, "actual groups of emitted states"),
    "memory_emits" -> SQLMetrics.createMetric(sparkContext, "states emitted early (memory)"),
    "sketch_time" -> SQLMetrics.createNanoTimingMetric(sparkContext, "sketch time"),
    "aggregate_time" -> SQLMetrics.createNanoTimingMetric(sparkContext, "aggregate time"),
    "radix_partitions" -> SQLMetrics.createMetric(sparkContext, "hash table partitions (0: one table)"),
    "spilled_partitions" -> SQLMetrics.createMetric(sparkContext, "hash table partitions spilled")
  )

  override def simpleString(maxFields: Int): String = {
    val modes = aggregateExpressions.map(_.mode).distinct.mkString(",")
    s"EmberAggregateExec(keys=${groupingExpressions.mkString("[", ", ", "]")}, " +
      s"functions=${aggregateExpressions.mkString("[", ", ", "]")}, mode=$modes)"
  }

  override def verboseString(maxFields: Int): String = simpleString(maxFields)

  override protected def withNewChildInternal(newChild: SparkPlan): EmberAggregateExec =
    copy(child = newChild)
}
