package org.apache.spark.sql.ember

import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.SparkPlan

/**
 * Adaptive execution plans each broadcast as a query stage of its own, before (and without) the join that
 * consumes it; this rule sees the whole plan first and marks the broadcasts whose consumers will stay in Spark
 * ([[EmberExecRule.keepSparkBroadcasts]]).
 */
object EmberQueryStagePrepRule extends Rule[SparkPlan] {
  override def apply(plan: SparkPlan): SparkPlan = {
    EmberExecRule.keepSparkBroadcasts(plan)
    plan
  }
}
