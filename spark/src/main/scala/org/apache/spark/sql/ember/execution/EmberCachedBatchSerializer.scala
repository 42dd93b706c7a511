package org.apache.spark.sql.ember.execution

import java.io.{ByteArrayInputStream, ByteArrayOutputStream}
import java.nio.channels.Channels

import scala.jdk.CollectionConverters._

import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.{FieldVector, VectorSchemaRoot}
import org.apache.arrow.vector.compression.CompressionUtil
import org.apache.arrow.vector.dictionary.DictionaryProvider
import org.apache.arrow.vector.ipc.{ArrowStreamReader, ArrowStreamWriter}
import org.apache.arrow.vector.ipc.message.IpcOption
import org.apache.spark.TaskContext
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, UnsafeProjection}
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.catalyst.util.TypeUtils
import org.apache.spark.sql.columnar.{
  CachedBatch,
  SimpleMetricsCachedBatch,
  SimpleMetricsCachedBatchSerializer
}
import org.apache.spark.sql.ember.serde.TypeSerde
import org.apache.spark.sql.execution.arrow.ArrowWriter
import org.apache.spark.sql.execution.columnar.DefaultCachedBatchSerializer
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types._
import org.apache.spark.sql.util.ArrowUtils
import org.apache.spark.sql.vectorized.{ArrowColumnVector, ColumnarBatch, ColumnVector}
import org.apache.spark.storage.StorageLevel

/**
 * A cached batch of Ember's cache: each column one Arrow IPC stream (one record batch, its buffers LZ4-framed when
 * `spark.sql.inMemoryColumnarStorage.compressed`), so a scan decodes only the columns it selects, natively or in
 * the JVM. `stats` are Spark's per-column statistics (lower and upper
 * bound, null count, row count, bytes) that Spark's batch pruning reads.
 */
final case class EmberCachedBatch(numRows: Int, columns: Array[Array[Byte]], stats: InternalRow)
    extends SimpleMetricsCachedBatch

/**
 * `spark.sql.cache.serializer` of Ember (installed by the plugin, `spark.ember.cache.enabled`): a cached table
 * whose columns are all of types the engine reads is kept as Arrow, which native operators read with no row
 * round trip ([[CachedBatchSource]]) and Spark's reads as Arrow-backed columnar batches. Any other schema is
 * cached by Spark's own serializer, unchanged.
 */
class EmberCachedBatchSerializer extends SimpleMetricsCachedBatchSerializer {
  private val spark = new DefaultCachedBatchSerializer

  override def supportsColumnarInput(schema: Seq[Attribute]): Boolean =
    EmberCachedBatchSerializer.arrow(schema) || spark.supportsColumnarInput(schema)

  override def supportsColumnarOutput(schema: StructType): Boolean =
    EmberCachedBatchSerializer.arrow(schema) || spark.supportsColumnarOutput(schema)

  override def vectorTypes(attributes: Seq[Attribute], conf: SQLConf): Option[Seq[String]] =
    if (EmberCachedBatchSerializer.arrow(attributes))
      Some(attributes.map(_ => classOf[ArrowColumnVector].getName))
    else spark.vectorTypes(attributes, conf)

  override def convertInternalRowToCachedBatch(
      input: RDD[InternalRow],
      schema: Seq[Attribute],
      storageLevel: StorageLevel,
      conf: SQLConf
  ): RDD[CachedBatch] =
    if (!EmberCachedBatchSerializer.arrow(schema)) {
      spark.convertInternalRowToCachedBatch(input, schema, storageLevel, conf)
    } else {
      encoded(input, schema, conf, "rows") { (encoder, batchSize, rows) =>
        val writer = ArrowWriter.create(encoder.root)
        new Iterator[CachedBatch] {
          override def hasNext: Boolean = rows.hasNext
          override def next(): CachedBatch = {
            encoder.root.clear()
            encoder.root.allocateNew()
            writer.reset()
            var n = 0
            while (n < batchSize && rows.hasNext) {
              writer.write(rows.next())
              n += 1
            }
            writer.finish()
            encoder.encode()
          }
        }
      }
    }

  override def convertColumnarBatchToCachedBatch(
      input: RDD[ColumnarBatch],
      schema: Seq[Attribute],
      storageLevel: StorageLevel,
      conf: SQLConf
  ): RDD[CachedBatch] =
    if (!EmberCachedBatchSerializer.arrow(schema)) {
      spark.convertColumnarBatchToCachedBatch(input, schema, storageLevel, conf)
    } else {
      encoded(input, schema, conf, "batches") { (encoder, batchSize, batches) =>
        batches.flatMap { batch =>
          // Copied before the next batch is pulled (a native plan's batch is released then).
          encoder.root.clear()
          val vectors = encoder.root.getFieldVectors
          var c = 0
          while (c < vectors.size()) {
            ColumnarToArrow.copy(batch.column(c), vectors.get(c), batch.numRows())
            c += 1
          }
          encoder.root.setRowCount(batch.numRows())
          encoder.encodeSliced(batchSize)
        }
      }
    }

