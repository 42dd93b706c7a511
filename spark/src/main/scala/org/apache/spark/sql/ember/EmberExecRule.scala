package org.apache.spark.sql.ember

import scala.util.control.NonFatal

import org.apache.spark.internal.Logging
import org.apache.spark.internal.config.MEMORY_OFFHEAP_ENABLED
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Attribute, SortOrder}
import org.apache.spark.sql.catalyst.plans.physical.SinglePartition
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.trees.TreeNodeTag
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.ember.execution._
import org.apache.spark.sql.ember.serde._
import org.apache.spark.sql.execution._
import org.apache.spark.sql.execution.window.WindowExec
import org.ember.EmberConf
import org.ember.proto

object EmberExecRule {

  /** On a `BroadcastExchangeExec` whose consumer stays in Spark: it stays Spark's too (see below). */
  val KeepSparkBroadcast: TreeNodeTag[String] = TreeNodeTag[String]("ember.keepSparkBroadcast")

  /**
   * Tags the broadcast of every nested-loop join that will stay in Spark, so that it stays Spark's broadcast:
   * Ember's would be decoded on the driver and broadcast a second time for it. Run over the whole plan before
   * any exchange is converted: by [[EmberExecRule]] itself, and, under adaptive execution (which plans each
   * broadcast as a stage of its own, without its consumer), by [[EmberQueryStagePrepRule]] first.
   */
  def keepSparkBroadcasts(plan: SparkPlan): Unit = {
    val conf = SQLConf.get
    plan.foreach {
      case j: joins.BroadcastNestedLoopJoinExec =>
        val reason =
          if (!EmberConf.ENABLED.get(conf)) None
          else if (!BroadcastNestedLoopJoinSerde.enabled.get(conf))
            Some(s"${BroadcastNestedLoopJoinSerde.enabled.key} is false")
          else
            try BroadcastNestedLoopJoinSerde.join(j).flatMap(op => EngineSupport.check(j, op)).left.toOption
            catch { case NonFatal(e) => Some(s"Ember could not convert ${j.nodeName}: $e") }
        (reason, BroadcastNestedLoopJoinSerde.buildChild(j)) match {
          case (Some(why), b: exchange.BroadcastExchangeExec) =>
            b.setTagValue(KeepSparkBroadcast, s"the ${j.nodeName} it feeds stays in Spark: $why")
          case _ =>
        }
      case _ =>
    }
  }

  /** Why an operator stayed in Spark; shown by explain (see [[org.ember.EmberExplainInfo]]) and by tests. */
  val FallbackReasons: TreeNodeTag[Seq[String]] = TreeNodeTag[Seq[String]]("ember.fallbackReasons")

  def fallbackReasons(plan: SparkPlan): Seq[String] = plan.getTagValue(FallbackReasons).getOrElse(Nil)
}

/**
 * One arm per Spark operator, each with its serde. A converted operator's non-native children are wrapped in
 * [[EmberInputExec]]; an operator that cannot be converted stays as it is, tagged with the reason.
 */
