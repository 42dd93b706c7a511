package org.apache.spark.sql.ember.serde

import org.apache.spark.sql.catalyst.optimizer.{BuildLeft, BuildRight}
import org.apache.spark.sql.ember.execution.EmberBroadcastExchangeExec
import org.apache.spark.sql.execution.joins.BroadcastHashJoinExec
import org.ember.EmberConf
import org.ember.proto

/**
 * `BroadcastHashJoinExec` → the native hash join (proto `SpillingHashJoin`, as for a shuffled hash join) over the
 * blocks of Ember's broadcast exchange: only when the build side is an [[EmberBroadcastExchangeExec]] (under any
 * AQE stage or reuse), since the native join reads the broadcast's Arrow blocks. Join types are those Spark
 * broadcasts: inner, left/right outer, left semi, left anti (null-aware ones too: see
 * `EmberBroadcastHashJoinExec.nullAwareFilter`), existence joins.
 */
object BroadcastHashJoinSerde extends OperatorSerde[BroadcastHashJoinExec] {
  override def enabled: EmberConf.Entry[Boolean] = EmberConf.EXEC_BROADCAST_HASH_JOIN

  override def convert(plan: BroadcastHashJoinExec): Either[String, proto.Operator] = {
    val build = plan.buildSide match {
      case BuildLeft => plan.left
      case BuildRight => plan.right
    }
    for {
      _ <-
        if (EmberBroadcastExchangeExec.of(build).isDefined) Right(())
        else Left(s"the build side is not Ember's broadcast exchange (${build.nodeName})")
      // Spark plans null-aware anti joins with one key, building right, without a residual condition.
      _ <-
        if (plan.isNullAwareAntiJoin && (plan.leftKeys.size != 1 || plan.condition.isDefined))
          Left("a null-aware anti join with several keys or a condition")
        else Right(())
      _ <-
        if (SpillingHashJoinSerde.buildSideNotPreserved(plan.joinType, plan.buildSide)) Right(())
        else Left(s"a broadcast ${plan.joinType.sql} join building ${plan.buildSide}")
      op <- SpillingHashJoinSerde.hashJoin(
        plan.leftKeys,
        plan.rightKeys,
        plan.joinType,
        plan.buildSide,
        plan.condition,
        plan.left,
        plan.right
      )
    } yield op
  }
}
