package org.apache.spark.sql.ember

import scala.jdk.CollectionConverters._

import org.apache.spark.{
  QueryContext,
  SparkArithmeticException,
  SparkArrayIndexOutOfBoundsException,
  SparkDateTimeException,
  SparkException,
  SparkIllegalArgumentException,
  SparkNumberFormatException,
  SparkRuntimeException,
  SparkUpgradeException
}
import org.ember.jni.{EmberNativeException, EmberSparkError}
import org.ember.proto.{SparkError, SparkExceptionKind}

/** Native Spark error conditions → the exceptions Spark itself throws for them. */
object EmberErrors {

  /** `contexts`: the query context of an id the plan carried (as `QueryExecutionErrors` passes Spark's own). */
  def toSparkException(e: EmberSparkError, contexts: Int => Option[QueryContext]): Throwable =
    fromProto(e.error, contexts)

  private def fromProto(error: SparkError, contexts: Int => Option[QueryContext]): Throwable = {
    val params = error.getParametersList.asScala.map(p => p.getName -> p.getValue).toMap
    val context = contexts(error.getQueryContext)
    val ctx = context.toArray
    val summary = context.map(_.summary).getOrElse("")
    val errorClass = error.getErrorClass
    error.getKind match {
      case SparkExceptionKind.SPARK_EXCEPTION_KIND_ARITHMETIC =>
        new SparkArithmeticException(errorClass, params, ctx, summary)
      case SparkExceptionKind.SPARK_EXCEPTION_KIND_NUMBER_FORMAT =>
        new SparkNumberFormatException(errorClass, params, ctx, summary)
      case SparkExceptionKind.SPARK_EXCEPTION_KIND_DATE_TIME =>
        new SparkDateTimeException(errorClass, params, ctx, summary)
      case SparkExceptionKind.SPARK_EXCEPTION_KIND_SPARK =>
        val cause =
          if (error.hasCauseError) fromProto(error.getCauseError, contexts)
          else if (error.getCause.isEmpty) null
          else new EmberNativeException(error.getCause)
        new SparkException(errorClass, params, cause)
      case SparkExceptionKind.SPARK_EXCEPTION_KIND_UPGRADE =>
        new SparkUpgradeException(errorClass, params, null)
      case SparkExceptionKind.SPARK_EXCEPTION_KIND_ILLEGAL_ARGUMENT =>
        new SparkIllegalArgumentException(errorClass, params, ctx, summary, null)
      case SparkExceptionKind.SPARK_EXCEPTION_KIND_ARRAY_INDEX =>
        new SparkArrayIndexOutOfBoundsException(errorClass, params, ctx, summary)
      case _ => new SparkRuntimeException(errorClass, params, null, ctx, summary)
    }
  }
}
