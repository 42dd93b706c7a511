package org.apache.spark.sql.ember.rewrite

import java.nio.ByteBuffer

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, Expression, UnsafeRow}
import org.apache.spark.sql.catalyst.expressions.aggregate.TypedImperativeAggregate
import org.apache.spark.sql.types._

/**
 * Every sliding integral `sum` of one window spec whose frames end at or before the current row, as one aggregate
 * evaluated by Spark's window operator over the running frame (ROWS UNBOUNDED PRECEDING .. CURRENT ROW). That
 * frame calls `update` once per row, in order, then `eval`, so the state knows the current row's position.
 *
 * The state keeps, per measure, the last few prefixes `Q(k)` (the wrapping 64-bit sum of the first `k` rows'
 * values, nulls as 0) and `C(k)` (how many of them were non-null), in rings just long enough for the widest frame.
 * The frame `ROWS BETWEEN -a PRECEDING AND -b PRECEDING` (a <= b <= 0) of the row after `k` rows have been seen
 * is `Q(k + b) - Q(k - 1 + a)`, both clipped at 0, and NULL when `C` says it holds no non-null value (or no
 * row). Wrapping arithmetic makes that Spark's ANSI-off fold bit for bit; the rule that builds this stays out
 * under ANSI. The result is a struct with one nullable bigint per frame, in `frames` order.
 *
 * Only [[SlidingSumRewrite]] creates it, for Spark's own window operator; it has no SQL name and no merge
 * (there is no order between two partial states).
 */
case class SlidingFrameSums(
    children: Seq[Expression],
    frames: Seq[SlidingFrameSums.Frame],
    mutableAggBufferOffset: Int = 0,
    inputAggBufferOffset: Int = 0
) extends TypedImperativeAggregate[SlidingFrameSums.State] {
  import SlidingFrameSums._

  require(frames.forall(f => f.lower <= f.upper && f.upper <= 0 && f.measure < children.size))

  override def prettyName: String = "ember_prefix_frame_sums"
  override def nullable: Boolean = false
  override lazy val dataType: StructType =
    StructType(frames.indices.map(i => StructField(s"f$i", LongType, nullable = true)))

  /** Ring length: the power of two at or above `2 - a_min`, to hold `Q(k - 1 + a_min) .. Q(k)`. */
  private lazy val ring: Int = SlidingFrameSums.ringLength(frames.map(_.lower).min)
  private lazy val mask: Long = ring - 1L
  private lazy val frameMeasures = frames.map(_.measure).toArray
  private lazy val frameLowers = frames.map(_.lower).toArray
  private lazy val frameUppers = frames.map(_.upper).toArray
  private lazy val resultBytes = UnsafeRow.calculateBitSetWidthInBytes(frames.size) + 8 * frames.size

  // A bound column read straight from the row (the usual case after binding); anything else is evaluated.
  @transient private lazy val ordinals: Array[Int] = children.map {
    case b: BoundReference => b.ordinal
    case _ => -1
  }.toArray
  @transient private lazy val widths: Array[Int] = children
    .map(_.dataType match {
      case LongType => 8
      case IntegerType => 4
      case ShortType => 2
      case ByteType => 1
      case other => throw new IllegalStateException(s"$prettyName over $other")
    })
    .toArray

  private def value(input: InternalRow, m: Int): Long = {
    val o = ordinals(m)
    widths(m) match {
      case 8 => input.getLong(o)
      case 4 => input.getInt(o).toLong
      case 2 => input.getShort(o).toLong
      case _ => input.getByte(o).toLong
    }
  }

  override def createAggregationBuffer(): State = new State(children.size, ring)

  override def update(state: State, input: InternalRow): State = {
    val k = state.rows
    val before = (k & mask).toInt
    val after = ((k + 1) & mask).toInt
    var m = 0
    while (m < children.size) {
      val base = m * ring
      var s = state.sums(base + before)
      var c = state.counts(base + before)
      val o = ordinals(m)
      if (o >= 0) {
        if (!input.isNullAt(o)) { s += value(input, m); c += 1 }
      } else {
        val v = children(m).eval(input)
        if (v != null) { s += v.asInstanceOf[Number].longValue(); c += 1 }
      }
      state.sums(base + after) = s
      state.counts(base + after) = c
      m += 1
    }
    state.rows = k + 1
    state
  }

  override def eval(state: State): Any = {
    val k = state.rows
    val row = new UnsafeRow(frames.size)
    row.pointTo(new Array[Byte](resultBytes), resultBytes)
    var f = 0
    while (f < frameMeasures.length) {
      val hi = k + frameUppers(f)
      val base = frameMeasures(f) * ring
      val hiSlot = base + (hi & mask).toInt
      val loSlot = base + (math.max(0L, k - 1 + frameLowers(f)) & mask).toInt
      if (hi <= 0 || state.counts(hiSlot) == state.counts(loSlot)) row.setNullAt(f)
      else row.setLong(f, state.sums(hiSlot) - state.sums(loSlot))
      f += 1
    }
    row
  }

  override def merge(state: State, input: State): State =
    throw new UnsupportedOperationException(s"$prettyName is evaluated only as a running window function")

  override def serialize(state: State): Array[Byte] = {
    val buf = ByteBuffer.allocate(8 + 16 * state.sums.length)
    buf.putLong(state.rows)
    state.sums.foreach(buf.putLong)
    state.counts.foreach(buf.putLong)
    buf.array()
  }

  override def deserialize(bytes: Array[Byte]): State = {
    val buf = ByteBuffer.wrap(bytes)
    val state = createAggregationBuffer()
    state.rows = buf.getLong
    state.sums.indices.foreach(i => state.sums(i) = buf.getLong)
    state.counts.indices.foreach(i => state.counts(i) = buf.getLong)
    state
  }

  override def withNewMutableAggBufferOffset(offset: Int): SlidingFrameSums =
    copy(mutableAggBufferOffset = offset)
  override def withNewInputAggBufferOffset(offset: Int): SlidingFrameSums =
    copy(inputAggBufferOffset = offset)
  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): SlidingFrameSums =
    copy(children = newChildren)
}

object SlidingFrameSums {

  /** Widest frame served: its state is 16 bytes per measure and ring slot, allocated per partition. */
  val MaxRing: Int = 4096

  def ringLength(lowest: Int): Int = Integer.highestOneBit(1 - lowest) * 2

  /** `ROWS BETWEEN lower AND upper` (row offsets, `upper <= 0`) over `children(measure)`. */
  case class Frame(measure: Int, lower: Int, upper: Int)

  /** Rows seen so far in the partition, and per measure a ring of prefix sums and non-null counts. */
  final class State(measures: Int, ring: Int) {
    var rows: Long = 0L
    val sums: Array[Long] = new Array[Long](measures * ring)
    val counts: Array[Long] = new Array[Long](measures * ring)
  }
}
