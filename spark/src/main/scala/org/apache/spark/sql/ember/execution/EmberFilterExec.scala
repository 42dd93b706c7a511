package org.apache.spark.sql.ember.execution

import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, SortOrder}
import org.apache.spark.sql.catalyst.plans.physical._
import org.apache.spark.sql.ember.serde.FilterSerde
import org.apache.spark.sql.execution.{FilterExec, SparkPlan, UnaryExecNode}
import org.ember.proto

/** Spark's `FilterExec` run natively: the proto `Filter`, rows dropped inside the native block. */
case class EmberFilterExec(condition: Expression, child: SparkPlan, nativeOperator: proto.Operator)
    extends UnaryExecNode
    with EmberExec {
  // Spark's own output: columns its IS NOT NULL conjuncts filter become non-nullable. A parent's requirement
  // bound to those attributes (a broadcast join's `HashedRelationBroadcastMode` keys) must see the same ones, or
  // AQE's ValidateRequirements rejects every plan change above it (shuffle coalescing among them).
  override lazy val output: Seq[Attribute] = FilterExec(condition, child).output
  override def outputPartitioning: Partitioning = child.outputPartitioning
  override def outputOrdering: Seq[SortOrder] = child.outputOrdering
  override def simpleString(maxFields: Int): String = s"EmberFilterExec $condition"
  override def boundOperator: proto.Operator =
    FilterSerde.convert(FilterExec(condition, child)).fold(r => throw new IllegalStateException(r), identity)
  override protected def withNewChildInternal(newChild: SparkPlan): EmberFilterExec = copy(child = newChild)
}
