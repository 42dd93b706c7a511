package org.apache.spark.sql.ember

import org.apache.spark.sql.classic.DataFrame
import org.apache.spark.sql.ember.execution._
import org.apache.spark.sql.functions._
import org.apache.spark.sql.internal.SQLConf
import org.ember.EmberConf

/**
 * Strings made inside a native plan that are not valid UTF-8 (Spark's strings are bytes: `CAST(binary AS
 * STRING)`, `substring`, a UDF's bytes cast to a string keep any): grouped, sorted, joined, shuffled, compared and
 * cast, they give Spark's answers byte for byte (or Spark's error class), never a task failed by Arrow's UTF-8
 * validation.
 */
class EmberMadeStringsSuite extends EmberQueryTest {

  /**
   * `made`: per row a hex string `h`, its bytes `b = unhex(h)` and `s = CAST(unhex(h) AS STRING)`: invalid UTF-8
   * (a lone 0xFF, a cut two-byte and three-byte sequence, bytes inside ASCII), valid multi-byte, digits, empty, NULL.
   */
  private def withMade(f: => Unit): Unit = {
    spark
      .range(0, 360, 1, 3)
      .selectExpr(
        "id",
        """CASE id % 9 WHEN 0 THEN 'FF' WHEN 1 THEN 'C328' WHEN 2 THEN 'E282' WHEN 3 THEN 'C3A9'
          |WHEN 4 THEN 'F09F9880' WHEN 5 THEN '3132' WHEN 6 THEN '41FF42' WHEN 7 THEN '' END AS h""".stripMargin
      )
      .selectExpr("id", "h", "unhex(h) AS b", "CAST(unhex(h) AS STRING) AS s")
      .createOrReplaceTempView("made")
    try f
    finally spark.catalog.dropTempView("made")
  }

  /** Ember's answer is Spark's, strings compared as bytes, with `native` in the plan; Spark's holds invalid bytes. */
  private def checkBytes(query: => DataFrame, native: Class[_ <: EmberExec], invalid: String = "ff"): Unit = {
    checkSparkAnswerAndNative(query, Seq(native))
    val sparkRows = withEmber(enabled = false)(exactBytes(query))
    assert(sparkRows.exists(_.contains(invalid)), s"Spark's rows hold no $invalid: $sparkRows")
    val emberRows = withEmber(enabled = true)(exactBytes(query))
    assert(emberRows == sparkRows, s"${query.queryExecution.executedPlan}")
  }

  test("made strings: group-by") {
    withMade {
      checkBytes(sql("SELECT s, count(*) AS n, min(id) AS m FROM made GROUP BY s"), cls[EmberAggregateExec])
      checkBytes(sql("SELECT DISTINCT CAST(unhex(h) AS STRING) AS t FROM made"), cls[EmberAggregateExec])
    }
  }

  test("made strings: sort") {
    withMade {
      checkSparkAnswerAndNative(
        sql("SELECT s, id FROM made ORDER BY s, id"),
        Seq(cls[EmberSortExec]),
        ordered = true
      )
      checkBytes(sql("SELECT s, id FROM made ORDER BY s DESC, id"), cls[EmberSortExec])
      checkBytes(
        sql("SELECT s, id FROM made ORDER BY s DESC, id LIMIT 20"),
        cls[EmberTakeOrderedAndProjectExec]
      )
    }
  }

  test("made strings: shuffled hash join, broadcast hash join and a shuffle on them") {
    withMade {
      withSQLConf(
        SQLConf.PREFER_SORTMERGEJOIN.key -> "false",
        SQLConf.AUTO_BROADCASTJOIN_THRESHOLD.key -> "-1"
      ) {
        checkBytes(
          sql("SELECT a.id, b.id AS bid, a.s FROM made a JOIN made b ON a.s = b.s WHERE a.id < 40"),
          cls[EmberSpillingHashJoinExec]
        )
        def shuffled = sql("SELECT /*+ REPARTITION(5, s) */ s, id FROM made")
        checkBytes(shuffled, cls[EmberProjectExec])
        val df = withEmber(enabled = true)(shuffled)
        df.collect()
        assert(
          executedNodes(df).exists(_.isInstanceOf[EmberShuffleExchangeExec]),
          df.queryExecution.executedPlan
        )
      }
      checkBytes(
        sql(
          "SELECT /*+ BROADCAST(b) */ a.id, b.s FROM made a JOIN (SELECT DISTINCT s FROM made) b ON a.s = b.s"
        ),
        cls[EmberBroadcastHashJoinExec]
      )
    }
  }

  test("made strings: comparisons and CAST(s AS INT), ANSI on and off") {
    withMade {
      checkBytes(
        sql("SELECT id, s FROM made WHERE s > CAST(X'C3' AS STRING) AND s <> CAST(X'FF' AS STRING)"),
        cls[EmberFilterExec],
        invalid = "c328"
      )
      withSQLConf(SQLConf.ANSI_ENABLED.key -> "false") {
        checkBytes(sql("SELECT id, s, CAST(s AS INT) AS i FROM made"), cls[EmberProjectExec])
        checkBytes(sql("SELECT s, sum(CAST(s AS INT)) AS i FROM made GROUP BY s"), cls[EmberAggregateExec])
      }
      withSQLConf(SQLConf.ANSI_ENABLED.key -> "true") {
        checkSparkErrorAndNative(sql("SELECT id, CAST(s AS INT) AS i FROM made"), Seq(cls[EmberProjectExec]))
        checkBytes(sql("SELECT id, s, try_cast(s AS INT) AS i FROM made"), cls[EmberProjectExec])
      }
    }
  }

  test("made strings: decode, substring of a cast and of bytes, string functions over them") {
    withMade {
      // Spark's decode reports bytes that are not UTF-8 (MALFORMED_CHARACTER_CODING); valid ones decode.
      checkSparkErrorAndNative(
        sql("SELECT id, decode(b, 'UTF-8') AS d FROM made"),
        Seq(cls[EmberProjectExec])
      )
      checkSparkAnswerAndNative(
        sql(
          "SELECT decode(b, 'UTF-8') AS d, count(*) AS n FROM made WHERE id % 9 IN (3, 4, 5, 7, 8) GROUP BY d"
        ),
        Seq(cls[EmberAggregateExec])
      )
      checkBytes(
        sql(
          """SELECT substring(s, 1, 1) AS p, CAST(substring(b, 2, 1) AS STRING) AS q, count(*) AS n
            |FROM made GROUP BY p, q""".stripMargin
        ),
        cls[EmberAggregateExec]
      )
      checkBytes(
        sql("SELECT id, concat(s, '!') AS c, upper(s) AS u, length(s) AS l, reverse(s) AS r FROM made"),
        cls[EmberProjectExec]
      )
    }
  }

  test("made strings: UDF results and JVM expressions returning strings") {
    withMade {
      withSQLConf(EmberConf.JVM_EXPRESSIONS.key -> "true") {
        val echo = udf((b: Array[Byte]) => if (b == null) null else b.reverse)
        val shout = udf((s: String) => if (s == null) null else s.toUpperCase + "!")
        def udfs = spark
          .table("made")
          .select(col("id"), echo(col("b")).cast("string").as("e"), shout(col("s")).as("sh"))
        checkBytes(udfs.groupBy("e", "sh").count(), cls[EmberAggregateExec])
        checkBytes(
          sql("SELECT format_string('%s|', s) AS f, count(*) AS n FROM made GROUP BY f"),
          cls[EmberAggregateExec],
          invalid = "efbfbd"
        )
      }
    }
  }
}
