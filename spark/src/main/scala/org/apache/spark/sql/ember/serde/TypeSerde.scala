package org.apache.spark.sql.ember.serde

import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.types._
import org.ember.proto

/** Spark data types → proto types (the Arrow types Spark's ArrowUtils maps them to), or why not. */
object TypeSerde {

  /**
   * `dt` as a proto type; with `arrays`, also an array of such elements, which exists only inside an
   * expression (an operator's column never is one: [[schema]] refuses it).
   */
  def convert(dt: DataType, timeZoneId: String, arrays: Boolean = false): Either[String, proto.DataType] = {
    val b = proto.DataType.newBuilder()
    dt match {
      case ArrayType(element, containsNull) if arrays && !element.isInstanceOf[ArrayType] =>
        convert(element, timeZoneId).map(e =>
          b.setId(proto.TypeId.ARRAY).setElement(e).setContainsNull(containsNull).build()
        )
      case BooleanType => Right(b.setId(proto.TypeId.BOOLEAN).build())
      case ByteType => Right(b.setId(proto.TypeId.INT8).build())
      case ShortType => Right(b.setId(proto.TypeId.INT16).build())
      case IntegerType => Right(b.setId(proto.TypeId.INT32).build())
      case LongType => Right(b.setId(proto.TypeId.INT64).build())
      case FloatType => Right(b.setId(proto.TypeId.FLOAT32).build())
      case DoubleType => Right(b.setId(proto.TypeId.FLOAT64).build())
      case d: DecimalType if d.precision <= 38 =>
        Right(b.setId(proto.TypeId.DECIMAL).setPrecision(d.precision).setScale(d.scale).build())
      case s: StringType if s.isUTF8BinaryCollation => Right(b.setId(proto.TypeId.UTF8).build())
      case s: StringType => Left(s"string collation ${s.collationName} is not supported")
      case BinaryType => Right(b.setId(proto.TypeId.BINARY).build())
      case DateType => Right(b.setId(proto.TypeId.DATE).build())
      case TimestampType => Right(b.setId(proto.TypeId.TIMESTAMP).setTimezone(timeZoneId).build())
      case TimestampNTZType => Right(b.setId(proto.TypeId.TIMESTAMP_NTZ).build())
      case NullType => Right(b.setId(proto.TypeId.NULL).build())
      case other => Left(s"data type ${other.simpleString} is not supported")
    }
  }

  /** Spark allows null attribute names; the engine binds columns by position, so a missing name is "". */
  def name(n: String): String = if (n == null) "" else n

  def supported(dt: DataType): Boolean = convert(dt, "UTC").isRight

  /** The proto schema of a list of attributes (an operator's input or output). */
  def schema(attrs: Seq[Attribute], timeZoneId: String): Either[String, proto.Schema] = {
    val b = proto.Schema.newBuilder()
    attrs.foreach { a =>
      convert(a.dataType, timeZoneId) match {
        case Right(t) =>
          b.addFields(proto.Field.newBuilder().setName(name(a.name)).setType(t).setNullable(a.nullable))
        case Left(reason) => return Left(s"column ${a.name}: $reason")
      }
    }
    Right(b.build())
  }
}
