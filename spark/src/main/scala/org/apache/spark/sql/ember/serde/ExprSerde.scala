package org.apache.spark.sql.ember.serde

import java.math.BigInteger

import com.google.protobuf.{Descriptors, Message}

import org.apache.spark.sql.catalyst.expressions.{Left => _, Right => _, _}
import org.apache.spark.sql.catalyst.optimizer.NormalizeNaNAndZero
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types._
import org.apache.spark.sql.catalyst.util.ArrayData
import org.apache.spark.unsafe.types.UTF8String
import org.ember.{proto, EmberConf}

/**
 * Catalyst expressions → proto expressions bound to an operator's input, or the reason one cannot run
 * natively. Arithmetic goes through [[ArithmeticSupport]], a pre-filter that phrases a reason early; casts ask
 * the engine itself ([[CastSupport]]). The engine has the last word on every converted operator
 * ([[EngineSupport]]), so a pre-filter that lets too much through costs a fallback on the driver, never a task.
 */
object ExprSerde {

  type Result = Either[String, proto.Expr]

  private def wrap(f: proto.Expr.Builder => proto.Expr.Builder): proto.Expr =
    f(proto.Expr.newBuilder()).build()

  def evalMode(mode: EvalMode.Value): proto.EvalMode = mode match {
    case EvalMode.ANSI => proto.EvalMode.ANSI
    case EvalMode.TRY => proto.EvalMode.TRY
    case _ => proto.EvalMode.LEGACY
  }

  /** [[convert]] of each expression; the first reason if any cannot be converted. */
  def convertAll(exprs: Seq[Expression], input: Seq[Attribute]): Either[String, Seq[proto.Expr]] =
    convertAllUnchecked(exprs, input).flatMap(xs =>
      xs.foldLeft[Either[String, Unit]](Right(()))((r, x) => r.flatMap(_ => checkDepth(x).map(_ => ())))
        .map(_ => xs)
    )

  /**
   * The expression as a proto bound to `input`, or why it stays in Spark: among the reasons, an expression
   * nested deeper than `spark.ember.expression.maxDepth` (native code recurses once per level on the task
   * thread's stack). AND / OR chains count as balanced trees, which is how they are serialized.
   */
  def convert(expr: Expression, input: Seq[Attribute]): Result =
    convertUnchecked(expr, input).flatMap(checkDepth)

  private def checkDepth(e: proto.Expr): Result = {
    val max = EmberConf.EXPRESSION_MAX_DEPTH.get()
    val d = depth(e)
    if (d > max) {
      Left(
        s"expression nested $d levels deep, deeper than ${EmberConf.EXPRESSION_MAX_DEPTH.key} ($max): native " +
          "code would recurse that deep on the task thread's stack"
      )
    } else Right(e)
  }

  /** Expr messages on the longest path from `m` down (nested messages of other types count 0). */
  def depth(m: Message): Int = {
    var deepest = 0
    val fields = m.getAllFields.entrySet.iterator
    while (fields.hasNext) {
      val field = fields.next()
      if (field.getKey.getJavaType == Descriptors.FieldDescriptor.JavaType.MESSAGE) {
        field.getValue match {
          case list: java.util.List[_] =>
            list.forEach(v => deepest = math.max(deepest, depth(v.asInstanceOf[Message])))
          case v: Message => deepest = math.max(deepest, depth(v))
          case _ =>
        }
      }
    }
    deepest + (if (m.isInstanceOf[proto.Expr]) 1 else 0)
  }

  private def convertAllUnchecked(
      exprs: Seq[Expression],
      input: Seq[Attribute]
  ): Either[String, Seq[proto.Expr]] = {
    val out = exprs.map(e => convertUnchecked(e, input))
    out.collectFirst { case Left(r) => r } match {
      case Some(r) => Left(r)
      case None => Right(out.map(_.toOption.get))
    }
  }

  /**
   * The operands of a chain of `AND`s (`and`) or of `OR`s, left to right: `a AND (b AND c) AND d` → a, b, c, d.
   * Iterative, so a chain of thousands does not recurse.
   */
  private def chain(e: Expression, and: Boolean): Seq[Expression] = {
    val out = scala.collection.mutable.ArrayBuffer.empty[Expression]
    var todo: List[Expression] = e :: Nil
    while (todo.nonEmpty) {
      val head = todo.head
      todo = todo.tail
      head match {
        case And(l, r) if and => todo = l :: r :: todo
        case Or(l, r) if !and => todo = l :: r :: todo
        case other => out += other
      }
    }
    out.toSeq
  }

