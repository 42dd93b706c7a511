package org.apache.spark.sql.ember.execution

import java.io.ByteArrayInputStream

import scala.concurrent.Future
import scala.jdk.CollectionConverters._

import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.{FieldVector, VarBinaryVector}
import org.apache.arrow.vector.ipc.ArrowStreamReader
import org.apache.spark.{
  MapOutputStatistics,
  Partition,
  PartitionIdPassthrough,
  ShuffleDependency,
  SparkContext,
  TaskContext
}
import org.apache.spark.internal.Logging
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.plans.logical.Statistics
import org.apache.spark.sql.catalyst.plans.physical.{Partitioning, RangePartitioning}
import org.apache.spark.sql.execution.{
  CoalescedPartitionSpec,
  ShuffledRowRDD,
  ShufflePartitionSpec,
  SparkPlan,
  SQLExecution,
  UnaryExecNode,
  UnsafeRowSerializer
}
import org.apache.spark.sql.execution.exchange.{ShuffleExchangeLike, ShuffleOrigin}
import org.apache.spark.sql.execution.metric.{
  SQLMetric,
  SQLMetrics,
  SQLShuffleReadMetricsReporter,
  SQLShuffleWriteMetricsReporter
}
import org.apache.spark.sql.types.{BinaryType, IntegerType}
import org.apache.spark.sql.util.ArrowUtils
import org.apache.spark.sql.vectorized.{ArrowColumnVector, ColumnarBatch, ColumnVector}
import org.apache.spark.unsafe.Platform
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
    nativeOperator: proto.Operator
) extends ShuffleExchangeLike {

  private lazy val writeMetrics = SQLShuffleWriteMetricsReporter.createShuffleWriteMetrics(sparkContext)
  private lazy val readMetrics = SQLShuffleReadMetricsReporter.createShuffleReadMetrics(sparkContext)

  private lazy val writerMetrics = EmberShuffleWriterExec.metrics(sparkContext, "rows routed natively")

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "dataSize" -> SQLMetrics.createSizeMetric(sparkContext, "data size"),
    "numPartitions" -> SQLMetrics.createMetric(sparkContext, "number of partitions"),
    "rangeSampledRows" -> SQLMetrics.createMetric(sparkContext, "rows read for the range bounds' sample")
  ) ++ readMetrics ++ writeMetrics ++ writerMetrics

  override def nodeName: String = "EmberShuffleExchange"

  // Columnar for native consumers, rows for Spark's: Spark then inserts no transition above this node, and
  // keeps its (native) child columnar.
  override def supportsColumnar: Boolean = true
  override def supportsRowBased: Boolean = true

  /** (partition, block row) pairs, one per Arrow IPC block the native writer emits. */
  /** The writer's proto; a range shuffle's with the bounds Spark's `RangePartitioner` samples now. */
  @transient private lazy val writerOperator: proto.Operator = outputPartitioning match {
    case r: RangePartitioning => RangeBounds.withBounds(nativeOperator, r, child, metrics("rangeSampledRows"))
    case _ => nativeOperator
  }

  @transient private lazy val blockRecords: RDD[Product2[Int, InternalRow]] = {
    val writer = EmberShuffleWriterExec(child, writerOperator, writerMetrics)
    EmberBlock.execute(writer).mapPartitionsInternal(batches => ShuffleBlocks.records(batches))
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

  @transient override lazy val mapOutputStatisticsFuture: Future[MapOutputStatistics] =
    if (blockRecords.getNumPartitions == 0) Future.successful(null)
    else sparkContext.submitMapStage(shuffleDependency)

  override def shuffleId: Int = shuffleDependency.shuffleId
  override def numMappers: Int = shuffleDependency.rdd.getNumPartitions
  override def numPartitions: Int = shuffleDependency.partitioner.numPartitions

  override def getShuffleRDD(partitionSpecs: Array[ShufflePartitionSpec]): RDD[ColumnarBatch] =
    ShuffleBlocks.decode(new ShuffledRowRDD(shuffleDependency, readMetrics, partitionSpecs))

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
    s"EmberShuffleExchange $outputPartitioning, $shuffleOrigin"

  override protected def withNewChildInternal(newChild: SparkPlan): EmberShuffleExchangeExec =
    copy(child = newChild)
}

