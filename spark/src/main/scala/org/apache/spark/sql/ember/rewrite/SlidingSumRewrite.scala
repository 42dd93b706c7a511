package org.apache.spark.sql.ember.rewrite

import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateExpression, Complete, Count, Sum}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, Project, Window}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.types._
import org.ember.EmberConf

/**
 * Prefix-difference rewrite of sliding integral sums, for Spark's own window operator
 * (`spark.ember.slidingSumRewrite.enabled`). Within one `Window` node (one partition / order spec), every
 * `sum(x) OVER (... ROWS BETWEEN a AND b)` with an integral `x`, literal bounds, no DISTINCT / FILTER and
 * LEGACY arithmetic is rewritten without a new exchange or sort.
 *
 * Frames ending at or before the current row (the rolling-horizon shape) all become one [[SlidingFrameSums]]
 * over the running frame: one update per row keeps per-measure rings of prefix sums and counts, and each frame
 * is two ring lookups; a `Project` reads its struct fields under the original expression ids. That path is used
 * when Ember's native window is off (the native operator cannot run it, and evaluates the original sums better).
 *
 * Other frames (FOLLOWING ends, frames wider than the ring, or with the native window on) become, with `S` the
 * running sum of `coalesce(x, 0)` and `K` the running count of non-null
 * `x` (ROWS UNBOUNDED PRECEDING .. CURRENT ROW), and `P(d)` the prefix `d` rows away from the current one:
 * {{{
 *   IF(K(b) = K(a - 1), NULL, S(b) - S(a - 1))
 *   P(0) = S   P(-k) = lag(S, k, 0)   P(k) = lead(S, k, S_total)
 * }}}
 * (the same for `K`; `S_total` / `K_total` are the whole partition's, for frames that end past it). Every
 * prefix is non-null, so the final projection is a compare and a subtract per frame: with nullable prefixes
 * and `coalesce`s, 30 frames made a generated method too large for the JIT to compile (2x slower). The lags
 * and leads run in a second `Window` node over the same spec, so Spark adds no exchange and no sort; a
 * `Project` on top computes the differences under the original expression ids.
 *
 * Exact with ANSI off only, where Spark's sliding fold wraps in 64 bits and so does the difference of two
 * wrapped prefixes; under ANSI a running sum may overflow where no frame does, so the rule leaves the plan
 * alone when `spark.sql.ansi.enabled` is true (and for any sum not in LEGACY mode). A spec is rewritten only
 * when the widths of its qualifying frames add up to `spark.ember.slidingSumRewrite.minTotalWidth`.
 */
object SlidingSumRewrite extends Rule[LogicalPlan] {

  private case class Candidate(alias: Alias, sum: Sum, lower: Int, upper: Int) {
    def width: Long = upper.toLong - lower + 1
  }

  private def integral(dt: DataType): Boolean = dt match {
    case ByteType | ShortType | IntegerType | LongType => true
    case _ => false
  }

  private def offset(e: Expression): Option[Int] = e match {
    case CurrentRow => Some(0)
    case _: SpecialFrameBoundary => None
    case l: Literal if l.dataType == IntegerType && l.value != null => Some(l.value.asInstanceOf[Int])
    case _ => None
  }

  private def candidate(ne: NamedExpression): Option[Candidate] = ne match {
    case a @ Alias(WindowExpression(AggregateExpression(s: Sum, Complete, false, None, _), spec), _)
        if s.evalContext.evalMode == EvalMode.LEGACY && integral(
          s.child.dataType
        ) && s.dataType == LongType &&
          s.child.deterministic =>
      spec.frameSpecification match {
        case SpecifiedWindowFrame(RowFrame, lo, hi) =>
          for {
            l <- offset(lo)
            u <- offset(hi)
            if l <= u
          } yield Candidate(a, s, l, u)
        case _ => None
      }
    case _ => None
  }

  override def apply(plan: LogicalPlan): LogicalPlan = {
    if (!EmberConf.SLIDING_SUM_REWRITE.get(conf) || conf.ansiEnabled) return plan
    val minWidth = EmberConf.SLIDING_SUM_REWRITE_MIN_WIDTH.get(conf)
    plan.transformUp { case w: Window => rewrite(w, minWidth).getOrElse(w) }
  }