  /**
   * A chain of `AND`s or `OR`s as a balanced tree of the binary proto operators, depth log2(n) rather than n:
   * the same result, since both are associative in three-valued logic, and the same evaluation, since the
   * native operators (like Spark's) evaluate their right side only on rows the left side does not decide, so
   * operands are still evaluated left to right up to the first deciding one, whatever the grouping.
   */
  private def balanced(operands: IndexedSeq[proto.Expr], and: Boolean): proto.Expr = {
    def build(from: Int, until: Int): proto.Expr =
      if (until - from == 1) operands(from)
      else {
        val mid = (from + until) >>> 1
        val (l, r) = (build(from, mid), build(mid, until))
        if (and) wrap(_.setAnd(proto.And.newBuilder().setLeft(l).setRight(r)))
        else wrap(_.setOr(proto.Or.newBuilder().setLeft(l).setRight(r)))
      }
    build(0, operands.size)
  }

  /** Set while an operator that lets Spark evaluate expressions inside its native plan converts its own. */
  private val jvmAllowed = new ThreadLocal[java.lang.Boolean] {
    override def initialValue(): java.lang.Boolean = false
  }

  /**
   * `f`, where an expression the engine has no kernel for is evaluated by Spark's own code inside the native
   * plan (a `JvmExpr`, see [[jvm]]) instead of sending the operator to Spark
   * (`spark.ember.expression.jvm.enabled`).
   */
  def withJvmExpressions[T](f: => T): T =
    if (!EmberConf.JVM_EXPRESSIONS.get() || jvmRefused.get()) f
    else {
      val before = jvmAllowed.get()
      jvmAllowed.set(true)
      try f
      finally jvmAllowed.set(before)
    }

  /** Set where the JVM path was measured to lose against the operator falling back (see [[withoutJvmExpressions]]). */
  private val jvmRefused = new ThreadLocal[java.lang.Boolean] {
    override def initialValue(): java.lang.Boolean = false
  }

  /**
   * `f`, converting without JVM expressions even where the operators inside would use them: a top-k's sort keys,
   * evaluated for every input row, lose to Spark's own top-k (docs/benchmarks.md, "Expressions evaluated by Spark
   * inside the native plan", q5).
   */
  def withoutJvmExpressions[T](f: => T): T = {
    val (allowed, refused) = (jvmAllowed.get(), jvmRefused.get())
    jvmAllowed.set(false)
    jvmRefused.set(true)
    try f
    finally {
      jvmAllowed.set(allowed)
      jvmRefused.set(refused)
    }
  }

  private def convertUnchecked(expr: Expression, input: Seq[Attribute]): Result =
    text(expr, input).getOrElse(nodeOrJvm(expr, input))

  private def nodeOrJvm(expr: Expression, input: Seq[Attribute]): Result =
    convertNode(expr, input) match {
      case Left(reason) if jvmAllowed.get() => jvm(expr, input).left.map(why => s"$reason ($why)")
      case native => native
    }

  /** Set while the parts of a `Text` convert: they belong to it (one `Text` per text-reading subtree). */
  private val inText = new ThreadLocal[java.lang.Boolean] {
    override def initialValue(): java.lang.Boolean = false
  }

  private def mentionsString(dt: DataType): Boolean = dt.existsRecursively(_.isInstanceOf[StringType])

  /** `CAST(binary AS STRING)`: Spark keeps the bytes as they are, UTF-8 or not. */
  private def textFromBytes(e: Expression): Boolean = e match {
    case c: Cast => c.child.dataType == BinaryType && c.dataType.isInstanceOf[StringType]
    case _ => false
  }

