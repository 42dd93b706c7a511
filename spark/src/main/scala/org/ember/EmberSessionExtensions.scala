package org.ember

import org.apache.spark.sql.SparkSessionExtensions
import org.apache.spark.sql.ember.{EmberColumnarRule, EmberQueryStagePrepRule}
import org.apache.spark.sql.ember.rewrite.SlidingSumRewrite

/** Installed by [[EmberPlugin]] (or by hand through `spark.sql.extensions`). */
class EmberSessionExtensions extends (SparkSessionExtensions => Unit) {
  override def apply(extensions: SparkSessionExtensions): Unit = {
    extensions.injectColumnar(session => EmberColumnarRule(session))
    extensions.injectQueryStagePrepRule(_ => EmberQueryStagePrepRule)
    // Off unless spark.ember.slidingSumRewrite.enabled (checked per query).
    extensions.injectOptimizerRule(_ => SlidingSumRewrite)
  }
}
