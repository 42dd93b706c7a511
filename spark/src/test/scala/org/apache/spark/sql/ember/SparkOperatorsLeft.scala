package org.apache.spark.sql.ember

import scala.collection.mutable

import org.apache.spark.sql.classic.DataFrame
import org.apache.spark.sql.ember.execution._
import org.apache.spark.sql.execution._
import org.apache.spark.sql.execution.adaptive.{AdaptiveSparkPlanExec, AQEShuffleReadExec, QueryStageExec}
import org.apache.spark.sql.execution.exchange.ReusedExchangeExec

/**
 * The Spark operators a query keeps in Ember's plan, checked against an allowlist of one line per query (the
 * benchmark suites' yardstick of whole-query native execution).
 *
 * What counts as a Spark operator left in the plan: every node of the final executed plan (after adaptive
 * execution; through query stages and subqueries) that is not an Ember node (an [[EmberExec]] or
 * [[EmberShuffleExchangeExec]] or [[EmberBroadcastExchangeExec]]), except
 *  - wrappers: AdaptiveSparkPlanExec, query stages, AQEShuffleReadExec (adaptive execution's read of a shuffle
 *    stage's partitions, coalesced or split: part of the exchange under it, which is counted itself), reused
 *    exchanges and subqueries, SubqueryExec, SubqueryBroadcastExec, WholeStageCodegenExec, InputAdapter;
 *  - row/columnar transitions anywhere (ColumnarToRowExec, RowToColumnarExec, EmberColumnarToRowExec and
 *    EmberInputExec): they exist because a Spark operator is next to a native one, which is listed itself;
 *  - Parquet scans read natively, i.e. a FileSourceScanExec under an EmberInputExec that
 *    [[NativeParquetScan.unsupported]] accepts.
 * Each one is listed as `NodeClass: reason`: the reasons Ember tagged it with ([[EmberExecRule.fallbackReasons]]),
 * expression ids removed. A scan is `FileSourceScanExec[table]`, its reason either why Ember's reader does not
 * read it or, when no native block reads it, which Spark operator does. Each query's line is the sorted set of
 * those entries (not counted: a join falling back twice in one query is one entry).
 *
 * A query fails when an operator not on its line appears, and also when a listed one disappears (so the list
 * only shrinks as operators become native); the failure prints the query's new line to paste into the
 * allowlist, and the end of the suite prints the whole block.
 */
trait SparkOperatorsLeft extends EmberQueryTest {

  /** The allowlist: `name = entry | entry …`, one line per query. */
  protected def allowlist: String

  private lazy val allowed: Map[String, Seq[String]] = allowlist.linesIterator
    .map(_.trim)
    .filter(_.nonEmpty)
    .map { line =>
      val (q, entries) = line.splitAt(line.indexOf('='))
      q.trim -> entries.drop(1).split(" \\| ").map(_.trim).filter(_.nonEmpty).toSeq
    }
    .toMap

  /**
   * Registers `<dir>/<table>.parquet` as a view per table (through `adapt`), failing with the make target that
   * writes the data when a file is missing.
   */
  protected def registerTables(
      dir: java.nio.file.Path,
      tables: Seq[String],
      target: String,
      adapt: DataFrame => DataFrame = identity
  ): Unit = {
    val missing = tables.filterNot(t => java.nio.file.Files.exists(dir.resolve(s"$t.parquet")))
    assert(
      missing.isEmpty,
      s"no data for ${missing.mkString(", ")} in ${dir.toAbsolutePath}: run `make $target`"
    )
    tables.foreach { t =>
      adapt(spark.read.parquet(dir.resolve(s"$t.parquet").toString)).createOrReplaceTempView(t)
    }
  }

  private val actualLines = mutable.LinkedHashMap.empty[String, String]
  private var changed = false

  override def afterAll(): Unit = {
    try {
      if (changed) {
        val block = actualLines.values.map(l => s"      |$l").mkString("\n")
        // scalastyle:off println
        println(s"${getClass.getSimpleName}: the allowlist as it is now (paste over `allowlist`):\n$block")
        // scalastyle:on println
      }
    } finally super.afterAll()
  }