  /**
   * `expr` as a `Text` where it is a function or cast that reads or makes strings: converted over the columns it
   * reads, with Spark's own expression as its twin, which the engine runs over a batch whose strings are not
   * valid UTF-8 (its string kernels take valid UTF-8; Spark's `UTF8String` any bytes). That lets a plan with
   * string functions carry strings as bytes (proto `Text`). None where it converts as usual: not such a
   * function, or already inside a `Text`. A reason where it reads strings and Spark's twin cannot be made
   * (nondeterministic, not serializable): it stays in Spark rather than fail a task on invalid UTF-8. An
   * expression that makes strings from bytes (`CAST(binary AS STRING)` inside it, a JVM expression of a string)
   * gets the twin too where it can, for a batch where a string made is not valid UTF-8. `CAST(binary AS STRING)`
   * alone is no `Text`: it only moves bytes, which a plan carrying strings as bytes keeps as they are.
   */
  private def text(expr: Expression, input: Seq[Attribute]): Option[Result] = {
    // A null test of an array of strings (`split(s, ',') IS NULL`) too: arrays reach no other non-function.
    val isText = !textFromBytes(expr) && (FunctionSerde.handles(expr) || expr.isInstanceOf[Cast] ||
      ((expr.isInstanceOf[IsNull] || expr.isInstanceOf[IsNotNull]) && expr.children.head.dataType
        .isInstanceOf[ArrayType])) &&
      (mentionsString(expr.dataType) || expr.children.exists(c => mentionsString(c.dataType)))
    if (
      !EmberConf.STRINGS_AS_BYTES.get() || inText.get() || !isText || expr.exists(
        _.isInstanceOf[BoundReference]
      )
    )
      return None
    val refs = expr.references.toSeq.sortBy(a => input.indexWhere(_.exprId == a.exprId))
    if (refs.exists(a => input.indexWhere(_.exprId == a.exprId) < 0)) return None
    // An expression of no column (`uuid()`, `CAST(rand() AS STRING)`) reads one it ignores, for the row count.
    val reads =
      if (refs.nonEmpty) refs
      else
        input
          .find(a => !mentionsString(a.dataType) && TypeSerde.convert(a.dataType, "UTC", false).isRight)
          .toSeq
    if (reads.isEmpty) return None
    inText.set(true)
    val native =
      try nodeOrJvm(expr, reads)
      finally inText.set(false)
    native match {
      case Left(reason) => Some(Left(reason))
      case Right(n) if n.hasJvm => None // Spark's expression already: reads strings as bytes itself
      case Right(n) =>
        def twin = jvmUnchecked(expr, reads).map(j => Some(j.getJvm.toBuilder.clearChildren().build()))
        val spark =
          if (reads.exists(a => mentionsString(a.dataType))) twin
          else if (expr.exists(textFromBytes) || jvmExpressions(n).nonEmpty) Right(twin.toOption.flatten)
          else Right(None)
        Some(spark match {
          // Without the twin a batch of invalid UTF-8 would fail the task where Spark answers: Spark runs it.
          case Left(why) =>
            Left(
              s"${expr.prettyName} reads strings, which may hold invalid UTF-8, and has no Spark twin for them " +
                s"($why); ${EmberConf.STRINGS_AS_BYTES.key}=false runs it natively, failing on invalid UTF-8"
            )
          case Right(twin) =>
            convertAllUnchecked(reads, input).map { children =>
              val b = proto.Text.newBuilder().setNative(n)
              children.foreach(b.addChildren)
              twin.foreach(b.setSpark)
              wrap(_.setText(b))
            }
        })
    }
  }

  /**
   * `expr` as a `JvmExpr`: Spark's expression bound to the columns it reads, which the engine evaluates and hands
   * over per batch. Only what Spark itself evaluates row by row from those columns alone: deterministic, no
   * subquery, aggregate, generator or otherwise unevaluable part, types the engine carries (no arrays).
   */
  private def jvm(expr: Expression, input: Seq[Attribute]): Result =
    if (!EmberConf.JVM_EXPRESSIONS.get()) Left("JVM expressions are off") else jvmUnchecked(expr, input)