  /** Each partition of `input` encoded with an encoder of its own, given the batch size Spark caches with. */
  private def encoded[T](input: RDD[T], schema: Seq[Attribute], conf: SQLConf, what: String)(
      encode: (CachedBatchEncoder, Int, Iterator[T]) => Iterator[CachedBatch]
  ): RDD[CachedBatch] = {
    val structType = DataTypeUtils.fromAttributes(schema)
    val (tz, batchSize, compress) = (conf.sessionLocalTimeZone, conf.columnBatchSize, conf.useCompression)
    input.mapPartitionsInternal { it =>
      encode(new CachedBatchEncoder(structType, tz, compress, what), batchSize, it)
    }
  }

  override def convertCachedBatchToColumnarBatch(
      input: RDD[CachedBatch],
      cacheAttributes: Seq[Attribute],
      selectedAttributes: Seq[Attribute],
      conf: SQLConf
  ): RDD[ColumnarBatch] =
    if (!EmberCachedBatchSerializer.arrow(cacheAttributes)) {
      spark.convertCachedBatchToColumnarBatch(input, cacheAttributes, selectedAttributes, conf)
    } else {
      val columns = EmberCachedBatchSerializer.columnIndices(cacheAttributes, selectedAttributes)
      input.mapPartitionsInternal(batches => new CachedBatchDecoder(batches, columns))
    }

  override def convertCachedBatchToInternalRow(
      input: RDD[CachedBatch],
      cacheAttributes: Seq[Attribute],
      selectedAttributes: Seq[Attribute],
      conf: SQLConf
  ): RDD[InternalRow] =
    if (!EmberCachedBatchSerializer.arrow(cacheAttributes)) {
      spark.convertCachedBatchToInternalRow(input, cacheAttributes, selectedAttributes, conf)
    } else {
      val columns = EmberCachedBatchSerializer.columnIndices(cacheAttributes, selectedAttributes)
      input.mapPartitionsInternal { batches =>
        val toUnsafe = UnsafeProjection.create(selectedAttributes, selectedAttributes)
        new CachedBatchDecoder(batches, columns).flatMap(_.rowIterator().asScala.map(toUnsafe))
      }
    }
}

object EmberCachedBatchSerializer {

  /** Whether a schema is cached as Arrow: every column of a type the engine reads (and at least one column). */
  def arrow(schema: Seq[Attribute]): Boolean = arrowTypes(schema.map(_.dataType))

  def arrow(schema: StructType): Boolean = arrowTypes(schema.fields.toSeq.map(_.dataType))

  private def arrowTypes(types: Seq[DataType]): Boolean = types.nonEmpty && types.forall(TypeSerde.supported)

  /** Where each selected attribute is among the cached ones. */
  def columnIndices(cache: Seq[Attribute], selected: Seq[Attribute]): Array[Int] =
    selected.map { a =>
      val i = cache.indexWhere(_.exprId == a.exprId)
      if (i < 0) throw new IllegalStateException(s"column ${a.name} is not in the cached table")
      i
    }.toArray
}

/**
 * Encodes the batch in `root` (one per task, refilled per batch) into an [[EmberCachedBatch]]: one IPC stream per
 * column, and Spark's statistics for batch pruning.
 */
private class CachedBatchEncoder(schema: StructType, timeZoneId: String, compress: Boolean, what: String) {
  private val allocator: BufferAllocator = {
    val context = TaskContext.get()
    val a = ArrowUtils.rootAllocator.newChildAllocator(s"ember-cache-write-$what", 0, Long.MaxValue)
    if (context != null) context.addTaskCompletionListener[Unit] { _ => root.close(); a.close() }
    a
  }
  val root: VectorSchemaRoot = VectorSchemaRoot.create(
    ArrowUtils.toArrowSchema(SparkArrowReader.positional(schema), timeZoneId, true, false),
    allocator
  )
  private val stats = schema.fields.map(f => new ColumnBounds(f.dataType))

  /** The batch in `root` as one cached batch. */
  def encode(): EmberCachedBatch = encode(root.getFieldVectors.asScala.toSeq, root.getRowCount)

  /** The batch in `root` as cached batches of at most `batchSize` rows (a columnar child's batches can be larger). */
  def encodeSliced(batchSize: Int): Iterator[EmberCachedBatch] = {
    val n = root.getRowCount
    if (n <= batchSize) Iterator.single(encode())
    else {
      (0 until n by batchSize).iterator.map { from =>
        val rows = math.min(batchSize, n - from)
        val slices = root.getFieldVectors.asScala.toSeq.map { v =>
          val t = v.getTransferPair(allocator)
          t.splitAndTransfer(from, rows)
          t.getTo.asInstanceOf[FieldVector]
        }
        try encode(slices, rows)
        finally slices.foreach(_.close())
      }
    }
  }

