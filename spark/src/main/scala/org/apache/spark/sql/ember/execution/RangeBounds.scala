package org.apache.spark.sql.ember.execution

import org.apache.spark.RangePartitioner
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, UnsafeProjection}
import org.apache.spark.sql.catalyst.expressions.codegen.LazilyGeneratedOrdering
import org.apache.spark.sql.catalyst.plans.physical.RangePartitioning
import org.apache.spark.sql.ember.serde.ExprSerde
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.util.MutablePair
import org.ember.proto

/**
 * The bounds of a native range shuffle, sampled exactly as Spark's `ShuffleExchangeExec.prepareShuffleDependency`
 * samples them: Spark's `RangePartitioner` over the sort keys of the child's rows (the native child runs once
 * more for it, as Spark runs its child), with the same ordering, sample size and partition count. The writer's
 * proto then carries them as literals, and its partition count is theirs + 1 (as Spark's partitioner's is).
 */
object RangeBounds {

  def withBounds(
      writer: proto.Operator,
      r: RangePartitioning,
      child: SparkPlan,
      sampledRows: SQLMetric
  ): proto.Operator = {
    val native = child match {
      case e: EmberExec => e
      case other => throw new IllegalStateException(s"range shuffle over non-native ${other.nodeName}")
    }
    val sorting = r.ordering
    val attrs = child.output
    val rows = EmberBlock.executeRows(native, sampledRows)
    val forSampling = rows.mapPartitionsInternal { iter =>
      val projection = UnsafeProjection.create(sorting.map(_.child), attrs)
      val pair = new MutablePair[InternalRow, Null]()
      iter.map(row => pair.update(projection(row).copy(), null))
    }
    val orderingAttributes = sorting.zipWithIndex.map { case (o, i) =>
      o.copy(child = BoundReference(i, o.dataType, o.nullable))
    }
    implicit val ordering: Ordering[InternalRow] = new LazilyGeneratedOrdering(orderingAttributes)
    val part = new RangePartitioner(
      r.numPartitions,
      forSampling,
      ascending = true,
      samplePointsPerPartitionHint = SQLConf.get.rangeExchangeSampleSizePerPartition
    )
    val bounds = boundsOf(part)
    val tz = SQLConf.get.sessionLocalTimeZone
    val w = writer.getShuffleWriter.toBuilder.clearRangeBounds().setNumPartitions(bounds.length + 1)
    for (b <- bounds; (o, i) <- sorting.zipWithIndex) {
      val lit = ExprSerde
        .literal(b.get(i, o.dataType), o.dataType, tz)
        .fold(reason => throw new IllegalStateException(s"range bound: $reason"), identity)
      w.addRangeBounds(proto.Expr.newBuilder().setLiteral(lit))
    }
    writer.toBuilder.setShuffleWriter(w).build()
  }

  /** Spark's partitioner keeps its bounds private; they are what it routes by. */
  private def boundsOf(part: RangePartitioner[InternalRow, Null]): Array[InternalRow] = {
    val field = classOf[RangePartitioner[_, _]].getDeclaredField("rangeBounds")
    field.setAccessible(true)
    field.get(part).asInstanceOf[Array[InternalRow]]
  }
}
