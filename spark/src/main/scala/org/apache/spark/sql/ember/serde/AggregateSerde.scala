package org.apache.spark.sql.ember.serde

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet, EvalMode}
import org.apache.spark.sql.catalyst.expressions.aggregate._
import org.apache.spark.sql.ember.execution.EmberSortExec
import org.apache.spark.sql.execution.{SortExec, SparkPlan}
import org.apache.spark.sql.execution.aggregate._
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types._
import org.ember.EmberConf
import org.ember.proto

/**
 * `HashAggregateExec` / `ObjectHashAggregateExec` → proto `Aggregate`, in Partial, PartialMerge or Final mode
 * (one mode for all its functions). Pre-filters, to phrase a reason early, what `native/engine/src/planner/aggregate.rs`
 * implements exactly (the engine decides, on the driver: [[EngineSupport]]):
 * `count`, `sum` and `avg` (of non-decimals not in TRY mode; of decimals in every mode), `min`/`max` of every
 * orderable type (FLOAT/DOUBLE with Spark's NaN and -0.0 order), `first`/`last`. The intermediate columns are
 * Spark's `aggBufferAttributes`, so native and Spark partial and final aggregates can feed each other.
 */
object AggregateSerde extends OperatorSerde[BaseAggregateExec] {
  override def enabled: EmberConf.Entry[Boolean] = EmberConf.EXEC_AGGREGATE

  private def sequence[T](xs: Seq[Either[String, T]]): Either[String, Seq[T]] =
    xs.collectFirst { case Left(r) => r } match {
      case Some(r) => Left(r)
      case None => Right(xs.map(_.toOption.get))
    }

  /** The function's kind natively, or why it stays in Spark. */
  private def kind(f: AggregateFunction): Either[String, proto.AggregateFunctionKind] = {
    import proto.AggregateFunctionKind._
    def numeric(dt: DataType) = dt match {
      case ByteType | ShortType | IntegerType | LongType | FloatType | DoubleType => true
      case _ => false
    }
    def notTry(mode: EvalMode.Value, k: proto.AggregateFunctionKind) =
      if (mode == EvalMode.TRY) Left(s"${f.prettyName} in TRY mode is not supported natively") else Right(k)
    f match {
      case Count(children)
          if children.isEmpty || children.forall(_.foldable) && children.forall(!_.nullable) =>
        Right(AGGREGATE_FUNCTION_KIND_COUNT_STAR)
      case Count(Seq(_)) => Right(AGGREGATE_FUNCTION_KIND_COUNT)
      case Count(_) => Left("count of several expressions is not supported natively")
      case s: Sum if numeric(s.child.dataType) => notTry(s.evalContext.evalMode, AGGREGATE_FUNCTION_KIND_SUM)
      case a: Average if numeric(a.child.dataType) => notTry(a.evalMode, AGGREGATE_FUNCTION_KIND_AVG)
      // Decimals: TRY is LEGACY for them (overflow is NULL either way), so every mode runs natively.
      case s: Sum if s.child.dataType.isInstanceOf[DecimalType] => Right(AGGREGATE_FUNCTION_KIND_SUM)
      case a: Average if a.child.dataType.isInstanceOf[DecimalType] => Right(AGGREGATE_FUNCTION_KIND_AVG)
      case _: Sum | _: Average =>
        Left(s"${f.prettyName} of ${f.children.head.dataType.simpleString} is not supported natively")
      case m @ (_: Min | _: Max) =>
        m.children.head.dataType match {
          case dt if ExprSerde.orderable(dt) =>
            Right(if (m.isInstanceOf[Min]) AGGREGATE_FUNCTION_KIND_MIN else AGGREGATE_FUNCTION_KIND_MAX)
          case dt => Left(s"${m.prettyName} of ${dt.simpleString} is not supported natively")
        }
      case _: First => Right(AGGREGATE_FUNCTION_KIND_FIRST)
      case _: Last => Right(AGGREGATE_FUNCTION_KIND_LAST)
      case other => Left(s"aggregate function ${other.prettyName} is not supported natively")
    }
  }

