package org.apache.spark.sql.ember.execution

import scala.collection.mutable.ArrayBuffer
import scala.reflect.ClassTag
import scala.jdk.CollectionConverters._

import org.apache.spark.TaskContext
import org.apache.spark.broadcast.Broadcast
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.ember.serde.{QueryContexts, SubqueryValue, TypeSerde}
import org.apache.spark.sql.execution.{FileSourceScanExec, RangeExec, WholeStageCodegenExec}
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.vectorized.ColumnarBatch
import org.ember.EmberConf
import org.ember.proto

/** Builds and runs the native plan of the block topped by one [[EmberExec]]. */
object EmberBlock {

  final case class Built(plan: proto.Plan, inputs: Seq[EmberInputExec], nodes: Seq[EmberExec])

  def build(top: EmberExec): Built = {
    val inputs = ArrayBuffer.empty[EmberInputExec]
    val nodes = ArrayBuffer.empty[EmberExec]
    def walk(node: EmberExec): proto.Operator = {
      val id = nodes.size
      nodes += node
      val operator =
        if (!SubqueryValue.has(node)) node.nativeOperator
        else {
          node.awaitSubqueries()
          if (!SubqueryValue.bound(node))
            throw new IllegalStateException(
              s"${node.nodeName}'s scalar subqueries have not run before its plan"
            )
          node.boundOperator
        }
      val b = operator.toBuilder.setId(id)
      node match {
        case in: EmberInputExec =>
          b.setInput(b.getInput.toBuilder.setInputIndex(inputs.size))
          inputs += in
        case _ =>
          node.children.foreach {
            case c: EmberExec => b.addChildren(walk(c))
            case other =>
              throw new IllegalStateException(s"native ${node.nodeName} over non-native ${other.nodeName}")
          }
      }
      node match {
        case j: EmberBroadcastHashJoinExec if j.isNullAwareAntiJoin =>
          // The filter that makes the anti join null-aware (its id matches no node: no metrics of its own).
          j.nullAwareFilter() match {
            case Some(p) =>
              proto.Operator
                .newBuilder()
                .setId(Int.MaxValue)
                .setFilter(proto.Filter.newBuilder().setPredicate(p))
                .addChildren(b.build())
                .build()
            case None => b.build()
          }
        case _ => b.build()
      }
    }
    val root = walk(top)
    val conf = SQLConf.get
    val tz = conf.sessionLocalTimeZone
    // Positional names for the batches that cross back to the JVM (Arrow's struct import rejects null names
    // and would merge duplicate ones); Spark's attributes keep their own names.
    val named = TypeSerde.schema(top.output, tz).fold(r => throw new IllegalStateException(r), identity)
    val output = proto.Schema
      .newBuilder()
      .addAllFields(named.getFieldsList.asScala.zipWithIndex.map { case (f, i) =>
        f.toBuilder.setName(s"c$i").build()
      }.asJava)
      .build()
    val config = execConfig(conf)
    Built(
      proto.Plan.newBuilder().setRoot(root).setConfig(config).setOutputSchema(output).build(),
      inputs.toSeq,
      nodes.toSeq
    )
  }

  /**
   * The session's settings every plan carries (and every support question is asked under): batch size, time
   * zone, spill knobs and the JVM's version, which decides the casts that follow `Double.toString`.
   */
  def execConfig(conf: SQLConf): proto.ExecConfig = proto.ExecConfig
    .newBuilder()
    .setBatchSize(EmberConf.BATCH_SIZE.get(conf).toInt)
    .setSessionTimezone(conf.sessionLocalTimeZone)
    .setSpillCompression(EmberConf.SPILL_COMPRESSION.get(conf))
    .setSortSpillReservationBytes(EmberConf.SORT_SPILL_RESERVATION.get(conf))
    .setRowBatchBytes(math.max(1L, EmberConf.ROW_BATCH_BYTES.get(conf)))
    .setJdkFeature(Runtime.version().feature())
    .setMemoryHeadroomBytes(math.max(0L, EmberConf.MEMORY_HEADROOM.get(conf)))
    .setMemoryFloatBytes(math.max(0L, EmberConf.MEMORY_FLOAT.get(conf)))
    .setStringsAsBytes(EmberConf.STRINGS_AS_BYTES.get(conf))
    .build()

  /** `plan` with `kinds(i)` as the kind of its Input leaf `i`. */
  def withInputKinds(plan: proto.Plan, kinds: Seq[proto.InputKind]): proto.Plan = {
    def set(op: proto.Operator): proto.Operator =
      if (op.hasInput) {
        op.toBuilder.setInput(op.getInput.toBuilder.setKind(kinds(op.getInput.getInputIndex))).build()
      } else {
        val b = op.toBuilder.clearChildren()
        op.getChildrenList.asScala.foreach(c => b.addChildren(set(c)))
        b.build()
      }
    plan.toBuilder.setRoot(set(plan.getRoot)).build()
  }

  def execute(top: EmberExec): RDD[ColumnarBatch] = run(top)(identity)

  /** The block's output as Spark `UnsafeRow`s, written natively (see [[EmberColumnarToRowExec]]). */
  def executeRows(top: EmberExec, numOutputRows: SQLMetric): RDD[InternalRow] = {
    val fields = top.output.size
    val maxBytes = math.max(1L, EmberConf.ROW_BATCH_BYTES.get())
    run(top)(plan => new NativeRowIterator(plan, fields, numOutputRows, maxBytes))
  }

