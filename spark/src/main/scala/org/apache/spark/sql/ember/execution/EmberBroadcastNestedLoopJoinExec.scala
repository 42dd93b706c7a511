package org.apache.spark.sql.ember.execution

import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, SortOrder}
import org.apache.spark.sql.catalyst.optimizer.BuildSide
import org.apache.spark.sql.catalyst.plans._
import org.apache.spark.sql.catalyst.plans.physical._
import org.apache.spark.sql.execution.{BinaryExecNode, SparkPlan}
import org.apache.spark.sql.execution.joins.BroadcastNestedLoopJoinExec
import org.apache.spark.sql.execution.metric.SQLMetric
import org.ember.proto

/**
 * Spark's `BroadcastNestedLoopJoinExec` as the native join without keys (proto `SpillingHashJoin`, no keys), its
 * build side the blocks of an [[EmberBroadcastExchangeExec]], read per task. Output, partitioning and required
 * distribution are Spark's own node's; no output ordering (Spark's passes the streamed side's on), so a join whose
 * parent relies on that order stays in Spark (see `EmberExecRule`).
 */
case class EmberBroadcastNestedLoopJoinExec(
    left: SparkPlan,
    right: SparkPlan,
    buildSide: BuildSide,
    joinType: JoinType,
    condition: Option[Expression],
    nativeOperator: proto.Operator
) extends BinaryExecNode
    with EmberExec {

  /** Spark's node over the same children, for what Spark derives from them. */
  @transient private lazy val spark = BroadcastNestedLoopJoinExec(left, right, buildSide, joinType, condition)

  override def output: Seq[Attribute] = spark.output

  override def outputPartitioning: Partitioning = spark.outputPartitioning

  override def requiredChildDistribution: Seq[Distribution] = spark.requiredChildDistribution

  override def outputOrdering: Seq[SortOrder] = Nil

  /** The spilling hash join's own metrics: the native operator is the same. */
  override protected def operatorMetrics: Map[String, SQLMetric] =
    EmberSpillingHashJoinExec.metrics(sparkContext)

  override def simpleString(maxFields: Int): String =
    s"$nodeName $joinType build=$buildSide${condition.map(c => s", condition=$c").getOrElse("")}"

  override protected def withNewChildrenInternal(
      newLeft: SparkPlan,
      newRight: SparkPlan
  ): EmberBroadcastNestedLoopJoinExec = copy(left = newLeft, right = newRight)
}
