package org.apache.spark.sql.ember.execution

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, SortOrder}
import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.execution.{ColumnarToRowTransition, SparkPlan}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}

/**
 * Spark's `ColumnarToRowExec` over a native block, done natively: the block's output batches become
 * `UnsafeRow`s in Rust (the same bytes Spark's own transition writes) and reach Spark as byte arrays that the
 * rows point into, instead of one Arrow Java read per value.
 */
case class EmberColumnarToRowExec(child: SparkPlan) extends ColumnarToRowTransition {
  override def output: Seq[Attribute] = child.output
  override def outputPartitioning: Partitioning = child.outputPartitioning
  override def outputOrdering: Seq[SortOrder] = child.outputOrdering

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "numOutputRows" -> SQLMetrics.createMetric(sparkContext, "number of output rows")
  )

  override protected def doExecute(): RDD[InternalRow] = child match {
    case native: EmberExec => EmberBlock.executeRows(native, longMetric("numOutputRows"))
    case other => throw new IllegalStateException(s"EmberColumnarToRowExec over non-native ${other.nodeName}")
  }

  override protected def withNewChildInternal(newChild: SparkPlan): EmberColumnarToRowExec =
    copy(child = newChild)
}
