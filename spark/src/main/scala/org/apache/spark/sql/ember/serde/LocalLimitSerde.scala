package org.apache.spark.sql.ember.serde

import org.apache.spark.sql.execution._
import org.ember.EmberConf
import org.ember.proto

/** Converts `LocalLimitExec` to the proto `Limit`. */
object LocalLimitSerde extends OperatorSerde[LocalLimitExec] {
  override def enabled: EmberConf.Entry[Boolean] = EmberConf.EXEC_LIMIT
  override def convert(plan: LocalLimitExec): Either[String, proto.Operator] =
    checkSchema(plan.child.output).map(_ =>
      op(_.setLimit(proto.Limit.newBuilder().setLimit(plan.limit.toLong)))
    )
}
