package org.apache.spark.sql.ember.serde

import org.apache.spark.sql.execution.CollectLimitExec
import org.ember.EmberConf
import org.ember.proto

/**
 * `CollectLimitExec(limit, child, offset)` (Spark's `limit` counts the offset rows; -1: an OFFSET alone) → the
 * final step of its native execution, a `Limit` over the single shuffled partition; [[localLimit]] is the
 * per-partition limit under the shuffle.
 */
object CollectLimitSerde extends OperatorSerde[CollectLimitExec] {
  override def enabled: EmberConf.Entry[Boolean] = EmberConf.EXEC_COLLECT_LIMIT

  override def convert(plan: CollectLimitExec): Either[String, proto.Operator] =
    for {
      _ <- checkSchema(plan.child.output)
      // Ember's shuffle cannot carry rows without columns (their count alone).
      _ <-
        if (plan.child.output.isEmpty) Left("a limit over rows without columns stays in Spark") else Right(())
    } yield {
      val rows = if (plan.limit >= 0) (plan.limit - plan.offset).max(0).toLong else -1L
      op(_.setLimit(proto.Limit.newBuilder().setLimit(rows).setOffset(plan.offset.toLong)))
    }

  /** The per-partition limit under the shuffle (none for an OFFSET alone). */
  def localLimit(plan: CollectLimitExec): Option[proto.Operator] =
    if (plan.limit < 0) None
    else Some(op(_.setLimit(proto.Limit.newBuilder().setLimit(plan.limit.toLong))))
}