case class EmberExecRule(session: SparkSession) extends Rule[SparkPlan] with Logging {
  import EmberExecRule._

  override def apply(plan: SparkPlan): SparkPlan = {
    val conf = session.sessionState.conf
    if (!EmberConf.ENABLED.get(conf)) return plan
    if (!session.sparkContext.conf.get(MEMORY_OFFHEAP_ENABLED)) {
      plan.foreach(p => tag(p, "off-heap memory is not enabled (spark.memory.offHeap.enabled=false)"))
      return plan
    }
    markOrderedJoins(plan)
    keepSparkBroadcasts(plan)
    val converted = restoreOrder(plan.transformUp { case p => convert(p) })
    DynamicFilterPlanner.markProbeScans(converted)
    if (EmberConf.EXPLAIN_FALLBACK.get(conf)) {
      val lines = EmberExplainInfo.fallbackLines(converted)
      if (lines.nonEmpty) logWarning(s"Ember: operators left to Spark:\n${lines.mkString("\n")}")
    }
    converted
  }

  /** A sort-merge join whose parent needs its sort order stays one (see [[SortMergeJoinSerde]]). */
  private val OrderNeeded = TreeNodeTag[Unit]("ember.smjOrderNeeded")

  private def markOrderedJoins(plan: SparkPlan): Unit = plan.foreach { p =>
    // A sort-merge join that becomes the hash join needs no order of its children (e.g. TPC-H Q18's and Q21's
    // chains of joins on one key); if its conversion fails after all, `restoreOrder` sorts them.
    if (!replacedSortMergeJoin(p)) {
      p.children.zip(p.requiredChildOrdering).foreach {
        case (j: joins.SortMergeJoinExec, required) if required.nonEmpty =>
          j.setTagValue(OrderNeeded, ())
          if (EmberConf.EXEC_REPLACE_SMJ.get(session.sessionState.conf))
            tag(j, s"${p.nodeName} above needs the sort-merge join's output order")
        case _ =>
      }
      markOrderedBroadcastJoins(p)
    }
  }

  private def replacedSortMergeJoin(p: SparkPlan): Boolean = p match {
    case j: joins.SortMergeJoinExec =>
      EmberConf.EXEC_REPLACE_SMJ.get(session.sessionState.conf) && j.getTagValue(OrderNeeded).isEmpty
    case _ => false
  }

  /**
   * A Spark operator left above a native one whose order it requires, because it was expected to be replaced too
   * (see [[markOrderedJoins]]) and could not be: its child gets the sort (native where it can be), as Spark's
   * EnsureRequirements would have added had the child not been sorted.
   */
  private def restoreOrder(plan: SparkPlan): SparkPlan = plan.transformUp {
    case p if !p.isInstanceOf[EmberExec] && p.requiredChildOrdering.exists(_.nonEmpty) =>
      val children = p.children.zip(p.requiredChildOrdering).map {
        case (c, required) if required.nonEmpty && !SortOrder.orderingSatisfies(c.outputOrdering, required) =>
          convert(SortExec(required, global = false, c))
        case (c, _) => c
      }
      if (children.zip(p.children).forall { case (a, b) => a eq b }) p else p.withNewChildren(children)
  }

  /**
   * A broadcast join (hash or nested-loop) passes its streamed side's order on, and the native one does not: one whose order a
   * node above relies on (directly or through nodes that pass the order on) stays in Spark.
   */
  private def markOrderedBroadcastJoins(p: SparkPlan): Unit = {
    def down(c: SparkPlan, reason: String): Unit = c match {
      // A sort makes the order itself: nothing below it has to keep one.
      case _: SortExec =>
      case _ if c.outputOrdering.nonEmpty =>
        c match {
          case j @ (_: joins.BroadcastHashJoinExec | _: joins.BroadcastNestedLoopJoinExec) =>
            j.setTagValue(BroadcastOrderNeeded, ())
            tag(j, reason)
          case _ =>
        }
        c.children.foreach(down(_, reason))
      case _ =>
    }
    p.children.zip(p.requiredChildOrdering).foreach {
      case (c, required) if required.nonEmpty =>
        down(c, s"${p.nodeName} above needs the broadcast join's output order")
      case _ =>
    }
  }

  private val BroadcastOrderNeeded = TreeNodeTag[Unit]("ember.bhjOrderNeeded")

  private def tag(p: SparkPlan, reason: String): Unit = {
    val existing = fallbackReasons(p)
    if (!existing.contains(reason)) p.setTagValue(FallbackReasons, existing :+ reason)
  }

  private def native(child: SparkPlan): SparkPlan = child match {
    case e: EmberExec => e
    case other => EmberInputExec(other)
  }

  /** How many Spark RDD inputs the native block topped by `p` would read (broadcasts are read by every task). */
  private def blockInputs(p: SparkPlan): Int = p match {
    case EmberInputExec(c) if EmberBroadcastExchangeExec.of(c).isDefined => 0
    case _: EmberInputExec => 1
    case e: EmberExec => e.children.map(blockInputs).sum
    case _ => 1
  }

  /**
   * A join's children, native. A native plan reads at most two inputs (`EmberBlock`), so when a child block
   * already reads two (e.g. a join over a join on the same keys, with no exchange between) that child becomes a
   * native plan of its own, read as the input of this one.
   */
  private def joinChildren(left: SparkPlan, right: SparkPlan): (SparkPlan, SparkPlan) = {
    val (l, r) = (native(left), native(right))
    def own(c: SparkPlan) = if (blockInputs(c) > 1) EmberInputExec(c) else c
    if (blockInputs(l) + blockInputs(r) <= 2) (l, r) else (own(l), own(r))
  }

  /** A native broadcast join's children: the broadcast side as it is, the streamed side by [[streamedChild]]. */
  private def broadcastChildren(
      buildSide: org.apache.spark.sql.catalyst.optimizer.BuildSide,
      left: SparkPlan,
      right: SparkPlan
  ): (SparkPlan, SparkPlan) = buildSide match {
    case org.apache.spark.sql.catalyst.optimizer.BuildLeft => (native(left), streamedChild(right))
    case org.apache.spark.sql.catalyst.optimizer.BuildRight => (streamedChild(left), native(right))
  }

  /** A native broadcast join's streamed side: its own native plan when it already reads two RDD inputs. */
  private def streamedChild(streamed: SparkPlan): SparkPlan = {
    val s = native(streamed)
    if (blockInputs(s) > 2) EmberInputExec(s) else s
  }

  private def attempt[T <: SparkPlan](plan: T, serde: OperatorSerde[T])(
      build: proto.Operator => SparkPlan
  ): SparkPlan = {
    if (!serde.enabled.get(session.sessionState.conf)) {
      tag(plan, s"${serde.enabled.key} is false")
      plan
    } else {
      val converted =
        try {
          // Only filters and projections bind scalar subqueries' results (EmberExec.boundOperator).
          if (SubqueryValue.has(plan) && !plan.isInstanceOf[FilterExec] && !plan.isInstanceOf[ProjectExec])
            Left(s"a scalar subquery in ${plan.nodeName} is not supported")
          else serde.convert(plan).flatMap(op => EngineSupport.check(plan, op).map(_ => op))
        } catch {
          // A serde bug must not fail the query's planning: the operator stays in Spark, with the reason.
          case NonFatal(e) => Left(s"Ember could not convert ${plan.nodeName}: $e")
        }
      converted match {
        case Right(op) =>
          val built = build(op)
          changedOutput(plan, built) match {
            case Some(reason) =>
              tag(plan, reason)
              plan
            case None => built
          }
        case Left(reason) =>
          tag(plan, reason)
          plan
      }
    }
  }

  /**
   * Why `built` cannot stand in for `plan`: its output differs, nullability included. Parents bind their
   * requirements to these attributes (a broadcast join's key mode), and AQE rejects any plan change whose
   * requirements no longer match, so a drifting attribute costs e.g. shuffle coalescing in a whole stage.
   */
  private def changedOutput(plan: SparkPlan, built: SparkPlan): Option[String] = {
    val (want, got) = (plan.output, built.output)
    def same(a: Attribute, b: Attribute) =
      a.exprId == b.exprId && a.dataType == b.dataType && a.nullable == b.nullable
    if (want.length == got.length && want.zip(got).forall { case (a, b) => same(a, b) }) None
    else
      Some(
        s"Ember's ${built.nodeName} would change the output ${want.mkString(", ")} to ${got.mkString(", ")}"
      )
  }

  /** A single-partition Ember shuffle of a native child, or why there is none. */
  private def gather(child: SparkPlan): Either[String, proto.Operator] = {
    val ex = exchange.ShuffleExchangeExec(SinglePartition, child, exchange.ENSURE_REQUIREMENTS)
    if (!ShuffleSerde.enabled.get(session.sessionState.conf)) Left(s"${ShuffleSerde.enabled.key} is false")
    else ShuffleSerde.convert(ex).flatMap(op => EngineSupport.check(ex, op).map(_ => op))
  }

  /**
   * ORDER BY ... LIMIT: per partition a top-k sort, Ember's shuffle into one partition, then the final top-k,
   * offset and projection (`EmberTakeOrderedAndProjectExec`); a child already in one partition is read directly.
   */
  private def takeOrderedAndProject(t: TakeOrderedAndProjectExec): SparkPlan =
    ExprSerde.convertAll(t.projectList, t.child.output) match {
      // A projection the engine cannot run: the top-k stays native, Spark projects its few rows.
      case Left(reason) if EmberConf.EXEC_TAKE_ORDERED_AND_PROJECT.get(session.sessionState.conf) =>
        topK(t.copy(projectList = t.child.output)) match {
          case native: EmberTakeOrderedAndProjectExec =>
            val project = ProjectExec(t.projectList, native)
            tag(project, reason)
            project
          case _ => topK(t)
        }
      case _ => topK(t)
    }

  private def topK(t: TakeOrderedAndProjectExec): SparkPlan =
    attempt(t, TakeOrderedAndProjectSerde) { op =>
      val child = native(t.child)
      val gathered: Either[String, SparkPlan] =
        if (t.child.outputPartitioning == SinglePartition) Right(child)
        else {
          val sort = SortExec(t.sortOrder, global = false, t.child)
          for {
            s <- TakeOrderedAndProjectSerde.partialTopK(sort, t.limit)
            _ <- EngineSupport.check(sort, s)
            topK = EmberSortExec(t.sortOrder, global = false, child, s)
            w <- gather(topK)
          } yield native(
            EmberShuffleExchangeExec(SinglePartition, topK, exchange.ENSURE_REQUIREMENTS, None, w)
          )
        }
      gathered match {
        case Right(in) =>
          EmberTakeOrderedAndProjectExec(t.limit, t.offset, t.sortOrder, t.projectList, in, op)
        case Left(reason) =>
          tag(t, reason)
          t
      }
    }

  /** A collected LIMIT over a native child (see [[EmberCollectLimitExec]]); over a Spark child it stays Spark's. */
  private def collectLimit(c: CollectLimitExec): SparkPlan = c.child match {
    case child: EmberExec =>
      attempt(c, CollectLimitSerde) { op =>
        gather(child) match {
          case Right(w) =>
            EmberCollectLimitExec(c.limit, c.offset, child, CollectLimitSerde.localLimit(c), w, op)
          case Left(reason) =>
            tag(c, reason)
            c
        }
      }
    case _ =>
      tag(c, "CollectLimitExec runs natively only over a native child")
      c
  }

  private def convert(plan: SparkPlan): SparkPlan = plan match {
    case _: EmberExec => plan
    case f: FilterExec => attempt(f, FilterSerde)(op => EmberFilterExec(f.condition, native(f.child), op))
    case p: ProjectExec =>
      attempt(p, ProjectSerde)(op => EmberProjectExec(p.projectList, native(p.child), op))
    case e: ExpandExec =>
      attempt(e, ExpandSerde)(op => EmberExpandExec(e.projections, e.output, native(e.child), op))
    case s: SortExec => attempt(s, SortSerde)(op => EmberSortExec(s.sortOrder, s.global, native(s.child), op))
    case l: LocalLimitExec =>
      attempt(l, LocalLimitSerde)(op => EmberLocalLimitExec(l.limit, native(l.child), op))
    case g: GlobalLimitExec =>
      attempt(g, GlobalLimitSerde)(op => EmberGlobalLimitExec(g.limit, g.offset, native(g.child), op))
    case w: WindowExec =>
      attempt(w, PrefixWindowSerde)(op =>
        EmberPrefixWindowExec(w.windowExpression, w.partitionSpec, w.orderSpec, native(w.child), op)
      )
    case a: aggregate.BaseAggregateExec =>
      attempt(a, AggregateSerde) { op =>
        val node = EmberAggregateExec(
          a.requiredChildDistributionExpressions,
          a.isStreaming,
          a.numShufflePartitions,
          a.groupingExpressions,
          a.aggregateExpressions,
          a.aggregateAttributes,
          a.initialInputBufferOffset,
          a.resultExpressions,
          native(AggregateSerde.unsortedChild(a)),
          op
        )
        // A sort aggregate's parent may rely on its output being sorted by the keys: sort the (few) groups.
        if (a.outputOrdering.isEmpty) node
        else {
          val sort = SortExec(a.outputOrdering, global = false, node)
          attempt(sort, SortSerde)(so => EmberSortExec(sort.sortOrder, global = false, node, so))
        }
      }
    case j: joins.ShuffledHashJoinExec =>
      attempt(j, SpillingHashJoinSerde)(op =>
        EmberSpillingHashJoinExec(
          j.leftKeys,
          j.rightKeys,
          j.joinType,
          j.buildSide,
          j.condition,
          joinChildren(j.left, j.right)._1,
          joinChildren(j.left, j.right)._2,
          j.isSkewJoin,
          op
        )
      )
    case j: joins.SortMergeJoinExec if j.getTagValue(OrderNeeded).isEmpty =>
      attempt(j, SortMergeJoinSerde)(op =>
        EmberSpillingHashJoinExec(
          j.leftKeys,
          j.rightKeys,
          j.joinType,
          SortMergeJoinSerde.buildSide(j),
          j.condition,
          joinChildren(SortMergeJoinSerde.unsorted(j.left), SortMergeJoinSerde.unsorted(j.right))._1,
          joinChildren(SortMergeJoinSerde.unsorted(j.left), SortMergeJoinSerde.unsorted(j.right))._2,
          j.isSkewJoin,
          op
        )
      )
    // Taken in by the exchange above it (see DynamicFilterPlanner).
    case m: EmberDynamicFilterExec => m
    case s: exchange.ShuffleExchangeExec =>
      val (child, role) = s.child match {
        case m: EmberDynamicFilterExec => (m.child, Some(m.role))
        case c => (c, None)
      }
      val ex = if (role.isEmpty) s else s.copy(child = child)
      val converted = attempt(ex, ShuffleSerde)(op =>
        EmberShuffleExchangeExec(
          s.outputPartitioning,
          native(child),
          s.shuffleOrigin,
          s.advisoryPartitionSize,
          role.fold(op)(r => DynamicFilterPlanner.writer(op, r, session.sessionState.conf)),
          role
        )
      )
      converted match {
        case e: EmberShuffleExchangeExec =>
          e.dynamicFilter.foreach {
            case DynamicFilterRole.Build(link) => link.buildPlanned = true
            case _ =>
          }
          e
        // Spark's exchange, with the node that keeps its canonical form its own.
        case _ if role.isDefined =>
          fallbackReasons(ex).foreach(tag(s, _))
          s
        case other => other
      }
    case b: exchange.BroadcastExchangeExec =>
      attempt(b, BroadcastExchangeSerde)(op => EmberBroadcastExchangeExec(b.mode, native(b.child), op))
    case j: joins.BroadcastHashJoinExec if j.getTagValue(BroadcastOrderNeeded).isEmpty =>
      attempt(j, BroadcastHashJoinSerde) { op =>
        val (left, right) = broadcastChildren(j.buildSide, j.left, j.right)
        EmberBroadcastHashJoinExec(
          j.leftKeys,
          j.rightKeys,
          j.joinType,
          j.buildSide,
          j.condition,
          left,
          right,
          j.isNullAwareAntiJoin,
          op
        )
      }
    // Tagged with the reason by markOrderedBroadcastJoins.
    case j: joins.BroadcastHashJoinExec => j
    case j: joins.BroadcastNestedLoopJoinExec if j.getTagValue(BroadcastOrderNeeded).isEmpty =>
      attempt(j, BroadcastNestedLoopJoinSerde) { op =>
        val (left, right) = broadcastChildren(j.buildSide, j.left, j.right)
        EmberBroadcastNestedLoopJoinExec(left, right, j.buildSide, j.joinType, j.condition, op)
      }
    case j: joins.BroadcastNestedLoopJoinExec => j
    case t: TakeOrderedAndProjectExec => takeOrderedAndProject(t)
    case c: CollectLimitExec => collectLimit(c)
    case other =>
      if (other.children.nonEmpty || !other.isInstanceOf[LeafExecNode])
        tag(other, s"${other.nodeName} has no native implementation")
      other
  }
}
