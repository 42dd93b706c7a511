package org.apache.spark.sql.ember.execution

/**
 * One task's slice of a `RangeExec`, generated natively: its first value, step and row count. Created on the task
 * thread; the engine calls [[checkKilled]] before every batch, so a cancelled task stops even when nothing
 * else in its plan returns to the JVM (a global aggregate over billions of rows).
 */
final class RangeSource(val first: Long, val step: Long, val count: Long) extends NativeInputSource
