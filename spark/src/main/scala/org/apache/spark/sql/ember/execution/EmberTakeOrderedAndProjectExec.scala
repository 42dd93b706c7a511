package org.apache.spark.sql.ember.execution

import org.apache.spark.sql.catalyst.expressions.{Attribute, NamedExpression, SortOrder}
import org.apache.spark.sql.catalyst.plans.physical.{AllTuples, Distribution, Partitioning, SinglePartition}
import org.apache.spark.sql.execution.{OrderPreservingUnaryExecNode, SparkPlan}
import org.ember.proto

/**
 * The last step of Spark's `TakeOrderedAndProjectExec`, natively: over one partition holding every partition's
 * top-k (an `EmberSortExec` with a fetch under an `EmberShuffleExchangeExec` to a single partition, or the child
 * itself when it already is one partition), the first `limit` rows in `sortOrder`, minus the first `offset`,
 * projected. Reports Spark's output, ordering and partitioning.
 */
case class EmberTakeOrderedAndProjectExec(
    limit: Int,
    offset: Int,
    sortOrder: Seq[SortOrder],
    projectList: Seq[NamedExpression],
    child: SparkPlan,
    nativeOperator: proto.Operator
) extends OrderPreservingUnaryExecNode
    with EmberExec {
  override def output: Seq[Attribute] = projectList.map(_.toAttribute)
  override protected def outputExpressions: Seq[NamedExpression] = projectList
  override protected def orderingExpressions: Seq[SortOrder] = sortOrder
  override def outputPartitioning: Partitioning = SinglePartition
  override def requiredChildDistribution: Seq[Distribution] = AllTuples :: Nil
  override def simpleString(maxFields: Int): String =
    s"EmberTakeOrderedAndProjectExec limit=$limit, offset=$offset, " +
      s"orderBy=${sortOrder.mkString("[", ", ", "]")}, output=${output.mkString("[", ", ", "]")}"
  override protected def withNewChildInternal(newChild: SparkPlan): EmberTakeOrderedAndProjectExec =
    copy(child = newChild)
}
