package org.apache.spark.sql.ember.execution

import org.apache.spark.sql.catalyst.util.RebaseDateTime

/**
 * Spark's own rebase of LEGACY Parquet timestamps where its tables stop (before year 1, or a zone without a table:
 * `java.util.Calendar`), called by the native Parquet reader for just those values, one call per batch.
 */
object CalendarRebase {

  /** Rebases hybrid-calendar micros written in `zone` to proleptic Gregorian ones, in place. */
  def rebaseMicros(zone: String, micros: Array[Long]): Unit = {
    var i = 0
    while (i < micros.length) {
      micros(i) = RebaseDateTime.rebaseJulianToGregorianMicros(zone, micros(i))
      i += 1
    }
  }
}