  /** Fails when the Spark operators `df`'s plan keeps are not exactly `name`'s allowlist line. */
  protected def checkOperatorsLeft(name: String, df: DataFrame): Unit = {
    val actual = SparkOperatorsLeft.of(df.queryExecution.executedPlan)
    val line = s"$name = ${actual.mkString(" | ")}"
    actualLines(name) = line
    val expected = allowed.getOrElse(name, Nil).sorted
    if (actual != expected) {
      changed = true
      val added = actual.diff(expected)
      val gone = expected.diff(actual)
      fail(
        s"$name: the Spark operators left in Ember's plan changed.\n" +
          (if (added.nonEmpty) s"  new (not on the allowlist):\n    ${added.mkString("\n    ")}\n" else "") +
          (if (gone.nonEmpty)
             s"  gone (native now? take them off the list):\n    ${gone.mkString("\n    ")}\n"
           else "") +
          s"  the line to paste into ${getClass.getSimpleName}.allowlist:\n      |$line\n" +
          s"plan:\n${df.queryExecution.executedPlan}"
      )
    }
  }
}

object SparkOperatorsLeft {

  private def isWrapper(p: SparkPlan): Boolean = p match {
    case _: AdaptiveSparkPlanExec | _: QueryStageExec | _: AQEShuffleReadExec | _: ReusedExchangeExec |
        _: ReusedSubqueryExec | _: BaseSubqueryExec | _: WholeStageCodegenExec | _: InputAdapter =>
      true
    case _ => false
  }

  private def isNative(p: SparkPlan): Boolean =
    p.isInstanceOf[EmberExec] || p.isInstanceOf[EmberShuffleExchangeExec] ||
      p.isInstanceOf[EmberBroadcastExchangeExec]

  private def isTransition(p: SparkPlan): Boolean = p match {
    case _: ColumnarToRowTransition | _: RowToColumnarTransition | _: EmberColumnarToRowExec |
        _: EmberInputExec =>
      true
    case _ => false
  }

  /** Every node with its parent, through adaptive plans, query stages and subqueries. */
  private def withParents(root: SparkPlan): Seq[(SparkPlan, Option[SparkPlan])] = {
    val out = mutable.ArrayBuffer.empty[(SparkPlan, Option[SparkPlan])]
    def walk(p: SparkPlan, parent: Option[SparkPlan]): Unit = {
      out += p -> parent
      val kids = p match {
        case a: AdaptiveSparkPlanExec => Seq(a.executedPlan)
        case s: QueryStageExec => Seq(s.plan)
        case other => other.children
      }
      (kids ++ p.subqueries).foreach(walk(_, Some(p)))
    }
    walk(root, None)
    out.toSeq
  }

  private def normalize(reason: String): String = reason.replaceAll("#\\d+L?", "").replaceAll("\\s+", " ")

  /** The Spark operators left in `plan`, as `NodeClass: reason` entries (see the trait's doc). */
  def of(plan: SparkPlan): Seq[String] = {
    val nodes = withParents(plan)
    val parentOf = nodes.collect { case (p, Some(parent)) => (p: AnyRef) -> parent }.toMap
    // The first ancestor that is an operator, looking through wrappers and transitions.
    def consumer(p: SparkPlan): Option[SparkPlan] =
      parentOf.get(p).flatMap(q => if (isWrapper(q) || isTransition(q)) consumer(q) else Some(q))
    nodes
      .flatMap {
        case (p, _) if isNative(p) || isWrapper(p) || isTransition(p) => None
        case (scan: FileSourceScanExec, parent) =>
          val table = scan.relation.location.rootPaths.map(_.getName.stripSuffix(".parquet")).mkString(",")
          val reason = parent match {
            case Some(_: EmberInputExec) =>
              NativeParquetScan.unsupported(scan).map(why => s"Spark's reader: $why")
            case _ =>
              Some(
                s"read by Spark for ${consumer(scan).map(_.getClass.getSimpleName).getOrElse("the driver")}"
              )
          }
          reason.map(r => s"FileSourceScanExec[$table]: ${normalize(r)}")
        case (p, _) =>
          val reasons = EmberExecRule.fallbackReasons(p)
          val why = if (reasons.isEmpty) "(no reason recorded)" else normalize(reasons.mkString("; "))
          Some(s"${p.getClass.getSimpleName}: $why")
      }
      .distinct
      .sorted
  }
}
