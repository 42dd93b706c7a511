package org.apache.spark.sql.ember

import org.apache.spark.sql.classic.DataFrame
import org.apache.spark.sql.ember.execution._

/**
 * Cross-stage dynamic filters: a shuffled join's build side summarizes its keys in its map stage, the probe side's
 * scan and shuffle writer drop what cannot match. Every query runs with Ember off and on (rows exact); pruning is
 * asserted through the metrics where it must happen, and its absence on a preserved side.
 */
class EmberDynamicFilterSuite extends EmberQueryTest {

  private val on = Seq(
    "spark.ember.dynamicFilter.enabled" -> "true",
    "spark.sql.autoBroadcastJoinThreshold" -> "-1",
    "spark.sql.adaptive.enabled" -> "true",
    // Spark's own runtime filters would prune the probe side first (and hide what Ember's do).
    "spark.sql.optimizer.runtime.bloomFilter.enabled" -> "false",
    "spark.sql.optimizer.runtimeFilter.semiJoinReduction.enabled" -> "false"
  )

  override def beforeAll(): Unit = {
    super.beforeAll()
    val dir = java.nio.file.Files.createTempDirectory("ember-dynamic-filter").toString
    // The fact table clustered on its key (sorted, small row groups) so that bounds prune row groups; null and
    // duplicate keys; a string key beside the integer one.
    spark
      .range(0, 200000, 1, 4)
      .selectExpr(
        "CASE WHEN id % 97 = 0 THEN NULL ELSE CAST(id / 100 AS INT) END AS k",
        "CONCAT('s', CAST(id / 1000 AS STRING), 'é') AS sk",
        "id AS v"
      )
      .sort("k")
      .write
      .option("parquet.block.size", 64 * 1024)
      .parquet(s"$dir/fact")
    // The dimension: 2000 keys (two rows each, one null-keyed row per region), ~1% in region 'r1' (keys
    // 500..519), none in 'none'.
    spark
      .range(0, 4000, 1, 2)
      .selectExpr(
        "CASE WHEN id = 3999 THEN NULL ELSE CAST(id % 2000 AS INT) END AS k",
        "CONCAT('s', CAST((id % 2000) / 10 AS STRING), 'é') AS sk",
        "CASE WHEN id % 2000 BETWEEN 500 AND 519 THEN 'r1' ELSE 'r2' END AS region",
        "id AS w"
      )
      .write
      .parquet(s"$dir/dim")
    spark.read.parquet(s"$dir/fact").createOrReplaceTempView("fact")
    spark.read.parquet(s"$dir/dim").createOrReplaceTempView("dim")
  }

  private def probes(df: DataFrame): Seq[EmberShuffleExchangeExec] =
    executedNodes(df).collect {
      case e: EmberShuffleExchangeExec if e.dynamicFilter.exists(_.isInstanceOf[DynamicFilterRole.Probe]) => e
    }

  private def builds(df: DataFrame): Seq[EmberShuffleExchangeExec] =
    executedNodes(df).collect {
      case e: EmberShuffleExchangeExec if e.dynamicFilter.exists(_.isInstanceOf[DynamicFilterRole.Build]) => e
    }

  private def dropped(df: DataFrame): Long =
    probes(df).map(_.metrics("dynamic_filter_rows_dropped").value).sum

  private def rowGroupsPruned(df: DataFrame): Long =
    probes(df)
      .flatMap(_.child.collect { case in: EmberInputExec => in })
      .map(_.metrics("parquetRowGroupsPruned").value)
      .sum

  private def check(sql: String): DataFrame = withSQLConf(on: _*) {
    checkSparkAnswerAndNative(spark.sql(sql), Seq(cls[EmberSpillingHashJoinExec]))
  }

  test("inner join with a dimension filtered on a non-key column: row groups pruned, probe rows dropped") {
    val df = check("SELECT f.k, f.v, d.w FROM fact f JOIN dim d ON f.k = d.k WHERE d.region = 'r1'")
    assert(builds(df).size == 1 && probes(df).size == 1, df.queryExecution.executedPlan)
    assert(rowGroupsPruned(df) > 0, "the fact scan skips row groups outside the build keys' bounds")
    // Keys 500..519 (fact ids 50000..51999, 21 of them null-keyed): the writer's exact sets let only those
    // through of the rows the scan's bounds leave.
    val shuffled = probes(df).map(_.metrics("shuffle_rows").value).sum
    assert(shuffled == 2000 - 21, s"$shuffled probe rows shuffled")
    assert(probes(df).head.simpleString(10).contains("probed by dynamic filter"))
  }

  test("two keys, one of them a string; a key expression") {
    check(
      "SELECT f.k, f.sk, d.w FROM fact f JOIN dim d ON f.k = d.k AND f.sk = d.sk WHERE d.region = 'r1'"
    )
    val df = check("SELECT f.v, d.w FROM fact f JOIN dim d ON f.k + 1 = d.k WHERE d.region = 'r1'")
    assert(dropped(df) > 0)
  }

  test("left semi join and the non-preserved side of outer joins are filtered") {
    val semi = check("SELECT * FROM fact WHERE k IN (SELECT k FROM dim WHERE region = 'r1')")
    assert(dropped(semi) + rowGroupsPruned(semi) > 0)
    val outer = check("SELECT d.w, f.v FROM dim d LEFT JOIN fact f ON f.k = d.k WHERE d.region = 'r1'")
    assert(probes(outer).nonEmpty && dropped(outer) > 0)
  }

