package org.apache.spark.sql.ember

import scala.jdk.CollectionConverters._

import org.apache.spark.internal.config.MEMORY_OFFHEAP_ENABLED
import org.apache.spark.sql.catalyst.expressions.{
  Alias,
  AttributeReference,
  Expression,
  ExprId,
  IsNotNull,
  PredicateHelper
}
import org.apache.spark.sql.catalyst.optimizer.{BuildLeft, BuildSide => JoinSide}
import org.apache.spark.sql.catalyst.plans.{Inner, JoinType, LeftOuter, LeftSemi, RightOuter}
import org.apache.spark.sql.catalyst.plans.physical.{HashPartitioning, Partitioning}
import org.apache.spark.sql.ember.execution._
import org.apache.spark.sql.execution.{FileSourceScanExec, FilterExec, SortExec, SparkPlan}
import org.apache.spark.sql.execution.adaptive.{QueryStageExec, ShuffleQueryStageExec}
import org.apache.spark.sql.execution.exchange.{
  BroadcastExchangeLike,
  ENSURE_REQUIREMENTS,
  Exchange,
  ShuffleExchangeExec
}
import org.apache.spark.sql.execution.joins.{ShuffledHashJoinExec, SortMergeJoinExec}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types._
import org.ember.EmberConf
import org.ember.proto

/**
 * Cross-stage dynamic filters (`spark.ember.dynamicFilter.enabled`, adaptive execution only). Before stages are
 * created, for each shuffled equi-join where pruning is exact (inner: the larger side; left semi: the left;
 * outer joins: the side that is not preserved), whose build side is a stage of its own with a filter in it and
 * whose probe side reads Parquet: an [[EmberDynamicFilterExec]] goes under each side's exchange, sharing one
 * [[DynamicFilterLink]]. Converted by Ember, the build side's writer summarizes the join keys per reduce
 * partition; the probe side's map stage waits for their union, its native Parquet scan skips row groups, pages
 * and rows outside the keys' bounds, and its writer drops every row whose key is not among the build keys of the
 * partition it routes the row to. Only ever less reading and shuffling: the join still sees every row that can
 * match.
 */
object DynamicFilterPlanner extends PredicateHelper {

  def apply(plan: SparkPlan): SparkPlan = {
    val conf = SQLConf.get
    // Without off-heap memory Ember converts nothing (EmberExecRule), and unconverted links would only keep
    // exchanges from being reused.
    val offHeap = Option(plan.session).forall(_.sparkContext.conf.get(MEMORY_OFFHEAP_ENABLED))
    if (
      !offHeap || !EmberConf.ENABLED.get(conf) || !EmberConf.DYNAMIC_FILTER_ENABLED.get(conf) ||
      !EmberConf.DYNAMIC_FILTER_ACROSS_STAGES.get(conf)
    ) plan
    else
      plan.transformUp {
        case j: SortMergeJoinExec =>
          link(j, j.joinType, j.leftKeys, j.rightKeys, j.left, j.right).getOrElse(j)
        case j: ShuffledHashJoinExec =>
          link(j, j.joinType, j.leftKeys, j.rightKeys, j.left, j.right).getOrElse(j)
      }
  }