/**
 * The native block under an [[EmberShuffleExchangeExec]], topped by its `ShuffleWriter`: (partition, block)
 * rows. Built when the exchange executes, never part of the plan tree; its metrics are the exchange's.
 */
case class EmberShuffleWriterExec(
    child: SparkPlan,
    nativeOperator: proto.Operator,
    writerMetrics: Map[String, SQLMetric]
) extends UnaryExecNode
    with EmberExec {
  override lazy val output: Seq[Attribute] = Seq(
    AttributeReference("partition", IntegerType, nullable = false)(),
    AttributeReference("block", BinaryType, nullable = false)()
  )
  override lazy val metrics: Map[String, SQLMetric] = writerMetrics
  override protected def withNewChildInternal(newChild: SparkPlan): EmberShuffleWriterExec =
    copy(child = newChild)
}

object EmberShuffleWriterExec {

  /**
   * What the native writer reports (its own metrics under the names its Rust module declares), for the exchange
   * that runs it; `rowsLabel` says what its rows are to that exchange.
   */
  def metrics(sc: SparkContext, rowsLabel: String): Map[String, SQLMetric] =
    EmberExec.baselineMetrics(sc, "blocks out of the native writer") ++ ownMetrics(sc, rowsLabel)

  /** The writer's own metrics, filled by name (checked by the tests against the engine's names). */
  def ownMetrics(sc: SparkContext, rowsLabel: String): Map[String, SQLMetric] = Map(
    "shuffle_rows" -> SQLMetrics.createMetric(sc, rowsLabel),
    "blocks_written" -> SQLMetrics.createMetric(sc, "Arrow IPC blocks written"),
    "block_bytes" -> SQLMetrics.createSizeMetric(sc, "Arrow IPC block bytes")
  )
}

/** Arrow IPC blocks in and out of Spark's shuffle. */
object ShuffleBlocks {

  /**
   * The writer's output batches → one shuffle record per block: its partition, and the block as an `UnsafeRow`
   * with one BINARY field (null bits, offset-and-size word, the bytes padded to 8), built with a single copy.
   */
  def records(batches: Iterator[ColumnarBatch]): Iterator[Product2[Int, InternalRow]] =
    batches.flatMap { batch =>
      val partitions = batch.column(0)
      val blocks =
        batch.column(1).asInstanceOf[ArrowColumnVector].getValueVector.asInstanceOf[VarBinaryVector]
      // Consumed before the next batch is pulled (which releases this one).
      Iterator.tabulate(batch.numRows())(i => (partitions.getInt(i), blockRow(blocks, i)))
    }

  private def blockRow(blocks: VarBinaryVector, i: Int): UnsafeRow = {
    val start = blocks.getStartOffset(i)
    val length = blocks.getEndOffset(i) - start
    val bytes = new Array[Byte](16 + ((length + 7) & ~7))
    Platform.putLong(bytes, Platform.BYTE_ARRAY_OFFSET + 8, (16L << 32) | length)
    Platform.copyMemory(
      null,
      blocks.getDataBuffer.memoryAddress() + start,
      bytes,
      Platform.BYTE_ARRAY_OFFSET + 16,
      length
    )
    val row = new UnsafeRow(1)
    row.pointTo(bytes, bytes.length)
    row
  }

  /** Where a block row's bytes start, relative to its base object (its field's offset-and-size word, high half). */
  def blockAddress(row: UnsafeRow): Long = row.getBaseOffset + (row.getLong(0) >>> 32)

  /** A block row's byte count (the word's low half). */
  def blockSize(row: UnsafeRow): Int = row.getLong(0).toInt

  /** The reduce side: block rows → Arrow-backed batches (see [[DecodedBlocksRDD]]). */
  def decode(blockRows: RDD[InternalRow]): RDD[ColumnarBatch] = new DecodedBlocksRDD(blockRows)
}

/**
 * A shuffle read as Arrow-backed batches, decoded on the JVM ([[DecodedBlocks]]) for Spark's own consumers. A
 * native consumer finds this RDD under whatever wraps the shuffle (AQE's reads and stages, reused exchanges all
 * hand it on) and reads `blockRows` instead: the blocks then go to the native side undecoded
 * ([[ShuffleBlockSource]]), which decodes them and glues small ones into full batches.
 */
