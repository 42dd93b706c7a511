package org.apache.spark.sql.ember.serde

import org.apache.spark.sql.catalyst.expressions.{
  Add,
  BinaryArithmetic,
  Divide,
  IntegralDivide,
  Multiply,
  Remainder,
  Subtract,
  UnaryMinus
}
import org.apache.spark.sql.types._
import org.ember.proto

/**
 * Spark's arithmetic operator as a proto `ArithOp`, and a pre-filter that phrases why an operand combination
 * stays in Spark, after `native/engine/src/expressions/arithmetic.rs` (`create` / `create_negate`). The engine
 * decides: every converted operator is planned by it on the driver ([[EngineSupport]]).
 */
object ArithmeticSupport {

  private def numeric(dt: DataType): Boolean = dt match {
    case ByteType | ShortType | IntegerType | LongType | FloatType | DoubleType => true
    case _: DecimalType => true
    case _ => false
  }

  /**
   * Decimal `%` and `div` where Spark's intermediate needs more than 39 digits: Spark can then fail with a
   * plain `ArithmeticException` ("Division impossible") in every mode, which the native side does not mimic.
   */
  private def decimalDivisionTooWide(l: DataType, r: DataType): Boolean = (l, r) match {
    case (a: DecimalType, b: DecimalType) => a.precision - a.scale + b.scale > 39
    case _ => false
  }

  def check(a: BinaryArithmetic): Either[String, proto.ArithOp] = {
    val (l, r) = (a.left.dataType, a.right.dataType)
    val sameType = l == r || (l.isInstanceOf[DecimalType] && r.isInstanceOf[DecimalType])
    lazy val unsupported = Left(
      s"${a.symbol} on ${l.simpleString} and ${r.simpleString} is not supported natively"
    )
    if (!sameType || !numeric(l)) return unsupported
    a match {
      case _: Add => Right(proto.ArithOp.ADD)
      case _: Subtract => Right(proto.ArithOp.SUBTRACT)
      case _: Multiply => Right(proto.ArithOp.MULTIPLY)
      case _: Divide if l == DoubleType || l.isInstanceOf[DecimalType] => Right(proto.ArithOp.DIVIDE)
      case _: Remainder if decimalDivisionTooWide(l, r) =>
        Left("decimal % whose intermediate exceeds 39 digits is not supported natively")
      case _: Remainder => Right(proto.ArithOp.REMAINDER)
      case _: IntegralDivide if decimalDivisionTooWide(l, r) =>
        Left("decimal div whose intermediate exceeds 39 digits is not supported natively")
      case d: IntegralDivide if (l == LongType || l.isInstanceOf[DecimalType]) && d.dataType == LongType =>
        Right(proto.ArithOp.INTEGRAL_DIVIDE)
      case _ => unsupported
    }
  }

  def checkNegate(u: UnaryMinus): Either[String, Unit] =
    if (numeric(u.child.dataType)) Right(()) else Left(s"unary minus on ${u.child.dataType.simpleString}")

}
