package org.apache.spark.sql.ember.serde

import org.apache.spark.sql.catalyst.expressions.{Attribute, SortOrder}
import org.apache.spark.sql.catalyst.expressions.{Ascending, NullsFirst}
import org.apache.spark.sql.execution._
import org.ember.EmberConf
import org.ember.proto

/**
 * Converts `SortExec` to the proto `Sort`; `sortOrder` is shared with the operators that sort (top-k, windows,
 * range shuffles). A key without a kernel is evaluated by Spark inside the native plan.
 */
object SortSerde extends OperatorSerde[SortExec] {
  override def enabled: EmberConf.Entry[Boolean] = EmberConf.EXEC_SORT

  def sortOrder(order: Seq[SortOrder], input: Seq[Attribute]): Either[String, Seq[proto.SortOrder]] = {
    val out = order.map { o =>
      if (!ExprSerde.orderable(o.child.dataType)) Left(s"sort on ${o.child.dataType.simpleString}")
      else
        ExprSerde
          .withJvmExpressions(ExprSerde.convert(o.child, input))
          .map(e =>
            proto.SortOrder
              .newBuilder()
              .setChild(e)
              .setAscending(o.direction == Ascending)
              .setNullsFirst(o.nullOrdering == NullsFirst)
              .build()
          )
    }
    out.collectFirst { case Left(r) => r } match {
      case Some(r) => Left(r)
      case None => Right(out.map(_.toOption.get))
    }
  }

  override def convert(plan: SortExec): Either[String, proto.Operator] =
    if (plan.testSpillFrequency > 0) Left("Spark's sort spill test mode (testSpillFrequency) is on")
    else
      for {
        _ <- checkSchema(plan.child.output)
        order <- sortOrder(plan.sortOrder, plan.child.output)
      } yield {
        val b = proto.Sort.newBuilder().setRadix(EmberConf.SORT_RADIX.get())
        order.foreach(b.addOrder)
        op(_.setSort(b))
      }
}
