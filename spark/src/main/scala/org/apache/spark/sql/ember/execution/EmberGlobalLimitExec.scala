package org.apache.spark.sql.ember.execution

import org.apache.spark.sql.catalyst.expressions.{Attribute, SortOrder}
import org.apache.spark.sql.catalyst.plans.physical._
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.ember.proto

/** Spark's `GlobalLimitExec` run natively (the proto `Limit` with its offset) over one partition. */
case class EmberGlobalLimitExec(limit: Int, offset: Int, child: SparkPlan, nativeOperator: proto.Operator)
    extends UnaryExecNode
    with EmberExec {
  override def output: Seq[Attribute] = child.output
  override def requiredChildDistribution: List[Distribution] = AllTuples :: Nil
  override def outputPartitioning: Partitioning = child.outputPartitioning
  override def outputOrdering: Seq[SortOrder] = child.outputOrdering
  override def simpleString(maxFields: Int): String = s"EmberGlobalLimitExec $limit, offset=$offset"
  override protected def withNewChildInternal(newChild: SparkPlan): EmberGlobalLimitExec =
    copy(child = newChild)
}