  private def field(a: Attribute, tz: String): Either[String, proto.Field] =
    TypeSerde
      .convert(a.dataType, tz)
      .map(t =>
        proto.Field.newBuilder().setName(TypeSerde.name(a.name)).setType(t).setNullable(a.nullable).build()
      )

  private def function(
      ae: AggregateExpression,
      args: Seq[Attribute],
      tz: String
  ): Either[String, proto.AggregateFunction] = {
    val f = ae.aggregateFunction
    for {
      k <- kind(f)
      argExprs <-
        if (k == proto.AggregateFunctionKind.AGGREGATE_FUNCTION_KIND_COUNT_STAR) Right(Nil)
        else ExprSerde.convertAll(f.children.take(1), args)
      result <- TypeSerde.convert(f.dataType, tz)
      buffer <- sequence(f.aggBufferAttributes.map(field(_, tz)))
      filter <- ae.filter match {
        case Some(p) => ExprSerde.convert(p, args).map(Some(_))
        case None => Right(None)
      }
    } yield {
      val b = proto.AggregateFunction
        .newBuilder()
        .setKind(k)
        .setResultType(result)
        .setName(TypeSerde.name(ae.resultAttribute.name))
      argExprs.foreach(b.addArgs)
      buffer.foreach(b.addIntermediate)
      filter.foreach(b.setFilter)
      f match {
        case s: Sum =>
          b.setEvalMode(ExprSerde.evalMode(s.evalContext.evalMode)).setQueryContext(QueryContexts.id(s))
        case a: Average =>
          b.setEvalMode(ExprSerde.evalMode(a.evalMode)).setQueryContext(QueryContexts.id(a))
        case fi: First => b.setIgnoreNulls(fi.ignoreNulls)
        case l: Last => b.setIgnoreNulls(l.ignoreNulls)
        case _ =>
      }
      b.build()
    }
  }

  // Keys, arguments and results Ember has no kernel for are evaluated by Spark inside the native aggregate.
  override def convert(plan: BaseAggregateExec): Either[String, proto.Operator] =
    ExprSerde.withJvmExpressions(convertAggregate(plan))