  /** [[jvm]] whether JVM expressions are on or not (a `Text`'s twin, run over invalid UTF-8 only, is not one). */
  private def jvmUnchecked(withSubqueries: Expression, input: Seq[Attribute]): Result = {
    // A scalar subquery's value is a literal here as in `convertNode`: a NULL placeholder before Spark has it,
    // which never runs (the operator converts again once the value is in).
    val expr = withSubqueries.transform { case s: org.apache.spark.sql.execution.ScalarSubquery =>
      Literal(SubqueryValue.of(s).orNull, s.dataType)
    }
    val tz = SQLConf.get.sessionLocalTimeZone
    def typ(dt: DataType) = TypeSerde.convert(dt, tz, arrays = false)
    val refs = expr.references.toSeq.sortBy(a => input.indexWhere(_.exprId == a.exprId))
    val unfit = expr.collectFirst {
      case e: PlanExpression[_] => s"${e.prettyName} is a subquery"
      case e: Unevaluable if !e.isInstanceOf[Attribute] => s"${e.prettyName} is not evaluable"
      case e: aggregate.AggregateFunction => s"${e.prettyName} is an aggregate"
      case e: Generator => s"${e.prettyName} is a generator"
    }
    if (unfit.isDefined) Left(unfit.get)
    else if (!expr.deterministic) Left("not deterministic")
    else if (refs.exists(a => input.indexWhere(_.exprId == a.exprId) < 0))
      Left("reads a column not in the input")
    else
      for {
        rt <- typ(expr.dataType)
        // An expression of no column still needs the batch's row count: it gets one column it ignores.
        read <-
          if (refs.nonEmpty) Right(refs)
          else input.find(a => typ(a.dataType).isRight).map(Seq(_)).toRight("reads no column")
        children <- read.foldLeft[Either[String, Seq[proto.Expr]]](Right(Nil)) { (acc, a) =>
          acc.flatMap(cs => typ(a.dataType).flatMap(_ => convertNode(a, input)).map(cs :+ _))
        }
        // Spark's expressions are serializable; one that is not (a UDF closing over something) stays in Spark.
        bytes <- scala.util
          .Try(
            org.apache.spark.network.util.JavaUtils.bufferToArray(
              org.apache.spark.SparkEnv.get.closureSerializer
                .newInstance()
                .serialize[Expression](BindReferences.bindReference(expr, refs))
            )
          )
          .toEither
          .left
          .map(e => s"not serializable: $e")
      } yield {
        val b = proto.JvmExpr
          .newBuilder()
          .setExpression(com.google.protobuf.ByteString.copyFrom(bytes))
          .setResultType(rt)
          .setNullable(expr.nullable)
          .setName(scala.util.Try(expr.sql).getOrElse(expr.prettyName))
        children.foreach(b.addChildren)
        wrap(_.setJvm(b))
      }
  }

  /** The SQL text of every expression in `m` (an operator or expression proto) that Spark evaluates on the JVM. */
  def jvmExpressions(m: Message): Seq[String] = {
    val out = scala.collection.mutable.ArrayBuffer.empty[String]
    def walk(m: Message): Unit = {
      m match {
        case e: proto.Expr if e.hasJvm => out += e.getJvm.getName
        case _ =>
      }
      // A `Text`'s twin runs only over invalid UTF-8: not among the expressions Spark evaluates.
      val parts = m match {
        case t: proto.Text => t.toBuilder.clearSpark().build().getAllFields.values
        case _ => m.getAllFields.values
      }
      parts.forEach {
        case list: java.util.List[_] => list.forEach { case v: Message => walk(v); case _ => }
        case v: Message => walk(v)
        case _ =>
      }
    }
    walk(m)
    out.toSeq
  }

