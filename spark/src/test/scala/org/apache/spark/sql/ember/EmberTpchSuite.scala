package org.apache.spark.sql.ember

import java.nio.file.{Files, Path, Paths}

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import org.apache.spark.sql.ember.execution._
import org.apache.spark.sql.execution._
import org.apache.spark.sql.execution.adaptive.{AdaptiveSparkPlanExec, AQEShuffleReadExec, QueryStageExec}
import org.apache.spark.sql.execution.exchange.ReusedExchangeExec

/**
 * TPC-H as the yardstick of whole-query native execution: the 22 queries of `dev/bench/tpch/q*.sql` (the
 * specification's validation parameters; the same files `make bench-tpch` times) on scale factor 0.01, each run
 * with Ember off and on with the rows compared exactly (in order where the query has an ORDER BY), and the Spark
 * operators left in Ember's plan checked against an allowlist, one line per query.
 *
 * The data: `dev/work/tpch/sf0.01/<table>.parquet`, written by tpchgen-cli 4.0.0 from PyPI (a Rust port of
 * TPC-H's dbgen) — `make tpch-data`, which `make test-scala` runs before Maven, so CI
 * (.ci/run → make test) gets it: pip installs the pinned wheel into dev/.venv and generating SF 0.01 takes about
 * a second. That is the real TPC-H data (value distributions, the comment strings the LIKE predicates look for,
 * dates, DECIMAL(15,2)) which a generator written inside the suite would only approximate, so that every query
 * returns rows at SF 0.01 (Q17's is a single NULL: its join is empty at this scale, and adaptive execution
 * replaces it by an EmptyRelationExec, so Q17 checks little here). Running this suite alone needs the data once:
 * `make tpch-data`. The suite takes about three minutes (44 queries on the debug build, on a busy 2-core machine).
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
 * The test fails when an operator not on the query's line appears, and also when a listed one disappears (so the
 * list only shrinks as operators become native); the failure prints the query's new line to paste into
 * [[allowlist]], and the end of the suite prints the whole block.
 */
class EmberTpchSuite extends EmberQueryTest {

  private val queryDir: Path = Paths.get(sys.props.getOrElse("ember.tpch.queries", "../dev/bench/tpch"))
  private val dataDir: Path = Paths.get(sys.props.getOrElse("ember.tpch.data", "../dev/work/tpch/sf0.01"))
  private val tables =
    Seq("customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier")

  /**
   * The Spark operators each query keeps today, with Ember's reasons, entries separated by ` | `. Known
   * divergences from Spark would be listed in [[knownDivergences]]; there are none.
   */
  private val allowlist: String =
    """
      |q1 =
      |q2 =
      |q3 =
      |q4 =
      |q5 =
      |q6 =
      |q7 =
      |q8 =
      |q9 =
      |q10 =
      |q11 =
      |q12 =
      |q13 =
      |q14 =
      |q15 =
      |q16 =
      |q17 = EmptyRelationExec: (no reason recorded)
      |q18 =
      |q19 =
      |q20 =
      |q21 =
      |q22 =
      |""".stripMargin

  /** Queries whose rows Ember gets wrong today, with why: their rows are not compared (none today). */
  private val knownDivergences: Map[Int, String] = Map.empty

  private lazy val allowed: Map[Int, Seq[String]] = allowlist.linesIterator
    .map(_.trim)
    .filter(_.nonEmpty)
    .map { line =>
      val (q, entries) = line.splitAt(line.indexOf('='))
      q.trim.stripPrefix("q").toInt -> entries.drop(1).split(" \\| ").map(_.trim).filter(_.nonEmpty).toSeq
    }
    .toMap

  private val actualLines = mutable.LinkedHashMap.empty[Int, String]
  private var changed = false

  override def beforeAll(): Unit = {
    super.beforeAll()
    val missing = tables.filterNot(t => Files.exists(dataDir.resolve(s"$t.parquet")))
    assert(
      missing.isEmpty,
      s"no TPC-H data for ${missing.mkString(", ")} in ${dataDir.toAbsolutePath}: run `make tpch-data`"
    )
    tables.foreach { t =>
      spark.read.parquet(dataDir.resolve(s"$t.parquet").toString).createOrReplaceTempView(t)
    }
  }

  override def afterAll(): Unit = {
    try {
      if (changed) {
        val block = actualLines.toSeq.sortBy(_._1).map { case (_, l) => s"      |$l" }.mkString("\n")
        // scalastyle:off println
        println(s"EmberTpchSuite: the allowlist as it is now (paste over `allowlist`):\n$block")
        // scalastyle:on println
      }
    } finally super.afterAll()
  }

  private def sql(n: Int): String =
    Files
      .readAllLines(queryDir.resolve(s"q$n.sql"))
      .asScala
      .filterNot(_.trim.startsWith("--"))
      .mkString("\n")

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

  /** The Spark operators left in `plan`, as `NodeClass: reason` entries (see the suite's doc). */
  private def sparkOperators(plan: SparkPlan): Seq[String] = {
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

  (1 to 22).foreach { n =>
    test(s"q$n") {
      val text = sql(n)
      val ordered = text.toLowerCase.contains("order by")
      val df = knownDivergences.get(n) match {
        case Some(why) =>
          // The rows are known to differ: only the plan is checked.
          info(s"known divergence: $why")
          withEmber(enabled = true) {
            val df = spark.sql(text)
            df.collect()
            df
          }
        case None => checkSparkAnswerAndNative(spark.sql(text), Seq.empty, ordered)
      }
      assert(nativeNodes(df).nonEmpty, s"no native operator in q$n:\n${df.queryExecution.executedPlan}")
      val actual = sparkOperators(df.queryExecution.executedPlan)
      val line = s"q$n = ${actual.mkString(" | ")}"
      actualLines(n) = line
      val expected = allowed.getOrElse(n, Nil).sorted
      if (actual != expected) {
        changed = true
        val added = actual.diff(expected)
        val gone = expected.diff(actual)
        fail(
          s"q$n: the Spark operators left in Ember's plan changed.\n" +
            (if (added.nonEmpty) s"  new (not on the allowlist):\n    ${added.mkString("\n    ")}\n"
             else "") +
            (if (gone.nonEmpty)
               s"  gone (native now? take them off the list):\n    ${gone.mkString("\n    ")}\n"
             else "") +
            s"  the line to paste into EmberTpchSuite.allowlist:\n      |$line\n" +
            s"plan:\n${df.queryExecution.executedPlan}"
        )
      }
    }
  }
}
