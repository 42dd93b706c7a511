package org.ember.jni;

/**
 * A Spark error condition raised natively (e.g. ARITHMETIC_OVERFLOW under ANSI): the JVM side rethrows it as
 * the Spark exception Spark itself would throw ({@code org.apache.spark.sql.ember.EmberErrors}).
 */
public class EmberSparkError extends RuntimeException {
  /** "arithmetic", "numberFormat", "dateTime" or "runtime": which Spark exception class to throw. */
  public final String kind;
  public final String errorClass;
  /** Message parameters as alternating names and values. */
  public final String[] params;
  /** Id of the failing expression's query context in the plan (0: none). */
  public final int queryContext;

  public EmberSparkError(String kind, String errorClass, String[] params, int queryContext) {
    super("[" + errorClass + "]");
    this.kind = kind;
    this.errorClass = errorClass;
    this.params = params;
    this.queryContext = queryContext;
  }
}
