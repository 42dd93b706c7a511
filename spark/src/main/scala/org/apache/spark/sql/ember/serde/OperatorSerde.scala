package org.apache.spark.sql.ember.serde

import org.apache.spark.sql.catalyst.expressions.{Attribute, SortOrder}
import org.apache.spark.sql.catalyst.expressions.{Ascending, NullsFirst}
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

object FilterSerde extends OperatorSerde[FilterExec] {
  override def enabled: EmberConf.Entry[Boolean] = EmberConf.EXEC_FILTER
  override def convert(plan: FilterExec): Either[String, proto.Operator] =
    for {
      _ <- checkSchema(plan.child.output)
      p <- ExprSerde.convert(plan.condition, plan.child.output)
    } yield op(_.setFilter(proto.Filter.newBuilder().setPredicate(p)))
}

object ProjectSerde extends OperatorSerde[ProjectExec] {
  override def enabled: EmberConf.Entry[Boolean] = EmberConf.EXEC_PROJECT
  override def convert(plan: ProjectExec): Either[String, proto.Operator] =
    for {
      _ <- checkSchema(plan.child.output)
      _ <- checkSchema(plan.output)
      exprs <- ExprSerde.convertAll(plan.projectList, plan.child.output)
    } yield {
      val b = proto.Projection.newBuilder()
      exprs.zip(plan.projectList).foreach { case (e, ne) =>
        b.addExprs(e)
        b.addNames(TypeSerde.name(ne.name))
      }
      op(_.setProjection(b))
    }
}

object SortSerde extends OperatorSerde[SortExec] {
  override def enabled: EmberConf.Entry[Boolean] = EmberConf.EXEC_SORT

  def sortOrder(order: Seq[SortOrder], input: Seq[Attribute]): Either[String, Seq[proto.SortOrder]] = {
    val out = order.map { o =>
      if (!ExprSerde.orderable(o.child.dataType)) Left(s"sort on ${o.child.dataType.simpleString}")
      else
        ExprSerde
          .convert(o.child, input)
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

object LocalLimitSerde extends OperatorSerde[LocalLimitExec] {
  override def enabled: EmberConf.Entry[Boolean] = EmberConf.EXEC_LIMIT
  override def convert(plan: LocalLimitExec): Either[String, proto.Operator] =
    checkSchema(plan.child.output).map(_ =>
      op(_.setLimit(proto.Limit.newBuilder().setLimit(plan.limit.toLong)))
    )
}

object GlobalLimitSerde extends OperatorSerde[GlobalLimitExec] {
  override def enabled: EmberConf.Entry[Boolean] = EmberConf.EXEC_LIMIT
  override def convert(plan: GlobalLimitExec): Either[String, proto.Operator] =
    checkSchema(plan.child.output).map(_ =>
      op(_.setLimit(proto.Limit.newBuilder().setLimit(plan.limit.toLong).setOffset(plan.offset.toLong)))
    )
}
