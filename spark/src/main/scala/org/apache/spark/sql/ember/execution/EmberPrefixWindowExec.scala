package org.apache.spark.sql.ember.execution

import org.apache.spark.sql.catalyst.expressions.{Expression, NamedExpression, SortOrder}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.execution.window.WindowExecBase
import org.ember.proto

/**
 * Spark's `WindowExec`, run natively (`operators/prefix_window`). Output, required child distribution and
 * ordering, output partitioning and ordering are those of Spark's own `WindowExecBase` (this node mixes it in):
 * the child arrives clustered by the partition keys and sorted by (partition keys, order keys), as the native
 * operator requires.
 */
case class EmberPrefixWindowExec(
    windowExpression: Seq[NamedExpression],
    partitionSpec: Seq[Expression],
    orderSpec: Seq[SortOrder],
    child: SparkPlan,
    nativeOperator: proto.Operator
) extends WindowExecBase
    with EmberExec {

  /** Named as the native operator's `MetricBuilder` counters. */
  override protected def operatorMetrics: Map[String, SQLMetric] = Map(
    "prefix_frames" -> SQLMetrics.createMetric(sparkContext, "frames evaluated by prefix difference"),
    "refold_frames" -> SQLMetrics.createMetric(sparkContext, "frames evaluated by refold / add-and-retract"),
    "segmented_partitions" -> SQLMetrics.createMetric(sparkContext, "partitions evaluated in segments"),
    "window_segments" -> SQLMetrics.createMetric(sparkContext, "segments evaluated"),
    "spilled_partitions" -> SQLMetrics.createMetric(sparkContext, "partitions spilled to disk")
  )

  override def simpleString(maxFields: Int): String =
    s"EmberPrefixWindowExec ${windowExpression.mkString("[", ", ", "]")}, " +
      s"${partitionSpec.mkString("[", ", ", "]")}, ${orderSpec.mkString("[", ", ", "]")}"

  override protected def withNewChildInternal(newChild: SparkPlan): EmberPrefixWindowExec =
    copy(child = newChild)
}
