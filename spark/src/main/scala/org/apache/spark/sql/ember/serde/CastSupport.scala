package org.apache.spark.sql.ember.serde

import org.apache.spark.sql.catalyst.expressions.EvalMode
import org.apache.spark.sql.types._
import org.ember.jni.NativeLib

/**
 * Which casts run natively: the native engine answers itself (`cast::supported` in
 * `native/engine/src/expressions/cast`), so the JVM never keeps a second copy of its support matrix.
 */
object CastSupport {
  private val jdkFeature = Runtime.version().feature()

  def check(from: DataType, to: DataType, mode: EvalMode.Value, timeZoneId: String): Either[String, Unit] = {
    if (!NativeLib.isAvailable) return Left("the native library is not available on the driver")
    (for {
      f <- TypeSerde.convert(from, timeZoneId)
      t <- TypeSerde.convert(to, timeZoneId)
    } yield (f, t)).flatMap { case (f, t) =>
      Option(
        NativeLib.castSupport(
          f.toByteArray,
          t.toByteArray,
          ExprSerde.evalMode(mode).getNumber,
          timeZoneId,
          jdkFeature
        )
      )
        .toLeft(())
    }
  }
}
