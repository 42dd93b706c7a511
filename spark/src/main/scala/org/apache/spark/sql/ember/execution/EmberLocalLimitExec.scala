package org.apache.spark.sql.ember.execution

import org.apache.spark.sql.catalyst.expressions.{Attribute, SortOrder}
import org.apache.spark.sql.catalyst.plans.physical._
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.ember.proto

/** Spark's `LocalLimitExec` run natively: the proto `Limit` per partition. */
case class EmberLocalLimitExec(limit: Int, child: SparkPlan, nativeOperator: proto.Operator)
    extends UnaryExecNode
    with EmberExec {
  override def output: Seq[Attribute] = child.output
  override def outputPartitioning: Partitioning = child.outputPartitioning
  override def outputOrdering: Seq[SortOrder] = child.outputOrdering
  override def simpleString(maxFields: Int): String = s"EmberLocalLimitExec $limit"
  override protected def withNewChildInternal(newChild: SparkPlan): EmberLocalLimitExec =
    copy(child = newChild)
}
