package org.apache.spark.sql.ember.execution

import java.io.ByteArrayInputStream
import java.util.concurrent.{Future => JFuture, TimeoutException, TimeUnit}

import scala.concurrent.{ExecutionContext, Future, Promise}
import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.arrow.vector.VarBinaryVector
import org.apache.arrow.vector.ipc.ArrowStreamReader
import org.apache.spark.broadcast
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, UnsafeProjection}
import org.apache.spark.sql.catalyst.plans.logical.Statistics
import org.apache.spark.sql.catalyst.plans.physical.{BroadcastMode, BroadcastPartitioning, Partitioning}
import org.apache.spark.sql.errors.QueryExecutionErrors
import org.apache.spark.sql.execution.{ColumnarToRowExec, SparkPlan, SQLExecution}
import org.apache.spark.sql.execution.adaptive.BroadcastQueryStageExec
import org.apache.spark.sql.execution.exchange.{BroadcastExchangeLike, ReusedExchangeExec}
import org.apache.spark.sql.execution.joins.HashedRelationBroadcastMode
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.util.ArrowUtils
import org.apache.spark.sql.vectorized.{ArrowColumnVector, ColumnarBatch, ColumnVector}
import org.apache.spark.util.{SparkFatalException, ThreadUtils}
import org.ember.proto

/**
 * Spark's `BroadcastExchangeExec` whose child runs natively: the child's block, topped by a one-partition
 * `ShuffleWriter` (the columnar shuffle's map side, which buffers under the pool and spills), emits its rows as
 * Arrow IPC stream blocks; they are collected on the driver (Spark's `spark.driver.maxResultSize` applies to the
 * collect), checked against Spark's caps (512M rows, 8 GiB) and broadcast as they are (Spark's broadcast
 * compresses them with `spark.io.compression.codec`, lz4 by default). A native join reads them through
 * [[EmberBroadcastExchangeExec.blocksOf]] and builds its hash table per task from them. A Spark consumer (a
 * `BroadcastHashJoinExec` that stayed in Spark, a dynamic-pruning subquery) calls `executeBroadcast` and gets
 * what Spark's exchange would give it: the blocks decoded on the driver and turned by the broadcast `mode` into
 * Spark's own relation (a `HashedRelation`), broadcast once more (only then).
 */