  private def rewrite(w: Window, minWidth: Long): Option[LogicalPlan] = {
    val candidates = w.windowExpressions.flatMap(candidate)
    if (candidates.isEmpty || candidates.map(_.width).sum < minWidth) return None
    def spec(frame: WindowFrame) = WindowSpecDefinition(w.partitionSpec, w.orderSpec, frame)
    val running = spec(SpecifiedWindowFrame(RowFrame, UnboundedPreceding, CurrentRow))
    val whole = spec(SpecifiedWindowFrame(RowFrame, UnboundedPreceding, UnboundedFollowing))
    def agg(f: aggregate.AggregateFunction, s: WindowSpecDefinition, name: String) =
      Alias(WindowExpression(AggregateExpression(f, Complete, isDistinct = false), s), name)()

    // Frames ending at or before the current row: one SlidingFrameSums over the running frame, unless Ember's
    // native window will run this spec (it evaluates the original sums itself, and the lag form as well).
    val nativeWindow = EmberConf.ENABLED.get(conf) && EmberConf.EXEC_PREFIX_WINDOW.get(conf)
    // (The bound on `lower` comes first: it keeps `1 - lower` in `ringLength` from overflowing.)
    val (folded, offsetBased) = candidates.partition(c =>
      !nativeWindow && c.upper <= 0 && c.lower > -SlidingFrameSums.MaxRing &&
        SlidingFrameSums.ringLength(c.lower) <= SlidingFrameSums.MaxRing
    )
    val foldedMeasures = folded.map(_.sum.child).distinctBy(_.canonicalized)
    val frameSums = Option.when(folded.nonEmpty) {
      val frames = folded.map { c =>
        SlidingFrameSums.Frame(foldedMeasures.indexWhere(_.semanticEquals(c.sum.child)), c.lower, c.upper)
      }
      agg(SlidingFrameSums(foldedMeasures, frames), running, "_ember_frame_sums")
    }

    // One running sum and count per measure (and its partition totals when some frame ends past a row).
    final case class Measure(sum: Alias, count: Alias, total: Option[(Alias, Alias)])
    val byMeasure = offsetBased.groupBy(_.sum.child.canonicalized).values.toSeq.map(cs => (cs.head.sum, cs))
    val measures: Map[Expression, Measure] = byMeasure.map { case (s, cs) =>
      val x = s.child
      // sum(coalesce(x, 0)) wraps exactly as sum(x) does (ANSI off) and is never null over a non-empty frame.
      val nonNull = s.withNewChildren(Seq(Coalesce(Seq(x, Literal.default(x.dataType))))).asInstanceOf[Sum]
      val needsTotal = cs.exists(c => c.upper > 0 || c.lower - 1 > 0)
      x.canonicalized -> Measure(
        agg(nonNull, running, "_ember_prefix_sum"),
        agg(Count(Seq(x)), running, "_ember_prefix_count"),
        if (needsTotal)
          Some((agg(nonNull, whole, "_ember_total_sum"), agg(Count(Seq(x)), whole, "_ember_total_count")))
        else None
      )
    }.toMap

    // The prefix `d` rows from the current row, per measure and kind: an attribute of the inner window (d = 0)
    // or a lag / lead computed by the outer window.
    val outer = scala.collection.mutable.LinkedHashMap.empty[(Expression, Boolean, Int), Alias]
    def prefixAt(m: Measure, key: Expression, count: Boolean, d: Int): Expression = {
      val attr = (if (count) m.count else m.sum).toAttribute
      val value =
        if (d == 0) attr
        else
          outer
            .getOrElseUpdate(
              (key, count, d), {
                val f =
                  if (d < 0) Lag(attr, Literal(-d), Literal(0L), ignoreNulls = false)
                  else {
                    val (ts, tc) = m.total.get
                    Lead(attr, Literal(d), (if (count) tc else ts).toAttribute, ignoreNulls = false)
                  }
                Alias(WindowExpression(f, spec(f.frame)), if (count) "_ember_count_at" else "_ember_sum_at")()
              }
            )
            .toAttribute
      value
    }
    val legacy = NumericEvalContext(EvalMode.LEGACY)
    def keepId(a: Alias, value: Expression) =
      a.exprId -> Alias(value, a.name)(
        a.exprId,
        a.qualifier,
        a.explicitMetadata,
        a.nonInheritableMetadataKeys
      )
    val fromFrameSums = frameSums.toSeq.flatMap { fs =>
      folded.zipWithIndex.map { case (c, i) => keepId(c.alias, GetStructField(fs.toAttribute, i)) }
    }
    val computed: Map[ExprId, Alias] = fromFrameSums.toMap ++ offsetBased.map { c =>
      val key = c.sum.child.canonicalized
      val m = measures(key)
      val empty =
        EqualTo(prefixAt(m, key, count = true, c.upper), prefixAt(m, key, count = true, c.lower - 1))
      val s = Subtract(
        prefixAt(m, key, count = false, c.upper),
        prefixAt(m, key, count = false, c.lower - 1),
        legacy
      )
      keepId(c.alias, If(empty, Literal.create(null, LongType), s))
    }.toMap

    val kept = w.windowExpressions.filterNot(e => computed.contains(e.exprId))
    val prefixes =
      measures.values.toSeq.flatMap(m => Seq(m.sum, m.count) ++ m.total.toSeq.flatMap(t => Seq(t._1, t._2)))
    val inner = Window(kept ++ prefixes ++ frameSums, w.partitionSpec, w.orderSpec, w.child, w.hint)
    val outerWindow =
      if (outer.isEmpty) inner else Window(outer.values.toSeq, w.partitionSpec, w.orderSpec, inner, w.hint)
    val projectList = w.child.output ++ w.windowExpressions.map { e =>
      computed.getOrElse(e.exprId, e.toAttribute)
    }
    Some(Project(projectList, outerWindow))
  }
}
