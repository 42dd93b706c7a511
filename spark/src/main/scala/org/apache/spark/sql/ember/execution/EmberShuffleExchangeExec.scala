package org.apache.spark.sql.ember.execution

import scala.concurrent.{ExecutionContext, Future}
import scala.jdk.CollectionConverters._

import org.apache.spark.{MapOutputStatistics, PartitionIdPassthrough, ShuffleDependency, TaskContext}
import org.apache.spark.sql.ember.DynamicFilterPlanner
import org.apache.spark.util.{CollectionAccumulator, ThreadUtils, Utils}
import org.apache.spark.SparkException
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection
import org.apache.spark.sql.catalyst.plans.logical.Statistics
import org.apache.spark.sql.catalyst.plans.physical.{Partitioning, RangePartitioning}
import org.apache.spark.sql.execution.{
  CoalescedPartitionSpec,
  ShuffledRowRDD,
  ShufflePartitionSpec,
  SparkPlan,
  SQLExecution,
  UnsafeRowSerializer
}
import org.apache.spark.sql.execution.exchange.{ShuffleExchangeLike, ShuffleOrigin}
import org.apache.spark.sql.execution.metric.{
  SQLMetric,
  SQLMetrics,
  SQLShuffleReadMetricsReporter,
  SQLShuffleWriteMetricsReporter
}
import org.apache.spark.sql.vectorized.ColumnarBatch
import org.ember.proto

/**
 * Ember's columnar shuffle: a hash-partitioned (or single-partition) `ShuffleExchangeExec` whose map side runs
 * natively. The child's native block, topped by a `ShuffleWriter` (Spark's Murmur3 routing, so partitions are
 * exactly the ones Spark's exchange would build and co-partition with Spark-shuffled sides), emits each
 * partition's rows as Arrow IPC blocks, in ascending partition order. They cross Spark's own shuffle — one
 * `UnsafeRow` with a single BINARY field per block, Spark's `UnsafeRowSerializer`, its shuffle files (one per map
 * task, written in order by [[EmberShuffleWriteProcessor]]), compression, fetching and AQE statistics —
 * and are decoded on the reduce side into Arrow-backed batches that a native consumer takes over without a copy.
 * Spark row consumers read them through `doExecute`.
 */
