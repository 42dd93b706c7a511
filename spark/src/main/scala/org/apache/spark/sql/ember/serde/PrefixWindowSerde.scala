package org.apache.spark.sql.ember.serde

import org.apache.spark.sql.catalyst.expressions.{Left => _, Right => _, _}
import org.apache.spark.sql.catalyst.expressions.aggregate._
import org.apache.spark.sql.execution.window.WindowExec
import org.apache.spark.sql.types._
import org.ember.EmberConf
import org.ember.proto

/**
 * Spark's `WindowExec` → proto `Window` (native `operators/prefix_window`). The shapes below are pre-filtered
 * here to phrase a reason early, after the engine's checks (`native/engine/src/operators/prefix_window/spec.rs`,
 * `frames.rs`, `extrema.rs`); the engine decides, as it plans every converted operator on the driver
 * ([[EngineSupport]]).
 *
 *  - `row_number`, `rank`, `dense_rank`; `lag` / `lead` with an integer literal offset and any default
 *    (`IGNORE NULLS` only for `lag` with a positive offset);
 *  - `sum` / `avg` over integral or floating-point input (LEGACY or ANSI; not `try_sum` / `try_avg`),
 *    `count` (not DISTINCT), `min` / `max` over integral, floating-point, date and timestamp input;
 *  - ROWS frames with literal bounds of every shape; RANGE frames bounded only by UNBOUNDED / CURRENT ROW
 *    (value offsets compare order keys with Spark's per-type arithmetic: not matched natively).
 */
object PrefixWindowSerde extends OperatorSerde[WindowExec] {
  override def enabled: EmberConf.Entry[Boolean] = EmberConf.EXEC_PREFIX_WINDOW

  private def integral(dt: DataType): Boolean = dt match {
    case ByteType | ShortType | IntegerType | LongType => true
    case _ => false
  }

  private def floating(dt: DataType): Boolean = dt == FloatType || dt == DoubleType

  /** `extrema::supported`. */
  private def minMaxType(dt: DataType): Boolean =
    integral(dt) || floating(dt) || dt == DateType || dt == TimestampType || dt == TimestampNTZType

  private def sequence[A](xs: Seq[Either[String, A]]): Either[String, Seq[A]] =
    xs.collectFirst { case Left(r) => r } match {
      case Some(r) => Left(r)
      case None => Right(xs.map(_.toOption.get))
    }

  private def bound(e: Expression, rows: Boolean): Either[String, proto.FrameBound] = {
    val b = proto.FrameBound.newBuilder()
    def offset(v: Long): Either[String, proto.FrameBound] =
      if (v < 0) Right(b.setKind(proto.FrameBoundKind.FRAME_BOUND_KIND_PRECEDING).setOffset(-v).build())
      else if (v == 0) Right(b.setKind(proto.FrameBoundKind.FRAME_BOUND_KIND_CURRENT_ROW).build())
      else Right(b.setKind(proto.FrameBoundKind.FRAME_BOUND_KIND_FOLLOWING).setOffset(v).build())
    e match {
      case UnboundedPreceding =>
        Right(b.setKind(proto.FrameBoundKind.FRAME_BOUND_KIND_UNBOUNDED_PRECEDING).build())
      case UnboundedFollowing =>
        Right(b.setKind(proto.FrameBoundKind.FRAME_BOUND_KIND_UNBOUNDED_FOLLOWING).build())
      case CurrentRow => Right(b.setKind(proto.FrameBoundKind.FRAME_BOUND_KIND_CURRENT_ROW).build())
      case _ if !rows => Left(s"RANGE frame bound $e (value offsets are not supported natively)")
      case Literal(v: Int, IntegerType) => offset(v.toLong)
      case Literal(v: Long, LongType) => offset(v)
      case other => Left(s"ROWS frame bound ${other.sql} is not an integer literal")
    }
  }

  private def frame(f: WindowFrame): Either[String, proto.WindowFrame] = f match {
    case SpecifiedWindowFrame(frameType, lower, upper) =>
      val rows = frameType == RowFrame
      for {
        lo <- bound(lower, rows)
        hi <- bound(upper, rows)
      } yield proto.WindowFrame
        .newBuilder()
        .setFrameType(if (rows) proto.FrameType.FRAME_TYPE_ROWS else proto.FrameType.FRAME_TYPE_RANGE)
        .setLower(lo)
        .setUpper(hi)
        .build()
    case other => Left(s"window frame $other")
  }

  private def intLiteral(e: Expression): Either[String, Long] = e match {
    case Literal(v: Int, IntegerType) => Right(v.toLong)
    case Literal(v: Long, LongType) => Right(v)
    case other => Left(s"window function offset ${other.sql} is not an integer literal")
  }