  test("a preserved side is never filtered; nor is an anti join's or a full outer join's") {
    for (
      q <- Seq(
        "SELECT f.v, d.w FROM fact f LEFT JOIN (SELECT * FROM dim WHERE region = 'r1') d ON f.k = d.k",
        "SELECT f.v, d.w FROM fact f FULL JOIN (SELECT * FROM dim WHERE region = 'r1') d ON f.k = d.k",
        "SELECT * FROM fact WHERE k NOT IN (SELECT k FROM dim WHERE region = 'r1' AND k IS NOT NULL)",
        "SELECT * FROM fact f WHERE NOT EXISTS (SELECT 1 FROM dim d WHERE d.k = f.k AND d.region = 'r1')"
      )
    ) {
      val df = check(q)
      assert(
        probes(df).forall(
          _.child.collect { case in: EmberInputExec => in.output }.flatten.forall(_.name != "v")
        ),
        s"the fact side must not be filtered: $q\n${df.queryExecution.executedPlan}"
      )
    }
  }

  test("an empty build side: the probe side keeps nothing") {
    val df = check("SELECT f.v, d.w FROM fact f JOIN dim d ON f.k = d.k WHERE d.region = 'none'")
    assert(df.collect().isEmpty)
  }

  test("dynamic filters off: no exchange is linked") {
    withSQLConf((on :+ ("spark.ember.dynamicFilter.enabled" -> "false")): _*) {
      val df = spark.sql("SELECT f.k, d.w FROM fact f JOIN dim d ON f.k = d.k WHERE d.region = 'r1'")
      df.collect()
      assert(probes(df).isEmpty && builds(df).isEmpty)
    }
  }

  private def scans(df: DataFrame): Seq[EmberInputExec] =
    executedNodes(df).collect { case in: EmberInputExec if in.output.exists(_.name == "v") => in }

  private def scanPruned(df: DataFrame): Long =
    scans(df)
      .map(in => in.metrics("parquetRowGroupsPruned").value + in.metrics("parquetRowsSkipped").value)
      .sum

  test("a broadcast join prunes its streamed side's scan in the same task; never a preserved side") {
    val inTask = Seq(
      "spark.ember.dynamicFilter.enabled" -> "true",
      "spark.sql.autoBroadcastJoinThreshold" -> "10MB",
      "spark.sql.optimizer.runtime.bloomFilter.enabled" -> "false"
    )
    def run(sql: String, enabled: Boolean): DataFrame =
      withSQLConf((inTask :+ ("spark.ember.dynamicFilter.enabled" -> enabled.toString)): _*) {
        checkSparkAnswerAndNative(spark.sql(sql), Seq(cls[EmberBroadcastHashJoinExec]))
      }
    // Keys 500..519: bounds only (more than 16 keys), which the clustered fact's row groups are cut by.
    val inner = "SELECT f.k, f.v, d.w FROM fact f JOIN dim d ON f.k = d.k WHERE d.region = 'r1'"
    val pruned = run(inner, enabled = true)
    assert(scanPruned(pruned) > 0, pruned.queryExecution.executedPlan)
    assert(
      scans(pruned).head
        .simpleString(10)
        .matches(".*pruned by the dynamic filter of the join on \\[k#\\d+ = k#\\d+\\] in its task.*"),
      pruned.queryExecution.executedPlan
    )
    assert(scans(pruned).map(_.metrics("parquetRowGroupsPruned").value).sum > 0, "whole row groups skipped")
    assert(scanPruned(run(inner, enabled = false)) == 0, "nothing pruned with dynamic filters off")
    // An IN list of a few keys; a left semi join; the keys through a projection.
    for (
      q <- Seq(
        "SELECT f.k, f.v, d.w FROM fact f JOIN dim d ON f.k = d.k WHERE d.w IN (7, 1500, 2600)",
        "SELECT * FROM fact WHERE k IN (SELECT k FROM dim WHERE region = 'r1')",
        "SELECT f.kk, d.w FROM (SELECT k AS kk, v FROM fact WHERE v % 2 = 0) f JOIN dim d ON f.kk = d.k " +
          "WHERE d.region = 'r1'"
      )
    ) assert(scanPruned(run(q, enabled = true)) > 0, q)
    // A streamed side the join preserves keeps every row group, and the rows stay Spark's.
    val preserved =
      run(
        "SELECT f.v, d.w FROM fact f LEFT JOIN (SELECT * FROM dim WHERE region = 'r1') d ON f.k = d.k",
        true
      )
    assert(scanPruned(preserved) == 0, preserved.queryExecution.executedPlan)
  }

  test("a join of bucketed tables prunes each bucket's probe scan by that bucket's build keys") {
    withTable("bfact", "bdim") {
      withEmber(enabled = false) {
        spark
          .table("fact")
          .write
          .bucketBy(4, "k")
          .sortBy("k")
          .option("parquet.block.size", 64 * 1024)
          .format("parquet")
          .saveAsTable("bfact")
        spark.table("dim").write.bucketBy(4, "k").format("parquet").saveAsTable("bdim")
      }
      withSQLConf(
        "spark.ember.dynamicFilter.enabled" -> "true",
        "spark.sql.autoBroadcastJoinThreshold" -> "-1",
        "spark.sql.adaptive.enabled" -> "false",
        "spark.sql.join.preferSortMergeJoin" -> "false",
        "spark.sql.optimizer.runtime.bloomFilter.enabled" -> "false"
      ) {
        val df = checkSparkAnswerAndNative(
          spark.sql("SELECT f.k, f.v, d.w FROM bfact f JOIN bdim d ON f.k = d.k WHERE d.region = 'r1'"),
          Seq(cls[EmberSpillingHashJoinExec])
        )
        assert(!df.queryExecution.executedPlan.exists(_.isInstanceOf[EmberShuffleExchangeExec]), "no shuffle")
        assert(scanPruned(df) > 0, df.queryExecution.executedPlan)
      }
    }
  }
}
