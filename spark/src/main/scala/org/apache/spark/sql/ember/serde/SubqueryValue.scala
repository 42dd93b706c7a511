package org.apache.spark.sql.ember.serde

import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.execution.{ScalarSubquery, SparkPlan}

/**
 * Scalar subqueries in native operators: Spark computes a subquery before the operator that uses it runs
 * (`SparkPlan.waitForSubqueries`), so its result enters the native plan as a literal. Until then the serde
 * writes a typed NULL in its place (enough for the driver's support check); `EmberBlock` rebuilds the
 * operator's proto once the results are in and refuses to run a plan that still holds a placeholder.
 */
object SubqueryValue {

  /** The subquery's result once Spark has computed it, None before (Spark's `eval` requires the result). */
  def of(s: ScalarSubquery): Option[Any] =
    try Some(s.eval(null))
    catch { case _: IllegalArgumentException => None }

  def has(e: Expression): Boolean = e.exists(_.isInstanceOf[ScalarSubquery])

  def has(plan: SparkPlan): Boolean = plan.expressions.exists(has)

  /** Whether every scalar subquery of `plan`'s expressions has its result. */
  def bound(plan: SparkPlan): Boolean =
    plan.expressions.forall(_.find {
      case s: ScalarSubquery => of(s).isEmpty
      case _ => false
    }.isEmpty)
}
