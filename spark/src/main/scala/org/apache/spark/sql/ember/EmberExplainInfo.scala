package org.apache.spark.sql.ember

import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.{AdaptiveSparkPlanHelper, QueryStageExec}

object EmberExplainInfo extends AdaptiveSparkPlanHelper {

  /** One line per operator left to Spark: `NodeName: reason; reason`. */
  def fallbackLines(plan: SparkPlan): Seq[String] = {
    val seen = scala.collection.mutable.LinkedHashSet.empty[String]
    def note(p: SparkPlan): Unit = {
      val reasons = EmberExecRule.fallbackReasons(p)
      if (reasons.nonEmpty) seen += s"${p.nodeName}: ${reasons.mkString("; ")}"
    }
    collectWithSubqueries(plan) { case p => p }.foreach {
      case q: QueryStageExec => q.plan.foreach(note)
      case p => note(p)
    }
    seen.toSeq
  }
}
