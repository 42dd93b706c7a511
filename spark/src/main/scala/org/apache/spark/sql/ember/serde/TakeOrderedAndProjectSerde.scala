package org.apache.spark.sql.ember.serde

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.execution.{SortExec, TakeOrderedAndProjectExec}
import org.ember.EmberConf
import org.ember.proto

/**
 * `TakeOrderedAndProjectExec` → the final step of a native top-k (`TakeOrderedAndProject`: top-k sort over the
 * gathered per-partition top-k rows, the offset dropped, the projection). The rule puts a per-partition top-k
 * sort (`Sort` with `fetch`) and Ember's single-partition shuffle under it, as Spark's operator does inside.
 */
object TakeOrderedAndProjectSerde extends OperatorSerde[TakeOrderedAndProjectExec] {
  override def enabled: EmberConf.Entry[Boolean] = EmberConf.EXEC_TAKE_ORDERED_AND_PROJECT

  override def convert(plan: TakeOrderedAndProjectExec): Either[String, proto.Operator] =
    if (plan.limit <= 0) Left(s"TakeOrderedAndProject with limit ${plan.limit}")
    else if (plan.offset >= plan.limit) Left("TakeOrderedAndProject whose offset drops every row")
    else
      for {
        _ <- checkSchema(plan.child.output)
        _ <- checkSchema(plan.output)
        order <- ExprSerde.withoutJvmExpressions(SortSerde.sortOrder(plan.sortOrder, plan.child.output))
        exprs <- ExprSerde.withJvmExpressions(ExprSerde.convertAll(plan.projectList, plan.child.output))
      } yield {
        val b = proto.TakeOrderedAndProject
          .newBuilder()
          .addAllOrder(order.asJava)
          .setLimit(plan.limit.toLong)
          .setOffset(plan.offset.toLong)
        exprs.zip(plan.projectList).foreach { case (e, ne) =>
          b.addExprs(e)
          b.addNames(TypeSerde.name(ne.name))
        }
        op(_.setTakeOrderedAndProject(b))
      }

  /**
   * The per-partition top-k under the exchange: `sort`'s proto with `fetch` = the limit, its keys converted as the
   * final step's are (without JVM expressions).
   */
  def partialTopK(sort: SortExec, limit: Int): Either[String, proto.Operator] =
    ExprSerde
      .withoutJvmExpressions(SortSerde.convert(sort))
      .map(s => s.toBuilder.setSort(s.getSort.toBuilder.setFetch(limit.toLong)).build())
}
