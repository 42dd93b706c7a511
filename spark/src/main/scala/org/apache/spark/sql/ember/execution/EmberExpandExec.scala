package org.apache.spark.sql.ember.execution

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet, Expression}
import org.apache.spark.sql.catalyst.plans.physical.{Partitioning, UnknownPartitioning}
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.ember.proto

/**
 * Spark's `ExpandExec` run natively: every input row once per projection. Like Spark's, its output has no
 * known partitioning (the projections null out the keys a partitioning would name) and no ordering.
 */
case class EmberExpandExec(
    projections: Seq[Seq[Expression]],
    output: Seq[Attribute],
    child: SparkPlan,
    nativeOperator: proto.Operator
) extends UnaryExecNode
    with EmberExec {
  override def outputPartitioning: Partitioning = UnknownPartitioning(0)
  override def references: AttributeSet = AttributeSet(projections.flatten.flatMap(_.references))
  override def simpleString(maxFields: Int): String =
    s"EmberExpandExec ${projections.map(_.mkString("[", ", ", "]")).mkString("[", ", ", "]")}"
  override protected def withNewChildInternal(newChild: SparkPlan): EmberExpandExec = copy(child = newChild)
}
