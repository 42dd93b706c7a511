package org.apache.spark.sql.ember.execution

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.execution.RangeExec
import org.apache.spark.sql.execution.metric.SQLMetric

/**
 * A `RangeExec` read by a native block: each task gets its slice as three numbers instead of `UnsafeRow`s.
 * The slices are Spark's own — the same partitions (none for an empty range), and each partition's first value
 * and row count computed as `RangeExec`'s generated code computes them (BigInt bounds clamped to BIGINT).
 */
object RangeSlices {

  def rdd(range: RangeExec, rangeRows: SQLMetric): RDD[InputIterator] = {
    val sc = range.session.sparkContext
    if (range.isEmptyRange) return sc.emptyRDD[InputIterator]
    val (start, step, numSlices) = (range.start, range.step, range.numSlices)
    // As Spark's generated code: the element count as a long.
    val numElements = range.numElements.toLong
    val numOutputRows = range.longMetric("numOutputRows")
    sc.parallelize(0 until numSlices, numSlices).mapPartitionsWithIndex { (i, _) =>
      val s = slice(i, numSlices, numElements, start, step)
      numOutputRows += s.count
      rangeRows += s.count
      Iterator(InputIterator.Range(s))
    }
  }

  /** Partition `i`'s first value, step and row count, exactly as `RangeExec.doProduce` computes them. */
  def slice(i: Int, numSlices: Int, numElements: Long, start: Long, step: Long): RangeSource = {
    def clamp(b: BigInt): Long =
      if (b > BigInt(Long.MaxValue)) Long.MaxValue
      else if (b < BigInt(Long.MinValue)) Long.MinValue
      else b.toLong
    val (n, st) = (BigInt(numElements), BigInt(step))
    val first = clamp(BigInt(i) * n / numSlices * st + start)
    val end = clamp((BigInt(i) + 1) * n / numSlices * st + start)
    val startToEnd = BigInt(end) - BigInt(first)
    var count = (startToEnd / st).toLong
    if (count < 0) count = 0
    else if (startToEnd % st != 0) count += 1
    new RangeSource(first, step, count)
  }
}
