package org.apache.spark.sql.ember.serde

import org.apache.spark.sql.execution._
import org.ember.EmberConf
import org.ember.proto

/** Converts `FilterExec` to the proto `Filter`. */
object FilterSerde extends OperatorSerde[FilterExec] {
  override def enabled: EmberConf.Entry[Boolean] = EmberConf.EXEC_FILTER
  override def convert(plan: FilterExec): Either[String, proto.Operator] =
    for {
      _ <- checkSchema(plan.child.output)
      p <- ExprSerde.withJvmExpressions(ExprSerde.convert(plan.condition, plan.child.output))
    } yield op(_.setFilter(proto.Filter.newBuilder().setPredicate(p)))
}
