package org.apache.spark.sql.ember.serde

import org.apache.spark.sql.catalyst.expressions.{Left => _, Right => _, _}
import org.apache.spark.sql.types._
import org.ember.proto

/**
 * Which Spark arithmetic the native engine computes exactly as Spark does (mirrors
 * `native/engine/src/expressions/arithmetic.rs`). Everything else falls back with the reason given here.
 */
object ArithmeticSupport {
  private def integral(dt: DataType) = dt match {
    case ByteType | ShortType | IntegerType | LongType => true
    case _ => false
  }

  def check(a: BinaryArithmetic): Either[String, proto.ArithOp] =
    Left(s"arithmetic ${a.symbol} is not implemented natively yet")

  def checkNegate(u: UnaryMinus): Either[String, Unit] =
    Left("unary minus is not implemented natively yet")

  private[serde] def isIntegral(dt: DataType): Boolean = integral(dt)
}