case class EmberBroadcastExchangeExec(mode: BroadcastMode, child: SparkPlan, nativeOperator: proto.Operator)
    extends BroadcastExchangeLike {

  private lazy val writerMetrics = EmberShuffleWriterExec.metrics(sparkContext, "number of output rows")

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "dataSize" -> SQLMetrics.createSizeMetric(sparkContext, "data size"),
    "collectTime" -> SQLMetrics.createTimingMetric(sparkContext, "time to collect"),
    "broadcastTime" -> SQLMetrics.createTimingMetric(sparkContext, "time to broadcast"),
    "relationTime" -> SQLMetrics.createTimingMetric(sparkContext, "time to build Spark's relation (fallback)")
  ) ++ writerMetrics

  override def nodeName: String = "EmberBroadcastExchange"

  override def outputPartitioning: Partitioning = BroadcastPartitioning(mode)

  // Like the columnar shuffle: Spark then keeps the native child columnar under this node.
  override def supportsColumnar: Boolean = true
  override def supportsRowBased: Boolean = true

  override def doCanonicalize(): SparkPlan =
    EmberBroadcastExchangeExec(mode.canonicalized, child.canonicalized, nativeOperator)

  @transient private lazy val timeoutSeconds: Long = {
    val t = conf.broadcastTimeout
    if (t < 0) Long.MaxValue else t
  }

  @transient private lazy val promise = Promise[broadcast.Broadcast[Any]]()

  @transient override lazy val completionFuture: Future[broadcast.Broadcast[Any]] = promise.future

  /** The child's native block (Spark may have put a row transition over it). */
  private def nativeChild: SparkPlan = child match {
    case e: EmberExec => e
    case EmberColumnarToRowExec(e: EmberExec) => e
    case ColumnarToRowExec(e: EmberExec) => e
    case other => EmberInputExec(other)
  }

  @transient override lazy val relationFuture: JFuture[broadcast.Broadcast[Any]] = {
    // This node's lazy vals the collecting thread uses, initialized here (see doExecuteBroadcast).
    metrics
    timeoutSeconds
    promise
    SQLExecution.withThreadLocalCaptured[broadcast.Broadcast[Any]](
      session,
      EmberBroadcastExchangeExec.executionContext
    ) {
      try {
        sparkContext.addJobTag(jobTag)
        sparkContext.setInterruptOnCancel(true)
        val beforeCollect = System.nanoTime()
        val writer = EmberShuffleWriterExec(nativeChild, nativeOperator, writerMetrics)
        val blocks = EmberBlock
          .execute(writer)
          .mapPartitionsInternal(batches => EmberBroadcastExchangeExec.blockBytes(batches))
          .collect()
        // The writer's row count reaches the driver with its task's metrics, before the collect returns.
        val numRows = writerMetrics("shuffle_rows").value
        if (numRows >= EmberBroadcastExchangeExec.MaxRows) {
          throw QueryExecutionErrors.cannotBroadcastTableOverMaxTableRowsError(
            EmberBroadcastExchangeExec.MaxRows,
            numRows
          )
        }
        val dataSize = blocks.iterator.map(_.length.toLong).sum
        longMetric("dataSize") += dataSize
        if (dataSize >= EmberBroadcastExchangeExec.MaxBytes) {
          throw QueryExecutionErrors.cannotBroadcastTableOverMaxTableBytesError(
            EmberBroadcastExchangeExec.MaxBytes,
            dataSize
          )
        }
        val beforeBroadcast = System.nanoTime()
        longMetric("collectTime") += (beforeBroadcast - beforeCollect) / 1000000
        val broadcasted: broadcast.Broadcast[Any] =
          sparkContext.broadcastInternal(EmberBroadcastBlocks(blocks, numRows): Any, serializedOnly = true)
        longMetric("broadcastTime") += (System.nanoTime() - beforeBroadcast) / 1000000
        val executionId = sparkContext.getLocalProperty(SQLExecution.EXECUTION_ID_KEY)
        SQLMetrics.postDriverMetricUpdates(sparkContext, executionId, metrics.values.toSeq)
        promise.trySuccess(broadcasted)
        broadcasted
      } catch {
        case oe: OutOfMemoryError =>
          val ex = QueryExecutionErrors.notEnoughMemoryToBuildAndBroadcastTableError(oe, Nil)
          promise.tryFailure(ex)
          throw ex
        case e if !NonFatal(e) =>
          val ex = new SparkFatalException(e)
          promise.tryFailure(ex)
          throw ex
        case e: Throwable =>
          promise.tryFailure(e)
          throw e
      }
    }
  }

  override protected def doPrepare(): Unit = {
    // Initialized here, on the planning thread, rather than under a lazy val's lock in the collecting thread.
    metrics
    relationFuture
  }

  override def runtimeStatistics: Statistics =
    Statistics(metrics("dataSize").value, Some(writerMetrics("shuffle_rows").value))

  /** The broadcast blocks, waiting for them as Spark's exchange waits (`spark.sql.broadcastTimeout`). */
  def blocks(): broadcast.Broadcast[EmberBroadcastBlocks] =
    try
      relationFuture
        .get(timeoutSeconds, TimeUnit.SECONDS)
        .asInstanceOf[broadcast.Broadcast[EmberBroadcastBlocks]]
    catch {
      case ex: TimeoutException =>
        logError(s"Could not execute broadcast in $timeoutSeconds secs.", ex)
        if (!relationFuture.isDone) {
          sparkContext.cancelJobsWithTag(jobTag, "The corresponding broadcast query has failed.")
          relationFuture.cancel(true)
        }
        throw QueryExecutionErrors.executeBroadcastTimeoutError(timeoutSeconds, Some(ex))
      case ex: java.util.concurrent.ExecutionException if ex.getCause != null => throw ex.getCause
    }

  /** Rows broadcast (driver only, once the broadcast is in). */
  def rowCount(): Long = blocks().value.rows

  /**
   * Whether a broadcast row has a null key (under the broadcast mode's keys): what a null-aware anti join needs
   * to know (Spark's `HashedRelationWithAllNullKeys`). Decodes the blocks on the driver, once.
   */
  def anyNullKey(): Boolean = {
    blocks()
    nullKeys
  }

  @transient private lazy val nullKeys: Boolean = mode match {
    case HashedRelationBroadcastMode(keys, _) =>
      val keyOf = UnsafeProjection.create(keys)
      EmberBroadcastExchangeExec.decode(blocks().value.blocks, child.output).exists(r => keyOf(r).anyNull())
    case _ => false
  }

  /** For Spark's consumers: Spark's own relation, built on the driver from the decoded blocks. */
  @transient private lazy val sparkRelation: broadcast.Broadcast[Any] = {
    val bc = blocks()
    val start = System.nanoTime()
    val value = bc.value
    val rows = EmberBroadcastExchangeExec.decode(value.blocks, child.output)
    val relation = mode.transform(rows, Some(value.rows))
    val out = sparkContext.broadcastInternal(relation, serializedOnly = true)
    longMetric("relationTime") += (System.nanoTime() - start) / 1000000
    out
  }

  override protected[sql] def doExecuteBroadcast[T](): broadcast.Broadcast[T] = {
    // Wait outside the lazy val: its initialization holds this node's lock, which the collecting thread needs
    // for this node's other lazy vals (its metrics).
    blocks()
    sparkRelation.asInstanceOf[broadcast.Broadcast[T]]
  }

  override protected def doExecute(): RDD[InternalRow] =
    throw QueryExecutionErrors.executeCodePathUnsupportedError("EmberBroadcastExchange")

  override protected def doExecuteColumnar(): RDD[ColumnarBatch] =
    throw QueryExecutionErrors.executeCodePathUnsupportedError("EmberBroadcastExchange")

  override def simpleString(maxFields: Int): String = s"EmberBroadcastExchange $mode"

  override protected def withNewChildInternal(newChild: SparkPlan): EmberBroadcastExchangeExec =
    copy(child = newChild)
}

