package org.apache.spark.sql.ember

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution._

/** Ember's physical planning: Spark operators → native ones before Spark inserts its row/columnar transitions. */
case class EmberColumnarRule(session: SparkSession) extends ColumnarRule {
  override def preColumnarTransitions: Rule[SparkPlan] = EmberExecRule(session)
  override def postColumnarTransitions: Rule[SparkPlan] = EmberTransitionCleanup
}