  /** One window expression (an alias of a `WindowExpression`) over the operator's input. */
  def windowExpr(ne: NamedExpression, input: Seq[Attribute]): Either[String, proto.WindowExpr] = {
    val (we, name) = ne match {
      case Alias(we: WindowExpression, name) => (we, name)
      case other => return Left(s"window expression ${other.sql} is not an aliased window function")
    }
    val tz = org.apache.spark.sql.internal.SQLConf.get.sessionLocalTimeZone
    val b = proto.WindowExpr.newBuilder().setName(TypeSerde.name(name))
    TypeSerde.convert(we.dataType, tz) match {
      case Right(t) => b.setResultType(t)
      case Left(r) => return Left(r)
    }
    def args(es: Seq[Expression]): Either[String, Unit] =
      ExprSerde.convertAll(es, input).map(xs => xs.foreach(b.addArgs))
    def withFrame(fn: proto.WindowFunction): Either[String, proto.WindowExpr] =
      frame(we.windowSpec.frameSpecification).map(f => b.setFunction(fn).setFrame(f).build())

    def offsetFunction(
        f: OffsetWindowFunction,
        inputOffset: Expression,
        lag: Boolean
    ): Either[String, proto.WindowExpr] = {
      val fname = if (lag) "lag" else "lead"
      for {
        offset <- intLiteral(inputOffset)
        _ <-
          if (f.ignoreNulls && offset != 0 && !(lag && offset > 0))
            Left(s"$fname IGNORE NULLS with offset $offset is not supported natively")
          else Right(())
        _ <- f.default match {
          case Literal(null, _) => Right(())
          case d if d.dataType != f.input.dataType && d.dataType != NullType =>
            Left(s"$fname default of type ${d.dataType.simpleString} over ${f.input.dataType.simpleString}")
          case d => ExprSerde.convert(d, input).map(b.setDefaultValue)
        }
        _ <- args(Seq(f.input))
      } yield b
        .setFunction(
          if (lag) proto.WindowFunction.WINDOW_FUNCTION_LAG else proto.WindowFunction.WINDOW_FUNCTION_LEAD
        )
        .setOffset(offset)
        .setIgnoreNulls(f.ignoreNulls)
        .build()
    }

    we.windowFunction match {
      case _: RowNumber => Right(b.setFunction(proto.WindowFunction.WINDOW_FUNCTION_ROW_NUMBER).build())
      case _: Rank => Right(b.setFunction(proto.WindowFunction.WINDOW_FUNCTION_RANK).build())
      case _: DenseRank => Right(b.setFunction(proto.WindowFunction.WINDOW_FUNCTION_DENSE_RANK).build())

      case f: Lag => offsetFunction(f, f.inputOffset, lag = true)
      case f: Lead => offsetFunction(f, f.offset, lag = false)

      case AggregateExpression(_, _, true, _, _) =>
        Left("DISTINCT window aggregates are not supported natively")
      case AggregateExpression(_, _, _, Some(_), _) =>
        Left("FILTER on window aggregates is not supported natively")
      case AggregateExpression(fn, _, _, _, _) =>
        fn match {
          case s: Sum =>
            val t = s.child.dataType
            if (!integral(t) && !floating(t)) Left(s"sum over ${t.simpleString} is not supported natively")
            else if (s.evalContext.evalMode == EvalMode.TRY) Left("try_sum is not supported natively")
            else
              args(Seq(s.child)).flatMap { _ =>
                b.setEvalMode(ExprSerde.evalMode(s.evalContext.evalMode))
                withFrame(proto.WindowFunction.WINDOW_FUNCTION_SUM)
              }
          case a: Average =>
            val t = a.child.dataType
            if (!integral(t) && !floating(t)) Left(s"avg over ${t.simpleString} is not supported natively")
            else if (a.evalMode == EvalMode.TRY) Left("try_avg is not supported natively")
            else
              args(Seq(a.child)).flatMap { _ =>
                b.setEvalMode(ExprSerde.evalMode(a.evalMode))
                withFrame(proto.WindowFunction.WINDOW_FUNCTION_AVG)
              }
          case c: Count =>
            args(c.children).flatMap(_ => withFrame(proto.WindowFunction.WINDOW_FUNCTION_COUNT))
          case m @ (_: Min | _: Max) =>
            val child = m.children.head
            if (!minMaxType(child.dataType))
              Left(s"${m.prettyName} over ${child.dataType.simpleString} is not supported natively")
            else
              args(Seq(child)).flatMap(_ =>
                withFrame(
                  if (m.isInstanceOf[Min]) proto.WindowFunction.WINDOW_FUNCTION_MIN
                  else proto.WindowFunction.WINDOW_FUNCTION_MAX
                )
              )
          case other => Left(s"window aggregate ${other.prettyName} is not supported natively")
        }
      case other => Left(s"window function ${other.prettyName} is not supported natively")
    }
  }

  /**
   * The native window holds a partition's rows in reserved memory and cannot spill them (a partition larger than
   * the pool grants is an error), so when the user asked Spark's window to spill partitions past a row count or
   * a size, Spark's window keeps the operator.
   */
  private def spillThresholds: Either[String, Unit] = {
    val c = org.apache.spark.sql.internal.SQLConf.get
    if (
      c.windowExecBufferSpillThreshold < Int.MaxValue || c.windowExecBufferSpillSizeThreshold < Long.MaxValue
    )
      Left(
        "Spark's window spill threshold is set (spark.sql.windowExec.buffer.spill.threshold / " +
          "spill.size.threshold) and the native window cannot spill a partition"
      )
    else Right(())
  }

  override def convert(plan: WindowExec): Either[String, proto.Operator] = {
    val input = plan.child.output
    for {
      _ <- spillThresholds
      _ <- checkSchema(input)
      _ <- checkSchema(plan.output)
      // Keys and arguments without a kernel are evaluated by Spark inside the native window.
      partition <- ExprSerde.withJvmExpressions(ExprSerde.convertAll(plan.partitionSpec, input))
      order <- SortSerde.sortOrder(plan.orderSpec, input)
      exprs <- ExprSerde.withJvmExpressions(sequence(plan.windowExpression.map(windowExpr(_, input))))
    } yield {
      val b = proto.PrefixWindow
        .newBuilder()
        .setPrefixEnabled(EmberConf.PREFIX_WINDOW_PREFIX_DIFFERENCE.get())
        .setSegmentRows(math.max(1L, EmberConf.PREFIX_WINDOW_SEGMENT_ROWS.get()))
      partition.foreach(b.addPartitionBy)
      order.foreach(b.addOrderBy)
      exprs.foreach(b.addExprs)
      op(_.setPrefixWindow(b))
    }
  }
}
