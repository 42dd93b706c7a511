package org.apache.spark.sql.ember.execution

import scala.jdk.CollectionConverters._

import org.apache.arrow.c.{ArrowArray, ArrowArrayStream, ArrowSchema, Data}
import org.apache.arrow.vector.VectorSchemaRoot
import org.apache.spark.{QueryContext, SparkEnv, TaskContext}
import org.apache.spark.internal.Logging
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.ember.EmberErrors
import org.apache.spark.sql.ember.memory.NativeMemoryConsumer
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.ArrowUtils
import org.apache.spark.sql.vectorized.{ArrowColumnVector, ColumnarBatch, ColumnVector}
import org.apache.spark.unsafe.Platform
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
    queryContexts: Map[Int, QueryContext]
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
    case (InputIterator.BroadcastBlocks(blocks), _) => new BroadcastBlockSource(blocks)
    case (InputIterator.Range(slice), _) => slice
    case (InputIterator.Parquet(source), _) => source
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
   * executor's Spark local dirs; the task's ids for the native log.
   */
  private def taskSettings: proto.TaskSettings = {
    val dirs = SparkEnv.get.blockManager.diskBlockManager.localDirs.map(_.getAbsolutePath)
    proto.TaskSettings
      .newBuilder()
      .addAllSpillDirs(dirs.toSeq.asJava)
      .setStageId(context.stageId())
      .setPartitionId(context.partitionId())
      .setTaskAttemptId(context.taskAttemptId())
      .build()
  }

  /** Native errors → Spark's own exceptions; a failure of a Spark child → that failure itself. */
  private def guarded[T](f: => T): T =
    try f
    catch {
      case e: EmberSparkError => throw EmberErrors.toSparkException(e, queryContexts.get)
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
          current.getFieldVectors.asScala.map(v => new ArrowColumnVector(v): ColumnVector).toArray
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

/**
 * A native plan's output as `UnsafeRow`s pointing into one byte array on the JVM heap, reused from batch to
 * batch ([[NativePlanIterator.nextRowsInto]], about `maxBytes` of rows per call) and grown when a batch needs
 * more. One row object, re-pointed for
 * every row, as Spark's own `ColumnarToRowExec` does; as with Spark's, a consumer that keeps a row past the next
 * one copies it (the next batch overwrites the bytes).
 */
class NativeRowIterator(plan: NativePlanIterator, numFields: Int, numOutputRows: SQLMetric, maxBytes: Long)
    extends Iterator[InternalRow] {
  private val row = new UnsafeRow(numFields)
  private val initialBytes = 1 << 20
  private var buffer = new Array[Byte](initialBytes)
  private var filled = 0
  private var position = 0
  private var done = false

  override def hasNext: Boolean = {
    while (!done && position >= filled) {
      // The native side writes about maxBytes per call (a bigger row alone): a buffer grown well past that
      // for one huge row is dropped once its rows are read.
      if (filled > 0 && buffer.length > initialBytes && buffer.length > 2 * maxBytes) {
        buffer = new Array[Byte](initialBytes)
      }
      position = 0
      filled = 0
      val n = plan.nextRowsInto(buffer)
      if (n == -1L) done = true
      else if (n < 0) buffer = new Array[Byte](math.min(Int.MaxValue - 16L, -n + (-n >> 2)).toInt)
      else filled = n.toInt
    }
    !done
  }

  override def next(): InternalRow = {
    if (!hasNext) throw new NoSuchElementException("end of native output")
    val at = Platform.BYTE_ARRAY_OFFSET + position
    val size = Platform.getLong(buffer, at).toInt
    row.pointTo(buffer, at + 8, size)
    position += 8 + size
    numOutputRows += 1
    row
  }
}

/**
 * A Spark child's rows for a native plan: `nextRows` packs up to `batchSize` of them as `UnsafeRow` bytes, each
 * preceded by its size (a little-endian long), for the native side to decode into Arrow (called from native
 * code, on the task thread), and stops taking rows once it holds `maxBytes` (`spark.ember.rowBatch.maxBytes`):
 * a call packs at least one row, so it holds at most `maxBytes` plus one row. Rows that are not `UnsafeRow`s
 * are projected to one first. A failure of the child is kept, so the task fails with the child's own exception.
 */
class UnsafeRowSource(rows: Iterator[InternalRow], schema: StructType, batchSize: Int, maxBytes: Long)
    extends NativeByteSource("rows of one batch", maxBytes) {
  private lazy val toUnsafe = UnsafeProjection.create(schema)

  override protected def fill(): Unit = {
    var n = 0
    while (n < batchSize && filled < maxBytes && rows.hasNext) {
      val row = rows.next() match {
        case u: UnsafeRow => u
        case other => toUnsafe(other)
      }
      val at = reserve(row.getSizeInBytes)
      row.writeToMemory(bytes, at)
      n += 1
    }
  }
}

/**
 * A broadcast's Arrow IPC blocks for a native plan (the build side of a broadcast join): `nextRows` packs the
 * next blocks, each preceded by its size, up to about `targetBytes` per call, as [[ShuffleBlockSource]] does;
 * the native side decodes them (`operators/shuffle_reader.rs`).
 */
class BroadcastBlockSource(blocks: Array[Array[Byte]], targetBytes: Int = 4 << 20)
    extends NativeByteSource("broadcast blocks of one call", targetBytes) {
  private var next = 0

  override protected def fill(): Unit =
    while (filled < targetBytes && next < blocks.length) {
      val block = blocks(next)
      next += 1
      val at = reserve(block.length)
      Platform.copyMemory(block, Platform.BYTE_ARRAY_OFFSET, bytes, at, block.length)
    }
}

/**
 * An input object the native side calls back on the task thread. Each call first fails if the task was killed;
 * a failure (the kill, or the Spark child's own exception) is kept, so the task fails with Spark's exception
 * rather than the native side's report of it.
 */
abstract class NativeInputSource {
  @volatile var failure: Throwable = _
  private val context = TaskContext.get()

  /**
   * Throws when the task was killed: the engine calls it before every batch of an input it generates or reads
   * itself (a range, Parquet files), where nothing else calls back into the JVM.
   */
  final def checkKilled(): Unit = call(())

  protected final def call[T](f: => T): T =
    try {
      if (context != null) context.killTaskIfInterrupted()
      f
    } catch {
      case t: Throwable =>
        failure = t
        throw t
    }
}

/**
 * An input the native side pulls as byte buffers (`nextRows`, -1 at the end, then `packed`): records packed one
 * after the other, each preceded by its size (a little-endian long), in one buffer reused and grown as needed.
 * A subclass stops packing at about `maxBytes` per call; a buffer grown well past that (by a record larger than
 * `maxBytes`) is dropped at the next call, so one huge record does not hold its memory for the rest of the task.
 */
abstract class NativeByteSource(records: String, maxBytes: Long) extends NativeInputSource {
  private val initialBytes = 1 << 16
  private var buffer = new Array[Byte](initialBytes)
  private var length = 0

  /** Appends this call's records (at least one unless the input is exhausted) with [[reserve]]. */
  protected def fill(): Unit

  /** Bytes packed so far in this call. */
  protected def filled: Int = length

  /** The buffer to write a reserved record into (it may change at every [[reserve]]). */
  protected def bytes: Array[Byte] = buffer

  /** Room for a record of `size` bytes after its size word; returns where in [[bytes]] to write it. */
  protected final def reserve(size: Int): Long = {
    if (length + 8L + size > buffer.length) {
      val grown = math.max(buffer.length.toLong * 2, length + 8L + size)
      if (grown > Int.MaxValue - 16) throw new IllegalStateException(s"$records exceed 2 GiB")
      buffer = java.util.Arrays.copyOf(buffer, grown.toInt)
    }
    Platform.putLong(buffer, Platform.BYTE_ARRAY_OFFSET + length, size.toLong)
    val at = Platform.BYTE_ARRAY_OFFSET + length + 8L
    length += 8 + size
    at
  }

  /**
   * Packs the next records; returns how many bytes of [[packed]] hold them (until the next call), -1 at the end.
   * The native side copies them out of the buffer, which is reused from call to call.
   */
  final def nextRows(): Int = call {
    length = 0
    // Doubling keeps an ordinary call's buffer under 2 * maxBytes (plus one record); past that, start over.
    if (buffer.length > initialBytes && buffer.length > 2 * maxBytes) buffer = new Array[Byte](initialBytes)
    fill()
    if (length == 0) -1 else length
  }

  /** The buffer [[nextRows]] packed its records into. */
  final def packed: Array[Byte] = buffer
}