  /** The join with both sides linked, or None where no filter applies. */
  private def link(
      join: SparkPlan,
      joinType: JoinType,
      leftKeys: Seq[Expression],
      rightKeys: Seq[Expression],
      left: SparkPlan,
      right: SparkPlan
  ): Option[SparkPlan] = {
    // Whether the probe side (the one pruned) is the left one; None: pruning would change the answer.
    val probeLeft: Option[Boolean] = joinType match {
      case _ if !leftKeys.forall(k => exactKey(k.dataType)) => None
      case Inner => Some(scanBytes(left) >= scanBytes(right))
      case LeftSemi | RightOuter => Some(true)
      case LeftOuter => Some(false)
      case _ => None
    }
    probeLeft.flatMap { pl =>
      val (probe, build) = if (pl) (left, right) else (right, left)
      val (probeKeys, buildKeys) = if (pl) (leftKeys, rightKeys) else (rightKeys, leftKeys)
      for {
        p <- probeSide(underSort(probe))
        b <- buildSide(underSort(build))
        if samePartitioning(p.outputPartitioning, b.partitioning, probeKeys, buildKeys)
        // The build side must be small, and much smaller than what it filters: summarizing a large side costs
        // more than the filter can save, and the probe side's stage waits for it.
        if b.linked.isDefined || {
          val buildBytes = scanBytes(build)
          buildBytes <= maxBuildBytes(SQLConf.get) && buildBytes * 4 <= scanBytes(probe)
        }
      } yield {
        val theLink = b.linked.getOrElse(DynamicFilterLink.next())
        val newBuild = b.exchange match {
          case Some(e) =>
            replaceUnderSort(
              build,
              e.copy(child = EmberDynamicFilterExec(DynamicFilterRole.Build(theLink), e.child))
            )
          case None => build
        }
        val newProbe = replaceUnderSort(
          probe,
          p.copy(child = EmberDynamicFilterExec(DynamicFilterRole.Probe(theLink), p.child))
        )
        if (pl) join.withNewChildren(Seq(newProbe, newBuild))
        else join.withNewChildren(Seq(newBuild, newProbe))
      }
    }
  }

  /** A sort-merge join's side: its exchange under the sort EnsureRequirements put above it. */
  private def underSort(side: SparkPlan): SparkPlan = side match {
    case s: SortExec if !s.global => s.child
    case other => other
  }

  private def replaceUnderSort(side: SparkPlan, exchange: SparkPlan): SparkPlan = side match {
    case s: SortExec if !s.global => s.withNewChildren(Seq(exchange))
    case _ => exchange
  }

  /** A build side to link: Spark's exchange, or the stage of an Ember exchange linked before. */
  private case class BuildSide(
      exchange: Option[ShuffleExchangeExec],
      linked: Option[DynamicFilterLink],
      partitioning: Partitioning
  )

  /** A probe side: Spark's hash exchange, not linked yet, over a Parquet scan. */
  private def probeSide(side: SparkPlan): Option[ShuffleExchangeExec] = side match {
    case e: ShuffleExchangeExec
        if e.shuffleOrigin == ENSURE_REQUIREMENTS && e.outputPartitioning.isInstanceOf[HashPartitioning] &&
          !e.child
            .isInstanceOf[EmberDynamicFilterExec] && e.child.exists(_.isInstanceOf[FileSourceScanExec]) =>
      Some(e)
    case _ => None
  }

  /**
   * A build side: Spark's hash exchange over a plan with no exchange in it (a stage created with the probe
   * side's or before it) and a filter (so it may be selective); or the stage of an exchange linked before
   * (when adaptive execution re-plans the probe side after the build side ran).
   */
  private def buildSide(side: SparkPlan): Option[BuildSide] = side match {
    case e: ShuffleExchangeExec
        if e.shuffleOrigin == ENSURE_REQUIREMENTS && e.outputPartitioning.isInstanceOf[HashPartitioning] &&
          !e.child.isInstanceOf[EmberDynamicFilterExec] &&
          !e.child.exists(p => p.isInstanceOf[Exchange] || p.isInstanceOf[QueryStageExec]) &&
          e.child.exists {
            case f: FilterExec => selective(Seq(f.condition))
            case s: FileSourceScanExec => selective(s.dataFilters) || selective(s.partitionFilters)
            case _ => false
          } =>
      Some(BuildSide(Some(e), None, e.outputPartitioning))
    case s: ShuffleQueryStageExec =>
      s.shuffle match {
        case e: EmberShuffleExchangeExec =>
          e.dynamicFilter.collect {
            case DynamicFilterRole.Build(l) if l.buildPlanned =>
              BuildSide(None, Some(l), e.outputPartitioning)
          }
        case _ => None
      }
    case _ => None
  }

