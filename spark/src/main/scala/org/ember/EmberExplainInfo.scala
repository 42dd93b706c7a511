package org.ember

import org.apache.spark.sql.ExtendedExplainGenerator
import org.apache.spark.sql.ember.EmberExplainInfo.explain
import org.apache.spark.sql.execution.SparkPlan

/**
 * Adds an "Ember" section to `EXPLAIN EXTENDED` / `EXPLAIN FORMATTED`: the operators that run natively, then
 * each operator that stays in Spark and why — also before execution under AQE. Enable with
 * `spark.sql.extendedExplainProviders=org.ember.EmberExplainInfo`.
 */
class EmberExplainInfo extends ExtendedExplainGenerator {
  override def title: String = "Ember"
  override def generateExtendedInfo(plan: SparkPlan): String = explain(plan).mkString("\n")
}