  private def convertNode(expr: Expression, input: Seq[Attribute]): Result = {
    val tz = SQLConf.get.sessionLocalTimeZone
    def typ(dt: DataType) = TypeSerde.convert(dt, tz, arrays = true)
    def rec(e: Expression) = convertUnchecked(e, input)
    def both(l: Expression, r: Expression)(f: (proto.Expr, proto.Expr) => proto.Expr): Result =
      for { a <- rec(l); b <- rec(r) } yield f(a, b)
    def hash(h: HashExpression[_], function: proto.HashFunction, seed: Long): Result =
      h.children.find(c => !hashable(c.dataType)) match {
        case Some(c) => Left(s"${h.prettyName} of ${c.dataType.simpleString} is not supported")
        case None =>
          convertAllUnchecked(h.children, input).map { args =>
            val b = proto.Hash.newBuilder().setFunction(function).setSeed(seed)
            args.foreach(b.addChildren)
            wrap(_.setHash(b))
          }
      }

    typ(expr.dataType) match {
      case Left(reason) => return Left(s"${expr.prettyName}: $reason")
      case _ =>
    }

    expr match {
      case a: Attribute =>
        val idx = input.indexWhere(_.exprId == a.exprId)
        if (idx < 0) Left(s"column ${a.name} is not in the operator's input")
        else
          typ(a.dataType).map(t =>
            wrap(_.setColumn(proto.ColumnRef.newBuilder().setIndex(idx).setType(t).setNullable(a.nullable)))
          )

      case b: BoundReference =>
        typ(b.dataType).map(t =>
          wrap(
            _.setColumn(proto.ColumnRef.newBuilder().setIndex(b.ordinal).setType(t).setNullable(b.nullable))
          )
        )

      case Alias(child, _) => rec(child)

      case l: Literal => literal(l.value, l.dataType, tz).map(lit => wrap(_.setLiteral(lit)))

      // A scalar subquery's value is a literal of the plan that runs after the subquery has: before that (the
      // support check on the driver) a typed NULL stands for it, and EmberBlock rebuilds the operator once
      // the result is in (`EmberExec.boundOperator`), so the placeholder never executes.
      case s: org.apache.spark.sql.execution.ScalarSubquery =>
        literal(SubqueryValue.of(s).orNull, s.dataType, tz).map(lit => wrap(_.setLiteral(lit)))

      // Spark evaluates nanvl's second argument only where the first is NaN (it may raise, `c1 / c2` with ANSI):
      // the native CASE evaluates its branch on those rows alone (NULL is not NaN: the ELSE keeps it).
      case n: NaNvl => rec(CaseWhen(Seq((IsNaN(n.left), n.right)), Some(n.left)))

      // Spark's built-in functions: one registry, FunctionSerde (before BinaryArithmetic, which matches Pmod).
      case f if FunctionSerde.handles(f) => FunctionSerde.convert(f, tz, rec, typ)

      case c: BinaryComparison if c.left.dataType != c.right.dataType =>
        Left(s"comparison of ${c.left.dataType.simpleString} with ${c.right.dataType.simpleString}")
      case c: BinaryComparison if !orderable(c.left.dataType) =>
        Left(s"comparison of ${c.left.dataType.simpleString} is not supported")
      case c: BinaryComparison =>
        val op = c match {
          case _: EqualTo => proto.CmpOp.EQ
          case _: EqualNullSafe => proto.CmpOp.EQ_NULL_SAFE
          case _: LessThan => proto.CmpOp.LT
          case _: LessThanOrEqual => proto.CmpOp.LT_EQ
          case _: GreaterThan => proto.CmpOp.GT
          case _: GreaterThanOrEqual => proto.CmpOp.GT_EQ
          case other => return Left(s"comparison ${other.prettyName} is not supported")
        }
        both(c.left, c.right)((l, r) =>
          wrap(_.setComparison(proto.Comparison.newBuilder().setOp(op).setLeft(l).setRight(r)))
        )

      case _: And =>
        convertAllUnchecked(chain(expr, and = true), input).map(xs => balanced(xs.toIndexedSeq, and = true))
      case _: Or =>
        convertAllUnchecked(chain(expr, and = false), input).map(xs => balanced(xs.toIndexedSeq, and = false))
      case Not(c) => rec(c).map(x => wrap(_.setNot(proto.Not.newBuilder().setChild(x))))
      case IsNull(c) => rec(c).map(x => wrap(_.setIsNull(proto.IsNull.newBuilder().setChild(x))))
      case IsNotNull(c) => rec(c).map(x => wrap(_.setIsNotNull(proto.IsNotNull.newBuilder().setChild(x))))

      case In(value, list) if !orderable(value.dataType) =>
        Left(s"IN over ${value.dataType.simpleString} is not supported")
      case In(value, list)
          if list.forall(_.isInstanceOf[Literal]) && list.forall(_.dataType == value.dataType) =>
        for {
          v <- rec(value)
          items <- convertAllUnchecked(list, input)
        } yield {
          val b = proto.In.newBuilder().setValue(v)
          items.foreach(b.addList)
          wrap(_.setIn(b))
        }
      case In(_, _) => Left("IN with non-literal or differently typed list items is not supported")
      case InSet(value, set) if orderable(value.dataType) =>
        rec(In(value, set.toSeq.map(v => Literal.create(v, value.dataType))))
      case InSet(value, _) => Left(s"IN over ${value.dataType.simpleString} is not supported")

      case CaseWhen(branches, elseValue) =>
        for {
          whens <- convertAllUnchecked(branches.map(_._1), input)
          thens <- convertAllUnchecked(branches.map(_._2), input)
          els <- elseValue.map(rec(_).map(Some(_))).getOrElse(Right(None))
          rt <- typ(expr.dataType)
        } yield {
          val b = proto.CaseWhen.newBuilder().setResultType(rt)
          whens.foreach(b.addWhen)
          thens.foreach(b.addThen)
          els.foreach(b.setElseExpr)
          wrap(_.setCaseWhen(b))
        }
      case If(p, t, f) => rec(CaseWhen(Seq(p -> t), Some(f)))

      case Coalesce(children) =>
        for {
          args <- convertAllUnchecked(children, input)
          rt <- typ(expr.dataType)
        } yield {
          val b = proto.Coalesce.newBuilder().setResultType(rt)
          args.foreach(b.addChildren)
          wrap(_.setCoalesce(b))
        }

      // hash() / xxhash64(): the native fold is HashExpression's (seed chaining, NULLs skipped, -0.0 and NaN
      // normalized, decimals by precision); nested types and other collations stay in Spark.
      case h: Murmur3Hash => hash(h, proto.HashFunction.MURMUR3, h.seed.toLong)
      case h: XxHash64 => hash(h, proto.HashFunction.XXHASH64, h.seed)

      case a: BinaryArithmetic =>
        ArithmeticSupport.check(a).flatMap { op =>
          for {
            l <- rec(a.left)
            r <- rec(a.right)
            rt <- typ(a.dataType)
          } yield wrap(
            _.setArithmetic(
              proto.Arithmetic
                .newBuilder()
                .setOp(op)
                .setLeft(l)
                .setRight(r)
                .setResultType(rt)
                .setEvalMode(evalMode(a.evalMode))
                .setQueryContext(QueryContexts.id(a))
            )
          )
        }

      case u @ UnaryMinus(child, failOnError) =>
        ArithmeticSupport.checkNegate(u).flatMap { _ =>
          rec(child).map(c =>
            wrap(
              _.setUnaryMinus(
                proto.UnaryMinus
                  .newBuilder()
                  .setChild(c)
                  .setEvalMode(if (failOnError) proto.EvalMode.ANSI else proto.EvalMode.LEGACY)
                  .setQueryContext(QueryContexts.id(u))
              )
            )
          )
        }

      // Spark's normalized float grouping / join keys (NormalizeFloatingNumbers): the tag is only a marker.
      case KnownFloatingPointNormalized(child) => rec(child)
      // DecimalAggregates' rewrite of sum/avg over small decimals into long arithmetic.
      case UnscaledValue(child) =>
        rec(child).map(c => wrap(_.setUnscaledValue(proto.UnscaledValue.newBuilder().setChild(c))))
      case m: MakeDecimal =>
        rec(m.child).map(c =>
          wrap(
            _.setMakeDecimal(
              proto.MakeDecimal
                .newBuilder()
                .setChild(c)
                .setPrecision(m.precision)
                .setScale(m.scale)
                .setNullOnOverflow(m.nullOnOverflow)
            )
          )
        )
      case NormalizeNaNAndZero(child) =>
        rec(child).map(c => wrap(_.setNormalizeFloat(proto.NormalizeFloat.newBuilder().setChild(c))))

      case c: Cast =>
        val zone = c.timeZoneId.getOrElse(tz)
        CastSupport.check(c.child.dataType, c.dataType, c.evalMode, zone).flatMap { _ =>
          for {
            child <- rec(c.child)
            to <- typ(c.dataType)
          } yield wrap(
            _.setCast(
              proto.Cast
                .newBuilder()
                .setChild(child)
                .setTo(to)
                .setEvalMode(evalMode(c.evalMode))
                .setTimezone(zone)
                .setQueryContext(QueryContexts.id(c))
            )
          )
        }

      case other => Left(s"expression ${other.prettyName} is not supported")
    }
  }