  /** Whether filters may drop rows other than nulls (Spark adds `IS NOT NULL` on every join key). */
  private def selective(filters: Seq[Expression]): Boolean =
    filters.flatMap(splitConjunctivePredicates).exists(!_.isInstanceOf[IsNotNull])

  /** Both exchanges hash-partition by the join keys, position by position, into as many partitions. */
  private def samePartitioning(
      probe: Partitioning,
      build: Partitioning,
      probeKeys: Seq[Expression],
      buildKeys: Seq[Expression]
  ): Boolean = {
    (probe, build) match {
      case (p: HashPartitioning, b: HashPartitioning) =>
        p.numPartitions == b.numPartitions && p.expressions.length == b.expressions.length &&
        p.expressions.zip(b.expressions).forall { case (pe, be) =>
          probeKeys.indices.exists(k => probeKeys(k).semanticEquals(pe) && buildKeys(k).semanticEquals(be))
        }
      case _ => false
    }
  }

  /** Key types whose equality is their bytes' (the filter compares encoded keys): not floats, no collations. */
  private def exactKey(dt: DataType): Boolean = dt match {
    case BooleanType | ByteType | ShortType | IntegerType | LongType | DateType | TimestampType |
        TimestampNTZType | BinaryType | _: DecimalType =>
      true
    case s: StringType => s.isUTF8BinaryCollation
    case _ => false
  }

  /**
   * What a join side reads: the files of its scans (not those of broadcasts), a finished stage's output. The
   * optimizer's size estimates are no guide here: without cost-based statistics a join's is the product of its
   * sides'.
   */
  private def scanBytes(p: SparkPlan): BigInt = p match {
    case s: FileSourceScanExec => BigInt(s.relation.sizeInBytes)
    case _: BroadcastExchangeLike => 0
    case s: ShuffleQueryStageExec if s.isMaterialized => s.getRuntimeStatistics.sizeInBytes
    case s: QueryStageExec => scanBytes(s.plan)
    case other => other.children.map(scanBytes).sum
  }

  private def maxBuildBytes(conf: SQLConf): BigInt = BigInt(
    EmberConf.DYNAMIC_FILTER_BUILD_SIDE_MAX_BYTES.get(conf)
  )

  /** The writer's proto for its role: summarizing (sized per partition) or filtering (with its cost gate). */
  def writer(op: proto.Operator, role: DynamicFilterRole, conf: SQLConf): proto.Operator = {
    val w = op.getShuffleWriter.toBuilder
    role match {
      // Clamped as the in-join filter's settings are (SpillingHashJoinSerde).
      case _: DynamicFilterRole.Build =>
        val partitions = math.max(1, w.getNumPartitions)
        w.setSummarizeKeys(true)
          .setSummaryMaxSetValues(
            EmberConf.DYNAMIC_FILTER_MAX_SET_VALUES.get(conf).max(0L).min(Int.MaxValue).toInt
          )
          .setSummaryBloomBytes(math.max(1024L, EmberConf.DYNAMIC_FILTER_BLOOM_BYTES.get(conf) / partitions))
      case _: DynamicFilterRole.Probe =>
        w.setDropSampleRows(EmberConf.DYNAMIC_FILTER_SAMPLE_ROWS.get(conf).max(1L))
          .setDropMinPrunedFraction(EmberConf.DYNAMIC_FILTER_MIN_PRUNED_FRACTION.get(conf))
    }
    op.toBuilder.setShuffleWriter(w).build()
  }

