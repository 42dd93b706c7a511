package org.apache.spark.sql.ember.serde

import org.apache.spark.sql.execution._
import org.ember.EmberConf
import org.ember.proto

/** Converts `GlobalLimitExec` to the proto `Limit` (with offset). */
object GlobalLimitSerde extends OperatorSerde[GlobalLimitExec] {
  override def enabled: EmberConf.Entry[Boolean] = EmberConf.EXEC_LIMIT
  override def convert(plan: GlobalLimitExec): Either[String, proto.Operator] =
    checkSchema(plan.child.output).map(_ =>
      op(_.setLimit(proto.Limit.newBuilder().setLimit(plan.limit.toLong).setOffset(plan.offset.toLong)))
    )
}