case class EmberShuffleExchangeExec(
    override val outputPartitioning: Partitioning,
    child: SparkPlan,
    shuffleOrigin: ShuffleOrigin,
    advisoryPartitionSize: Option[Long],
    nativeOperator: proto.Operator,
    dynamicFilter: Option[DynamicFilterRole] = None
) extends ShuffleExchangeLike {

  private lazy val writeMetrics = SQLShuffleWriteMetricsReporter.createShuffleWriteMetrics(sparkContext)
  private lazy val readMetrics = SQLShuffleReadMetricsReporter.createShuffleReadMetrics(sparkContext)

  private lazy val writerMetrics = EmberShuffleWriterExec.metrics(sparkContext, "rows routed natively")

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "dataSize" -> SQLMetrics.createSizeMetric(sparkContext, "data size"),
    "numPartitions" -> SQLMetrics.createMetric(sparkContext, "number of partitions"),
    "rangeSampledRows" -> SQLMetrics.createMetric(sparkContext, "rows read for the range bounds' sample"),
    "dynamicFilterWait" -> SQLMetrics.createTimingMetric(sparkContext, "time waiting for the dynamic filter")
  ) ++ readMetrics ++ writeMetrics ++ writerMetrics

  override def nodeName: String = "EmberShuffleExchange"

  // Columnar for native consumers, rows for Spark's: Spark then inserts no transition above this node, and
  // keeps its (native) child columnar.
  override def supportsColumnar: Boolean = true
  override def supportsRowBased: Boolean = true

  /** A probe side's dynamic filter once its build side's summaries are united (see [[DynamicFilterLink]]). */
  @transient @volatile private var probeFilter: Option[proto.DynamicFilterUnion] = None

  /** The map tasks' key summaries of a build side (map index, bytes). */
  @transient private lazy val summaries: CollectionAccumulator[(Int, Array[Byte])] =
    sparkContext.collectionAccumulator[(Int, Array[Byte])]("ember dynamic filter summaries")

  /** The writer's proto; a range shuffle's with the bounds Spark's `RangePartitioner` samples now. */
  @transient private lazy val writerOperator: proto.Operator = outputPartitioning match {
    case r: RangePartitioning => RangeBounds.withBounds(nativeOperator, r, child, metrics("rangeSampledRows"))
    case _ =>
      probeFilter.map(_.getFilter).filter(_.getPartitionsCount > 0) match {
        case Some(f) =>
          val w = nativeOperator.getShuffleWriter.toBuilder.setDropFilter(f)
          nativeOperator.toBuilder.setShuffleWriter(w).build()
        case None => nativeOperator
      }
  }

  /** (partition, block row) pairs, one per Arrow IPC block the native writer emits. */
  @transient private lazy val blockRecords: RDD[Product2[Int, InternalRow]] = {
    probeFilter.foreach(u => DynamicFilterPlanner.pruneScans(child, this, u.getPruning))
    val writer = EmberShuffleWriterExec(child, writerOperator, writerMetrics)
    dynamicFilter match {
      case Some(_: DynamicFilterRole.Build) =>
        val acc = summaries
        EmberBlock
          .execute(writer)
          .mapPartitionsInternal(batches =>
            ShuffleBlocks.records(batches, Some(bytes => acc.add((TaskContext.getPartitionId(), bytes))))
          )
      case _ => EmberBlock.execute(writer).mapPartitionsInternal(batches => ShuffleBlocks.records(batches))
    }
  }

  @transient lazy val shuffleDependency: ShuffleDependency[Int, InternalRow, InternalRow] = {
    val dep = new ShuffleDependency[Int, InternalRow, InternalRow](
      blockRecords,
      // A range shuffle has as many partitions as bounds + 1, as Spark's RangePartitioner.
      new PartitionIdPassthrough(writerOperator.getShuffleWriter.getNumPartitions),
      new UnsafeRowSerializer(1, metrics("dataSize")),
      shuffleWriterProcessor = new EmberShuffleWriteProcessor(writeMetrics)
    )
    metrics("numPartitions").set(dep.partitioner.numPartitions)
    val executionId = sparkContext.getLocalProperty(SQLExecution.EXECUTION_ID_KEY)
    SQLMetrics.postDriverMetricUpdates(sparkContext, executionId, metrics("numPartitions") :: Nil)
    dep
  }

  /**
   * Under adaptive execution a build side unites its map tasks' summaries when its map stage completes; a probe
   * side's stage is submitted only once they are in (a future, never a blocked thread: AQE cancels a stage by
   * taking the lock its submission holds). The probe side's RDD is then built on Ember's own pool, with the
   * query's local properties, conf and session (as on the thread AQE submits stages from), unless the query has
   * ended meanwhile.
   */
  @transient override lazy val mapOutputStatisticsFuture: Future[MapOutputStatistics] =
    dynamicFilter match {
      case Some(DynamicFilterRole.Probe(link)) if link.buildPlanned =>
        val sc = sparkContext
        val props = Utils.cloneProperties(sc.getLocalProperties)
        val (conf, active, start) = (SQLConf.get, session, System.nanoTime())
        link.result.future.flatMap { union =>
          val previous = sc.getLocalProperties
          sc.setLocalProperties(props)
          try {
            val executionId = Option(props.getProperty(SQLExecution.EXECUTION_ID_KEY))
            if (executionId.exists(id => SQLExecution.getQueryExecution(id.toLong) == null))
              Future.failed(
                new SparkException(s"Ember: the query ended while $nodeName waited for its filter")
              )
            else {
              probeFilter = union
              metrics("dynamicFilterWait").set((System.nanoTime() - start) / 1000000)
              SQLMetrics.postDriverMetricUpdates(sc, executionId.orNull, metrics("dynamicFilterWait") :: Nil)
              def run() = SQLConf.withExistingConf(conf)(submitMapStage())
              if (active == null) run() else active.withActive(run())
            }
          } finally sc.setLocalProperties(previous)
        }(EmberShuffleExchangeExec.filterPool)
      case Some(DynamicFilterRole.Build(link)) =>
        val submitted = submitMapStage()
        val mappers = blockRecords.getNumPartitions
        submitted.onComplete { done =>
          link.result.trySuccess(done.toOption.flatMap(_ => DynamicFilterSummaries.unite(summaries, mappers)))
        }(ExecutionContext.parasitic)
        submitted
      case _ => submitMapStage()
    }

  private def submitMapStage(): Future[MapOutputStatistics] =
    if (blockRecords.getNumPartitions == 0) Future.successful(null)
    else sparkContext.submitMapStage(shuffleDependency)

  override def shuffleId: Int = shuffleDependency.shuffleId
  override def numMappers: Int = shuffleDependency.rdd.getNumPartitions
  override def numPartitions: Int = shuffleDependency.partitioner.numPartitions

  override def getShuffleRDD(partitionSpecs: Array[ShufflePartitionSpec]): RDD[ColumnarBatch] =
    ShuffleBlocks.decode(
      new ShuffledRowRDD(shuffleDependency, readMetrics, partitionSpecs),
      output.map(_.dataType)
    )

  /** Spark counts blocks as shuffle records; AQE needs rows (an empty side is one with 0 rows). */
  override def runtimeStatistics: Statistics =
    Statistics(metrics("dataSize").value, Some(writerMetrics("shuffle_rows").value))

  @transient private lazy val cachedShuffleRDD: RDD[ColumnarBatch] =
    getShuffleRDD(Array.tabulate(numPartitions)(i => CoalescedPartitionSpec(i, i + 1)))

  override protected def doExecuteColumnar(): RDD[ColumnarBatch] = cachedShuffleRDD

  override protected def doExecute(): RDD[InternalRow] = {
    val attrs = output
    executeColumnar().mapPartitionsInternal { batches =>
      val toUnsafe = UnsafeProjection.create(attrs, attrs)
      batches.flatMap(_.rowIterator().asScala).map(toUnsafe)
    }
  }

  override def simpleString(maxFields: Int): String =
    s"EmberShuffleExchange $outputPartitioning, $shuffleOrigin" + dynamicFilter.fold("")(r => s", $r")

  override protected def withNewChildInternal(newChild: SparkPlan): EmberShuffleExchangeExec =
    copy(child = newChild)
}

object EmberShuffleExchangeExec {

  /** Where a probe side's stage is built and submitted once its dynamic filter is in (never the scheduler's). */
  private val filterPool: ExecutionContext =
    ExecutionContext.fromExecutorService(ThreadUtils.newDaemonCachedThreadPool("ember-dynamic-filter", 16))
}
