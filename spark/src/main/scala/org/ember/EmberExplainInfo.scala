package org.ember

import org.apache.spark.sql.ExtendedExplainGenerator
import org.apache.spark.sql.ember.EmberExplainInfo.fallbackLines
import org.apache.spark.sql.execution.SparkPlan

/**
 * Adds an "Ember" section to `EXPLAIN EXTENDED` / `EXPLAIN FORMATTED` listing each operator that stayed in
 * Spark and why. Enable with `spark.sql.extendedExplainProviders=org.ember.EmberExplainInfo`.
 */
class EmberExplainInfo extends ExtendedExplainGenerator {
  override def title: String = "Ember"
  override def generateExtendedInfo(plan: SparkPlan): String = fallbackLines(plan).mkString("\n")
}