  /**
   * Points the native Parquet scans under a probe side's writer at the filter: each scan reached through
   * filters and projections that pass a join key through unchanged (so pruning its rows only removes rows the
   * writer would drop) prunes with the keys that are its columns.
   */
  def pruneScans(
      child: SparkPlan,
      exchange: EmberShuffleExchangeExec,
      pruning: proto.DynamicFilterPruning
  ): Unit = {
    val keys = exchange.outputPartitioning match {
      case h: HashPartitioning => h.expressions
      case _ => Nil
    }
    def down(p: SparkPlan): Unit = p match {
      case f: EmberFilterExec => down(f.child)
      case pr: EmberProjectExec =>
        val passed = keys.collect { case a: AttributeReference => a.exprId }
        if (
          passed.forall(id =>
            pr.projectList.exists { case a: AttributeReference => a.exprId == id; case _ => false }
          )
        )
          down(pr.child)
      case in @ EmberInputExec(scan: FileSourceScanExec) =>
        val data = scan.output.take(scan.requiredSchema.length)
        val columns = keys.zipWithIndex.flatMap {
          case (a: AttributeReference, i) =>
            val c = data.indexWhere(_.exprId == a.exprId)
            if (c >= 0) Some(Int.box(i) -> Int.box(c)) else None
          case _ => None
        }
        if (columns.nonEmpty)
          in.setTagValue(
            EmberInputExec.DynamicPruning,
            proto.ParquetScanDynamicFilter
              .newBuilder()
              .putAllColumns(columns.toMap.asJava)
              .setPruning(pruning)
              .build()
          )
      case _ =>
    }
    down(child)
  }

  /**
   * Marks, for explain, the native Parquet scans that a join of the same native plan prunes while it runs (proto
   * `prune_probe_scans`): the engine links them by the same walk (its planner's `probe_scans`) — down the probe
   * side through filters, projections that pass a key column through, and other joins' outputs, to a scan whose
   * data column the key is.
   */
  def markProbeScans(plan: SparkPlan): Unit = {
    def down(p: SparkPlan, ids: Set[ExprId], join: String): Unit = if (ids.nonEmpty) p match {
      case f: EmberFilterExec => down(f.child, ids, join)
      case pr: EmberProjectExec =>
        down(
          pr.child,
          pr.projectList.collect {
            case a: AttributeReference if ids(a.exprId) => a.exprId
            case al @ Alias(a: AttributeReference, _) if ids(al.exprId) => a.exprId
          }.toSet,
          join
        )
      case j @ (_: EmberSpillingHashJoinExec | _: EmberBroadcastHashJoinExec) =>
        j.children.foreach(c => down(c, ids.intersect(c.output.map(_.exprId).toSet), join))
      case in @ EmberInputExec(scan: FileSourceScanExec) if NativeParquetScan.unsupported(scan).isEmpty =>
        if (scan.output.take(scan.requiredSchema.length).exists(a => ids(a.exprId)))
          in.setTagValue(
            EmberInputExec.PrunedInTask,
            in.getTagValue(EmberInputExec.PrunedInTask).toSeq.flatten :+ join
          )
      case _ =>
    }
    def probe(
        op: proto.Operator,
        lk: Seq[Expression],
        rk: Seq[Expression],
        bs: JoinSide,
        l: SparkPlan,
        r: SparkPlan
    ) =
      if (op.hasSpillingHashJoin && op.getSpillingHashJoin.getPruneProbeScans) {
        val (side, keys) = if (bs == BuildLeft) (r, rk) else (l, lk)
        val join = lk.zip(rk).map { case (a, b) => s"$a = $b" }.mkString(" AND ")
        down(side, keys.collect { case a: AttributeReference => a.exprId }.toSet, join)
      }
    plan.foreach {
      case j: EmberSpillingHashJoinExec =>
        probe(j.nativeOperator, j.leftKeys, j.rightKeys, j.buildSide, j.left, j.right)
      case j: EmberBroadcastHashJoinExec =>
        probe(j.nativeOperator, j.leftKeys, j.rightKeys, j.buildSide, j.left, j.right)
      case _ =>
    }
  }
}