object EmberBroadcastExchangeExec {

  /** Spark's caps on a broadcast table (`BroadcastExchangeExec`). */
  val MaxRows: Long = 512000000L
  val MaxBytes: Long = 8L << 30

  // As Spark's broadcast-exchange pool (spark.sql.broadcastExchange.maxThreadThreshold, default 128).
  private[execution] lazy val executionContext = ExecutionContext.fromExecutorService(
    ThreadUtils.newDaemonCachedThreadPool("ember-broadcast-exchange", 128)
  )

  /** Ember's broadcast exchange under whatever wraps it (an AQE stage, a reused exchange), if `plan` is one. */
  def of(plan: SparkPlan): Option[EmberBroadcastExchangeExec] = plan match {
    case e: EmberBroadcastExchangeExec => Some(e)
    case ReusedExchangeExec(_, e: EmberBroadcastExchangeExec) => Some(e)
    case s: BroadcastQueryStageExec => of(s.plan)
    case _ => None
  }

  /** The writer's (partition, block) batches → the blocks' bytes, copied before the next batch is pulled. */
  private def blockBytes(batches: Iterator[ColumnarBatch]): Iterator[Array[Byte]] =
    batches.flatMap { batch =>
      val blocks =
        batch.column(1).asInstanceOf[ArrowColumnVector].getValueVector.asInstanceOf[VarBinaryVector]
      (0 until batch.numRows()).map(i => blocks.get(i)).iterator
    }

  /** Decodes the blocks into `UnsafeRow`s (copies) on the driver, for Spark's relation. */
  private def decode(blocks: Array[Array[Byte]], output: Seq[Attribute]): Iterator[InternalRow] = {
    val allocator = ArrowUtils.rootAllocator.newChildAllocator("ember-broadcast-decode", 0, Long.MaxValue)
    val toUnsafe = UnsafeProjection.create(output, output)
    val rows = scala.collection.mutable.ArrayBuffer.empty[InternalRow]
    try {
      blocks.foreach { bytes =>
        val reader = new ArrowStreamReader(new ByteArrayInputStream(bytes), allocator)
        try {
          while (reader.loadNextBatch()) {
            val root = reader.getVectorSchemaRoot
            val columns = EmberColumnVectors.of(root.getFieldVectors.asScala.toSeq, output.map(_.dataType))
            val batch = new ColumnarBatch(columns, root.getRowCount)
            batch.rowIterator().asScala.foreach(r => rows += toUnsafe(r).copy())
          }
        } finally reader.close()
      }
    } finally allocator.close()
    rows.iterator
  }
}
