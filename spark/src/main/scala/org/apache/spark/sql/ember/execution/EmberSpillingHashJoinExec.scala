package org.apache.spark.sql.ember.execution

import org.apache.spark.SparkContext
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, SortOrder}
import org.apache.spark.sql.catalyst.optimizer.BuildSide
import org.apache.spark.sql.catalyst.plans._
import org.apache.spark.sql.catalyst.plans.physical._
import org.apache.spark.sql.execution.{BinaryExecNode, SparkPlan}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.ember.proto

/**
 * Spark's `ShuffledHashJoinExec` (or, with `spark.ember.exec.replaceSortMergeJoin.enabled`, a
 * `SortMergeJoinExec` without its sorts) as the native spilling hash join. Output, partitioning and required
 * distribution are those of Spark's `ShuffledJoin`; there is no output ordering, because a join that spilled
 * emits its rows bucket by bucket.
 */
case class EmberSpillingHashJoinExec(
    leftKeys: Seq[Expression],
    rightKeys: Seq[Expression],
    joinType: JoinType,
    buildSide: BuildSide,
    condition: Option[Expression],
    left: SparkPlan,
    right: SparkPlan,
    isSkewJoin: Boolean,
    nativeOperator: proto.Operator
) extends BinaryExecNode
    with EmberExec {

  override def output: Seq[Attribute] = joinType match {
    case _: InnerLike => left.output ++ right.output
    case LeftOuter => left.output ++ right.output.map(_.withNullability(true))
    case RightOuter => left.output.map(_.withNullability(true)) ++ right.output
    case FullOuter => (left.output ++ right.output).map(_.withNullability(true))
    case j: ExistenceJoin => left.output :+ j.exists
    case LeftExistence(_) => left.output
    case x => throw new IllegalArgumentException(s"EmberSpillingHashJoinExec does not take $x")
  }

  override def outputPartitioning: Partitioning = joinType match {
    case _: InnerLike => PartitioningCollection(Seq(left.outputPartitioning, right.outputPartitioning))
    case LeftOuter => left.outputPartitioning
    case RightOuter => right.outputPartitioning
    case FullOuter => UnknownPartitioning(left.outputPartitioning.numPartitions)
    case LeftExistence(_) => left.outputPartitioning
    case x => throw new IllegalArgumentException(s"EmberSpillingHashJoinExec does not take $x")
  }

  override def requiredChildDistribution: Seq[Distribution] =
    if (isSkewJoin) UnspecifiedDistribution :: UnspecifiedDistribution :: Nil
    else ClusteredDistribution(leftKeys) :: ClusteredDistribution(rightKeys) :: Nil

  override def outputOrdering: Seq[SortOrder] = Nil

  override protected def operatorMetrics: Map[String, SQLMetric] =
    EmberSpillingHashJoinExec.metrics(sparkContext)

  override def nodeName: String = if (isSkewJoin) "EmberSpillingHashJoinExec(skew=true)" else super.nodeName

  override def simpleString(maxFields: Int): String =
    s"$nodeName $joinType build=$buildSide, keys=${leftKeys.mkString("[", ", ", "]")} = " +
      s"${rightKeys.mkString("[", ", ", "]")}${condition.map(c => s", condition=$c").getOrElse("")}"

  override protected def withNewChildrenInternal(
      newLeft: SparkPlan,
      newRight: SparkPlan
  ): EmberSpillingHashJoinExec = copy(left = newLeft, right = newRight)
}

object EmberSpillingHashJoinExec {

  /** Keys equal to the names the native `SpillingHashJoinExec` registers (`JoinMetrics`). */
  def metrics(sc: SparkContext): Map[String, SQLMetric] = Map(
    "build_rows" -> SQLMetrics.createMetric(sc, "number of build rows"),
    "probe_rows" -> SQLMetrics.createMetric(sc, "number of probe rows"),
    "spilled_buckets" -> SQLMetrics.createMetric(sc, "spilled buckets"),
    "split_buckets" -> SQLMetrics.createMetric(sc, "re-split buckets"),
    "chunked_buckets" -> SQLMetrics.createMetric(sc, "buckets joined in chunks"),
    "peak_reserved_bytes" -> SQLMetrics.createSizeMetric(sc, "join peak reserved memory"),
    "dynamic_filter_rows_checked" -> SQLMetrics.createMetric(sc, "probe rows checked by the dynamic filter"),
    "dynamic_filter_rows_pruned" -> SQLMetrics.createMetric(sc, "probe rows pruned by the dynamic filter"),
    "dynamic_filter_kept" -> SQLMetrics.createMetric(sc, "dynamic filter kept by the cost gate"),
    "dynamic_filter_gated_off" -> SQLMetrics.createMetric(sc, "dynamic filter switched off"),
    "dynamic_filter_bytes" -> SQLMetrics.createSizeMetric(sc, "dynamic filter size"),
    "dynamic_filter_time" -> SQLMetrics.createNanoTimingMetric(sc, "dynamic filter time")
  )
}
