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

  /** `contexts`: the query context of an id the plan carried (as `QueryExecutionErrors` passes Spark's own). */
  def toSparkException(e: EmberSparkError, contexts: Int => Option[QueryContext]): Throwable = {
    val params = e.params.grouped(2).collect { case Array(k, v) => k -> v }.toMap
    val context = contexts(e.queryContext)
    val ctx = context.toArray
    val summary = context.map(_.summary).getOrElse("")
    e.kind match {
      case "arithmetic" => new SparkArithmeticException(e.errorClass, params, ctx, summary)
      case "numberFormat" => new SparkNumberFormatException(e.errorClass, params, ctx, summary)
      case "dateTime" => new SparkDateTimeException(e.errorClass, params, ctx, summary)
      case _ => new SparkRuntimeException(e.errorClass, params, null, ctx, summary)
    }
  }
}
