package org.apache.spark.sql.ember.serde

import org.apache.spark.sql.catalyst.optimizer.{BuildLeft, BuildRight}
import org.apache.spark.sql.ember.execution.EmberBroadcastExchangeExec
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.joins.BroadcastNestedLoopJoinExec
import org.ember.EmberConf
import org.ember.proto

/**
 * `BroadcastNestedLoopJoinExec` → the native join without keys (proto `SpillingHashJoin` with no keys: the engine
 * joins every pair and the condition decides) over the blocks of Ember's broadcast exchange. Only join types
 * whose build side is not preserved: Spark emits a preserved build side's unmatched rows once over all tasks
 * (a second job over the streamed side), which one task cannot know.
 */
object BroadcastNestedLoopJoinSerde extends OperatorSerde[BroadcastNestedLoopJoinExec] {
  override def enabled: EmberConf.Entry[Boolean] = EmberConf.EXEC_BROADCAST_NESTED_LOOP_JOIN

  override def convert(plan: BroadcastNestedLoopJoinExec): Either[String, proto.Operator] = {
    val build = buildChild(plan)
    for {
      op <- join(plan)
      _ <-
        if (EmberBroadcastExchangeExec.of(build).isDefined) Right(())
        else Left(s"the build side is not Ember's broadcast exchange (${build.nodeName})")
    } yield op
  }

  def buildChild(plan: BroadcastNestedLoopJoinExec): SparkPlan = plan.buildSide match {
    case BuildLeft => plan.left
    case BuildRight => plan.right
  }

  /**
   * The join itself, whatever its build side is yet: also asked (with the engine's check) before Ember's
   * broadcast exchange is planned, so that a join which will stay in Spark keeps Spark's broadcast (see
   * `EmberExecRule.keepSparkBroadcasts`).
   */
  def join(plan: BroadcastNestedLoopJoinExec): Either[String, proto.Operator] =
    for {
      _ <-
        if (SpillingHashJoinSerde.buildSideNotPreserved(plan.joinType, plan.buildSide)) Right(())
        else
          Left(
            s"a nested-loop ${plan.joinType.sql} join building ${plan.buildSide} (its build side is preserved)"
          )
      op <- SpillingHashJoinSerde.hashJoin(
        Nil,
        Nil,
        plan.joinType,
        plan.buildSide,
        plan.condition,
        plan.left,
        plan.right,
        nestedLoop = true
      )
    } yield op
}
