package org.apache.spark.sql.ember.serde

import org.apache.spark.sql.catalyst.expressions.EvalMode
import org.apache.spark.sql.types._

/**
 * Which casts the native engine computes exactly as Spark does (mirrors
 * `native/engine/src/expressions/cast.rs`'s `supported`). Everything else falls back with the reason here.
 */
object CastSupport {
  def check(from: DataType, to: DataType, mode: EvalMode.Value, timeZoneId: String): Either[String, Unit] =
    Left(s"cast from ${from.simpleString} to ${to.simpleString} is not implemented natively yet")
}
