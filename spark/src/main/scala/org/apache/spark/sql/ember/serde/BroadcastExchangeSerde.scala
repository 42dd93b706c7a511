package org.apache.spark.sql.ember.serde

import org.apache.spark.sql.execution.exchange.BroadcastExchangeExec
import org.apache.spark.sql.catalyst.plans.physical.IdentityBroadcastMode
import org.apache.spark.sql.ember.EmberExecRule
import org.apache.spark.sql.execution.joins.HashedRelationBroadcastMode
import org.apache.spark.sql.internal.SQLConf
import org.ember.EmberConf
import org.ember.proto

/**
 * `BroadcastExchangeExec` (a hash join's or a nested-loop join's broadcast) → Ember's broadcast exchange: its child's block topped by a
 * one-partition `ShuffleWriter`, whose Arrow IPC blocks are collected and broadcast.
 */
object BroadcastExchangeSerde extends OperatorSerde[BroadcastExchangeExec] {
  override def enabled: EmberConf.Entry[Boolean] = EmberConf.EXEC_BROADCAST_EXCHANGE

  override def convert(plan: BroadcastExchangeExec): Either[String, proto.Operator] = {
    val conf = SQLConf.get
    for {
      _ <- plan.getTagValue(EmberExecRule.KeepSparkBroadcast).toLeft(())
      _ <- plan.mode match {
        case _: HashedRelationBroadcastMode => Right(())
        // A nested-loop join's broadcast (its rows as they are).
        case IdentityBroadcastMode if EmberConf.EXEC_BROADCAST_NESTED_LOOP_JOIN.get(conf) => Right(())
        case other => Left(s"a broadcast of ${other.getClass.getSimpleName.stripSuffix("$")} stays in Spark")
      }
      _ <-
        if (plan.child.output.isEmpty) Left("a broadcast of rows without columns stays in Spark")
        else Right(())
      _ <- checkSchema(plan.child.output)
      blockSchema <- TypeSerde.schema(plan.child.output, conf.sessionLocalTimeZone)
    } yield op(
      _.setShuffleWriter(
        proto.ShuffleWriter
          .newBuilder()
          .setNumPartitions(1)
          .setBlockSchema(blockSchema)
      )
    )
  }
}
