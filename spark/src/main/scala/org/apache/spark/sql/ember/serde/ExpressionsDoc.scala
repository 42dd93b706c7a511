package org.apache.spark.sql.ember.serde

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Left => _, Right => _, _}
import org.apache.spark.sql.catalyst.optimizer.{ReplaceExpressions, RewriteWithExpression}
import org.apache.spark.sql.catalyst.plans.logical.{LeafNode, Project, SubqueryAlias}
import org.apache.spark.sql.internal.SQLConf
import org.ember.proto

/**
 * docs/expressions.md: every function of Spark's `FunctionRegistry.builtin`, native or not and why, decided by
 * the converter's own registries ([[FunctionSerde.registry]], [[ExprSerde.coreClasses]]).
 */
object ExpressionsDoc {
  import org.apache.spark.sql.catalyst.analysis.FunctionRegistry
  import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateFunction

  private val Builder = "ExpressionBuilder"

  /** Builders whose built expression is not named after them (`lpad` of strings builds a StringLPad). */
  val builders: Map[String, String] =
    Map("LPadExpressionBuilder" -> "StringLPad", "RPadExpressionBuilder" -> "StringRPad")

  /**
   * Made literals by Spark's optimizer before any physical plan exists (`ComputeCurrentTime`,
   * `ReplaceCurrentLike`; `TypeOf` is foldable, so constant folding takes it).
   */
  val optimizerLiterals: Set[String] = Set(
    "CurrentDate",
    "CurrentTimestamp",
    "Now",
    "LocalTimestamp",
    "CurrentTimeZone",
    "CurrentTime",
    "CurrentDatabase",
    "CurrentCatalog",
    "CurrentUser",
    "TypeOf"
  ).map("org.apache.spark.sql.catalyst.expressions." + _)

  /** What Spark's documented examples of a function Spark rewrites become, and how many of them run natively. */
  private case class Rewrite(became: Seq[String], native: Int, examples: Int, firstReason: Option[String])

  /**
   * A function Spark rewrites before planning (`RuntimeReplaceable`, an expression builder) is native when what it
   * becomes is: each of Spark's own documented examples of it (`ExpressionInfo.getExamples`), analyzed and replaced
   * as Spark's optimizer replaces it (`ReplaceExpressions`), is converted as a projection (no JVM expressions)
   * and planned by the engine. None when no example is a plain projection.
   */
  private def rewrite(spark: SparkSession, info: ExpressionInfo): Option[Rewrite] = {
    val queries = Option(info.getExamples).toSeq
      .flatMap(_.split("\n"))
      .map(_.trim)
      .filter(_.startsWith("> SELECT"))
      .map(_.stripPrefix(">").trim.stripSuffix(";"))
    val outcomes = queries.flatMap { q =>
      scala.util.Try(spark.sql(q).queryExecution.analyzed).toOption.flatMap { analyzed =>
        // Spark's own replacement, and the projections its common-subexpression `With` becomes (`nullif`).
        val replaced = RewriteWithExpression(ReplaceExpressions(analyzed))
        val projects = replaced.collect { case p: Project => p }
        // Only projections over constant rows: a generator's or an aggregate's example says nothing here.
        val other = replaced.find {
          case _: Project | _: SubqueryAlias | _: LeafNode => false
          case _ => true
        }
        if (projects.isEmpty || other.isDefined) None
        else {
          val planned = projects.foldLeft[Either[String, Unit]](Right(())) { (acc, p) =>
            acc.flatMap { _ =>
              val input = p.child.output
              for {
                schema <- TypeSerde.schema(input, SQLConf.get.sessionLocalTimeZone)
                op <- ProjectSerde.projection(p.projectList, input)
                leaf = proto.Operator
                  .newBuilder()
                  .setInput(proto.Input.newBuilder().setInputIndex(0).setSchema(schema))
                _ <- EngineSupport.ask(op.toBuilder.addChildren(leaf).build())
              } yield ()
            }
          }
          val became = projects.head.projectList.map {
            case Alias(c, _) => c.prettyName
            case other => other.prettyName
          }
          Some((became, planned.left.toOption))
        }
      }
    }
    if (outcomes.isEmpty) None
    else {
      val native = outcomes.filter(_._2.isEmpty)
      Some(
        Rewrite(
          outcomes.flatMap(_._1).distinct.sorted,
          native.size,
          outcomes.size,
          // One line of a table cell.
          outcomes.flatMap(_._2).headOption.map(_.linesIterator.next().replace("|", "\\|").take(160))
        )
      )
    }
  }

