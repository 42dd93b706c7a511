package org.apache.spark.sql.ember

import org.apache.spark.{
  QueryContext,
  SparkArithmeticException,
  SparkDateTimeException,
  SparkNumberFormatException,
  SparkRuntimeException
}
import org.ember.jni.EmberSparkError

/** Native Spark error conditions → the exceptions Spark itself throws for them. */
object EmberErrors {
  def toSparkException(e: EmberSparkError): Throwable = {
    val params = e.params.grouped(2).collect { case Array(k, v) => k -> v }.toMap
    val noContext = Array.empty[QueryContext]
    e.kind match {
      case "arithmetic" => new SparkArithmeticException(e.errorClass, params, noContext, "")
      case "numberFormat" => new SparkNumberFormatException(e.errorClass, params, noContext, "")
      case "dateTime" => new SparkDateTimeException(e.errorClass, params, noContext, "")
      case _ => new SparkRuntimeException(e.errorClass, params, null, noContext, "")
    }
  }
}
