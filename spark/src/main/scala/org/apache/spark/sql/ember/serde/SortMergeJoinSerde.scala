package org.apache.spark.sql.ember.serde

import org.apache.spark.sql.catalyst.optimizer.{BuildLeft, BuildRight, BuildSide}
import org.apache.spark.sql.ember.execution.{EmberInputExec, EmberSortExec}
import org.apache.spark.sql.execution.{SortExec, SparkPlan}
import org.apache.spark.sql.execution.adaptive.QueryStageExec
import org.apache.spark.sql.execution.joins.SortMergeJoinExec
import org.ember.EmberConf
import org.ember.proto

/**
 * With `spark.ember.exec.replaceSortMergeJoin.enabled`: a `SortMergeJoinExec` runs as the native hash join. The
 * sorts that `EnsureRequirements` put under it are dropped; the build side is the one statistics say is smaller
 * (any join type can build on either side natively). The rule leaves a join whose sort order an operator above
 * needs to Spark.
 */
object SortMergeJoinSerde extends OperatorSerde[SortMergeJoinExec] {
  override def enabled: EmberConf.Entry[Boolean] = EmberConf.EXEC_REPLACE_SMJ

  /** The child without the sort the merge join needed. */
  def unsorted(child: SparkPlan): SparkPlan = child match {
    case s: SortExec if !s.global => s.child
    case s: EmberSortExec if !s.global => s.child
    case other => other
  }

  private def sizeInBytes(p: SparkPlan): Option[BigInt] = p match {
    case q: QueryStageExec => q.computeStats().map(_.sizeInBytes)
    case EmberInputExec(c) => sizeInBytes(c)
    case other =>
      other.logicalLink
        .map(_.stats.sizeInBytes)
        .orElse(other.children match {
          case Seq(c) => sizeInBytes(c)
          case _ => None
        })
  }

  /** Build on the left only when statistics say it is strictly smaller. */
  def buildSide(plan: SortMergeJoinExec): BuildSide =
    (sizeInBytes(unsorted(plan.left)), sizeInBytes(unsorted(plan.right))) match {
      case (Some(l), Some(r)) if l < r => BuildLeft
      case _ => BuildRight
    }

  override def convert(plan: SortMergeJoinExec): Either[String, proto.Operator] =
    SpillingHashJoinSerde.hashJoin(
      plan.leftKeys,
      plan.rightKeys,
      plan.joinType,
      buildSide(plan),
      plan.condition,
      unsorted(plan.left),
      unsorted(plan.right)
    )
}