  /**
   * The Catalyst classes the match in `convertUnchecked` converts itself (not through [[FunctionSerde]]), for
   * docs/expressions.md: class name → the types it covers. Keep in step with the match.
   */
  val coreClasses: Map[String, String] = {
    val cmp = "orderable types (not nested, UTF8_BINARY strings)"
    val arith = "numeric and decimal types (see docs/compatibility.md)"
    Seq(
      classOf[EqualTo] -> cmp,
      classOf[EqualNullSafe] -> cmp,
      classOf[LessThan] -> cmp,
      classOf[LessThanOrEqual] -> cmp,
      classOf[GreaterThan] -> cmp,
      classOf[GreaterThanOrEqual] -> cmp,
      classOf[And] -> "boolean",
      classOf[Or] -> "boolean",
      classOf[Not] -> "boolean",
      classOf[IsNull] -> "any",
      classOf[IsNotNull] -> "any",
      classOf[In] -> "literal lists of orderable types",
      classOf[CaseWhen] -> "any result type Ember supports",
      classOf[If] -> "any result type Ember supports",
      classOf[Coalesce] -> "any result type Ember supports",
      classOf[Murmur3Hash] -> "atomic types",
      classOf[XxHash64] -> "atomic types",
      classOf[Add] -> arith,
      classOf[Subtract] -> arith,
      classOf[Multiply] -> arith,
      classOf[Divide] -> arith,
      classOf[Remainder] -> arith,
      classOf[IntegralDivide] -> arith,
      classOf[UnaryMinus] -> arith,
      classOf[Cast] -> "the casts CastSupport accepts (see docs/compatibility.md)"
    ).map { case (c, t) => c.getName -> t }.toMap
  }

