package org.apache.spark.sql.ember.serde

import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.execution._
import org.apache.spark.sql.internal.SQLConf
import org.ember.EmberConf
import org.ember.proto

/**
 * One serde per Spark operator: the operator (without children or id) as a proto, or why it stays in Spark.
 * Inputs are bound to the child's output attributes.
 */
trait OperatorSerde[T <: SparkPlan] {
  def enabled: EmberConf.Entry[Boolean]
  def convert(plan: T): Either[String, proto.Operator]

  protected def op(f: proto.Operator.Builder => proto.Operator.Builder): proto.Operator =
    f(proto.Operator.newBuilder()).build()

  /** Every column an operator reads or produces must have a type the native side supports. */
  protected def checkSchema(attrs: Seq[Attribute]): Either[String, Unit] =
    TypeSerde.schema(attrs, SQLConf.get.sessionLocalTimeZone).map(_ => ())
}
