package org.apache.spark.sql.ember.execution

import org.apache.spark.sql.catalyst.expressions.{Attribute, SortOrder}
import org.apache.spark.sql.catalyst.plans.physical._
import org.apache.spark.sql.catalyst.trees.TreeNodeTag
import org.apache.spark.sql.ember.serde.TypeSerde
import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.internal.SQLConf
import org.ember.proto

/** The leaf of a native block: the output of a Spark child, converted to Arrow batches. */
case class EmberInputExec(child: SparkPlan) extends UnaryExecNode with EmberExec {
  override def output: Seq[Attribute] = child.output
  override def outputPartitioning: Partitioning = child.outputPartitioning
  override def outputOrdering: Seq[SortOrder] = child.outputOrdering
  override def nativeOperator: proto.Operator = {
    val schema = TypeSerde.schema(output, SQLConf.get.sessionLocalTimeZone) match {
      case Right(s) => s
      case Left(reason) => throw new IllegalStateException(s"EmberInputExec over unsupported schema: $reason")
    }
    proto.Operator.newBuilder().setInput(proto.Input.newBuilder().setSchema(schema)).build()
  }
  override def nativeMetricNames: Set[String] = Set.empty
  // Filled on the JVM side (RangeSlices, NativeParquetScan), not by the native operator.
  override protected def operatorMetrics: Map[String, SQLMetric] = Map(
    "rangeRows" -> SQLMetrics.createMetric(sparkContext, "rows generated natively from spark.range"),
    "parquetSplits" -> SQLMetrics.createMetric(sparkContext, "Parquet file splits read natively"),
    "parquetRowGroupsPruned" -> SQLMetrics
      .createMetric(sparkContext, "Parquet row groups skipped by statistics"),
    "parquetPagesPruned" -> SQLMetrics.createMetric(sparkContext, "Parquet pages skipped by the page index"),
    "parquetRowsSkipped" -> SQLMetrics.createMetric(
      sparkContext,
      "Parquet rows of the row groups read skipped by pages or filtered in the reader"
    ),
    "parquetBytesRead" -> SQLMetrics.createSizeMetric(sparkContext, "Parquet bytes read natively")
  )

  /** The metrics a native Parquet scan under this input fills. */
  def parquetScanMetrics: ParquetScanMetrics = ParquetScanMetrics(
    metrics("parquetSplits"),
    metrics("parquetRowGroupsPruned"),
    metrics("parquetPagesPruned"),
    metrics("parquetRowsSkipped"),
    metrics("parquetBytesRead")
  )
  override def simpleString(maxFields: Int): String = child match {
    case scan: FileSourceScanExec =>
      NativeParquetScan.unsupported(scan) match {
        case None if getTagValue(EmberInputExec.DynamicPruning).isDefined =>
          s"$nodeName (Parquet read natively, pruned by a dynamic filter)"
        case None if getTagValue(EmberInputExec.PrunedInTask).isDefined =>
          val joins = getTagValue(EmberInputExec.PrunedInTask).get.map(j => s"[$j]").mkString(", ")
          s"$nodeName (Parquet read natively, pruned by the dynamic filter of the join on $joins in its task)"
        case None => s"$nodeName (Parquet read natively)"
        case Some(why) => s"$nodeName (file scan read by Spark: $why)"
      }
    case c if CachedTableScan.of(c).isDefined =>
      CachedTableScan.unsupported(CachedTableScan.of(c).get) match {
        case None => s"$nodeName (cached table read natively)"
        case Some(why) => s"$nodeName (cached table read by Spark: $why)"
      }
    case _ => nodeName
  }
  override protected def withNewChildInternal(newChild: SparkPlan): EmberInputExec = copy(child = newChild)
}

object EmberInputExec {

  /** On a native Parquet scan's input: a join's dynamic filter its reader prunes with (set at execution). */
  val DynamicPruning: TreeNodeTag[proto.ParquetScanDynamicFilter] =
    TreeNodeTag[proto.ParquetScanDynamicFilter]("ember.dynamicPruning")

  /** On a native Parquet scan's input: the keys of the joins of its native plan that prune it while they run. */
  val PrunedInTask: TreeNodeTag[Seq[String]] = TreeNodeTag[Seq[String]]("ember.prunedInTask")
}
