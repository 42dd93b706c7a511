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
 * validation. JVM expressions are on, as by default (where Spark's code evaluates what has no kernel, its strings
 * come back as bytes too).
 */
class EmberMadeStringsSuite extends EmberQueryTest {

  override protected def sparkConf: org.apache.spark.SparkConf =
    super.sparkConf.set(EmberConf.JVM_EXPRESSIONS.key, "true")

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

  /**
   * Ember's answer is Spark's, strings compared as bytes, with `native` in the plan and no operator left to Spark
   * (the strings are made natively); Spark's holds invalid bytes.
   */
  private def checkBytes(query: => DataFrame, native: Class[_ <: EmberExec], invalid: String = "ff"): Unit = {
    val df = checkSparkAnswerAndNative(query, Seq(native))
    // (An AQE shuffle read has no native form: the native operator above it reads its blocks.)
    val fallbacks =
      EmberExplainInfo.fallbackLines(df.queryExecution.executedPlan).filterNot(_.startsWith("AQE"))
    assert(fallbacks.isEmpty, s"${df.queryExecution.executedPlan}")
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

  test("made strings with strings as bytes switched off: the cast stays in Spark, tasks fail saying why") {
    withMade {
      withSQLConf(EmberConf.STRINGS_AS_BYTES.key -> "false") {
        def grouped = sql("SELECT s, count(*) AS n FROM made GROUP BY s")
        def failureOf(jvm: Boolean): Seq[String] =
          withSQLConf(EmberConf.JVM_EXPRESSIONS.key -> jvm.toString) {
            val failure =
              withEmber(enabled = true)(intercept[org.apache.spark.SparkException](grouped.collect()))
            Iterator
              .iterate(failure: Throwable)(_.getCause)
              .takeWhile(_ != null)
              .flatMap(e => Option(e.getMessage))
              .toSeq
          }
        // Without JVM expressions the cast stays in Spark (the engine takes it only with strings as bytes), and
        // the invalid bytes fail where they enter the native aggregate, as any string column's.
        withSQLConf(
          EmberConf.JVM_EXPRESSIONS.key -> "false",
          SQLConf.ADAPTIVE_EXECUTION_ENABLED.key -> "false"
        ) {
          val plan = withEmber(enabled = true)(grouped.queryExecution.executedPlan)
          assert(EmberExplainInfo.fallbackLines(plan).exists(_.contains("CAST(binary AS STRING)")), plan)
        }
        assert(
          failureOf(jvm = false).exists(_.contains("string column `s` holds bytes that are not valid UTF-8"))
        )
        // With them, Spark's cast runs inside a plan that takes strings as UTF-8: the task fails where the string
        // is made, saying so, not with Arrow's validation error.
        assert(failureOf(jvm = true).exists(_.contains("made a string that is not valid UTF-8")))
        assertNoNativeMemoryHeld()
      }
    }
  }
}
