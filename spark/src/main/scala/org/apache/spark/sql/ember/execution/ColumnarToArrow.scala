package org.apache.spark.sql.ember.execution

import org.apache.arrow.vector._
import org.apache.spark.sql.execution.vectorized.{OffHeapColumnVector, WritableColumnVector}
import org.apache.spark.sql.types.Decimal
import org.apache.spark.sql.vectorized.ColumnVector
import org.apache.spark.unsafe.Platform

/**
 * Copies a Spark column (any `ColumnVector`: cached, Parquet/ORC vectorized, Arrow-backed, dictionary-encoded)
 * into a freshly allocated Arrow vector, one column at a time — much cheaper than reading the batch back as
 * rows into Spark's `ArrowWriter`. Fixed-width values move in bulk (Spark's `getLongs` & co. resolve
 * dictionaries, then one memory copy into the Arrow buffer); strings of Spark's off-heap vectors (what Parquet
 * produces when off-heap memory is on, as Ember requires) are copied straight from their byte buffer.
 */
object ColumnarToArrow {

  def copy(src: ColumnVector, dst: FieldVector, n: Int): Unit = {
    dst.setInitialCapacity(n)
    dst match {
      case v: VarCharVector => copyStrings(src, v, n)
      case v: VarBinaryVector =>
        v.allocateNew()
        var i = 0
        while (i < n) {
          if (!src.isNullAt(i)) v.setSafe(i, src.getBinary(i))
          i += 1
        }
      case v: DecimalVector =>
        v.allocateNew()
        val (p, s) = (v.getPrecision, v.getScale)
        var i = 0
        while (i < n) {
          if (!src.isNullAt(i)) {
            val d = src.getDecimal(i, p, s)
            // As Spark's ArrowWriter: a value that does not fit the column's precision becomes null.
            if (d != null && d.changePrecision(p, s)) {
              if (p <= Decimal.MAX_LONG_DIGITS) v.set(i, d.toUnscaledLong) else v.set(i, d.toJavaBigDecimal)
            } else v.setNull(i)
          } else v.setNull(i)
          i += 1
        }
      case v: BitVector =>
        v.allocateNew()
        val values = booleans(src, n)
        var i = 0
        while (i < n) {
          if (values(i)) BitVectorHelper.setBit(v.getDataBuffer, i)
          i += 1
        }
      case v: TinyIntVector => bulk(v, n, bytes(src, n), Platform.BYTE_ARRAY_OFFSET, 1)
      case v: SmallIntVector => bulk(v, n, shorts(src, n), Platform.SHORT_ARRAY_OFFSET, 2)
      case v: IntVector => bulk(v, n, ints(src, n), Platform.INT_ARRAY_OFFSET, 4)
      case v: DateDayVector => bulk(v, n, ints(src, n), Platform.INT_ARRAY_OFFSET, 4)
      case v: BigIntVector => bulk(v, n, longs(src, n), Platform.LONG_ARRAY_OFFSET, 8)
      case v: TimeStampVector => bulk(v, n, longs(src, n), Platform.LONG_ARRAY_OFFSET, 8) // micros
      case v: Float4Vector => bulk(v, n, floats(src, n), Platform.FLOAT_ARRAY_OFFSET, 4)
      case v: Float8Vector => bulk(v, n, doubles(src, n), Platform.DOUBLE_ARRAY_OFFSET, 8)
      case _: NullVector =>
      case other =>
        throw new IllegalStateException(s"no column-wise copy into ${other.getClass.getSimpleName}")
    }
    dst match {
      case _: NullVector | _: DecimalVector => // validity set value by value above
      case _ => setValidity(src, dst, n)
    }
    dst.setValueCount(n)
  }

  // Values in bulk. Spark's own column vectors return any value under a null; other implementations (e.g.
  // ArrowColumnVector, the output of another native plan) may refuse to read a null slot, so those are read
  // value by value around their nulls.
  private def bulkReadable(src: ColumnVector): Boolean =
    src.isInstanceOf[WritableColumnVector] || !src.hasNull