  private def encode(vectors: Seq[FieldVector], n: Int): EmberCachedBatch = {
    val columns = vectors.map { vector =>
      val single =
        new VectorSchemaRoot(java.util.List.of(vector.getField), java.util.List.of[FieldVector](vector), n)
      val out = new ByteArrayOutputStream()
      val writer = new ArrowStreamWriter(
        single,
        new DictionaryProvider.MapDictionaryProvider(),
        Channels.newChannel(out),
        IpcOption.DEFAULT,
        Lz4FrameCodec.Factory,
        if (compress) CompressionUtil.CodecType.LZ4_FRAME else CompressionUtil.CodecType.NO_COMPRESSION
      )
      writer.start()
      writer.writeBatch()
      writer.end()
      out.toByteArray
    }.toArray
    val values = vectors.indices.map { c =>
      stats(c).collect(new ArrowColumnVector(vectors(c)), n, columns(c).length.toLong)
    }
    EmberCachedBatch(n, columns, InternalRow.fromSeq(values.flatten))
  }
}

/**
 * One column's statistics as Spark's batch pruning reads them (lower bound, upper bound, null count, row count,
 * bytes): bounds by the type's own ordering — the one the pruned comparisons use — and none for binary columns
 * (which Spark does not prune on) or a column of nulls only.
 */
private class ColumnBounds(dt: DataType) {
  private val ordering: Option[Ordering[Any]] = dt match {
    case BinaryType | NullType => None
    case _ => Some(TypeUtils.getInterpretedOrdering(dt))
  }

  def collect(column: ColumnVector, n: Int, bytes: Long): Array[Any] = {
    var lower: Any = null
    var upper: Any = null
    var nulls = 0
    var i = 0
    while (i < n) {
      if (column.isNullAt(i)) nulls += 1
      else
        ordering.foreach { ord =>
          val v = value(column, i)
          if (lower == null || ord.lt(v, lower)) lower = v
          if (upper == null || ord.gt(v, upper)) upper = v
        }
      i += 1
    }
    // Strings point into the Arrow buffers, which the next batch reuses.
    def own(v: Any): Any = v match {
      case s: org.apache.spark.unsafe.types.UTF8String => s.clone()
      case other => other
    }
    Array(own(lower), own(upper), nulls, n, bytes)
  }

  private def value(c: ColumnVector, i: Int): Any = dt match {
    case BooleanType => c.getBoolean(i)
    case ByteType => c.getByte(i)
    case ShortType => c.getShort(i)
    case IntegerType | DateType => c.getInt(i)
    case LongType | TimestampType | TimestampNTZType => c.getLong(i)
    case FloatType => c.getFloat(i)
    case DoubleType => c.getDouble(i)
    case d: DecimalType => c.getDecimal(i, d.precision, d.scale)
    case _: StringType => c.getUTF8String(i)
    case other => throw new IllegalStateException(s"no bounds for ${other.simpleString}")
  }
}

/**
 * Cached batches → Arrow-backed columnar batches of the selected columns, decoded in the JVM (for Spark's
 * operators). A batch stays valid until the next is asked for; the rest is freed at the end of the task.
 */
private class CachedBatchDecoder(batches: Iterator[CachedBatch], columns: Array[Int])
    extends Iterator[ColumnarBatch] {
  private val context = TaskContext.get()
  private val allocator =
    ArrowUtils.rootAllocator.newChildAllocator("ember-cache-read", 0, Long.MaxValue)
  private var previous: ColumnarBatch = _
  private var closed = false
  if (context != null) context.addTaskCompletionListener[Unit](_ => close())

  override def hasNext: Boolean = {
    release()
    val more = batches.hasNext
    if (!more) close()
    more
  }

  override def next(): ColumnarBatch = {
    release()
    val batch = batches.next().asInstanceOf[EmberCachedBatch]
    val vectors: Array[ColumnVector] = columns.map { c =>
      val reader =
        new ArrowStreamReader(new ByteArrayInputStream(batch.columns(c)), allocator, Lz4FrameCodec.Factory)
      try {
        if (!reader.loadNextBatch()) throw new IllegalStateException("an empty cached column")
        val transfer = reader.getVectorSchemaRoot.getFieldVectors.get(0).getTransferPair(allocator)
        transfer.transfer()
        new ArrowColumnVector(transfer.getTo.asInstanceOf[FieldVector]): ColumnVector
      } finally reader.close()
    }
    previous = new ColumnarBatch(vectors, batch.numRows)
    previous
  }

  private def release(): Unit =
    if (previous != null) {
      previous.close()
      previous = null
    }

  private def close(): Unit = if (!closed) {
    closed = true
    release()
    allocator.close()
  }
}
