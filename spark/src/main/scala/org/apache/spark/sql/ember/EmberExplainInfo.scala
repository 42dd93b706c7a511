package org.apache.spark.sql.ember

import org.apache.spark.sql.ember.execution.{EmberExec, EmberInputExec}
import org.apache.spark.sql.ember.serde.ExprSerde
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.{
  AdaptiveSparkPlanExec,
  AdaptiveSparkPlanHelper,
  QueryStageExec
}

object EmberExplainInfo extends AdaptiveSparkPlanHelper {

  /** One line per operator left to Spark: `NodeName: reason; reason`. */
  def fallbackLines(plan: SparkPlan): Seq[String] = {
    val seen = scala.collection.mutable.LinkedHashSet.empty[String]
    nodes(plan).foreach { p =>
      val reasons = EmberExecRule.fallbackReasons(p)
      if (reasons.nonEmpty) seen += s"${p.nodeName}: ${reasons.mkString("; ")}"
    }
    seen.toSeq
  }

  /** The Ember operators of a plan, by name, in plan order (each name once). */
  def nativeOperators(plan: SparkPlan): Seq[String] =
    nodes(plan).collect { case e: EmberExec if !e.isInstanceOf[EmberInputExec] => e.nodeName }.distinct

  /**
   * Explain's Ember section: what runs natively, then each operator left to Spark with its reasons. Under AQE
   * before execution, AQE has not yet applied the columnar rules (it does so stage by stage as it runs), so
   * Ember's conversion of the current plan is planned here for explain — nothing runs.
   */
  def explain(plan: SparkPlan): Seq[String] = {
    val planned = plan match {
      case a: AdaptiveSparkPlanExec if !a.isFinalPlan =>
        EmberExecRule(a.context.session).apply(a.executedPlan)
      case other => other
    }
    val native = nativeOperators(planned)
    ((if (native.isEmpty) "Native: none" else s"Native: ${native.mkString(", ")}") +: jvmLines(planned)) ++
      fallbackLines(planned)
  }

  /** One line per native operator with expressions Spark evaluates inside it: `NodeName: evaluated by Spark: …`. */
  def jvmLines(plan: SparkPlan): Seq[String] =
    nodes(plan)
      .collect {
        case e: EmberExec => e.nodeName -> ExprSerde.jvmExpressions(e.nativeOperator)
        case e: execution.EmberShuffleExchangeExec => e.nodeName -> ExprSerde.jvmExpressions(e.nativeOperator)
      }
      .collect {
        case (name, exprs) if exprs.nonEmpty =>
          s"$name: evaluated by Spark inside the native plan: ${exprs.mkString(", ")}"
      }
      .distinct

  private def nodes(plan: SparkPlan): Seq[SparkPlan] =
    collectWithSubqueries(plan) { case p => p }.flatMap {
      case q: QueryStageExec => q.plan.collect { case p => p }
      case p => Seq(p)
    }
}
