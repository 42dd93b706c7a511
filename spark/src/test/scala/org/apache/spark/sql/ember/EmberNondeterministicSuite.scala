package org.apache.spark.sql.ember

import org.apache.spark.sql.Column
import org.apache.spark.sql.classic.{DataFrame, Dataset}
import org.apache.spark.sql.ember.execution._
import org.apache.spark.sql.functions._

/**
 * `spark_partition_id()`, `monotonically_increasing_id()`, `rand(seed)`, `randn(seed)` in native projections,
 * Ember off vs on, rows compared in order: the same partition indexes (range, shuffle, Parquet and union
 * inputs), the same row numbering across native batches, and Spark's XORShiftRandom sequences. Where Spark may
 * skip a row's evaluation (a filter, a later argument) the expression stays in Spark, with the reason.
 */
class EmberNondeterministicSuite extends EmberQueryTest {

  private def functions: Seq[Column] = Seq(
    spark_partition_id().as("p"),
    monotonically_increasing_id().as("m"),
    rand(42).as("r"),
    randn(7).as("g"),
    rand(-3L).as("r2"),
    expr("rand(NULL)").as("r0"),
    expr("random(11)").as("r11"),
    (rand(5) * 10).as("r10")
  )

  private def reason(df: DataFrame): String =
    executedNodes(df).flatMap(EmberExecRule.fallbackReasons).mkString("; ")

  /** Ember off vs on, rows in order, every projection native. */
  private def sameRows(query: => DataFrame): DataFrame = {
    val df = checkSparkAnswerAndNative(query, Seq(cls[EmberProjectExec]), ordered = true)
    assert(!executedNodes(df).exists(_.isInstanceOf[org.apache.spark.sql.execution.ProjectExec]), reason(df))
    df
  }

  test("over ranges, shuffles, filters and many native batches: Spark's values in Spark's order") {
    // Small native batches: the state goes on from batch to batch.
    withSQLConf("spark.ember.batchSize" -> "100") {
      sameRows(spark.range(0, 5000, 1, 4).select(col("id") +: functions: _*))
      sameRows(spark.range(0, 5000, 1, 3).where(col("id") % 7 =!= 0).select(col("id") +: functions: _*))
      sameRows(
        spark
          .range(0, 3000, 1, 2)
          .repartition(5, col("id"))
          .sortWithinPartitions("id")
          .select(col("id") +: functions: _*)
      )
    }
  }

  test("a Parquet scan's and a union's partitions") {
    withTempPath { dir =>
      spark
        .range(0, 4000, 1, 4)
        .selectExpr("id", "cast(id % 13 as int) as k")
        .write
        .parquet(dir.getCanonicalPath)
      sameRows(spark.read.parquet(dir.getCanonicalPath).select(col("id") +: functions: _*))
      // A projection above a union stays above it (Spark pushes only deterministic ones down): the union's
      // partition index, not its children's.
      sameRows(
        spark.read
          .parquet(dir.getCanonicalPath)
          .select("id")
          .union(spark.range(100, 200, 1, 3).toDF())
          .select(col("id") +: functions: _*)
      )
    }
  }

  test("an unseeded rand keeps the seed Spark's analyzer chose") {
    val analyzed =
      spark.range(0, 1000, 1, 2).select(col("id"), rand().as("r"), randn().as("g")).queryExecution.analyzed
    sameRows(Dataset.ofRows(spark, analyzed))
  }

  test("uuid, randstr and shuffle: Spark's MersenneTwister and XORShiftRandom sequences") {
    withSQLConf("spark.ember.batchSize" -> "64") {
      val analyzed = spark
        .range(0, 1500, 1, 3)
        .selectExpr("id", "if(id % 4 = 0, null, concat_ws(',', id, id * 7, 'x', id % 5)) as s")
        .selectExpr(
          "id",
          "uuid() as u",
          "uuid() as u2",
          "randstr(12, 5) as r",
          "randstr(0, 1) as r0",
          "randstr(3) as r3",
          "array_join(shuffle(split(s, ',')), '|') as sh",
          "element_at(shuffle(array(1, 2, 3, 4, 5, 6, 7, 8)), 1) as sh2"
        )
        .queryExecution
        .analyzed
      sameRows(Dataset.ofRows(spark, analyzed))
    }
  }

  test("where Spark may skip evaluating it, it stays in Spark, saying why") {
    val data = () => spark.range(0, 2000, 1, 2).selectExpr("id", "if(id % 3 = 0, null, id) as n")
    // First arguments are evaluated on every row: native.
    sameRows(data().select(col("id"), (rand(1) + col("n")).as("a"), coalesce(rand(2), col("n")).as("b")))
    // Later arguments of a null-intolerant operator, CASE branches, filters: Spark's.
    val stays = Seq(
      () => data().select(col("id"), (col("n") + rand(1)).as("a")),
      () => data().select(col("id"), when(col("n").isNull, rand(3)).otherwise(0.0).as("a")),
      () => data().select(col("id"), coalesce(col("n").cast("double"), randn(4)).as("a"))
    )
    for (q <- stays) {
      val df = checkSparkAnswerAndNative(q(), Nil, ordered = true)
      assert(!nativeNodes(df).exists(_.isInstanceOf[EmberProjectExec]), df.queryExecution.executedPlan)
      assert(reason(df).contains("where Spark may skip rows"), reason(df))
    }
    val filtered = checkSparkAnswerAndNative(data().where(rand(9) < 0.5), Nil, ordered = true)
    assert(
      !nativeNodes(filtered).exists(_.isInstanceOf[EmberFilterExec]),
      filtered.queryExecution.executedPlan
    )
  }
}