  /** Types whose comparisons, sort order and IN-membership the native side implements as Spark does. */
  def orderable(dt: DataType): Boolean = dt match {
    case BooleanType | ByteType | ShortType | IntegerType | LongType | FloatType | DoubleType | BinaryType |
        DateType | TimestampType | TimestampNTZType =>
      true
    case _: DecimalType => true
    case s: StringType => s.isUTF8BinaryCollation
    case _ => false
  }

  /** Types whose `Murmur3Hash` / `XxHash64` value hashes the native side computes exactly as Spark does. */
  def hashable(dt: DataType): Boolean = dt == NullType || ShuffleSerde.hashable(dt)

  def literal(value: Any, dt: DataType, tz: String): Either[String, proto.Literal] = {
    TypeSerde.convert(dt, tz, arrays = true).flatMap { t =>
      val b = proto.Literal.newBuilder().setType(t)
      if (value == null) return Right(b.setIsNull(true).build())
      (dt, value) match {
        case (BooleanType, v: Boolean) => Right(b.setBoolValue(v).build())
        case (ByteType, v: Byte) => Right(b.setLongValue(v.toLong).build())
        case (ShortType, v: Short) => Right(b.setLongValue(v.toLong).build())
        case (IntegerType, v: Int) => Right(b.setLongValue(v.toLong).build())
        case (LongType, v: Long) => Right(b.setLongValue(v).build())
        case (DateType, v: Int) => Right(b.setLongValue(v.toLong).build())
        case (TimestampType | TimestampNTZType, v: Long) => Right(b.setLongValue(v).build())
        case (FloatType, v: Float) => Right(b.setFloatValue(v).build())
        case (DoubleType, v: Double) => Right(b.setDoubleValue(v).build())
        case (d: DecimalType, v: Decimal) =>
          val unscaled: BigInteger = v.toJavaBigDecimal.setScale(d.scale).unscaledValue()
          Right(b.setDecimalValue(com.google.protobuf.ByteString.copyFrom(unscaled.toByteArray)).build())
        case (_: StringType, v: UTF8String) if v.isValid => Right(b.setStringValue(v.toString).build())
        // Spark's strings are bytes: one that is not UTF-8 goes as its bytes (a Java String would replace them).
        case (_: StringType, v: UTF8String) =>
          Right(b.setBytesValue(com.google.protobuf.ByteString.copyFrom(v.getBytes)).build())
        case (BinaryType, v: Array[Byte]) =>
          Right(b.setBytesValue(com.google.protobuf.ByteString.copyFrom(v)).build())
        case (ArrayType(element, _), v: ArrayData) =>
          val elements = proto.ArrayValue.newBuilder()
          (0 until v.numElements()).foreach { i =>
            literal(if (v.isNullAt(i)) null else v.get(i, element), element, tz) match {
              case Right(lit) => elements.addElements(lit)
              case Left(why) => return Left(why)
            }
          }
          Right(b.setArrayValue(elements).build())
        case _ => Left(s"literal of type ${dt.simpleString} is not supported")
      }
    }
  }
}
