package org.apache.spark.sql.ember

import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.SparkPlan

/**
 * Adaptive execution plans each broadcast as a query stage of its own, before (and without) the join that
 * consumes it; this rule sees the whole plan first and marks the broadcasts whose consumers will stay in Spark
 * ([[EmberExecRule.keepSparkBroadcasts]]); and it links the sides of shuffled joins by dynamic filters
 * ([[DynamicFilterPlanner]]), which need the whole plan too.
 */
object EmberQueryStagePrepRule extends Rule[SparkPlan] {
  override def apply(plan: SparkPlan): SparkPlan = {
    EmberExecRule.keepSparkBroadcasts(plan)
    DynamicFilterPlanner(plan)
  }
}
