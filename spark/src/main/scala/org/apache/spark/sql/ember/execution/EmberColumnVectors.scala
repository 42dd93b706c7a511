package org.apache.spark.sql.ember.execution

import org.apache.arrow.vector.{ValueVector, VarBinaryVector}
import org.apache.arrow.vector.holders.NullableVarBinaryHolder
import org.apache.spark.sql.types.{DataType, Decimal, StringType}
import org.apache.spark.sql.vectorized.{ArrowColumnVector, ColumnarArray, ColumnarMap, ColumnVector}
import org.apache.spark.unsafe.types.UTF8String

/**
 * Arrow vectors the engine made, as Spark's column vectors of the types Spark expects. A native plan that only
 * moves, compares and hashes its strings carries them as Arrow binary (the engine's `planner/strings.rs`), so that
 * Spark's bytes that are not valid UTF-8 pass through as Spark passes them: such a column reaches Spark as a
 * `VarBinaryVector`, read here as strings.
 */
object EmberColumnVectors {
  def of(vector: ValueVector, sparkType: DataType): ColumnVector = (vector, sparkType) match {
    case (bytes: VarBinaryVector, _: StringType) => new StringBytesColumnVector(bytes)
    case _ => new ArrowColumnVector(vector)
  }

  def of(vectors: Seq[ValueVector], sparkTypes: Seq[DataType]): Array[ColumnVector] = {
    require(
      vectors.size == sparkTypes.size,
      s"${vectors.size} Arrow vectors for ${sparkTypes.size} Spark columns"
    )
    vectors.zip(sparkTypes).map { case (v, t) => of(v, t) }.toArray
  }
}

/** A string column held as Arrow binary: its bytes as `UTF8String`s, without a copy (as Spark's own accessor). */
final class StringBytesColumnVector(vector: VarBinaryVector) extends ColumnVector(StringType) {
  private val holder = new NullableVarBinaryHolder
  private val arrow = new ArrowColumnVector(vector)

  override def getUTF8String(rowId: Int): UTF8String = {
    vector.get(rowId, holder)
    if (holder.isSet == 0) null
    else UTF8String.fromAddress(null, holder.buffer.memoryAddress() + holder.start, holder.end - holder.start)
  }
  override def getBinary(rowId: Int): Array[Byte] = arrow.getBinary(rowId)
  override def close(): Unit = arrow.close()
  override def hasNull: Boolean = arrow.hasNull
  override def numNulls: Int = arrow.numNulls
  override def isNullAt(rowId: Int): Boolean = arrow.isNullAt(rowId)
  override def getBoolean(rowId: Int): Boolean = unsupported
  override def getByte(rowId: Int): Byte = unsupported
  override def getShort(rowId: Int): Short = unsupported
  override def getInt(rowId: Int): Int = unsupported
  override def getLong(rowId: Int): Long = unsupported
  override def getFloat(rowId: Int): Float = unsupported
  override def getDouble(rowId: Int): Double = unsupported
  override def getArray(rowId: Int): ColumnarArray = unsupported
  override def getMap(ordinal: Int): ColumnarMap = unsupported
  override def getDecimal(rowId: Int, precision: Int, scale: Int): Decimal = unsupported
  override def getChild(ordinal: Int): ColumnVector = unsupported
  private def unsupported: Nothing = throw new UnsupportedOperationException("a string column")
}
