package org.apache.spark.sql.ember.execution

import org.apache.spark.rdd.{ParallelCollectionRDD, RDD}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.plans.physical.{Partitioning, SinglePartition}
import org.apache.spark.sql.execution.{ColumnarToRowExec, SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.exchange.ENSURE_REQUIREMENTS
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.ember.proto

/**
 * Spark's `CollectLimitExec` over a native child. It stays a row operator, as Spark's is, because the driver
 * calls its `executeCollect`, which (exactly as Spark's) takes `limit` rows with the child's `executeTake` — the
 * native child runs on as few partitions as needed — and drops the offset. Executed as an RDD (`doExecute`), the
 * whole limit runs natively: the child's block topped by the per-partition limit, Ember's single-partition
 * shuffle (skipped when the child is one partition), then the final `Limit` (offset included).
 */
case class EmberCollectLimitExec(
    limit: Int,
    offset: Int,
    child: SparkPlan,
    localLimit: Option[proto.Operator],
    shuffleWriter: proto.Operator,
    finalLimit: proto.Operator
) extends UnaryExecNode {
  override def output: Seq[Attribute] = child.output
  override def outputPartitioning: Partitioning = SinglePartition

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "numOutputRows" -> SQLMetrics.createMetric(sparkContext, "number of output rows")
  )

  override def executeCollect(): Array[InternalRow] =
    if (limit >= 0) {
      if (offset > 0) child.executeTake(limit).drop(offset) else child.executeTake(limit)
    } else child.executeCollect().drop(offset)

  /** The native block under the row transition Spark put between it and this row operator. */
  private def block: EmberExec = child match {
    case EmberColumnarToRowExec(e: EmberExec) => e
    case ColumnarToRowExec(e: EmberExec) => e
    case e: EmberExec => e
    case other => throw new IllegalStateException(s"EmberCollectLimitExec over non-native ${other.nodeName}")
  }

  override protected def doExecute(): RDD[InternalRow] =
    if (limit == 0) new ParallelCollectionRDD(sparkContext, Seq.empty[InternalRow], 1, Map.empty)
    else {
      val native = block
      val local = localLimit.fold[EmberExec](native)(op => EmberLocalLimitExec(limit, native, op))
      val single =
        if (native.outputPartitioning == SinglePartition) local
        else
          EmberInputExec(
            EmberShuffleExchangeExec(SinglePartition, local, ENSURE_REQUIREMENTS, None, shuffleWriter)
          )
      val top = EmberGlobalLimitExec(finalLimit.getLimit.getLimit.toInt, offset, single, finalLimit)
      EmberBlock.executeRows(top, longMetric("numOutputRows"))
    }

  override def simpleString(maxFields: Int): String = s"EmberCollectLimitExec $limit, offset=$offset"

  override protected def withNewChildInternal(newChild: SparkPlan): EmberCollectLimitExec =
    copy(child = newChild)
}
