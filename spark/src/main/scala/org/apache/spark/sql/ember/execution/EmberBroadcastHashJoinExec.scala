package org.apache.spark.sql.ember.execution

import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, IsNotNull, Literal, SortOrder}
import org.apache.spark.sql.catalyst.optimizer.BuildSide
import org.apache.spark.sql.catalyst.plans._
import org.apache.spark.sql.catalyst.plans.physical._
import org.apache.spark.sql.ember.serde.ExprSerde
import org.apache.spark.sql.execution.{BinaryExecNode, SparkPlan}
import org.apache.spark.sql.execution.joins.BroadcastHashJoinExec
import org.apache.spark.sql.execution.metric.SQLMetric
import org.ember.proto

/**
 * Spark's `BroadcastHashJoinExec` as the native hash join (proto `SpillingHashJoin`), its build side the blocks
 * of an [[EmberBroadcastExchangeExec]] (an `INPUT_KIND_BROADCAST_BLOCKS` input), its streamed side the native
 * block below. The hash table is built once per executor and shared by its tasks (`shared_build.rs`; per task
 * when Spark's storage memory refuses it). Output, partitioning (the streamed
 * side's, expanded through inner-join keys as Spark does) and required distribution are Spark's own node's;
 * there is no output ordering (a join whose build side spilled emits its rows bucket by bucket), so a join whose
 * parent relies on the streamed side's order stays in Spark (see `EmberExecRule`). A null-aware anti join is the
 * plain anti join under a filter decided when the broadcast is in ([[nullAwareFilter]]).
 */
case class EmberBroadcastHashJoinExec(
    leftKeys: Seq[Expression],
    rightKeys: Seq[Expression],
    joinType: JoinType,
    buildSide: BuildSide,
    condition: Option[Expression],
    left: SparkPlan,
    right: SparkPlan,
    isNullAwareAntiJoin: Boolean,
    nativeOperator: proto.Operator
) extends BinaryExecNode
    with EmberExec {

  /** Spark's node over the same children, for what Spark derives from them. */
  @transient private lazy val spark =
    BroadcastHashJoinExec(
      leftKeys,
      rightKeys,
      joinType,
      buildSide,
      condition,
      left,
      right,
      isNullAwareAntiJoin
    )

  override def output: Seq[Attribute] = spark.output

  override def outputPartitioning: Partitioning = spark.outputPartitioning

  override def requiredChildDistribution: Seq[Distribution] = spark.requiredChildDistribution

  override def outputOrdering: Seq[SortOrder] = Nil

  /** The spilling hash join's own metrics: the native operator is the same. */
  override protected def operatorMetrics: Map[String, SQLMetric] =
    EmberSpillingHashJoinExec.metrics(sparkContext)

  /**
   * A null-aware anti join (`NOT IN`) runs as the plain anti join under a filter decided on the driver once the
   * broadcast is in, as Spark's join decides by its relation: an empty build side keeps every streamed row
   * (null keys too), a build side with a null key keeps none, otherwise a streamed row with a null key is
   * dropped. None: no filter.
   */
  def nullAwareFilter(): Option[proto.Expr] = {
    val exchange = Seq(left, right)
      .collectFirst { case EmberInputExec(c) if EmberBroadcastExchangeExec.of(c).isDefined => c }
      .flatMap(EmberBroadcastExchangeExec.of)
      .getOrElse(throw new IllegalStateException("a native broadcast join without Ember's broadcast"))
    val predicate =
      if (exchange.rowCount() == 0) None
      else if (exchange.anyNullKey()) Some(Literal(false))
      else Some(IsNotNull(leftKeys.head))
    predicate.map(p =>
      ExprSerde.convert(p, left.output).fold(r => throw new IllegalStateException(r), identity)
    )
  }

  override def simpleString(maxFields: Int): String =
    s"$nodeName $joinType build=$buildSide, keys=${leftKeys.mkString("[", ", ", "]")} = " +
      s"${rightKeys.mkString("[", ", ", "]")}${condition.map(c => s", condition=$c").getOrElse("")}" +
      (if (isNullAwareAntiJoin) ", null-aware" else "")

  override protected def withNewChildrenInternal(
      newLeft: SparkPlan,
      newRight: SparkPlan
  ): EmberBroadcastHashJoinExec = copy(left = newLeft, right = newRight)
}