  private def run[T: ClassTag](top: EmberExec)(output: NativePlanIterator => Iterator[T]): RDD[T] = {
    val built = build(top)
    val metrics = built.nodes.map(_.metrics)
    val batchSize = EmberConf.BATCH_SIZE.get().toInt
    val rowBatchBytes = math.max(1L, EmberConf.ROW_BATCH_BYTES.get())
    val nativeRowInput = EmberConf.NATIVE_ROW_TO_COLUMNAR.get()
    val tz = SQLConf.get.sessionLocalTimeZone
    val inputSchemas = built.inputs.map(_.child.schema)
    val outputTypes = top.output.map(_.dataType)
    val queryContexts = QueryContexts.of(built.nodes)
    val nativeRange = EmberConf.EXEC_RANGE.get()
    // Each input's RDD (or, for a broadcast, the broadcast) and how it reaches the native side (the Input
    // leaf's kind, which the bridge follows).
    val (feeds, kinds) = built.inputs.map { in =>
      in.child match {
        case b if EmberBroadcastExchangeExec.of(b).isDefined =>
          (Right(EmberBroadcastExchangeExec.of(b).get.blocks()), proto.InputKind.INPUT_KIND_BROADCAST_BLOCKS)
        case r: RangeExec if nativeRange =>
          (Left(RangeSlices.rdd(r, in.metrics("rangeRows"))), proto.InputKind.INPUT_KIND_RANGE)
        case WholeStageCodegenExec(r: RangeExec) if nativeRange =>
          (Left(RangeSlices.rdd(r, in.metrics("rangeRows"))), proto.InputKind.INPUT_KIND_RANGE)
        case scan: FileSourceScanExec if NativeParquetScan.unsupported(scan).isEmpty =>
          val pruning = in.getTagValue(EmberInputExec.DynamicPruning).toSeq
          (
            Left(NativeParquetScan.rdd(scan, in.parquetScanMetrics, pruning)),
            proto.InputKind.INPUT_KIND_PARQUET
          )
        case c if CachedTableScan.of(c).exists(s => CachedTableScan.unsupported(s).isEmpty) =>
          (Left(CachedTableScan.rdd(CachedTableScan.of(c).get)), proto.InputKind.INPUT_KIND_CACHED_BATCHES)
        case child if child.supportsColumnar =>
          child.executeColumnar() match {
            // Ember's shuffle (under any AQE read, stage or reuse): its blocks, decoded natively.
            case blocks: DecodedBlocksRDD =>
              (
                Left(blocks.blockRows.mapPartitionsInternal(it => Iterator(InputIterator.ShuffleBlocks(it)))),
                proto.InputKind.INPUT_KIND_SHUFFLE_BLOCKS
              )
            case batches =>
              (
                Left(batches.mapPartitionsInternal(it => Iterator(InputIterator.columnar(it)))),
                proto.InputKind.INPUT_KIND_ARROW_STREAM
              )
          }
        case child =>
          (
            Left(child.execute().mapPartitionsInternal(it => Iterator(InputIterator.rows(it)))),
            // NativePlanIterator hands rows over as UnsafeRow bytes exactly when nativeRowInput.
            if (nativeRowInput) proto.InputKind.INPUT_KIND_UNSAFE_ROWS
            else proto.InputKind.INPUT_KIND_ARROW_STREAM
          )
      }
    }.unzip
    val rdds = feeds.collect { case Left(rdd) => rdd }
    // Per input: its broadcast, or None for the next RDD input (only broadcasts go into the task closure).
    val broadcasts: Seq[Option[Broadcast[EmberBroadcastBlocks]]] = feeds.map(_.toOption)
    val sharedBuilds = EmberConf.BROADCAST_SHARED_BUILD.get()
    def taskInputs(fromRdds: Seq[InputIterator]): Seq[InputIterator] = {
      val it = fromRdds.iterator
      broadcasts.map {
        case Some(bc) =>
          InputIterator.BroadcastBlocks(bc.value, if (sharedBuilds) bc.value.sharedBuilds(bc.id) else 0L)
        case None => it.next()
      }
    }
    val planBytes = withInputKinds(built.plan, kinds).toByteArray
    def start(partitionIndex: Int, inputs: Seq[InputIterator]): Iterator[T] =
      output(
        new NativePlanIterator(
          planBytes,
          inputs,
          inputSchemas,
          tz,
          batchSize,
          rowBatchBytes,
          metrics,
          nativeRowInput,
          queryContexts,
          partitionIndex,
          outputTypes
        )
      )
    // The partition index Spark's whole-stage code would start nondeterministic expressions from: the input
    // RDD's, or the task's partition for two zipped inputs.
    rdds match {
      case Seq(one) => one.mapPartitionsWithIndexInternal((i, it) => start(i, taskInputs(Seq(it.next()))))
      case Seq(a, b) =>
        a.zipPartitions(b)((x, y) => start(TaskContext.getPartitionId(), taskInputs(Seq(x.next(), y.next()))))
      case other =>
        throw new IllegalStateException(s"native plans reading ${other.size} RDD inputs are not supported")
    }
  }
}
