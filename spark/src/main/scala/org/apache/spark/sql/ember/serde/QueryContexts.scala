package org.apache.spark.sql.ember.serde

import org.apache.spark.QueryContext
import org.apache.spark.sql.catalyst.expressions.{Expression, SupportQueryContext}
import org.apache.spark.sql.catalyst.trees.Origin
import org.apache.spark.sql.execution.SparkPlan

/**
 * The query context Spark prints under an ANSI error (the SQL fragment or the DataFrame call site) of an
 * expression evaluated natively. The plan carries a content-derived id of the context ([[id]]); a native error
 * hands the id back, and the block's table ([[of]], built on the driver from its nodes' expressions and sent with
 * the task) gives the context back.
 */
object QueryContexts {

  /** 0 when `e` has no query context (Spark raises its errors without one, e.g. outside ANSI). */
  def id(e: Expression): Int = e match {
    case s: SupportQueryContext => Option(s.getContextOrNull()).map(idOf).getOrElse(0)
    case _ => 0
  }

  private def idOf(c: QueryContext): Int = {
    val h = c.hashCode()
    if (h == 0 || h == Empty) 1 else h
  }

  /**
   * Spark's empty origin, which it attaches where an expression it built itself fails (the `Add` inside an
   * integral `Sum`); the native side's `EMPTY_QUERY_CONTEXT`.
   */
  val Empty: Int = -1

  /** Id → context over the expressions of `nodes` themselves (not their children's). */
  def of(nodes: Seq[SparkPlan]): Map[Int, QueryContext] =
    nodes
      .flatMap(_.expressions)
      .flatMap(_.collect { case s: SupportQueryContext => Option(s.getContextOrNull()) }.flatten)
      .map(c => idOf(c) -> c)
      .toMap + (Empty -> Origin().context)
}
