package org.apache.spark.sql.ember

import org.apache.spark.SparkConf
import org.apache.spark.sql.ember.execution._

/**
 * When several rows and expressions of a batch raise under ANSI, Spark raises the error its row-at-a-time order
 * reaches first (row by row; within a row the expressions left to right; a filter's predicate before the
 * projection above it; an aggregate's or a join's expressions after the rows' pipeline below them). Ember
 * evaluates each expression over a whole batch, so it must raise that same first error: the same class, the
 * same parameters (the values name the failing row) and the same query context.
 *
 * The table is one Parquet file, one task: rows 0 .. 4 in order.
 *   - `big`: 9223372036854775807 in rows 1 and 3 (overflows DECIMAL(20,2));
 *   - `s`: a string that is not an INT in rows 2 and 4, a 42-digit number in row 3 (out of DECIMAL's range);
 *   - `x`: 0 in rows 1 and 4 (a zero divisor).
 */
class EmberFirstErrorSuite extends EmberQueryTest {

  override protected def sparkConf: SparkConf = super.sparkConf
    .set("spark.sql.autoBroadcastJoinThreshold", "-1")

  private val MaxLong = Long.MaxValue
  private val rows = Seq(
    (0L, 5L, "7", 3, 0),
    (1L, MaxLong, "8", 0, 0),
    (2L, 6L, "two", 4, 1),
    (3L, MaxLong, "1" * 42, 5, 1),
    (4L, 7L, "four", 0, 2)
  )

  private def onTables(f: => Unit): Unit = withTempPath { dir =>
    val session = spark
    import session.implicits._
    rows.toDF("id", "big", "s", "x", "g").coalesce(1).write.parquet(dir.getCanonicalPath)
    spark.read.parquet(dir.getCanonicalPath).createOrReplaceTempView("fe")
    Seq((0L, 0), (1L, 0), (2L, 0), (3L, 0), (4L, 0))
      .toDF("k", "y")
      .coalesce(1)
      .write
      .parquet(s"${dir.getCanonicalPath}_b")
    spark.read.parquet(s"${dir.getCanonicalPath}_b").createOrReplaceTempView("fe_b")
    // AQE plans the stages as they run: without it the native nodes are in the plan before it runs.
    withSQLConf("spark.sql.ansi.enabled" -> "true", "spark.sql.adaptive.enabled" -> "false")(f)
  }

  private def check(sql: String, native: Seq[Class[_ <: EmberExec]]): Unit =
    onTables(withClue(sql)(checkSparkErrorAndNative(spark.sql(sql), native, exactParameters = true)))

  test("projection: a later column's failure in an earlier row comes first") {
    // Row 1's DECIMAL overflow (second cast) before row 2's invalid INT (first cast).
    check(
      "SELECT id, CAST(s AS INT) AS a, CAST(big AS DECIMAL(20,2)) AS b FROM fe",
      Seq(cls[EmberProjectExec])
    )
  }

  test("projection: an earlier row's overflow, not a later row's out-of-range string") {
    // Row 1's DECIMAL overflow before row 3's 42 digits (NUMERIC_OUT_OF_SUPPORTED_RANGE).
    check(
      "SELECT id, CAST(CASE WHEN id = 3 THEN s ELSE '1' END AS DECIMAL(38,0)) AS a, " +
        "CAST(big AS DECIMAL(20,2)) AS b FROM fe",
      Seq(cls[EmberProjectExec])
    )
  }

  test("projection: within one expression, AND's right side on an earlier row") {
    // Row 1's division by zero on AND's right before row 2's invalid INT on its left.
    check("SELECT id, CAST(s AS INT) > 0 AND 10 div x > 0 AS c FROM fe", Seq(cls[EmberProjectExec]))
  }

  test("projection: an earlier row's overflow before an operand's failure in a later row") {
    // Row 1's 8 + 9223372036854775807 overflows before row 2's operand, an invalid BIGINT, fails.
    check("SELECT id, CAST(s AS BIGINT) + big AS a FROM fe", Seq(cls[EmberProjectExec]))
  }

  test("filter: the predicate's first failing row") {
    // Row 1's division by zero (AND's right) before row 2's invalid INT (AND's left).
    check("SELECT id FROM fe WHERE CAST(s AS INT) > 0 AND 10 div x > 0", Seq(cls[EmberFilterExec]))
  }

  test("filter: the projection above fails on a kept row before the predicate fails") {
    // The projection fails on row 1, which the filter keeps, before the filter fails on row 2.
    check(
      "SELECT id, CAST(big AS DECIMAL(20,2)) AS b FROM fe WHERE CAST(s AS INT) > 0",
      Seq(cls[EmberFilterExec], cls[EmberProjectExec])
    )
  }

  test("aggregate: a later function's argument failing in an earlier row comes first") {
    // Global: row 1's DECIMAL overflow (second function) before row 2's invalid INT (first function).
    check("SELECT sum(CAST(s AS INT)), sum(CAST(big AS DECIMAL(20,2))) FROM fe", Seq(cls[EmberAggregateExec]))
  }

  test("aggregate: grouped, the arguments in row order") {
    // Row 1's DECIMAL overflow before row 2's invalid INT, and before row 1's zero divisor (a later function).
    check(
      "SELECT g, sum(CAST(s AS INT)), sum(CAST(big AS DECIMAL(20,2))), sum(10 div x) FROM fe GROUP BY g",
      Seq(cls[EmberAggregateExec])
    )
  }

  test("aggregate: an argument fails on a row before the projection below it fails") {
    // The grouping key (a projection below the aggregate) fails on row 3, the argument on row 1 first.
    check(
      "SELECT sum(10 div x) FROM fe GROUP BY CAST(CASE WHEN id = 3 THEN s ELSE '1' END AS DECIMAL(38,0))",
      Seq(cls[EmberAggregateExec])
    )
  }

  test("join: a probe key fails on a row the filter below keeps before the filter fails") {
    // The streamed side's key fails on row 2, the filter below the join on row 3.
    check(
      "SELECT /*+ BROADCAST(fe_b) */ id FROM fe JOIN fe_b ON CAST(s AS INT) = k " +
        "WHERE CAST(CASE WHEN id = 3 THEN s ELSE '1' END AS DECIMAL(38,0)) > 0",
      Seq(cls[EmberBroadcastHashJoinExec])
    )
  }

  test("join: the condition's first failing joined row") {
    // Row 1's division by zero (AND's right) before row 2's invalid INT (AND's left).
    check(
      "SELECT /*+ BROADCAST(fe_b) */ id FROM fe JOIN fe_b ON id = k " +
        "AND CAST(s AS INT) > y AND 10 div (x + y) > 0",
      Seq(cls[EmberBroadcastHashJoinExec])
    )
  }
}