  private def convertAggregate(plan: BaseAggregateExec): Either[String, proto.Operator] = {
    val conf = SQLConf.get
    val tz = conf.sessionLocalTimeZone
    val aggs = plan.aggregateExpressions
    val modes = aggs.map(_.mode).distinct
    val groupingAttrs = plan.groupingExpressions.map(_.toAttribute)
    val bufferAttrs = aggs.flatMap(_.aggregateFunction.inputAggBufferAttributes)
    val mode: Either[String, proto.AggregateMode] = modes match {
      case Seq(Partial) => Right(proto.AggregateMode.AGGREGATE_MODE_PARTIAL)
      case Seq(PartialMerge) => Right(proto.AggregateMode.AGGREGATE_MODE_PARTIAL_MERGE)
      case Seq(Final) => Right(proto.AggregateMode.AGGREGATE_MODE_FINAL)
      // Only grouping (the de-duplication steps of DISTINCT): a partial aggregate outputs its keys, a final
      // one (it has a required distribution) its result expressions over them.
      case Seq() if plan.requiredChildDistributionExpressions.isEmpty =>
        Right(proto.AggregateMode.AGGREGATE_MODE_PARTIAL)
      case Seq() => Right(proto.AggregateMode.AGGREGATE_MODE_FINAL)
      case Seq(Complete) => Left("Complete-mode aggregates are not supported natively")
      case several => Left(s"aggregate mixing modes ${several.mkString(", ")} is not supported natively")
    }
    val isPartial =
      modes == Seq(Partial) || (modes.isEmpty && plan.requiredChildDistributionExpressions.isEmpty)
    for {
      _ <- sideEnabled(plan, conf)
      _ <- plan match {
        case _: HashAggregateExec | _: ObjectHashAggregateExec | _: SortAggregateExec => Right(())
        case other => Left(s"${other.nodeName} is not supported natively")
      }
      _ <- plan match {
        case s: SortAggregateExec => orderInsensitive(s)
        case _ => Right(())
      }
      _ <-
        // The native aggregate would produce a batch of no columns (no row count in Arrow's RecordBatch).
        if (plan.output.isEmpty || (plan.groupingExpressions.isEmpty && aggs.isEmpty))
          Left("aggregate without grouping keys and functions is not supported natively")
        else Right(())
      _ <- if (plan.isStreaming) Left("streaming aggregates are not supported natively") else Right(())
      // Spark keeps a FILTER only in partial (and complete) mode.
      _ <-
        if (aggs.exists(_.filter.isDefined) && !isPartial)
          Left("aggregate FILTER clauses outside a partial aggregate are not supported natively")
        else Right(())
      m <- mode
      _ <- checkSchema(plan.child.output)
      _ <- checkSchema(plan.output)
      _ <- checkSchema(bufferAttrs)
      // Where the merging modes find the buffers: right after the grouping columns, in function order.
      _ <-
        if (isPartial) Right(())
        else if (
          plan.initialInputBufferOffset == groupingAttrs.size &&
          plan.child.output.slice(groupingAttrs.size, groupingAttrs.size + bufferAttrs.size).map(_.exprId) ==
            bufferAttrs.map(_.exprId)
        ) Right(())
        else Left("the child's output is not the grouping columns followed by the aggregation buffers")
      // Partial / PartialMerge output: the grouping columns then the buffers, exactly.
      _ <-
        if (m == proto.AggregateMode.AGGREGATE_MODE_FINAL) Right(())
        else if (plan.resultExpressions.map(_.exprId) == (groupingAttrs ++ bufferAttrs).map(_.exprId))
          Right(())
        else Left("partial aggregate with result expressions other than its grouping columns and buffers")
      // What the functions' arguments refer to: the child's output (Partial), else the raw input the partial
      // aggregate consumed (only types matter there).
      argInput = {
        if (isPartial) plan.child.output
        else AttributeSet(aggs.flatMap(_.aggregateFunction.children.flatMap(_.references))).toSeq
      }
      _ <- checkSchema(argInput)
      grouping <- ExprSerde.convertAll(plan.groupingExpressions, plan.child.output)
      functions <- sequence(aggs.map(function(_, argInput, tz)))
      results <-
        if (m == proto.AggregateMode.AGGREGATE_MODE_FINAL)
          ExprSerde.convertAll(plan.resultExpressions, groupingAttrs ++ plan.aggregateAttributes)
        else Right(Nil)
      raw <- if (isPartial) Right(None) else TypeSerde.schema(argInput, tz).map(Some(_))
    } yield {
      val b = proto.Aggregate.newBuilder().setMode(m)
      grouping.zip(plan.groupingExpressions).foreach { case (e, ne) =>
        b.addGrouping(e)
        b.addGroupingNames(TypeSerde.name(ne.name))
      }
      functions.foreach(b.addFunctions)
      raw.foreach(b.setRawInputSchema)
      results.zip(plan.resultExpressions).foreach { case (e, ne) =>
        b.addResultExprs(e)
        b.addResultNames(TypeSerde.name(ne.name))
      }
      if (m == proto.AggregateMode.AGGREGATE_MODE_PARTIAL && groupingAttrs.nonEmpty && gateKeepsAnswer(aggs))
        b.setAdaptive(adaptive(conf))
      if (
        m != proto.AggregateMode.AGGREGATE_MODE_PARTIAL && groupingAttrs.nonEmpty &&
        EmberConf.AGG_RADIX_ENABLED.get(conf)
      )
        b.setRadix(
          proto.RadixMerge
            .newBuilder()
            .setMinGroups(EmberConf.AGG_RADIX_MIN_GROUPS.get(conf))
            .setFirstSeenOrder(EmberConf.AGG_RADIX_FIRST_SEEN_ORDER.get(conf))
        )
      op(_.setAggregate(b))
    }
  }

