package org.ember

import org.apache.spark.sql.SparkSessionExtensions
import org.apache.spark.sql.ember.EmberColumnarRule

/** Installed by [[EmberPlugin]] (or by hand through `spark.sql.extensions`). */
class EmberSessionExtensions extends (SparkSessionExtensions => Unit) {
  override def apply(extensions: SparkSessionExtensions): Unit = {
    extensions.injectColumnar(session => EmberColumnarRule(session))
  }
}
