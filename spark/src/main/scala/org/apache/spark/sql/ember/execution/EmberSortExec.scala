package org.apache.spark.sql.ember.execution

import org.apache.spark.sql.catalyst.expressions.{Attribute, SortOrder}
import org.apache.spark.sql.catalyst.plans.physical._
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.ember.proto

/** Spark's `SortExec` run natively (the proto `Sort`: Ember's external sort, radix-sorting keys that pack). */
case class EmberSortExec(
    sortOrder: Seq[SortOrder],
    global: Boolean,
    child: SparkPlan,
    nativeOperator: proto.Operator
) extends UnaryExecNode
    with EmberExec {
  override def output: Seq[Attribute] = child.output
  override def outputOrdering: Seq[SortOrder] = sortOrder
  override def outputPartitioning: Partitioning = child.outputPartitioning
  override def requiredChildDistribution: Seq[Distribution] =
    if (global) OrderedDistribution(sortOrder) :: Nil else UnspecifiedDistribution :: Nil
  override def simpleString(maxFields: Int): String =
    s"EmberSortExec ${sortOrder.mkString("[", ", ", "]")}, global=$global"
  override protected def withNewChildInternal(newChild: SparkPlan): EmberSortExec = copy(child = newChild)

  /** Named as the native radix sort's counters. */
  override protected def operatorMetrics: Map[String, SQLMetric] = Map(
    "packed_sort_rows" -> SQLMetrics.createMetric(sparkContext, "rows sorted by packed-key radix sort"),
    "sort_fallbacks" -> SQLMetrics.createMetric(
      sparkContext,
      "sorts spilled and merged, or by row-format keys (memory, key width)"
    ),
    "sort_merge_passes" -> SQLMetrics.createMetric(sparkContext, "merge passes over spilled runs")
  )
}
