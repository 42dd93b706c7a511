package org.apache.spark.sql.ember.execution

import scala.jdk.CollectionConverters._

import org.apache.arrow.c.{ArrowArray, ArrowArrayStream, ArrowSchema, Data}
import org.apache.arrow.vector.VectorSchemaRoot
import org.apache.spark.{QueryContext, SparkEnv, TaskContext}
import org.apache.spark.internal.Logging
import org.apache.spark.sql.ember.EmberErrors
import org.apache.spark.sql.ember.memory.NativeMemoryConsumer
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.sql.types.{DataType, StructType}
import org.apache.spark.sql.util.ArrowUtils
import org.apache.spark.sql.vectorized.{ColumnarBatch, ColumnVector}
import org.ember.jni.{EmberNativeException, EmberSparkError, NativeLib}
import org.ember.proto

/**
 * Runs one native plan for one task: hands over the task's inputs (rows as `UnsafeRow` bytes that the native
 * side decodes, when `nativeRowInput`; otherwise Arrow C streams), creates the plan with a
 * memory consumer of this task, and pulls output batches (Arrow C data interface) one JNI call each. Closed
 * exactly once — at the end of the output, or by the task-completion listener when the task fails or is
 * killed — which frees the plan, its memory and its spill files, and reports metrics.
 */