  private def status(spark: SparkSession, info: ExpressionInfo, className: String): (String, String) = {
    val cls = scala.util.Try(Class.forName(className)).toOption
    def is[T](implicit t: scala.reflect.ClassTag[T]) = cls.exists(t.runtimeClass.isAssignableFrom)
    // `startswith` is registered as StartsWithExpressionBuilder, which builds a StartsWith: the built class decides.
    val simple = className.split('.').last
    val built = builders.get(simple).map(c => className.stripSuffix(simple) + c).getOrElse {
      if (className.endsWith(Builder)) className.stripSuffix(Builder) else className
    }
    FunctionSerde.nativeClasses.get(built) match {
      case Some(fn) => ("native", fn.types)
      case None if ExprSerde.coreClasses.contains(className) =>
        ("native", ExprSerde.coreClasses(className))
      case None if FunctionSerde.nativeRewrites.contains(className) =>
        ("native", FunctionSerde.nativeRewrites(className).types)
      case None if optimizerLiterals.contains(className) =>
        (
          "rewritten",
          "Spark's optimizer makes it a literal before planning: native when the literal's type is"
        )
      case None if is[RuntimeReplaceable] || className.endsWith(Builder) =>
        rewrite(spark, info) match {
          case Some(r) if r.native > 0 =>
            val others = r.firstReason.map(why => s"; the others fall back: $why").getOrElse("")
            (
              "native",
              s"rewritten by Spark into ${r.became.mkString(", ")}: ${r.native} of Spark's ${r.examples} " +
                s"examples of it run natively$others"
            )
          case Some(r) =>
            (
              "rewritten",
              s"rewritten by Spark into ${r.became.mkString(", ")}: none of Spark's ${r.examples} examples of it " +
                s"runs natively (${r.firstReason.getOrElse("")})"
            )
          case _ if is[RuntimeReplaceable] =>
            ("rewritten", "Spark replaces it before planning: native when what it becomes is")
          case _ =>
            ("rewritten", "Spark builds another expression from the arguments: native when that one is")
        }
      case None if is[AggregateFunction] => ("aggregate", "see docs/compatibility.md for native aggregates")
      // `lag` / `lead` run in Ember's window operator, as the ranking functions do.
      case None if is[WindowFunction] => ("aggregate", "window function: see docs/compatibility.md (Windows)")
      case None if !is[Nondeterministic] && !is[Unevaluable] && !is[Generator] =>
        (
          "jvm",
          "no native kernel: in any native operator Spark's own code evaluates it inside the native plan " +
            "(`spark.ember.expression.jvm.enabled`) when its arguments and result are types Ember carries (no " +
            "arrays, maps or structs); otherwise its operator falls back"
        )
      case None => ("falls back", "no native kernel yet")
    }
  }

  def markdown(spark: SparkSession): String = {
    val names = FunctionRegistry.builtin.listFunction().map(_.funcName).distinct.sorted
    val entries = names.map { n =>
      val info = FunctionRegistry.builtin.lookupFunction(org.apache.spark.sql.catalyst.FunctionIdentifier(n))
      val className = info.map(_.getClassName).getOrElse("")
      (
        n,
        className,
        info.map(i => status(spark, i, className)).getOrElse(("falls back", "not in the registry"))
      )
    }
    val rows = entries.map { case (n, className, (s, why)) =>
      val escaped = n.replace("|", "\\|")
      s"| `$escaped` | ${className.split('.').last} | $s | $why |"
    }
    val counts = entries.groupBy(_._3._1).map { case (k, v) => s"$k: ${v.size}" }.toSeq.sorted
    (Seq(
      "# Spark's built-in functions in Ember",
      "",
      "Generated by `EmberExpressionsDocsSuite` from the converter's registries (`make docs`); do not edit.",
      "Every function of Spark 4.1.3's `FunctionRegistry.builtin`: `native` runs in the engine, for the argument",
      "types listed (other types fall back with the reason) — the function itself, or what Spark rewrites it into",
      "before planning, checked on Spark's documented examples of it (converted and planned by the engine);",
      "`rewritten` is replaced by Spark before planning (native when what it becomes is); `jvm` is evaluated by",
      "Spark's own code inside the native operator (projections, filters, aggregates, join keys and conditions,",
      "sort keys but a top-k's, shuffle keys, windows, expands), one call per batch; `falls back` sends its",
      "operator back to Spark.",
      "",
      s"Totals: ${counts.mkString(", ")}.",
      "",
      "| Function | Expression | Status | Types / reason |",
      "|---|---|---|---|"
    ) ++ rows).mkString("", "\n", "\n")
  }
}