class DecodedBlocksRDD(val blockRows: RDD[InternalRow]) extends RDD[ColumnarBatch](blockRows) {
  override protected def getPartitions: Array[Partition] = blockRows.partitions
  override protected def getPreferredLocations(split: Partition): Seq[String] =
    blockRows.preferredLocations(split)
  override def compute(split: Partition, context: TaskContext): Iterator[ColumnarBatch] =
    new DecodedBlocks(blockRows.iterator(split, context))
}

/**
 * Shuffle blocks for a native plan: `nextRows` packs the next blocks of the task's shuffle read, each preceded by
 * its size (a little-endian long), up to about `targetBytes` per call; the native side
 * (`operators/shuffle_reader.rs`) decodes them. A failure of the read is kept, so the task fails with it.
 */
class ShuffleBlockSource(blockRows: Iterator[InternalRow], targetBytes: Int = 4 << 20)
    extends NativeByteSource("shuffle blocks of one call", targetBytes) {

  override protected def fill(): Unit =
    while (filled < targetBytes && blockRows.hasNext) {
      val row = blockRows.next().asInstanceOf[UnsafeRow]
      val size = ShuffleBlocks.blockSize(row)
      val at = reserve(size)
      Platform.copyMemory(row.getBaseObject, ShuffleBlocks.blockAddress(row), bytes, at, size)
    }
}

/**
 * Decodes one task's shuffle blocks (Arrow IPC streams) into batches, one per IPC record batch. A batch stays
 * valid until the next is asked for; everything left is freed at the end of the task.
 */
class DecodedBlocks(rows: Iterator[InternalRow]) extends Iterator[ColumnarBatch] with Logging {
  private val context = TaskContext.get()
  private val allocator: BufferAllocator =
    ArrowUtils.rootAllocator.newChildAllocator(
      s"ember-shuffle-read-${context.taskAttemptId()}",
      0,
      Long.MaxValue
    )
  private var reader: ArrowStreamReader = _
  private var previous: ColumnarBatch = _
  private var pending: ColumnarBatch = _
  private var closed = false

  context.addTaskCompletionListener[Unit](_ => close())

  override def hasNext: Boolean = {
    if (pending != null) return true
    releasePrevious()
    while (!closed) {
      if (reader != null && reader.loadNextBatch()) {
        val root = reader.getVectorSchemaRoot
        if (root.getRowCount > 0) {
          val vectors = root.getFieldVectors.asScala.map { v =>
            val transfer = v.getTransferPair(allocator)
            transfer.transfer()
            new ArrowColumnVector(transfer.getTo.asInstanceOf[FieldVector]): ColumnVector
          }
          pending = new ColumnarBatch(vectors.toArray, root.getRowCount)
          return true
        }
      } else {
        closeReader()
        if (!rows.hasNext) return false
        reader = new ArrowStreamReader(blockStream(rows.next()), allocator)
      }
    }
    false
  }

  /** The block's bytes in place when the row points into a byte array (as the shuffle reader's rows do). */
  private def blockStream(row: InternalRow): ByteArrayInputStream = row match {
    case u: UnsafeRow if u.getBaseObject.isInstanceOf[Array[Byte]] =>
      val offset = (ShuffleBlocks.blockAddress(u) - Platform.BYTE_ARRAY_OFFSET).toInt
      new ByteArrayInputStream(u.getBaseObject.asInstanceOf[Array[Byte]], offset, ShuffleBlocks.blockSize(u))
    case other => new ByteArrayInputStream(other.getBinary(0))
  }

  override def next(): ColumnarBatch = {
    if (!hasNext) throw new NoSuchElementException("end of shuffle blocks")
    previous = pending
    pending = null
    previous
  }

  private def releasePrevious(): Unit = if (previous != null) {
    previous.close()
    previous = null
  }

  private def closeReader(): Unit = if (reader != null) {
    reader.close()
    reader = null
  }

  private def close(): Unit = if (!closed) {
    closed = true
    releasePrevious()
    if (pending != null) {
      pending.close()
      pending = null
    }
    closeReader()
    try allocator.close()
    catch {
      case e: IllegalStateException =>
        NativePlanIterator.arrowLeaks.incrementAndGet()
        logError(s"Ember: shuffle blocks leaked Arrow buffers: ${e.getMessage}")
    }
  }
}