  /**
   * Passing rows through changes how the final aggregate associates additions: (a + b) + (c + d) becomes
   * ((a + b) + c) + d across tasks. Exact for counts, min/max, first/last and wrapping integer sums; not for
   * floating-point sums and averages (the last bits differ) nor decimal ones (whether an intermediate sum
   * overflows to NULL depends on the association), which therefore always combine.
   */
  private def gateKeepsAnswer(aggs: Seq[AggregateExpression]): Boolean =
    !aggs.map(_.aggregateFunction).exists {
      case s: Sum => s.dataType == DoubleType || s.dataType.isInstanceOf[DecimalType]
      case _: Average => true
      case _ => false
    }

  private def adaptive(conf: SQLConf): proto.AdaptivePartial =
    proto.AdaptivePartial
      .newBuilder()
      .setEnabled(EmberConf.AGG_ADAPTIVE_ENABLED.get(conf))
      .setMinRows(EmberConf.AGG_ADAPTIVE_MIN_ROWS.get(conf))
      .setMinReduction(EmberConf.AGG_ADAPTIVE_MIN_REDUCTION.get(conf))
      .setPrecision(EmberConf.AGG_ADAPTIVE_PRECISION.get(conf).toInt)
      .setForcePassThrough(EmberConf.AGG_ADAPTIVE_FORCE_PASS_THROUGH.get(conf))
      .setFixedProbe(EmberConf.AGG_ADAPTIVE_FIXED_PROBE.get(conf))
      .build()

  /**
   * Spark's sort aggregate sees each group's rows in the order its sort left them; the native hash aggregate
   * sees them in input order. Only functions whose result cannot depend on that order run natively: counts,
   * min/max, integral sums that wrap around (an ANSI overflow error depends on the order of the additions;
   * double sums round differently; first/last pick different rows). Without grouping keys there is no sort:
   * Spark's aggregate sees its child's order, as the native one does, so every function may run natively.
   */
  private def orderInsensitive(plan: SortAggregateExec): Either[String, Unit] =
    if (plan.groupingExpressions.isEmpty) Right(())
    else orderInsensitiveFunctions(plan)

  private def orderInsensitiveFunctions(plan: SortAggregateExec): Either[String, Unit] =
    plan.aggregateExpressions.map(_.aggregateFunction).collectFirst {
      case f: Sum
          if !(f.child.dataType.isInstanceOf[IntegralType] && f.evalContext.evalMode == EvalMode.LEGACY) =>
        f
      case f @ (_: Average | _: First | _: Last) => f
    } match {
      case Some(f) =>
        Left(
          s"sort aggregate with ${f.prettyName}(${f.children.head.dataType.simpleString}): its result depends on " +
            "the order Spark's sort leaves rows in"
        )
      case None => Right(())
    }

  /**
   * The input of the native (hash) aggregate: a sort aggregate's child without the sort Spark put under it
   * for the aggregate's sake (it is not needed by a hash aggregate).
   */
  def unsortedChild(plan: BaseAggregateExec): SparkPlan = {
    val required = plan.requiredChildOrdering.headOption.getOrElse(Nil)
    def same(order: Seq[org.apache.spark.sql.catalyst.expressions.SortOrder]) =
      required.nonEmpty && order.size == required.size &&
        order.zip(required).forall { case (a, b) => a.semanticEquals(b) }
    plan match {
      case _: SortAggregateExec =>
        plan.child match {
          case s: SortExec if !s.global && same(s.sortOrder) => s.child
          case s: EmberSortExec if !s.global && same(s.sortOrder) => s.child
          case other => other
        }
      case _ => plan.child
    }
  }

  /** Test knobs: run only one side natively, to build mixed native/Spark plans. */
  def sideEnabled(plan: BaseAggregateExec, conf: SQLConf): Either[String, Unit] = {
    val merging = plan.aggregateExpressions.exists(e => e.mode == Final || e.mode == PartialMerge) ||
      (plan.aggregateExpressions.isEmpty && plan.requiredChildDistributionExpressions.isDefined)
    EmberConf.AGG_NATIVE_SIDES.get(conf) match {
      case "partial" if merging => Left(s"${EmberConf.AGG_NATIVE_SIDES.key} is partial")
      case "final" if !merging => Left(s"${EmberConf.AGG_NATIVE_SIDES.key} is final")
      case _ => Right(())
    }
  }
}
