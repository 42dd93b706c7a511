package org.apache.spark.sql.ember.execution

import java.nio.ByteBuffer

import scala.jdk.CollectionConverters._

import org.apache.arrow.c.{ArrowArray, ArrowSchema, Data}
import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.VectorSchemaRoot
import org.apache.arrow.vector.types.pojo.Schema
import org.apache.spark.{SparkEnv, TaskContext}
import org.apache.spark.sql.catalyst.expressions.{BoundReference, Expression, UnsafeProjection}
import org.apache.spark.sql.execution.arrow.ArrowWriter
import org.apache.spark.sql.types.{BinaryType, DataType, StringType, StructField, StructType}
import org.apache.spark.sql.util.ArrowUtils
import org.apache.spark.sql.vectorized.{ArrowColumnVector, ColumnarBatch, ColumnVector}

/**
 * The JVM side of the engine's JVM expressions (proto `JvmExpr`, `expressions/jvm.rs`): a deterministic Spark
 * expression the engine has no kernel for, evaluated by Spark's own generated code over a batch of the columns it
 * reads, inside a native operator. Called by the native side on the task's thread, once per batch.
 */
object JvmExpressions {

  /** A deserialized expression and its projection (one per thread: generated projections are not thread-safe). */
  private final class Compiled(val expr: Expression) {
    val projection: UnsafeProjection = UnsafeProjection.create(Seq(expr))

    /** The Spark type of each input column the expression reads, by ordinal (a string may come as binary). */
    val inputTypes: Map[Int, DataType] = expr.collect { case b: BoundReference =>
      b.ordinal -> b.dataType
    }.toMap

    private def schema(t: DataType): Schema =
      ArrowUtils.toArrowSchema(StructType(Seq(StructField("c0", t, expr.nullable))), "UTC", true, false)
    val arrowSchema: Schema = schema(expr.dataType)

    /**
     * The result with a string written as binary, for a plan carrying strings as bytes: Spark's bytes as they
     * are, valid UTF-8 or not (the unsafe row's string field reads as its bytes).
     */
    lazy val bytesSchema: Schema = schema(expr.dataType match {
      case _: StringType => BinaryType
      case t => t
    })
  }

  /**
   * The expressions a task compiled on this thread, by their serialized bytes (a task's plan has a few). Per task,
   * as Spark deserializes a plan's expressions per task: what an expression reads from the session's conf when it
   * first runs (a datetime formatter's parser policy) is the conf of the query the task belongs to.
   */
  private final class TaskCompiled(val taskAttemptId: Long)
      extends java.util.LinkedHashMap[ByteBuffer, Compiled](16, 0.75f, true) {
    override def removeEldestEntry(e: java.util.Map.Entry[ByteBuffer, Compiled]): Boolean = size() > 32
  }

  private val compiled = new ThreadLocal[TaskCompiled]

  private def currentTask: Long = Option(TaskContext.get()).map(_.taskAttemptId()).getOrElse(-1L)

  /** A failure of Spark's code, kept for the task to rethrow as it is once the native call has returned. */
  private val failure = new ThreadLocal[Throwable]

  def hasFailure: Boolean = failure.get() != null

  /** The failure of the last call on this thread, if any, cleared. */
  def takeFailure(): Option[Throwable] = {
    val f = Option(failure.get())
    failure.remove()
    f
  }

  private lazy val allocator: BufferAllocator =
    ArrowUtils.rootAllocator.newChildAllocator("ember-jvm-expressions", 0, Long.MaxValue)

  private def compile(bytes: Array[Byte]): Compiled = {
    val task = currentTask
    var cache = compiled.get()
    if (cache == null || cache.taskAttemptId != task) {
      cache = new TaskCompiled(task)
      compiled.set(cache)
    }
    val key = ByteBuffer.wrap(bytes)
    var c = cache.get(key)
    if (c == null) {
      val expr = SparkEnv.get.closureSerializer
        .newInstance()
        .deserialize[Expression](ByteBuffer.wrap(bytes), Thread.currentThread().getContextClassLoader)
      c = new Compiled(expr)
      cache.put(key, c)
    }
    c
  }

  /**
   * Evaluates `expression` (Java-serialized, bound to the input's columns) over the struct array at
   * `inArray`/`inSchema` and exports one struct array of one column into `outArray`/`outSchema`, a string
   * result as binary when `stringsAsBytes`. String columns may come as binary. False when Spark's code failed:
   * the failure waits in [[takeFailure]].
   */
  def evaluate(
      expression: Array[Byte],
      inArray: Long,
      inSchema: Long,
      outArray: Long,
      outSchema: Long,
      stringsAsBytes: Boolean
  ): Boolean =
    try {
      val c = compile(expression)
      val in =
        Data.importVectorSchemaRoot(allocator, ArrowArray.wrap(inArray), ArrowSchema.wrap(inSchema), null)
      try {
        val columns: Array[ColumnVector] = in.getFieldVectors.asScala.zipWithIndex.map { case (v, i) =>
          c.inputTypes.get(i).fold(new ArrowColumnVector(v): ColumnVector)(t => EmberColumnVectors.of(v, t))
        }.toArray
        val batch = new ColumnarBatch(columns, in.getRowCount)
        val out = VectorSchemaRoot.create(if (stringsAsBytes) c.bytesSchema else c.arrowSchema, allocator)
        try {
          val writer = ArrowWriter.create(out)
          val rows = batch.rowIterator()
          while (rows.hasNext) writer.write(c.projection(rows.next()))
          writer.finish()
          Data.exportVectorSchemaRoot(
            allocator,
            out,
            null,
            ArrowArray.wrap(outArray),
            ArrowSchema.wrap(outSchema)
          )
        } finally out.close()
      } finally in.close()
      true
    } catch {
      case t: Throwable =>
        failure.set(t)
        false
    }
}
