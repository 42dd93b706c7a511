package org.apache.spark.sql.ember.execution

import scala.collection.mutable.ArrayBuffer
import scala.reflect.ClassTag
import scala.jdk.CollectionConverters._

import org.apache.spark.SparkContext
import org.apache.spark.broadcast.Broadcast
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, NamedExpression, SortOrder}
import org.apache.spark.sql.catalyst.plans.physical._
import org.apache.spark.sql.ember.serde.{FilterSerde, ProjectSerde, QueryContexts, SubqueryValue, TypeSerde}
import org.apache.spark.sql.execution.{
  FileSourceScanExec,
  FilterExec,
  OrderPreservingUnaryExecNode,
  PartitioningPreservingUnaryExecNode,
  ProjectExec,
  RangeExec,
  SparkPlan,
  UnaryExecNode,
  WholeStageCodegenExec
}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.vectorized.ColumnarBatch
import org.ember.EmberConf
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
    "parquetRowGroupsPruned" -> SQLMetrics.createMetric(
      sparkContext,
      "Parquet row groups skipped by statistics"
    )
  )
  override def simpleString(maxFields: Int): String = child match {
    case scan: FileSourceScanExec =>
      NativeParquetScan.unsupported(scan) match {
        case None => s"$nodeName (Parquet read natively)"
        case Some(why) => s"$nodeName (file scan read by Spark: $why)"
      }
    case _ => nodeName
  }
  override protected def withNewChildInternal(newChild: SparkPlan): EmberInputExec = copy(child = newChild)
}

case class EmberFilterExec(condition: Expression, child: SparkPlan, nativeOperator: proto.Operator)
    extends UnaryExecNode
    with EmberExec {
  override def output: Seq[Attribute] = child.output
  override def outputPartitioning: Partitioning = child.outputPartitioning
  override def outputOrdering: Seq[SortOrder] = child.outputOrdering
  override def simpleString(maxFields: Int): String = s"EmberFilterExec $condition"
  override def boundOperator: proto.Operator =
    FilterSerde.convert(FilterExec(condition, child)).fold(r => throw new IllegalStateException(r), identity)
  override protected def withNewChildInternal(newChild: SparkPlan): EmberFilterExec = copy(child = newChild)
}

/**
 * Output partitioning and ordering are re-expressed through the projection's aliases, as Spark's `ProjectExec`
 * does: passing the child's through unchanged would name columns that no longer exist and could let
 * `EnsureRequirements` skip a shuffle that is needed.
 */
case class EmberProjectExec(
    projectList: Seq[NamedExpression],
    child: SparkPlan,
    nativeOperator: proto.Operator
) extends UnaryExecNode
    with PartitioningPreservingUnaryExecNode
    with OrderPreservingUnaryExecNode
    with EmberExec {
  override def output: Seq[Attribute] = projectList.map(_.toAttribute)
  override protected def outputExpressions: Seq[NamedExpression] = projectList
  override protected def orderingExpressions: Seq[SortOrder] = child.outputOrdering
  override def simpleString(maxFields: Int): String =
    s"EmberProjectExec ${projectList.mkString("[", ", ", "]")}"
  override def boundOperator: proto.Operator =
    ProjectSerde
      .convert(ProjectExec(projectList, child))
      .fold(r => throw new IllegalStateException(r), identity)
  override protected def withNewChildInternal(newChild: SparkPlan): EmberProjectExec = copy(child = newChild)
}

case class EmberSortExec(
    sortOrder: Seq[SortOrder],
    global: Boolean,
    child: SparkPlan,
    nativeOperator: proto.Operator
) extends UnaryExecNode
    with EmberExec {
  override def output: Seq[Attribute] = child.output
  override def outputOrdering: Seq[SortOrder] = sortOrder
  override def outputPartitioning: Partitioning = child.outputPartitioning
  override def requiredChildDistribution: Seq[Distribution] =
    if (global) OrderedDistribution(sortOrder) :: Nil else UnspecifiedDistribution :: Nil
  override def simpleString(maxFields: Int): String =
    s"EmberSortExec ${sortOrder.mkString("[", ", ", "]")}, global=$global"
  override protected def withNewChildInternal(newChild: SparkPlan): EmberSortExec = copy(child = newChild)

  /** Named as the native radix sort's counters. */
  override protected def operatorMetrics: Map[String, SQLMetric] = Map(
    "packed_sort_rows" -> SQLMetrics.createMetric(sparkContext, "rows sorted by packed-key radix sort"),
    "sort_fallbacks" -> SQLMetrics.createMetric(
      sparkContext,
      "sorts handed to the merge sort (memory, key width)"
    )
  )
}

case class EmberLocalLimitExec(limit: Int, child: SparkPlan, nativeOperator: proto.Operator)
    extends UnaryExecNode
    with EmberExec {
  override def output: Seq[Attribute] = child.output
  override def outputPartitioning: Partitioning = child.outputPartitioning
  override def outputOrdering: Seq[SortOrder] = child.outputOrdering
  override def simpleString(maxFields: Int): String = s"EmberLocalLimitExec $limit"
  override protected def withNewChildInternal(newChild: SparkPlan): EmberLocalLimitExec =
    copy(child = newChild)
}

case class EmberGlobalLimitExec(limit: Int, offset: Int, child: SparkPlan, nativeOperator: proto.Operator)
    extends UnaryExecNode
    with EmberExec {
  override def output: Seq[Attribute] = child.output
  override def requiredChildDistribution: List[Distribution] = AllTuples :: Nil
  override def outputPartitioning: Partitioning = child.outputPartitioning
  override def outputOrdering: Seq[SortOrder] = child.outputOrdering
  override def simpleString(maxFields: Int): String = s"EmberGlobalLimitExec $limit, offset=$offset"
  override protected def withNewChildInternal(newChild: SparkPlan): EmberGlobalLimitExec =
    copy(child = newChild)
}

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
          (
            Left(
              NativeParquetScan.rdd(scan, in.metrics("parquetSplits"), in.metrics("parquetRowGroupsPruned"))
            ),
            proto.InputKind.INPUT_KIND_PARQUET
          )
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
    def taskInputs(fromRdds: Seq[InputIterator]): Seq[InputIterator] = {
      val it = fromRdds.iterator
      broadcasts.map {
        case Some(bc) => InputIterator.BroadcastBlocks(bc.value.blocks)
        case None => it.next()
      }
    }
    val planBytes = withInputKinds(built.plan, kinds).toByteArray
    def start(inputs: Seq[InputIterator]): Iterator[T] =
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
          queryContexts
        )
      )
    rdds match {
      case Seq(one) => one.mapPartitionsInternal(it => start(taskInputs(Seq(it.next()))))
      case Seq(a, b) => a.zipPartitions(b)((x, y) => start(taskInputs(Seq(x.next(), y.next()))))
      case other =>
        throw new IllegalStateException(s"native plans reading ${other.size} RDD inputs are not supported")
    }
  }
}
