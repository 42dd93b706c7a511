package org.apache.spark.sql.ember.execution

import org.apache.spark.sql.catalyst.expressions.{Attribute, NamedExpression, SortOrder}
import org.apache.spark.sql.ember.serde.ProjectSerde
import org.apache.spark.sql.execution.{
  OrderPreservingUnaryExecNode,
  PartitioningPreservingUnaryExecNode,
  ProjectExec,
  SparkPlan,
  UnaryExecNode
}
import org.ember.proto

/**
 * Output partitioning and ordering are re-expressed through the projection's aliases, as Spark's `ProjectExec`
 * does: passing the child's through unchanged would name columns that no longer exist and could let
 * `EnsureRequirements` skip a shuffle that is needed.
 */
case class EmberProjectExec(
    projectList: Seq[NamedExpression],
    child: SparkPlan,
    nativeOperator: proto.Operator
) extends UnaryExecNode
    with PartitioningPreservingUnaryExecNode
    with OrderPreservingUnaryExecNode
    with EmberExec {
  override def output: Seq[Attribute] = projectList.map(_.toAttribute)
  override protected def outputExpressions: Seq[NamedExpression] = projectList
  override protected def orderingExpressions: Seq[SortOrder] = child.outputOrdering
  override def simpleString(maxFields: Int): String =
    s"EmberProjectExec ${projectList.mkString("[", ", ", "]")}"
  override def boundOperator: proto.Operator =
    ProjectSerde
      .convert(ProjectExec(projectList, child))
      .fold(r => throw new IllegalStateException(r), identity)
  override protected def withNewChildInternal(newChild: SparkPlan): EmberProjectExec = copy(child = newChild)
}