class NativePlanIterator(
    planBytes: Array[Byte],
    inputs: Seq[InputIterator],
    inputSchemas: Seq[StructType],
    timeZoneId: String,
    batchSize: Int,
    rowBatchBytes: Long,
    metrics: Seq[Map[String, SQLMetric]],
    nativeRowInput: Boolean,
    queryContexts: Map[Int, QueryContext],
    partitionIndex: Int,
    outputTypes: Seq[DataType]
) extends Iterator[ColumnarBatch]
    with AutoCloseable
    with Logging {

  private val context = TaskContext.get()
  private val allocator =
    ArrowUtils.rootAllocator.newChildAllocator(s"ember-task-${context.taskAttemptId()}", 0, Long.MaxValue)
  // Per input: an UnsafeRow source (rows, decoded natively) or an Arrow reader exported as a C stream.
  private val rowSources: Seq[AnyRef] = inputs.zip(inputSchemas).map {
    case (InputIterator.Rows(rows), schema) if nativeRowInput =>
      new UnsafeRowSource(rows, schema, batchSize, rowBatchBytes)
    case (InputIterator.ShuffleBlocks(blockRows), _) => new ShuffleBlockSource(blockRows)
    case (InputIterator.BroadcastBlocks(value, shared), _) => new BroadcastBlockSource(value, shared)
    case (InputIterator.Range(slice), _) => slice
    case (InputIterator.Parquet(source), _) => source
    case (InputIterator.CachedBatches(source), _) => source
    case _ => null
  }
  private val readers: Seq[SparkArrowReader] = inputs.zip(inputSchemas).zip(rowSources).map {
    case (_, source) if source != null => null
    case ((in, schema), _) =>
      new SparkArrowReader(in, schema, timeZoneId, batchSize, rowBatchBytes, allocator)
  }
  private val streams: Seq[ArrowArrayStream] = readers.map { r =>
    if (r == null) null
    else {
      val s = ArrowArrayStream.allocateNew(allocator)
      Data.exportArrayStream(allocator, r, s)
      s
    }
  }
  private val consumer = new NativeMemoryConsumer(context.taskMemoryManager())
  private var handle: Long = 0L
  private var current: VectorSchemaRoot = _
  private var pending: ColumnarBatch = _
  private var finished = false
  private var closed = false

  context.addTaskCompletionListener[Unit](_ => close())
  NativeLib.load()
  handle = guarded(
    NativeLib.createPlan(
      planBytes,
      taskSettings.toByteArray,
      streams.map(s => if (s == null) 0L else s.memoryAddress()).toArray,
      rowSources.toArray[AnyRef],
      consumer
    )
  )

  /**
   * What only the executor knows, beside the driver's plan bytes (never parsed here): spill files go to this
   * executor's Spark local dirs; the task's ids for the native log; the partition index its
   * nondeterministic expressions start from.
   */
  private def taskSettings: proto.TaskSettings = {
    val dirs = SparkEnv.get.blockManager.diskBlockManager.localDirs.map(_.getAbsolutePath)
    proto.TaskSettings
      .newBuilder()
      .addAllSpillDirs(dirs.toSeq.asJava)
      .setStageId(context.stageId())
      .setPartitionId(context.partitionId())
      .setTaskAttemptId(context.taskAttemptId())
      .setPartitionIndex(partitionIndex)
      .build()
  }

  /** Native errors → Spark's own exceptions; a failure of a Spark child → that failure itself. */
  private def guarded[T](f: => T): T =
    try f
    catch {
      case e: EmberSparkError => throw EmberErrors.toSparkException(e, queryContexts.get)
      case _: EmberNativeException if JvmExpressions.hasFailure =>
        throw JvmExpressions.takeFailure().get
      case e: EmberNativeException =>
        (readers.filter(_ != null).map(_.failure) ++ rowSources.collect { case s: NativeInputSource =>
          s.failure
        })
          .find(_ != null) match {
          case Some(childFailure) => throw childFailure
          case None => throw e
        }
    }

  override def hasNext: Boolean = {
    if (pending != null) return true
    if (finished) return false
    releaseCurrent()
    val array = ArrowArray.allocateNew(allocator)
    val schema = ArrowSchema.allocateNew(allocator)
    val rows =
      try guarded(NativeLib.nextBatch(handle, array.memoryAddress(), schema.memoryAddress()))
      catch {
        case t: Throwable =>
          array.close()
          schema.close()
          throw t
      }
    if (rows < 0) {
      // The C structs go back to the allocator before close() checks it for leaks.
      array.close()
      schema.close()
      finished = true
      close()
      false
    } else {
      try {
        current = Data.importVectorSchemaRoot(allocator, array, schema, null)
        val columns: Array[ColumnVector] =
          EmberColumnVectors.of(current.getFieldVectors.asScala.toSeq, outputTypes)
        pending = new ColumnarBatch(columns, rows.toInt)
        true
      } finally {
        array.close()
        schema.close()
      }
    }
  }

  /**
   * Instead of [[next]]: writes the next batch as Spark `UnsafeRow`s, each preceded by its size (a little-endian
   * long), into `buffer`; returns the bytes written, -1 at the end, or (buffer too small) minus the size needed,
   * the rows then waiting for the next call. Use one or the other for a plan, not both.
   */
  def nextRowsInto(buffer: Array[Byte]): Long = {
    if (finished) return -1L
    val n = guarded(NativeLib.nextRowsInto(handle, buffer))
    if (n == -1L) {
      finished = true
      close()
    }
    n
  }

  override def next(): ColumnarBatch = {
    if (!hasNext) throw new NoSuchElementException("end of native output")
    val b = pending
    pending = null
    b
  }

  private def releaseCurrent(): Unit = {
    if (current != null) {
      current.close()
      current = null
    }
  }

  private def reportMetrics(): Unit = {
    val plan = proto.PlanMetrics.parseFrom(NativeLib.metrics(handle))
    for (op <- plan.getOperatorsList.asScala if op.getId >= 0 && op.getId < metrics.size) {
      val m = metrics(op.getId)
      m("numOutputRows").add(op.getOutputRows)
      m("elapsedCompute").add(op.getElapsedComputeNs)
      m("spillCount").add(op.getSpillCount)
      m("spilledBytes").add(op.getSpilledBytes)
      m("spilledRows").add(op.getSpilledRows)
      for (v <- op.getValuesList.asScala) m.get(v.getName).foreach(_.add(v.getValue))
    }
    if (metrics.nonEmpty) metrics.head("peakMemory").add(plan.getPeakReservedBytes)
  }

  override def close(): Unit = if (!closed) {
    closed = true
    pending = null
    releaseCurrent()
    if (handle != 0L) {
      try reportMetrics()
      catch { case e: Throwable => logWarning(s"Ember: could not read native metrics: ${e.getMessage}") }
      NativeLib.closePlan(handle)
      handle = 0L
    }
    streams
      .filter(_ != null)
      .foreach(s =>
        try s.close()
        catch { case _: Throwable => }
      )
    readers
      .filter(_ != null)
      .foreach(r =>
        try r.close()
        catch { case _: Throwable => }
      )
    val leaked = consumer.releaseAll()
    if (leaked != 0) logError(s"Ember: native plan still held $leaked bytes after closing")
    try allocator.close()
    catch {
      case e: IllegalStateException =>
        NativePlanIterator.arrowLeaks.incrementAndGet()
        logError(s"Ember: Arrow buffers leaked: ${e.getMessage}")
    }
  }
}

object NativePlanIterator {

  /** Tasks whose Arrow allocator still held buffers at close (a bug; tests assert 0). */
  val arrowLeaks = new java.util.concurrent.atomic.AtomicLong(0)
}
