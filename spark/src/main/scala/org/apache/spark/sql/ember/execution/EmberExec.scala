package org.apache.spark.sql.ember.execution

import org.apache.spark.SparkContext
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.vectorized.ColumnarBatch
import org.ember.proto

/**
 * A Spark operator that runs natively. Each carries its own proto (without id or children) and SQL metrics;
 * a contiguous block of them becomes one native plan, executed by the block's top node (the one whose parent
 * is not Ember, and so calls `executeColumnar`), once per task, one JNI call per output batch.
 */
trait EmberExec extends SparkPlan {

  /** This operator as a proto, without id and children. */
  def nativeOperator: proto.Operator

  /**
   * `nativeOperator` with its scalar subqueries' results as literals (see [[SubqueryValue]]); called by
   * [[EmberBlock]] after the subqueries ran. Only filters and projections convert with subqueries.
   */
  def boundOperator: proto.Operator = nativeOperator

  /** Spark's wait for this node's subqueries (started when the plan was prepared), so their results are in. */
  final def awaitSubqueries(): Unit = waitForSubqueries()

  override def supportsColumnar: Boolean = true

  override protected def doExecute(): RDD[InternalRow] =
    throw new IllegalStateException(s"$nodeName produces columnar batches only")

  override lazy val metrics: Map[String, SQLMetric] =
    EmberExec.baselineMetrics(sparkContext, "number of output rows") ++ operatorMetrics

  /**
   * This operator's own metrics, keyed by the names its native operator declares (its Rust module's
   * `metric_names`; proto `PlanMetrics` brings their values when a task's plan closes).
   */
  protected def operatorMetrics: Map[String, SQLMetric] = Map.empty

  /**
   * The metrics the native operator fills by name: the tests check each against the names the engine declares
   * for this operator's proto kind (`NativeLib.metricNames`).
   */
  def nativeMetricNames: Set[String] = operatorMetrics.keySet

  override protected def doExecuteColumnar(): RDD[ColumnarBatch] = EmberBlock.execute(this)
}

object EmberExec {

  /**
   * Every native operator's baseline metrics: proto `OperatorMetrics`' typed fields, and the plan's peak memory
   * (`PlanMetrics.peak_reserved_bytes`, shown on the block's top node). `rowsLabel` says what its rows are.
   */
  def baselineMetrics(sc: SparkContext, rowsLabel: String): Map[String, SQLMetric] = Map(
    "numOutputRows" -> SQLMetrics.createMetric(sc, rowsLabel),
    "elapsedCompute" -> SQLMetrics.createNanoTimingMetric(sc, "native elapsed compute"),
    "spillCount" -> SQLMetrics.createMetric(sc, "native spill count"),
    "spilledBytes" -> SQLMetrics.createSizeMetric(sc, "native spilled bytes"),
    "spilledRows" -> SQLMetrics.createMetric(sc, "native spilled rows"),
    "peakMemory" -> SQLMetrics.createSizeMetric(sc, "native peak reserved memory")
  )
}