  private def booleans(src: ColumnVector, n: Int): Array[Boolean] =
    if (bulkReadable(src)) src.getBooleans(0, n)
    else Array.tabulate(n)(i => !src.isNullAt(i) && src.getBoolean(i))
  private def bytes(src: ColumnVector, n: Int): Array[Byte] =
    if (bulkReadable(src)) src.getBytes(0, n)
    else Array.tabulate(n)(i => if (src.isNullAt(i)) 0.toByte else src.getByte(i))
  private def shorts(src: ColumnVector, n: Int): Array[Short] =
    if (bulkReadable(src)) src.getShorts(0, n)
    else Array.tabulate(n)(i => if (src.isNullAt(i)) 0.toShort else src.getShort(i))
  private def ints(src: ColumnVector, n: Int): Array[Int] =
    if (bulkReadable(src)) src.getInts(0, n)
    else Array.tabulate(n)(i => if (src.isNullAt(i)) 0 else src.getInt(i))
  private def longs(src: ColumnVector, n: Int): Array[Long] =
    if (bulkReadable(src)) src.getLongs(0, n)
    else Array.tabulate(n)(i => if (src.isNullAt(i)) 0L else src.getLong(i))
  private def floats(src: ColumnVector, n: Int): Array[Float] =
    if (bulkReadable(src)) src.getFloats(0, n)
    else Array.tabulate(n)(i => if (src.isNullAt(i)) 0f else src.getFloat(i))
  private def doubles(src: ColumnVector, n: Int): Array[Double] =
    if (bulkReadable(src)) src.getDoubles(0, n)
    else Array.tabulate(n)(i => if (src.isNullAt(i)) 0d else src.getDouble(i))

  private def bulk(v: BaseFixedWidthVector, n: Int, values: AnyRef, arrayOffset: Long, width: Int): Unit = {
    v.allocateNew(n)
    Platform.copyMemory(values, arrayOffset, null, v.getDataBuffer.memoryAddress(), n.toLong * width)
  }

  /** Arrow's validity bits from Spark's null flags (a value slot under a null is left as it is). */
  private def setValidity(src: ColumnVector, dst: FieldVector, n: Int): Unit = {
    val validity = dst.getValidityBuffer
    if (!src.hasNull) {
      validity.setOne(0, BitVectorHelper.getValidityBufferSize(n).toLong)
    } else {
      // 64 rows per word: one (bounds-checked) buffer write per word rather than one per row.
      val bytes = BitVectorHelper.getValidityBufferSize(n)
      var i = 0
      while (i < n) {
        var word = 0L
        val end = math.min(i + 64, n)
        var j = i
        while (j < end) {
          if (!src.isNullAt(j)) word |= 1L << (j - i)
          j += 1
        }
        val at = i >> 3
        if (at + 8 <= bytes) validity.setLong(at.toLong, word)
        else {
          var b = at
          while (b < bytes) {
            validity.setByte(b.toLong, (word >>> ((b - at) * 8)).toInt)
            b += 1
          }
        }
        i = end
      }
    }
  }

  private def copyStrings(src: ColumnVector, v: VarCharVector, n: Int): Unit = src match {
    case w: OffHeapColumnVector if !w.hasDictionary => copyOffHeapStrings(w, v, n)
    case _ =>
      v.allocateNew()
      var i = 0
      while (i < n) {
        if (!src.isNullAt(i)) {
          val bytes = src.getUTF8String(i).getByteBuffer
          v.setSafe(i, bytes, bytes.position(), bytes.remaining())
        }
        i += 1
      }
  }

  /** Offsets from Spark's (offset, length) pairs, bytes copied straight from the child byte vector. */
  private def copyOffHeapStrings(src: WritableColumnVector, v: VarCharVector, n: Int): Unit = {
    var total = 0L
    var i = 0
    while (i < n) {
      if (!src.isNullAt(i)) total += src.getArrayLength(i)
      i += 1
    }
    v.allocateNew(math.max(total, 1L), n)
    val bytes = src.arrayData().asInstanceOf[OffHeapColumnVector].valuesNativeAddress()
    val offsets = v.getOffsetBuffer
    val data = v.getDataBuffer.memoryAddress()
    var end = 0
    offsets.setInt(0, 0)
    i = 0
    while (i < n) {
      if (!src.isNullAt(i)) {
        val len = src.getArrayLength(i)
        Platform.copyMemory(null, bytes + src.getArrayOffset(i), null, data + end, len.toLong)
        end += len
      }
      offsets.setInt((i + 1).toLong * 4, end)
      i += 1
    }
    v.setLastSet(n - 1)
  }
}
